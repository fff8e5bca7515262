/* cli.h - shared pieces of the rlx command-line tool (tools/rlx_cli.c and
 * tools/cli_*.c): exit codes, the commands' option tables and the argument
 * parsing, usage and help drawn from them (tools/cli_usage.c), timing, and
 * building a vision model with its param nodes. */
#ifndef RLX_CLI_H
#define RLX_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "rlx_models.h"

/* Exit codes: 0 success, 1 a failure while running (library error, the loss
 * diverged), 2 bad usage: arguments, unknown model, unreadable data. */
#define CLI_OK 0
#define CLI_FAILED 1
#define CLI_USAGE 2

/* ---- commands and options ----------------------------------------------
 * Each command describes itself once, in a cli_command with its table of
 * options; from that one table come its usage line (rlx help, rlx <command>
 * --help, the missing-option messages), its help, the options the parser
 * accepts (any other is reported as unknown) and the required ones, checked
 * in the order the usage line names them. */
#define CLI_OPTIONAL 0
#define CLI_REQUIRED 1 /* must be given */
#define CLI_ONE_OF 2   /* adjacent CLI_ONE_OF options: exactly one of them must be given */
#define CLI_REPEATED 4 /* or'ed in: may be given more than once */

typedef struct {
  const char *name;  /* "--model"; a positional argument: its placeholder ("FILE.gguf") */
  const char *alias; /* a short name ("-m") or NULL */
  const char *value; /* what follows the option ("M"); NULL for a flag or a positional */
  int need;          /* CLI_OPTIONAL, CLI_REQUIRED or CLI_ONE_OF, | CLI_REPEATED */
  const char *help;  /* one sentence */
} cli_option;

typedef struct cli_command {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[1] is the command's name */
  const char *summary;               /* one line, for rlx help */
  const char *about;                 /* more, for rlx <command> --help (or NULL) */
  const cli_option *options;         /* ends with an entry whose name is NULL */
  void (*notes)(char *buf, size_t cap); /* writes a paragraph shown after the options in --help (or NULL) */
} cli_command;

/* The commands, in the order rlx help lists them; NULL-terminated. */
extern const cli_command *const cli_commands[];
extern const cli_command cli_train_command, cli_info_command, cli_bench_command, cli_generate_command,
    cli_tokenize_command, cli_next_tokens_command, cli_gguf_info_command, cli_export_gguf_command,
    cli_make_lora_command, cli_export_lora_command, cli_finetune_command, cli_perplexity_command, cli_chat_command;
const cli_command *cli_find_command(const char *name);

/* "rlx <command> --help": usage line, about, options, notes. */
void cli_print_help(const cli_command *c);
/* The start of "rlx help": every command's usage line and summary. */
void cli_print_overview(FILE *f);
/* Prints "usage: rlx <command> ..." (wrapped) to f. */
void cli_print_usage(FILE *f, const cli_command *c);

/* Prints "rlx <cmd>: <message>" plus a hint to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prints "rlx <cmd>: <what>: <rlx_last_error()>" to stderr; returns code. */
int cli_lib_error(const char *cmd, int code, const char *what);

/* Option scanning over a command's table: argv[*i] is the option; its value
 * is the next word or the part after '='.  The cli_opt_* each return 1 and
 * advance past the value on success, or print a usage error and return 0. */
typedef struct {
  const cli_command *command;
  const char *cmd;     /* its name, for messages */
  int argc;
  char **argv;
  int i;               /* current word */
  const char *name;    /* option being parsed, without any "=value" */
  const char *inline_value;
  char name_buf[64];
  int opt;             /* the current word's index in the command's options (-1: none) */
  uint64_t seen;       /* bit k: options[k] was given */
  int help;            /* --help or -h was given */
  int failed;          /* a usage error was printed */
} cli_args;

void cli_args_init(cli_args *a, const cli_command *c, int argc, char **argv);
/* The next option or positional argument of the command's table: returns 0
 * at the end, at --help / -h, and after reporting a word the table does not
 * have (an unknown option, an unexpected argument).  Splits "--opt=value". */
int cli_args_next(cli_args *a);
/* After the loop over cli_args_next: prints the help after --help (returns
 * CLI_OK); after an error, or when a required option is missing (the first
 * in the usage line's order is reported, with the usage line), returns
 * CLI_USAGE; otherwise returns -1: the command goes on. */
int cli_args_end(cli_args *a);
/* 1 if the current word is an option (starts with '-' and is not just "-"). */
int cli_args_is_option(const cli_args *a);
int cli_opt_string(cli_args *a, const char **out);
int cli_opt_long(cli_args *a, long min, long max, long *out);
/* --threads N (1 .. 256): the CPU threads of every session and model the
 * command makes from now on (through RLX_THREADS, the library's default). */
int cli_opt_threads(cli_args *a);
#define CLI_THREADS_HELP "CPU threads, 1 .. 256 (default: env RLX_THREADS, else the physical cores); results are the same " \
                         "for any count"
int cli_opt_float(cli_args *a, double min, double max, double *out);
int cli_opt_u64(cli_args *a, uint64_t *out);

/* A number as text, for defaults named in help strings. */
#define CLI_STR(x) CLI_STR_(x)
#define CLI_STR_(x) #x

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

/* --lora FILE[:SCALE] values (tools/cli_lora.c): cli_loras_add parses one
 * into the next adapter (its path a copy), or prints a usage error and
 * returns 0; cli_loras_free frees the paths. */
