/* bench_models_native.c - native speed of the ready-made models through the
 * public API (rlx_models.h): SGD training steps of the four vision models at
 * batch 1 and 64 (rlx_vision_train_step, params updated in place) and
 * forwards of the W4 transformer (rlx_transformer_next_logits).
 * Prints one JSON object per line in the shape of the TF.js anchors
 * ({host, backend, workload, median_ms, min_ms, max_ms, n, samples_per_s});
 * read by bench/bench_models.mjs.
 *
 *   bench_models_native [--budget-ms=MS] [SUBSTRING...]
 * runs the workloads whose name contains one of the substrings (all when
 * none); each gets a warm-up, then up to 50 timed calls, cut short after
 * about MS milliseconds (default 2250) once 5 calls are timed (3 for heavy
 * workloads, whose call takes over a sixth of that). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx.h"
#include "rlx_models.h"

const char *rlx_gemm_path(void); /* the GEMM path the library picked (src/cpu/gemm.c) */

#define MAX_ITERS 50
#define MIN_ITERS 5
#define MAX_WARMUP 10

static double clock_ms(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}
static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }
/* CPU time of the process: robust to other work sharing the machine. */
static double cpu_ms(void) { return clock_ms(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b) {
  double d = *(const double *)a - *(const double *)b;
  return (d > 0) - (d < 0);
}

static void die(const char *what) {
  fprintf(stderr, "bench_models_native: %s: %s\n", what, rlx_last_error());
  exit(1);
}

/* One workload: step() runs one timed call on ctx. */
typedef struct {
  char name[64];
  int items;   /* samples per call (samples/s = items / time) */
  void (*step)(void *ctx);
  void *ctx;
} workload;

/* The anchors' protocol: warm-up (a call, which compiles, then more up to
 * MAX_WARMUP or a third of the budget), then up to MAX_ITERS timed calls,
 * stopping after budget_ms once MIN_ITERS are in.  Heavy workloads (the
 * second call over a sixth of the budget) get no more warm-up: that call is
 * the first timed one, and they stop after 3. */
static void time_call(const workload *w, double *wall, double *cpu) {
  const double c = cpu_ms(), s = now_ms();
  w->step(w->ctx);
  *wall = now_ms() - s;
  *cpu = cpu_ms() - c;
}

static int measure(const workload *w, double budget_ms, double *ts, double *cpu) {
  double t0 = now_ms();
  time_call(w, &ts[0], &cpu[0]); /* warm-up; compiles */
  time_call(w, &ts[0], &cpu[0]);
  const int heavy = ts[0] > budget_ms / 6, min_iters = heavy ? 3 : MIN_ITERS;
  int n = heavy ? 1 : 0; /* a heavy workload keeps that call */
  for (int i = 2; !heavy && i < MAX_WARMUP && now_ms() - t0 < budget_ms / 3; i++) time_call(w, &ts[0], &cpu[0]);
  t0 = now_ms();
  for (; n < MAX_ITERS && (n < min_iters || now_ms() - t0 < budget_ms); n++) time_call(w, &ts[n], &cpu[n]);
  qsort(ts, (size_t)n, sizeof *ts, cmp_double);
  qsort(cpu, (size_t)n, sizeof *cpu, cmp_double);
  return n;
}

static double median(const double *sorted, int n) {
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static void report(const workload *w, const double *ts, const double *cpu, int n, const char *check) {
  const double med = median(ts, n);
  printf("{\"host\":\"native\",\"backend\":\"rlx\",\"path\":\"%s\",\"workload\":\"%s\",\"median_ms\":%.4f,"
         "\"min_ms\":%.4f,\"max_ms\":%.4f,\"n\":%d,\"samples_per_s\":%.2f,\"cpu_median_ms\":%.4f,"
         "\"check\":\"%s\"}\n",
         rlx_gemm_path(), w->name, med, ts[0], ts[n - 1], n, w->items * 1000.0 / med, median(cpu, n), check);
  fflush(stdout);
}

/* ---- vision training steps ------------------------------------------------ */

typedef struct {
  const char *slug;
  int32_t batch;
  float *x, *params;
  int32_t *labels;
  float loss;
} vision_ctx;

static void vision_step(void *p) {
  vision_ctx *c = p;
  if (rlx_vision_train_step(c->slug, c->batch, c->x, c->labels, c->params, 0.01f, &c->loss) != RLX_OK)
    die(c->slug);
}

static void run_vision(const char *slug, const char *label, int32_t batch, double budget_ms) {
  rlx_vision_info info;
  if (rlx_vision_info_get(slug, &info) != RLX_OK) die(slug);
  vision_ctx c = {slug, batch, NULL, NULL, NULL, 0};
  size_t x_len = (size_t)batch * info.input_len;
  c.x = malloc(x_len * sizeof *c.x);
  c.params = malloc(info.param_flat_len * sizeof *c.params);
  c.labels = malloc((size_t)batch * sizeof *c.labels);
  if (!c.x || !c.params || !c.labels) {
    fprintf(stderr, "bench_models_native: out of memory\n");
    exit(1);
  }
  if (rlx_vision_init_params(slug, 1, c.params, info.param_flat_len) != RLX_OK ||
      rlx_vision_synthetic_batch(slug, 2, batch, c.x, x_len, c.labels, (size_t)batch) != RLX_OK)
    die(slug);
  workload w = {{0}, batch, vision_step, &c};
  snprintf(w.name, sizeof w.name, "%s train B=%d", label, (int)batch);
  vision_step(&c); /* compiles the session; the first loss for the check */
  float first = c.loss;
  rlx_vision_init_params(slug, 1, c.params, info.param_flat_len); /* timed steps start from it too */
  double ts[MAX_ITERS], cpu[MAX_ITERS];
  int n = measure(&w, budget_ms, ts, cpu);
  char check[64];
  snprintf(check, sizeof check, "loss %.4f -> %.4f", first, c.loss);
  report(&w, ts, cpu, n, check);
  free(c.x);
  free(c.params);
  free(c.labels);
}

/* ---- the W4 transformer forward ------------------------------------------- */

typedef struct {
  rlx_transformer_config cfg;
  float tokens[64];
  float logits[256];
} transformer_ctx;

static void transformer_step(void *p) {
  transformer_ctx *c = p;
  if (rlx_transformer_next_logits(&c->cfg, c->tokens, 64, c->logits) != RLX_OK) die("transformer");
}

static void run_transformer(double budget_ms) {
  /* vocab 256, dim 128, 2 layers, 4 heads x 32, SwiGLU ffn 384, causal, T=64 */
  static transformer_ctx c = {{256, 128, 2, 4, 32, 384, 1, 0, 0}, {0}, {0}};
  for (int i = 0; i < 64; i++) c.tokens[i] = (float)((i * 37 + 11) % 256);
  workload w = {"W4 transformer fwd T=64", 1, transformer_step, &c};
  double ts[MAX_ITERS], cpu[MAX_ITERS];
  int n = measure(&w, budget_ms, ts, cpu);
  double sum = 0;
  for (int i = 0; i < 256; i++) sum += c.logits[i];
  char check[64];
  snprintf(check, sizeof check, "logits[0..2]=%.4f,%.4f,%.4f sum=%.3f", c.logits[0], c.logits[1], c.logits[2],
           sum);
  report(&w, ts, cpu, n, check);
}

/* ---- main ------------------------------------------------------------------ */

static int wanted(const char *name, int argc, char **argv) {
  int filters = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--", 2) == 0) continue;
    filters++;
    if (strstr(name, argv[i])) return 1;
  }
  return filters == 0;
}

int main(int argc, char **argv) {
  double budget_ms = 2250;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--budget-ms=", 12) == 0) budget_ms = atof(argv[i] + 12);
  static const struct {
    const char *slug, *label;
  } models[] = {{"mnist-mlp", "W1 mlp"}, {"mnist-cnn", "W2 cnn"}, {"cifar-cnn", "cifar-cnn"}, {"resnet", "resnet"}};
  static const int32_t batches[] = {1, 64};
  for (size_t m = 0; m < sizeof models / sizeof models[0]; m++)
    for (size_t b = 0; b < 2; b++) {
      char name[64];
      snprintf(name, sizeof name, "%s train B=%d", models[m].label, (int)batches[b]);
      if (wanted(name, argc, argv)) run_vision(models[m].slug, models[m].label, batches[b], budget_ms);
    }
  if (wanted("W4 transformer fwd T=64", argc, argv)) run_transformer(budget_ms);
  rlx_models_clear_cache();
  return 0;
}
