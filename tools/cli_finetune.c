/* cli_finetune.c - `rlx finetune`: LoRA fine-tuning of a GGUF language
 * model on the CPU (rlx_llm_finetune, include/rlx_llm_train.h) over the
 * windows of a text or JSONL file (rlx_llm_data), a progress line per step
 * on stderr, the validation loss now and then, and the adapter written as
 * llama.cpp loads it (rlx_llm_finetune_write_lora: f32, under a temporary
 * name and renamed).  Every option is checked, and the data read, before the first
 * step; Ctrl-C (SIGINT) stops after the current step and writes what the
 * steps so far learned (a second one ends the process); a loss that is not
 * finite stops it without writing. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define FT_BATCH RLX_LLM_FINETUNE_RUN_BATCH
#define FT_LR RLX_LLM_FINETUNE_RUN_LR
#define FT_SEED RLX_LLM_FINETUNE_RUN_SEED

enum { F_MODEL, F_DATA, F_OUT, F_VALID, F_VALID_FRACTION, F_RANK, F_ALPHA, F_TARGETS, F_SEQ, F_BATCH, F_STEPS, F_LR,
       F_OPTIMIZER, F_SEED, F_SHUFFLE, F_EVAL_EVERY, F_ADAPTER_IN, F_THREADS, F_END };
static const cli_option finetune_options[] = {
    [F_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "the GGUF language model to adapt (llama, qwen2, qwen3)"},
    [F_DATA] = {"--data", NULL, "FILE", CLI_REQUIRED, "training data: a UTF-8 text, or a .jsonl file of "
                "{\"prompt\": ..., \"completion\": ...} lines (see below)"},
    [F_OUT] = {"--out", NULL, "FILE.gguf", CLI_REQUIRED, "the adapter file to write (llama.cpp's LoRA GGUF, f32)"},
    [F_VALID] = {"--valid", NULL, "FILE", CLI_OPTIONAL, "validation data, text or .jsonl (default: windows held out "
                 "of --data)"},
    [F_VALID_FRACTION] = {"--valid-fraction", NULL, "F", CLI_OPTIONAL, "the share of --data's windows held out for "
                          "validation without --valid, 0 to below 1 (default: see below)"},
    [F_RANK] = {"--rank", NULL, "R", CLI_OPTIONAL, "the adapters' rank (default: see below)"},
    [F_ALPHA] = {"--alpha", NULL, "A", CLI_OPTIONAL, "their products are scaled by A / R (default: see below)"},
    [F_TARGETS] = {"--targets", NULL, "T,U,..", CLI_OPTIONAL, "the weights of every layer adapted, or all (default: "
                   "see below)"},
    [F_SEQ] = {"--seq", NULL, "N", CLI_OPTIONAL, "tokens per window, at most the model's context (default: see "
               "below)"},
    [F_BATCH] = {"--batch", NULL, "B", CLI_OPTIONAL, "windows per step (default " CLI_STR(FT_BATCH) ")"},
    [F_STEPS] = {"--steps", NULL, "N", CLI_OPTIONAL, "optimizer steps (default: one pass over the training windows)"},
    [F_LR] = {"--lr", NULL, "LR", CLI_OPTIONAL, "learning rate (default " CLI_STR(FT_LR) ")"},
    [F_OPTIMIZER] = {"--optimizer", NULL, "adamw|sgd", CLI_OPTIONAL, "the optimizer (default adamw)"},
    [F_SEED] = {"--seed", NULL, "S", CLI_OPTIONAL, "seeds A's initial values and the window order (default "
                CLI_STR(FT_SEED) ")"},
    [F_SHUFFLE] = {"--shuffle", NULL, "0|1", CLI_OPTIONAL, "1: the training windows in a seeded order; 0: in file "
                   "order (default 1)"},
    [F_EVAL_EVERY] = {"--eval-every", NULL, "K", CLI_OPTIONAL, "the validation loss every K steps and after the last "
                      "(default: ten times a run)"},
    [F_ADAPTER_IN] = {"--adapter-in", NULL, "FILE.gguf", CLI_OPTIONAL, "start from this adapter (one written for "
                      "this model with the same --rank, --alpha and --targets) instead of B = 0"},
    [F_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [F_END] = {NULL},
};

static void finetune_notes(char *buf, size_t cap) {
  const rlx_llm_finetune_options f = rlx_llm_finetune_default_options();
  const rlx_llm_data_options d = rlx_llm_data_default_options();
  char targets[128];
  cli_lora_target_list(targets, sizeof targets);
  snprintf(buf, cap, "Defaults: rank %d, alpha %g, targets %s, seq %d, %g of the windows held out. Targets: %s, "
           "or all. A text is one token stream cut into windows of seq + 1 tokens that start seq apart; a JSONL "
           "example is prompt + completion + EOS, only the completion and EOS scored, in windows of its own. "
           "Progress on stderr: step, training loss, validation loss when taken, tokens/s, time left. Ctrl-C "
           "stops after the current step and writes the adapter.", (int)f.rank, (double)f.alpha,
           f.targets, (int)d.seq, (double)d.valid_fraction, targets);
}

static int cli_finetune(int argc, char **argv);
const cli_command cli_finetune_command = {
    "finetune", cli_finetune, "train LoRA adapters for a GGUF language model on a text or JSONL file (CPU)",
    "Trains LoRA adapters for a GGUF language model (its weights frozen) on the windows of a text or JSONL file "
    "and writes them as an adapter file that generate --lora, perplexity --lora and llama.cpp load.",
    finetune_options, finetune_notes};

typedef struct {
  const char *model, *data, *valid, *out, *targets, *adapter_in;
  long rank, seq, batch, steps, shuffle, eval_every;
  double alpha, lr, valid_fraction;
  rlx_optimizer_kind optimizer;
  uint64_t seed;
} ft_args;

static int parse(int argc, char **argv, ft_args *o) {
  const char *cmd = "finetune", *v;
  const rlx_llm_finetune_options fd = rlx_llm_finetune_default_options();
  const rlx_llm_data_options dd = rlx_llm_data_default_options();
  *o = (ft_args){.targets = fd.targets, .rank = fd.rank, .seq = fd.seq, .batch = FT_BATCH, .shuffle = dd.shuffle,
                 .alpha = fd.alpha, .lr = FT_LR, .valid_fraction = dd.valid_fraction, .optimizer = RLX_OPT_ADAMW,
                 .seed = FT_SEED};
  cli_args a;
  cli_args_init(&a, &cli_finetune_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    char *end;
    switch (a.opt) {
    case F_THREADS: ok = cli_opt_threads(&a); break;
    case F_MODEL: ok = cli_opt_string(&a, &o->model); break;
    case F_DATA: ok = cli_opt_string(&a, &o->data); break;
    case F_OUT: ok = cli_opt_string(&a, &o->out); break;
    case F_VALID: ok = cli_opt_string(&a, &o->valid); break;
    case F_VALID_FRACTION:
      if ((ok = cli_opt_string(&a, &v)) && (o->valid_fraction = strtod(v, &end), end == v || *end ||
                                            !(o->valid_fraction >= 0 && o->valid_fraction < 1)))
        ok = (cli_usage_error(cmd, "--valid-fraction must be a number from 0 to below 1 (got '%s')", v), 0);
      break;
    case F_RANK: ok = cli_opt_long(&a, 1, 1 << 16, &o->rank); break;
    case F_ALPHA: ok = cli_opt_float(&a, 0, 1e6, &o->alpha); break;
    case F_TARGETS: ok = cli_opt_string(&a, &o->targets) && cli_lora_targets(cmd, o->targets, 1); break;
    case F_SEQ: ok = cli_opt_long(&a, 2, 1 << 20, &o->seq); break;
    case F_BATCH: ok = cli_opt_long(&a, 1, 4096, &o->batch); break;
    case F_STEPS: ok = cli_opt_long(&a, 1, 1000000000, &o->steps); break;
    case F_LR: ok = cli_opt_float(&a, 0, 10, &o->lr); break;
    case F_SEED: ok = cli_opt_u64(&a, &o->seed); break;
    case F_SHUFFLE: ok = cli_opt_long(&a, 0, 1, &o->shuffle); break;
    case F_EVAL_EVERY: ok = cli_opt_long(&a, 1, 1000000000, &o->eval_every); break;
    case F_ADAPTER_IN: ok = cli_opt_string(&a, &o->adapter_in); break;
    case F_OPTIMIZER:
      if ((ok = cli_opt_string(&a, &v))) {
        if (!strcmp(v, "adamw")) o->optimizer = RLX_OPT_ADAMW;
        else if (!strcmp(v, "sgd")) o->optimizer = RLX_OPT_SGD;
        else ok = (cli_usage_error(cmd, "--optimizer: unknown optimizer '%s' (known: adamw, sgd)", v), 0);
      }
      break;
    }
    if (!ok) return CLI_USAGE;
  }
  return cli_args_end(&a);
}

/* ---- Ctrl-C ------------------------------------------------------------------ */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends the process */
}

