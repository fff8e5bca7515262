/* cli_bench.c - `rlx info [M]` (a model's input, params and sizes) and
 * `rlx bench` (training-step throughput of each model, SGD on synthetic
 * data, after warm-up steps).  bench prints its table on stdout and, on
 * stderr while it runs, which model (k/n) is in which phase: compiling,
 * warm-up, timing (with the steps done when timing takes a while). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define BENCH_WARMUP 2
#define PROGRESS_PLAIN_S 2.0 /* seconds between "timing k/N" lines when stderr is not a terminal */
#define PROGRESS_TTY_S 0.1   /* ... and between in-place updates on a terminal */

/* "[d0, d1, ...]" into buf. */
static const char *format_dims(char *buf, size_t cap, const int32_t *dims, int32_t rank) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int32_t d = 0; d < rank && n < cap; d++) n += (size_t)snprintf(buf + n, cap - n, "%s%d", d ? ", " : "", (int)dims[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
  return buf;
}

static void print_info(const rlx_vision_info *info) {
  printf("%s: %s\n", info->slug, info->title);
  char dims[64];
  printf("  input:   %s per sample (%zu values), %d classes\n", format_dims(dims, sizeof dims, info->input_dims, info->input_rank),
         info->input_len, (int)info->num_classes);
  printf("  params:\n");
  for (int32_t k = 0; k < info->n_params; k++) {
    printf("    %-8s %-16s %8zu\n", info->param_names[k],
           format_dims(dims, sizeof dims, info->param_dims[k], info->param_ranks[k]), info->param_sizes[k]);
  }
  printf("  total:   %zu params in %d tensors (%zu bytes as float32)\n", info->param_flat_len, (int)info->n_params,
         info->param_flat_len * sizeof(float));
  printf("  trains on: %s%s%s\n", info->train_cpu ? "cpu " : "", info->train_webgpu ? "webgpu " : "",
         info->train_webgl ? "webgl" : "");
}

static int cli_info(int argc, char **argv);
static const cli_option info_options[] = {
    {"M", NULL, NULL, CLI_OPTIONAL, "one model (default: every model)"},
    {NULL},
};
const cli_command cli_info_command = {"info", cli_info, "a model's input, params and sizes (every model without M)",
                                      "Prints a vision model's input, its params (name, shape, size), their total "
                                      "and the backends it trains on.",
                                      info_options, NULL};

static int cli_info(int argc, char **argv) {
  rlx_vision_info info;
  const char *model = NULL;
  cli_args a;
  cli_args_init(&a, &cli_info_command, argc, argv);
  while (cli_args_next(&a)) model = a.name;
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  if (model) {
    if (!cli_model_info("info", model, &info)) return CLI_USAGE;
    print_info(&info);
    return CLI_OK;
  }
  for (int32_t i = 0; i < rlx_vision_count(); i++) {
    if (rlx_vision_info_get(rlx_vision_slug(i), &info) != RLX_OK)
      return cli_lib_error("info", CLI_FAILED, "model table");
    printf("%s", i ? "\n" : "");
    print_info(&info);
  }
  return CLI_OK;
}

/* samples/s of one model's training step; < 0 on failure (printed).  k/n:
 * which model of how many, for the progress lines. */
static double bench_model(const rlx_vision_info *info, int32_t batch, long steps, double *ms_per_step, int k,
                          int n) {
  cli_progress_state *pr = cli_progress_get();
  double result = -1;
  rlx_graph *g = rlx_graph_new();
  rlx_session *s = NULL;
  rlx_node logits, loss, params[RLX_VISION_MAX_PARAMS];
  size_t x_len = (size_t)batch * info->input_len;
  float *x = malloc(x_len * sizeof(float));
  int32_t *labels = malloc((size_t)batch * sizeof(int32_t));
  float *flat = malloc(info->param_flat_len * sizeof(float));
  if (!g || !x || !labels || !flat) {
    fprintf(stderr, "rlx bench: out of memory\n");
    goto done;
  }
  cli_progress(0, "bench %d/%d %s: compiling", k, n, info->slug);
  if (!cli_build_model("bench", g, info, batch, &logits, &loss, params)) goto done;
  rlx_optimizer sgd = {RLX_OPT_SGD, 0.001f, 0, 0, 0, 0, 0};
  if (rlx_compile_train(g, loss, params, info->n_params, &sgd, NULL, &s) != RLX_OK ||
      rlx_vision_init_params(info->slug, 1, flat, info->param_flat_len) != RLX_OK ||
      cli_set_params(s, info, flat) != RLX_OK ||
      rlx_vision_synthetic_batch(info->slug, 7, batch, x, x_len, labels, (size_t)batch) != RLX_OK ||
      rlx_session_set_input(s, "x", x, x_len) != RLX_OK ||
      rlx_session_set_input_i32(s, "labels", labels, (size_t)batch) != RLX_OK) {
    cli_lib_error("bench", CLI_FAILED, info->slug);
    goto done;
  }
  cli_progress(0, "bench %d/%d %s: warm-up, %d steps", k, n, info->slug, BENCH_WARMUP);
  double t0 = 0;
  for (long i = 0; i < BENCH_WARMUP + steps; i++) {
    if (i == BENCH_WARMUP) {
      cli_progress(0, "bench %d/%d %s: timing %ld steps", k, n, info->slug, steps);
      t0 = cli_now();
    } else if (i > BENCH_WARMUP && cli_now() - pr->last >= (pr->tty ? PROGRESS_TTY_S : PROGRESS_PLAIN_S)) {
      cli_progress(0, "bench %d/%d %s: timing, %ld/%ld steps done", k, n, info->slug, i - BENCH_WARMUP, steps);
    }
    if (rlx_session_run(s) != RLX_OK) {
      cli_lib_error("bench", CLI_FAILED, info->slug);
      goto done;
    }
  }
  double dt = cli_now() - t0;
  if (!pr->tty) cli_progress(0, "bench %d/%d %s: done, %ld steps in %.1f s", k, n, info->slug, steps, dt);
  *ms_per_step = 1e3 * dt / (double)steps;
  result = (double)steps * batch / dt;
done:
  cli_progress_clear(); /* an in-place line goes before the row (or the error) */
  rlx_session_free(s);
  rlx_graph_free(g);
  free(x);
  free(labels);
  free(flat);
  return result;
}

#define BENCH_BATCH 32
#define BENCH_STEPS 10
enum { B_MODEL, B_BATCH, B_STEPS, B_THREADS, B_END };
static const cli_option bench_options[] = {
    [B_MODEL] = {"--model", "-m", "M", CLI_OPTIONAL, "one model (default: every model; rlx info lists them)"},
    [B_BATCH] = {"--batch", NULL, "B", CLI_OPTIONAL, "samples per step (default " CLI_STR(BENCH_BATCH) ")"},
    [B_STEPS] = {"--steps", NULL, "N", CLI_OPTIONAL, "timed steps per model (default "
                 CLI_STR(BENCH_STEPS) ")"},
    [B_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [B_END] = {NULL},
};
static int cli_bench(int argc, char **argv);
const cli_command cli_bench_command = {
    "bench", cli_bench, "training-step throughput (samples/s) on synthetic data",
    "Times the training step (forward, backward, SGD update) of each model on synthetic data after "
    CLI_STR(BENCH_WARMUP) " warm-up steps: a table of ms/step and samples/s on stdout; which model is in which "
    "phase on stderr.",
    bench_options, NULL};

static int cli_bench(int argc, char **argv) {
  const char *model = NULL;
  long batch = BENCH_BATCH, steps = BENCH_STEPS;
  cli_args a;
  cli_args_init(&a, &cli_bench_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 0;
    switch (a.opt) {
    case B_THREADS: ok = cli_opt_threads(&a); break;
    case B_MODEL: ok = cli_opt_string(&a, &model); break;
    case B_BATCH: ok = cli_opt_long(&a, 1, 4096, &batch); break;
    case B_STEPS: ok = cli_opt_long(&a, 1, 1000000, &steps); break;
    }
    if (!ok) return CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  rlx_vision_info info;
  if (model && !cli_model_info("bench", model, &info)) return CLI_USAGE;
  printf("training step (forward, backward, SGD update), synthetic data, batch %ld, %ld steps after %d warm-up\n",
         batch, steps, BENCH_WARMUP);
  printf("%-10s %10s %12s\n", "model", "ms/step", "samples/s");
  fflush(stdout);
  int n = model ? 1 : rlx_vision_count();
  for (int32_t i = 0; i < n; i++) {
    if (!model && rlx_vision_info_get(rlx_vision_slug(i), &info) != RLX_OK) {
      return cli_lib_error("bench", CLI_FAILED, "model table");
    }
    double ms, rate = bench_model(&info, (int32_t)batch, steps, &ms, i + 1, n);
    if (rate < 0) return CLI_FAILED;
    printf("%-10s %10.2f %12.0f\n", info.slug, ms, rate);
    fflush(stdout);
  }
  return CLI_OK;
}
