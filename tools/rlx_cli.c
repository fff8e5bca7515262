/* rlx_cli.c - the `rlx` command-line tool: main, the list of commands
 * (each describes its options in its own tools/cli_*.c file; rlx help and
 * rlx <command> --help print them), help and version, and the helpers the
 * commands share (error messages, model building on the public API,
 * timing, progress lines).
 *
 * Results go to stdout, progress while a command runs to stderr (one
 * line updated in place on a terminal, plain lines otherwise); the exit
 * codes are cli.h's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static int run_help(int argc, char **argv);
static int run_version(int argc, char **argv);

static const cli_option help_options[] = {
    {"COMMAND", NULL, NULL, CLI_OPTIONAL, "a command: its usage and options (rlx COMMAND --help prints the same)"},
    {NULL},
};
static const cli_command help_command = {"help", run_help, "this text, or a command's usage and options", NULL,
                                         help_options, NULL};
static const cli_option no_options[] = {{NULL}};
static const cli_command version_command = {"version", run_version, "the library's version (also: rlx --version)",
                                            NULL, no_options, NULL};

const cli_command *const cli_commands[] = {
    &cli_train_command,    &cli_info_command,        &cli_bench_command,     &cli_generate_command,
    &cli_tokenize_command, &cli_next_tokens_command, &cli_gguf_info_command, &cli_export_gguf_command,
    &cli_chat_command,      &cli_make_lora_command, &cli_export_lora_command, &cli_finetune_command,
    &cli_perplexity_command, &help_command,
    &version_command,       NULL,
};

/* "mnist-cnn, mnist-mlp, ..." from the library's model table. */
static void print_models(FILE *f) {
  for (int32_t i = 0; i < rlx_vision_count(); i++) fprintf(f, "%s%s", i ? ", " : "", rlx_vision_slug(i));
}

static void print_overview(FILE *f) {
  cli_print_overview(f);
  fprintf(f, "\nResults go to stdout; progress of train, bench, finetune and perplexity to stderr\n(updated in place "
             "on a terminal, plain lines otherwise; 2>/dev/null hides it).\n"
             "Exit status: %d ok, %d a failure while running, %d bad usage or unreadable data.\n\nmodels: ",
          CLI_OK, CLI_FAILED, CLI_USAGE);
  print_models(f);
  fprintf(f, "\n");
}

static int run_help(int argc, char **argv) {
  cli_args a;
  const char *name = NULL;
  cli_args_init(&a, &help_command, argc, argv);
  while (cli_args_next(&a)) name = a.name;
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  if (!name) {
    print_overview(stdout);
    return CLI_OK;
  }
  const cli_command *c = cli_find_command(name);
  if (!c) return cli_usage_error("help", "unknown command '%s'", name);
  cli_print_help(c);
  return CLI_OK;
}

static int run_version(int argc, char **argv) {
  cli_args a;
  cli_args_init(&a, &version_command, argc, argv);
  while (cli_args_next(&a)) {
  }
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  printf("rlx %s\n", rlx_version());
  return CLI_OK;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  cli_progress_clear();
  fprintf(stderr, "rlx %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (cli_find_command(cmd) && strcmp(cmd, "help") != 0)
    fprintf(stderr, "\n(run 'rlx %s --help' for usage)\n", cmd);
  else
    fprintf(stderr, "\n(run 'rlx help' for usage)\n");
  return CLI_USAGE;
}

int cli_lib_error(const char *cmd, int code, const char *what) {
  cli_progress_clear();
  fprintf(stderr, "rlx %s: %s: %s\n", cmd, what, rlx_last_error());
  return code;
}

/* ---- models ---------------------------------------------------------------- */

int cli_model_info(const char *cmd, const char *slug, rlx_vision_info *info) {
  if (rlx_vision_info_get(slug, info) == RLX_OK) return 1;
  cli_progress_clear();
  fprintf(stderr, "rlx %s: unknown model '%s' (known: ", cmd, slug);
  print_models(stderr);
  fprintf(stderr, ")\n(run 'rlx info' for what they are)\n");
  return 0;
}


/* Adds the model to g and finds its param nodes by name. */
int cli_build_model(const char *cmd, rlx_graph *g, const rlx_vision_info *info, int32_t batch, rlx_node *logits,
                    rlx_node *loss, rlx_node *params) {
  if (rlx_vision_build(g, info->slug, batch, logits, loss) != RLX_OK) {
    cli_lib_error(cmd, CLI_FAILED, "building the model");
    return 0;
  }
  for (int32_t k = 0; k < info->n_params; k++)
    if ((params[k] = rlx_graph_find(g, info->param_names[k])) == RLX_NO_NODE) {
      fprintf(stderr, "rlx %s: cannot locate param '%s' of %s in its graph\n", cmd, info->param_names[k], info->slug);
      return 0;
    }
  return 1;
}

rlx_status cli_set_params(rlx_session *s, const rlx_vision_info *info, const float *flat) {
  for (int32_t k = 0; k < info->n_params; k++) {
    rlx_status st = rlx_session_set_param(s, info->param_names[k], flat, info->param_sizes[k]);
    if (st != RLX_OK) return st;
    flat += info->param_sizes[k];
  }
  return RLX_OK;
}

rlx_status cli_get_params(const rlx_session *s, const rlx_vision_info *info, float *flat) {
  for (int32_t k = 0; k < info->n_params; k++) {
    rlx_status st = rlx_session_get_param(s, info->param_names[k], flat, info->param_sizes[k]);
    if (st != RLX_OK) return st;
    flat += info->param_sizes[k];
  }
  return RLX_OK;
}

int cli_opt_threads(cli_args *a) {
  long n;
  if (!cli_opt_long(a, 1, 256, &n)) return 0;
  char text[16];
  snprintf(text, sizeof text, "%ld", n);
  setenv("RLX_THREADS", text, 1);
  return 1;
}

double cli_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- progress ------------------------------------------------------------------ */

static cli_progress_state progress_state = {-1, 0, 0};

cli_progress_state *cli_progress_get(void) {
  if (progress_state.tty < 0) progress_state.tty = isatty(STDERR_FILENO);
  return &progress_state;
}

void cli_progress(int keep, const char *fmt, ...) {
  cli_progress_state *p = cli_progress_get();
  char line[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fflush(stdout); /* what stdout printed so far comes first when both go to one file */
  if (p->tty > 0) {
    fprintf(stderr, "\r\033[K%s%s", line, keep ? "\n" : "");
    p->open = !keep;
  } else {
    fprintf(stderr, "%s\n", line);
  }
  fflush(stderr);
  p->last = cli_now();
}

void cli_progress_clear(void) {
  cli_progress_state *p = &progress_state;
  if (p->tty > 0 && p->open) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  p->open = 0;
}

uint64_t cli_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- main -------------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (argc < 2) {
    print_overview(stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) return run_help(argc, argv);
  if (strcmp(cmd, "--version") == 0) return run_version(argc, argv);
  const cli_command *c = cli_find_command(cmd);
  if (c) return c->run(argc, argv);
  fprintf(stderr, "rlx: unknown command '%s' (run 'rlx help' for the commands)\n", cmd);
  return CLI_USAGE;
}