/* ---- setting up --------------------------------------------------------------- */
typedef struct {
  rlx_llm *m;
  rlx_llm_info info;
  rlx_llm_data *d;
  rlx_llm_data_info di;
  rlx_llm_finetune *ft;
} ft_run;

static void run_free(ft_run *r) {
  rlx_llm_finetune_free(r->ft);
  rlx_llm_data_free(r->d);
  rlx_llm_free(r->m);
}

/* The model (with --adapter-in as its adapter 0), the data and the
 * fine-tuning object; every refusal names its flag.  Returns -1 or an
 * exit code. */
static int set_up(const ft_args *o, ft_run *r) {
  const char *cmd = "finetune";
  rlx_llm_lora in = {o->adapter_in, NULL, 0, 1.0f};
  rlx_llm_options mo = {.n_ctx = 1, .lora = o->adapter_in ? &in : NULL, .n_lora = o->adapter_in ? 1 : 0};
  cli_progress(0, "loading %.120s", o->model);
  if (rlx_llm_open_file(o->model, &mo, &r->m) != RLX_OK) {
    if (o->adapter_in && strstr(rlx_last_error(), "LoRA adapter 0 ("))
      return cli_lib_error(cmd, CLI_USAGE, "--adapter-in");
    return cli_lib_error(cmd, CLI_USAGE, "--model");
  }
  rlx_llm_get_info(r->m, &r->info);
  if (o->seq > r->info.n_ctx_train)
    return cli_usage_error(cmd, "--seq %ld is above the model's context (%d)", o->seq, (int)r->info.n_ctx_train);
  const rlx_llm_data_source train = {o->data, NULL, 0, RLX_LLM_DATA_AUTO};
  const rlx_llm_data_source valid = {o->valid, NULL, 0, RLX_LLM_DATA_AUTO};
  const rlx_llm_data_options dopt = {(int32_t)o->seq, (int32_t)o->shuffle, o->seed, (float)o->valid_fraction};
  cli_progress(0, "reading and tokenizing %.120s", o->data);
  if (rlx_llm_data_new(r->m, &train, o->valid ? &valid : NULL, &dopt, &r->d) != RLX_OK)
    return cli_lib_error(cmd, CLI_USAGE, strstr(rlx_last_error(), "the validation data") ? "--valid" : "--data");
  rlx_llm_data_get_info(r->d, &r->di);
  rlx_llm_finetune_options fo = rlx_llm_finetune_default_options();
  fo.rank = (int32_t)o->rank, fo.alpha = (float)o->alpha, fo.targets = o->targets, fo.seq = (int32_t)o->seq;
  fo.seed = o->seed;
  fo.optimizer.kind = o->optimizer, fo.optimizer.lr = (float)o->lr;
  rlx_status st = rlx_llm_finetune_new(r->m, &fo, &r->ft);
  if (st != RLX_OK)
    return cli_lib_error(cmd, st == RLX_ERR_INVALID_ARG && strstr(rlx_last_error(), "rank") ? CLI_USAGE : CLI_FAILED,
                         st == RLX_ERR_INVALID_ARG && strstr(rlx_last_error(), "rank") ? "--rank" : "setting up");
  if (o->adapter_in && rlx_llm_finetune_load_lora(r->ft, 0) != RLX_OK)
    return cli_lib_error(cmd, CLI_USAGE, "--adapter-in (give the --rank, --alpha and --targets it was trained with)");
  /* --out: writable, before any step (the adapter itself goes to OUT.tmp, then OUT) */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", o->out);
  FILE *f = fopen(tmp, "wb");
  if (!f) return cli_usage_error(cmd, "--out %s: cannot write '%s'", o->out, tmp);
  fclose(f);
  remove(tmp);
  return -1;
}

