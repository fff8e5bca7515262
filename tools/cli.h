/* cli.h - shared pieces of the rlx command-line tool (tools/rlx_cli.c and
 * tools/cli_*.c): exit codes, argument parsing that reports instead of
 * crashing, timing, and building a vision model with its param nodes. */
#ifndef RLX_CLI_H
#define RLX_CLI_H

#include <stdint.h>

#include "rlx_models.h"

/* Exit codes: 0 success, 1 a failure while running (library error, the loss
 * diverged), 2 bad usage: arguments, unknown model, unreadable data. */
#define CLI_OK 0
#define CLI_FAILED 1
#define CLI_USAGE 2

/* Prints "rlx <cmd>: <message>" plus a hint to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints "rlx <cmd>: <what>: <rlx_last_error()>" to stderr; returns code. */
int cli_lib_error(const char *cmd, int code, const char *what);

/* Option scanning: argv[*i] is the option; its value is the next word or the
 * part after '='.  Each returns 1 and advances *i on success, or prints a
 * usage error and returns 0. */
typedef struct {
  const char *cmd;     /* sub-command, for messages */
  int argc;
  char **argv;
  int i;               /* current word */
  const char *name;    /* option being parsed, without any "=value" */
  const char *inline_value;
  char name_buf[64];
} cli_args;

void cli_args_init(cli_args *a, const char *cmd, int argc, char **argv, int first);
/* The next word: returns 0 at the end.  Splits "--opt=value". */
int cli_args_next(cli_args *a);
/* 1 if the current word is an option (starts with '-' and is not a number). */
int cli_args_is_option(const cli_args *a);
int cli_opt_string(cli_args *a, const char **out);
int cli_opt_long(cli_args *a, long min, long max, long *out);
int cli_opt_float(cli_args *a, double min, double max, double *out);
int cli_opt_u64(cli_args *a, uint64_t *out);

/* Fills info for a model slug; prints a usage error naming the known models. */
int cli_model_info(const char *cmd, const char *slug, rlx_vision_info *info);

/* rlx_vision_build plus the param node ids in the info's order, found on the
 * public API: the params are the first nodes, in order, whose shapes are the
 * info's param shapes (see rlx_cli.c).  Returns 1, or prints why and
 * returns 0. */
int cli_build_model(const char *cmd, rlx_graph *g, const rlx_vision_info *info, int32_t batch, rlx_node *logits,
                    rlx_node *loss, rlx_node *params);
/* Copies flat params (info order) into a session, or reads them back. */
rlx_status cli_set_params(rlx_session *s, const rlx_vision_info *info, const float *flat);
rlx_status cli_get_params(const rlx_session *s, const rlx_vision_info *info, float *flat);

double cli_now(void); /* monotonic seconds */

/* Progress on stderr while a command runs (results stay on stdout): on a
 * terminal one line rewritten in place ("\r" + clear), otherwise plain
 * lines.  Lines are kept short (at most 159 characters). */
typedef struct {
  int tty;     /* stderr is a terminal (-1: not looked at yet) */
  int open;    /* an in-place line is showing */
  double last; /* cli_now() of the last line */
} cli_progress_state;
/* The tool's one progress state (stderr is one stream). */
cli_progress_state *cli_progress_get(void);
/* Prints one progress line; keep: on a terminal, end it with a newline
 * (it stays) instead of leaving it to be rewritten.  Flushes stdout first. */
void cli_progress(int keep, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Removes an in-place line (a terminal only) before stdout prints a result;
 * cli_usage_error and cli_lib_error call it. */
void cli_progress_clear(void);

/* splitmix64: the tool's own deterministic RNG for shuffling. */
uint64_t cli_rand(uint64_t *state);

int cli_train(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_next_tokens(int argc, char **argv);
int cli_gguf_info(int argc, char **argv);
int cli_export_gguf(int argc, char **argv);

#endif