#define CLI_MAX_LORA 8
typedef struct {
  rlx_llm_lora lora[CLI_MAX_LORA];
  int32_t n;
} cli_loras;
int cli_loras_add(const char *cmd, const char *value, cli_loras *ls);
#define CLI_LORA_HELP \
  "apply a LoRA adapter (a GGUF file as llama.cpp loads it), its terms scaled by SCALE (default 1) times its " \
  "alpha / rank; at most " CLI_STR(CLI_MAX_LORA) ", each adding its own"
#define CLI_XQ8_HELP \
  "round the input of each quantized product to 8 bits first (int8 dot products, as llama.cpp does; the CPU)"
void cli_loras_free(cli_loras *ls);
/* --targets T,U,..: the bits of rlx_llm_lora_target's names (and every
 * bit for "all" when all_ok), or a usage error printed and 0. */
unsigned cli_lora_targets(const char *cmd, const char *list, int all_ok);
/* "attn_q attn_k ..." (the names, space-separated) into buf; its length. */
size_t cli_lora_target_list(char *buf, size_t cap);

/* The weighted mean negative log-likelihood of every window of a split
 * through ft's evaluation, batch windows at a time (the last batch filled
 * up with weight-0 windows, so one session serves all) (cli_perplexity.c):
 * *nll, and the weight it is over in *scored.  Progress on stderr names
 * what.  Returns 1, or prints the library's error and returns 0. */
int cli_mean_nll(const char *cmd, const char *what, rlx_llm_finetune *ft, const rlx_llm_data *d, int32_t split,
                 int32_t batch, double *nll, double *scored);

/* ---- sampling options (tools/cli_sampling.c) ----------------------------
 * generate and chat take the same sampling options: their rows in a
 * command's table start at index B (CLI_SAMPLING_OPTIONS(B)), and
 * cli_sampling_option parses the k-th (a.opt - B) into s, the --stop
 * strings into stop[CLI_MAX_STOP]. */
#define CLI_MAX_STOP 8
enum { CLI_S_MAX_TOKENS, CLI_S_TEMPERATURE, CLI_S_TOP_K, CLI_S_TOP_P, CLI_S_MIN_P, CLI_S_REPEAT_PENALTY,
       CLI_S_REPEAT_LAST_N, CLI_S_SEED, CLI_S_STOP, CLI_S_GRAMMAR, CLI_S_JSON_SCHEMA, CLI_S_COUNT };
#define CLI_SAMPLING_OPTIONS(B)                                                                                    \
  [(B) + CLI_S_MAX_TOKENS] = {"--max-tokens", NULL, "N", CLI_OPTIONAL, "tokens to generate at most"},              \
  [(B) + CLI_S_TEMPERATURE] = {"--temperature", NULL, "T", CLI_OPTIONAL, "how far sampling strays from the "        \
                               "likeliest token; a small one is greedy (see below)"},                              \
  [(B) + CLI_S_TOP_K] = {"--top-k", NULL, "K", CLI_OPTIONAL, "sample among the K likeliest tokens only (0: off)"}, \
  [(B) + CLI_S_TOP_P] = {"--top-p", NULL, "P", CLI_OPTIONAL, "sample among the likeliest tokens whose "             \
                         "probabilities add up to P (1: off)"},                                                    \
  [(B) + CLI_S_MIN_P] = {"--min-p", NULL, "P", CLI_OPTIONAL, "drop the tokens less likely than P times the "        \
                         "likeliest (0: off)"},                                                                    \
  [(B) + CLI_S_REPEAT_PENALTY] = {"--repeat-penalty", NULL, "R", CLI_OPTIONAL, "penalize the tokens of the last "   \
                                  "--repeat-last-n by R (1: off)"},                                                \
  [(B) + CLI_S_REPEAT_LAST_N] = {"--repeat-last-n", NULL, "N", CLI_OPTIONAL, "how many recent tokens the penalty "  \
                                 "looks back over (-1: all of them)"},                                             \
  [(B) + CLI_S_SEED] = {"--seed", NULL, "S", CLI_OPTIONAL, "the sampler's seed"},                                   \
  [(B) + CLI_S_STOP] = {"--stop", NULL, "TEXT", CLI_OPTIONAL | CLI_REPEATED, "stop where the output shows TEXT "    \
                        "(what comes before it is kept); at most " CLI_STR(CLI_MAX_STOP)},                    \
  [(B) + CLI_S_GRAMMAR] = {"--grammar", NULL, "FILE", CLI_OPTIONAL, "a GBNF grammar (llama.cpp's format) the "     \
                           "output follows: only tokens that continue it, and an end only where it is complete"},    \
  [(B) + CLI_S_JSON_SCHEMA] = {"--json-schema", NULL, "FILE", CLI_OPTIONAL, "a JSON Schema the output follows, "    \
                               "as the grammar it converts to (one of --grammar, --json-schema)"}
int cli_sampling_option(cli_args *a, int k, rlx_llm_sampling *s, const char **stop);
/* Frees what the options parsed into s (its grammar). */
void cli_sampling_free(rlx_llm_sampling *s);
/* A whole file, malloc'd (not NUL-terminated); NULL when it cannot be read. */
char *cli_read_file(const char *path, size_t *len);
/* The sampling defaults paragraph of --help (a cli_command's notes). */
void cli_sampling_notes(char *buf, size_t cap);
/* What stopped a generation, by rlx_llm_stats.stopped_by. */
extern const char *const cli_stopped_by[5];
/* A number in [min, max] (both inclusive, unlike cli_opt_float). */
int cli_opt_range(cli_args *a, double min, double max, float *out);

/* splitmix64: the tool's own deterministic RNG for shuffling. */
uint64_t cli_rand(uint64_t *state);

#endif