/* ---- writing -------------------------------------------------------------------- */
static int write_adapter(const ft_args *o, const ft_run *r) {
  if (rlx_llm_finetune_write_lora(r->ft, r->info.arch, o->out) != RLX_OK)
    return cli_lib_error("finetune", CLI_FAILED, "--out");
  return CLI_OK;
}

/* ---- the run --------------------------------------------------------------------- */
static void eta_text(double seconds, char *buf, size_t cap) {
  const long s = (long)(seconds + 0.5);
  if (s >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else snprintf(buf, cap, "%ld:%02ld", s / 60, s % 60);
}

static int train(const ft_args *o, ft_run *r, long steps, long every) {
  const char *cmd = "finetune";
  const size_t len = (size_t)o->batch * (size_t)o->seq;
  int32_t *ids = malloc(len * sizeof *ids), *tg = malloc(len * sizeof *tg);
  float *mask = malloc(len * sizeof *mask);
  int code = ids && tg && mask ? CLI_OK : cli_usage_error(cmd, "out of memory for a batch");
  const int has_valid = r->di.n_windows[RLX_LLM_DATA_VALID] > 0;
  double first = NAN, last = NAN, valid = NAN, scored;
  const double t0 = cli_now();
  long step = 0;
  struct sigaction sa = {0}, old;
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, &old);
  while (code == CLI_OK && step < steps && !interrupted) {
    float loss;
    if (rlx_llm_data_windows(r->d, RLX_LLM_DATA_TRAIN, step * o->batch, (int32_t)o->batch, ids, tg, mask) != RLX_OK ||
        rlx_llm_finetune_step(r->ft, ids, tg, mask, (int32_t)o->batch, &loss) != RLX_OK) {
      code = cli_lib_error(cmd, CLI_FAILED, "training");
      break;
    }
    step++;
    if (!isfinite(loss)) {
      cli_progress_clear();
      fprintf(stderr, "rlx %s: the training loss is %g at step %ld (try a lower --lr); no adapter written\n", cmd,
              (double)loss, step);
      code = CLI_FAILED;
      break;
    }
    if (step == 1) first = loss;
    last = loss;
    char line[160], eta[32];
    int at = snprintf(line, sizeof line, "step %ld/%ld  loss %.4f", step, steps, (double)loss);
    if (has_valid && (step % every == 0 || step == steps || interrupted)) {
      if (!cli_mean_nll(cmd, "validation", r->ft, r->d, RLX_LLM_DATA_VALID, (int32_t)o->batch, &valid, &scored)) {
        code = CLI_FAILED;
        break;
      }
      at += snprintf(line + at, sizeof line - (size_t)at, "  valid %.4f", valid);
    }
    const double spent = cli_now() - t0;
    eta_text(spent / (double)step * (double)(steps - step), eta, sizeof eta);
    cli_progress(step == steps || interrupted, "%s  %.0f tokens/s  ETA %s", line, (double)step * (double)len / spent,
                 eta);
  }
  sigaction(SIGINT, &old, NULL);
  free(ids), free(tg), free(mask);
  if (code != CLI_OK) return code;
  if (interrupted) fprintf(stderr, "interrupted: stopped after step %ld of %ld\n", step, steps);
  if ((code = write_adapter(o, r)) != CLI_OK) return code;
  cli_progress_clear();
  printf("training loss %.4f -> %.4f over %ld step%s%s\n", first, last, step, step == 1 ? "" : "s",
         interrupted ? " (interrupted)" : "");
  if (has_valid && isfinite(valid)) printf("validation loss %.4f (perplexity %.4f)\n", valid, exp(valid));
  printf("wrote %s: %d pairs of rank %ld on %s, alpha %g\n", o->out, (int)rlx_llm_finetune_pair_count(r->ft), o->rank,
         o->targets, o->alpha);
  return CLI_OK;
}

