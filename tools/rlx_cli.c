/* rlx_cli.c - the `rlx` command-line tool: main, the sub-command dispatch,
 * and the helpers the sub-commands share (argument parsing with clear
 * messages, model building on the public API, timing).
 *
 *   rlx train --model M [--epochs E] [--batch B] [--lr LR] [--optimizer sgd|momentum|adam]
 *             [--schedule cosine|constant] [--seed S] [--limit N] [--data DIR] [--log-every N]
 *   rlx info [M]
 *   rlx bench [--model M] [--batch B] [--steps N]
 *
 * Results go to stdout, progress while train and bench run to stderr (one
 * line updated in place on a terminal, plain lines otherwise).
 * Exit codes: 0 ok, 1 failure while running, 2 bad usage or unreadable data. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char usage_text[] =
    "usage: rlx <command> [options]\n"
    "\n"
    "commands:\n"
    "  train --model M [--epochs E] [--batch B] [--lr LR] [--optimizer sgd|momentum|adam]\n"
    "        [--schedule cosine|constant] [--seed S] [--limit N] [--data DIR] [--log-every N]\n"
    "        train a vision model and print its test accuracy; mnist-cnn and mnist-mlp\n"
    "        train on Fashion-MNIST (DIR, default $RLX_DATA_DIR or\n"
    "        /usr/share/datasets/fashion-mnist), cifar-cnn and resnet on synthetic data;\n"
    "        a progress line every N steps (default: a tenth of an epoch)\n"
    "  info [M]     a model's input, params and sizes (all models without M)\n"
    "  bench [--model M] [--batch B] [--steps N]\n"
    "               training-step throughput (samples/s) on synthetic data\n"
    "  generate --model FILE.gguf (--prompt TEXT | --prompt-ids I,J,..) [--max-tokens N]\n"
    "        [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R]\n"
    "        [--repeat-last-n N] [--seed S] [--stop TEXT]... [--ctx N] [--ids] [--xq8]\n"
    "        generate text with a GGUF language model (llama, qwen2, qwen3), streamed to\n"
    "        stdout; greedy unless --temperature >= 1e-6; speed to stderr; --ids ends with\n"
    "        a JSON line {\"prompt_ids\": [...], \"ids\": [...]}; --xq8 rounds the input\n"
    "        of each quantized product to 8 bits first (int8 dot products, as llama.cpp)\n"
    "  tokenize --model FILE.gguf --text TEXT [--text TEXT]... [--no-bos] [--no-special]\n"
    "               the token ids of each text as a JSON array, one line each (BOS\n"
    "               as the file asks: the ids generate feeds the model)\n"
    "  next-tokens --model FILE.gguf --ids I,J,.. [--follow K,L,..] [--xq8]\n"
    "               the greedy next token, its runner-up and their logit margin after\n"
    "               the prompt and after each forced token\n"
    "  gguf-info FILE.gguf  the file's header; a language model's shape, weight types\n"
    "               and memory\n"
    "  export-gguf --out FILE.gguf [--type f32|f16|q8_0|q4_0|...] [--vocab V] [--dim D]\n"
    "        [--layers L] [--heads H] [--ffn F] [--seed S]\n"
    "               the transformer (seeded weights) as a llama GGUF file\n"
    "  help         this text\n"
    "\n"
    "Results go to stdout; progress of train and bench to stderr (updated in place\n"
    "on a terminal, plain lines otherwise; 2>/dev/null hides it).\n"
    "\n"
    "models: mnist-cnn, mnist-mlp, cifar-cnn, resnet\n";

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  cli_progress_clear();
  fprintf(stderr, "rlx %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n(run 'rlx help' for usage)\n");
  return CLI_USAGE;
}

int cli_lib_error(const char *cmd, int code, const char *what) {
  cli_progress_clear();
  fprintf(stderr, "rlx %s: %s: %s\n", cmd, what, rlx_last_error());
  return code;
}

/* ---- arguments -------------------------------------------------------------- */