static int cli_finetune(int argc, char **argv) {
  ft_args o;
  int code = parse(argc, argv, &o);
  if (code >= 0) return code;
  ft_run r = {0};
  if ((code = set_up(&o, &r)) >= 0) return run_free(&r), code;
  const int32_t n_train = r.di.n_windows[RLX_LLM_DATA_TRAIN];
  const long steps = o.steps ? o.steps : (n_train + o.batch - 1) / o.batch;
  const long every = o.eval_every ? o.eval_every : (steps >= 10 ? steps / 10 : 1);
  cli_progress_clear();
  printf("model %s: %s, %d layers; %d pairs of rank %ld on %s, alpha %g\n", o.model, r.info.arch,
         (int)r.info.n_layer, (int)rlx_llm_finetune_pair_count(r.ft), o.rank, o.targets, o.alpha);
  printf("data %s: %d training windows of %ld tokens (%lld scored)", o.data, (int)n_train, o.seq,
         (long long)r.di.n_scored[RLX_LLM_DATA_TRAIN]);
  printf(", %d validation window%s%s%s\n", (int)r.di.n_windows[RLX_LLM_DATA_VALID],
         r.di.n_windows[RLX_LLM_DATA_VALID] == 1 ? "" : "s", o.valid ? " from " : " held out",
         o.valid ? o.valid : "");
  printf("%ld steps of %ld windows, %s, lr %g, seed %llu%s\n", steps, o.batch,
         o.optimizer == RLX_OPT_SGD ? "sgd" : "adamw", o.lr, (unsigned long long)o.seed,
         o.adapter_in ? ", from --adapter-in" : "");
  code = train(&o, &r, steps, every);
  run_free(&r);
  return code;
}