void cli_args_init(cli_args *a, const char *cmd, int argc, char **argv, int first) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  a->argc = argc;
  a->argv = argv;
  a->i = first - 1;
}

int cli_args_next(cli_args *a) {
  a->i++;
  a->inline_value = NULL;
  if (a->i >= a->argc) return 0;
  const char *w = a->argv[a->i];
  const char *eq = strncmp(w, "--", 2) == 0 ? strchr(w, '=') : NULL;
  if (eq && (size_t)(eq - w) < sizeof a->name_buf) {
    memcpy(a->name_buf, w, (size_t)(eq - w));
    a->name_buf[eq - w] = 0;
    a->name = a->name_buf;
    a->inline_value = eq + 1;
  } else {
    a->name = w;
  }
  return 1;
}

int cli_args_is_option(const cli_args *a) { return a->name[0] == '-' && a->name[1] != 0; }

int cli_opt_string(cli_args *a, const char **out) {
  if (a->inline_value) {
    if (!a->inline_value[0]) {
      cli_usage_error(a->cmd, "%s needs a value", a->name);
      return 0;
    }
    *out = a->inline_value;
    return 1;
  }
  if (a->i + 1 >= a->argc || strncmp(a->argv[a->i + 1], "--", 2) == 0 || !a->argv[a->i + 1][0]) {
    cli_usage_error(a->cmd, "%s needs a value", a->name);
    return 0;
  }
  *out = a->argv[++a->i];
  return 1;
}

int cli_opt_long(cli_args *a, long min, long max, long *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (end == v || *end || errno == ERANGE || x < min || x > max) {
    cli_usage_error(a->cmd, "%s must be a whole number from %ld to %ld (got '%s')", a->name, min, max, v);
    return 0;
  }
  *out = x;
  return 1;
}

int cli_opt_float(cli_args *a, double min, double max, double *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || *end || !isfinite(x) || !(x > min) || x > max) {
    cli_usage_error(a->cmd, "%s must be a number above %g and at most %g (got '%s')", a->name, min, max, v);
    return 0;
  }
  *out = x;
  return 1;
}

int cli_opt_u64(cli_args *a, uint64_t *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (v[0] < '0' || v[0] > '9' || *end || errno == ERANGE) {
    cli_usage_error(a->cmd, "%s must be a whole number from 0 to 18446744073709551615 (got '%s')", a->name, v);
    return 0;
  }
  *out = (uint64_t)x;
  return 1;
}

/* ---- models ---------------------------------------------------------------- */

int cli_model_info(const char *cmd, const char *slug, rlx_vision_info *info) {
  if (rlx_vision_info_get(slug, info) == RLX_OK) return 1;
  cli_usage_error(cmd, "unknown model '%s' (known: mnist-cnn, mnist-mlp, cifar-cnn, resnet)", slug);
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
    fputs(usage_text, stderr);
    return CLI_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    fputs(usage_text, stdout);
    return CLI_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("rlx %s\n", rlx_version());
    return CLI_OK;
  }
  if (strcmp(cmd, "train") == 0) return cli_train(argc, argv);
  if (strcmp(cmd, "info") == 0) return cli_info(argc, argv);
  if (strcmp(cmd, "bench") == 0) return cli_bench(argc, argv);
  if (strcmp(cmd, "generate") == 0) return cli_generate(argc, argv);
  if (strcmp(cmd, "tokenize") == 0) return cli_tokenize(argc, argv);
  if (strcmp(cmd, "next-tokens") == 0) return cli_next_tokens(argc, argv);
  if (strcmp(cmd, "gguf-info") == 0) return cli_gguf_info(argc, argv);
  if (strcmp(cmd, "export-gguf") == 0) return cli_export_gguf(argc, argv);
  fprintf(stderr, "rlx: unknown command '%s'\n\n%s", cmd, usage_text);
  return CLI_USAGE;
}
