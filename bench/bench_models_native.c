/* bench_models_native.c - native speed of the ready-made models through the
 * public API (rlx_models.h): SGD training steps of the four vision models at
 * batch 1 and 64 (rlx_vision_train_step, params updated in place) and
 * forwards of the W4 transformer (the graph of bench/w4_graph.mjs with tfjs's
 * weights, from --w4=FILE, compiled through rlx.h).
 * Prints one JSON object per line in the shape of the TF.js anchors
 * ({host, backend, workload, median_ms, min_ms, max_ms, n, samples_per_s});
 * read by bench/bench_models.mjs.
 *
 *   bench_models_native [--budget-ms=MS] [--w4=FILE] [SUBSTRING...]
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

/* extra: more JSON members (",\"key\":value..."), or "". */
static void report(const workload *w, const double *ts, const double *cpu, int n, const char *check,
                   const char *extra) {
  const double med = median(ts, n);
  printf("{\"host\":\"native\",\"backend\":\"rlx\",\"path\":\"%s\",\"workload\":\"%s\",\"median_ms\":%.4f,"
         "\"min_ms\":%.4f,\"max_ms\":%.4f,\"n\":%d,\"samples_per_s\":%.2f,\"cpu_median_ms\":%.4f,"
         "\"check\":\"%s\"%s}\n",
         rlx_gemm_path(), w->name, med, ts[0], ts[n - 1], n, w->items * 1000.0 / med, median(cpu, n), check, extra);
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
  char check[64], extra[48];
  snprintf(check, sizeof check, "loss %.4f -> %.4f", first, c.loss);
  snprintf(extra, sizeof extra, ",\"first_loss\":%.9g", first);
  report(&w, ts, cpu, n, check, extra);
  free(c.x);
  free(c.params);
  free(c.labels);
}

/* ---- the W4 transformer forward -------------------------------------------
 * The graph and weights come from bench/w4_graph.mjs (serializeW4, written by
 * bench/bench_models.mjs and passed as --w4=FILE): the anchors' model with
 * tfjs's weights, so that the logits can be checked against tfjs's.  The
 * file is the recorded builder calls, one a line, replayed here through the
 * public API (rlx_input, rlx_param, rlx_op_node), then "output ID", then
 * "feed NAME COUNT" lines, then "data" and the float32 values of the feeds. */

#define W4_MAX_NODES 512
#define W4_MAX_FEEDS 64

typedef struct {
  rlx_session *s;
  float logits[4096];
  size_t n_logits;
} transformer_ctx;

static void transformer_step(void *p) {
  transformer_ctx *c = p;
  if (rlx_session_run(c->s) != RLX_OK ||
      rlx_session_read_output(c->s, 0, c->logits, c->n_logits) != RLX_OK)
    die("W4 forward");
}

static void w4_bad(const char *path, int line, const char *why) {
  fprintf(stderr, "bench_models_native: %s:%d: %s\n", path, line, why);
  exit(1);
}

/* Reads n integers from *p (strtol), advancing it. */
static int read_ints(char **p, int32_t *out, int n) {
  for (int i = 0; i < n; i++) {
    char *end;
    long v = strtol(*p, &end, 10);
    if (end == *p) return -1;
    out[i] = (int32_t)v, *p = end;
  }
  return 0;
}

static rlx_session *w4_load(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "bench_models_native: cannot open %s\n", path);
    exit(1);
  }
  rlx_graph *g = rlx_graph_new();
  static rlx_node ids[W4_MAX_NODES];
  static char feed_name[W4_MAX_FEEDS][64];
  size_t feed_len[W4_MAX_FEEDS];
  int n_ids = 0, n_feeds = 0, lineno = 0;
  rlx_node out = RLX_NO_NODE;
  char line[4096], name[64], kind[16];
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *p = line;
    int used = 0;
    if (strcmp(line, "data\n") == 0) break;
    if (sscanf(p, "%15s %63s%n", kind, name, &used) != 2) w4_bad(path, lineno, "expected: KIND NAME ...");
    p += used;
    int32_t dims[RLX_MAX_RANK + 1], rank;
    if (!strcmp(kind, "output") || !strcmp(kind, "feed")) {
      long v = strtol(name, NULL, 10);
      if (!strcmp(kind, "output")) {
        if (v < 0 || v >= n_ids) w4_bad(path, lineno, "output: unknown node");
        out = ids[v];
        continue;
      }
      if (n_feeds == W4_MAX_FEEDS || strlen(name) >= sizeof feed_name[0] ||
          read_ints(&p, &rank, 1) || rank <= 0)
        w4_bad(path, lineno, "feed NAME COUNT");
      strcpy(feed_name[n_feeds], name);
      feed_len[n_feeds++] = (size_t)rank;
      continue;
    }
    if (n_ids == W4_MAX_NODES) w4_bad(path, lineno, "too many nodes");
    if (!strcmp(kind, "input") || !strcmp(kind, "param")) {
      char dtype[8] = "f32";
      if (!strcmp(kind, "input")) {
        if (sscanf(p, "%7s%n", dtype, &used) != 1) w4_bad(path, lineno, "input NAME DTYPE RANK DIMS...");
        p += used;
      }
      if (read_ints(&p, &rank, 1) || rank < 0 || rank > RLX_MAX_RANK || read_ints(&p, dims, rank))
        w4_bad(path, lineno, "bad rank or dims");
      ids[n_ids++] = !strcmp(kind, "param") ? rlx_param(g, name, rank, dims)
                                            : rlx_input(g, name, rank, dims, strcmp(dtype, "i32") ? RLX_F32 : RLX_I32);
    } else if (!strcmp(kind, "op")) {
      rlx_op op = rlx_op_from_name(name);
      int32_t n_in, in[RLX_MAX_INPUTS], n_ia, ia[RLX_MAX_IATTR], n_fa;
      float fa[RLX_MAX_FATTR];
      if (op == RLX_OP_COUNT) w4_bad(path, lineno, "unknown op");
      if (read_ints(&p, &n_in, 1) || n_in < 0 || n_in > RLX_MAX_INPUTS || read_ints(&p, in, n_in))
        w4_bad(path, lineno, "bad inputs");
      for (int i = 0; i < n_in; i++) {
        if (in[i] < 0 || in[i] >= n_ids) w4_bad(path, lineno, "input node not defined yet");
        in[i] = ids[in[i]];
      }
      if (read_ints(&p, &n_ia, 1) || n_ia < 0 || n_ia > RLX_MAX_IATTR || read_ints(&p, ia, n_ia) ||
          read_ints(&p, &n_fa, 1) || n_fa < 0 || n_fa > RLX_MAX_FATTR)
        w4_bad(path, lineno, "bad attributes");
      for (int i = 0; i < n_fa; i++) {
        char *end;
        fa[i] = strtof(p, &end);
        if (end == p) w4_bad(path, lineno, "bad float attribute");
        p = end;
      }
      ids[n_ids++] = rlx_op_node(g, op, in, n_in, ia, n_ia, fa, n_fa);
    } else {
      w4_bad(path, lineno, "unknown line kind");
    }
  }
  if (rlx_graph_status(g) != RLX_OK) {
    fprintf(stderr, "bench_models_native: %s: %s\n", path, rlx_graph_error(g));
    exit(1);
  }
  if (out == RLX_NO_NODE) w4_bad(path, lineno, "no output line");
  rlx_session *s = NULL;
  if (rlx_compile(g, &out, 1, NULL, &s) != RLX_OK) die("W4 compile");
  rlx_graph_free(g);
  for (int i = 0; i < n_feeds; i++) {
    float *data = malloc(feed_len[i] * sizeof *data);
    if (!data || fread(data, sizeof *data, feed_len[i], f) != feed_len[i]) w4_bad(path, lineno, "short data");
    /* Params by name, else the input of that name. */
    if (rlx_session_set_param(s, feed_name[i], data, feed_len[i]) != RLX_OK &&
        rlx_session_set_input(s, feed_name[i], data, feed_len[i]) != RLX_OK)
      die(feed_name[i]);
    free(data);
  }
  fclose(f);
  return s;
}

static void run_transformer(const char *w4_path, double budget_ms) {
  static transformer_ctx c;
  c.s = w4_load(w4_path);
  c.n_logits = rlx_session_output_len(c.s, 0);
  if (c.n_logits == 0 || c.n_logits > sizeof c.logits / sizeof c.logits[0]) die("W4 output");
  workload w = {"W4 transformer fwd T=64", 1, transformer_step, &c};
  double ts[MAX_ITERS], cpu[MAX_ITERS];
  int n = measure(&w, budget_ms, ts, cpu);
  double sum = 0;
  for (size_t i = 0; i < c.n_logits; i++) sum += c.logits[i];
  char check[96];
  snprintf(check, sizeof check, "logits[0..2]=%.4f,%.4f,%.4f sum=%.3f", c.logits[0], c.logits[1], c.logits[2],
           sum);
  /* Every logit, for the comparison with tfjs's in bench_models.mjs. */
  static char extra[4096 * 16 + 16];
  size_t len = (size_t)snprintf(extra, sizeof extra, ",\"logits\":[");
  for (size_t i = 0; i < c.n_logits; i++)
    len += (size_t)snprintf(extra + len, sizeof extra - len, "%s%.9g", i ? "," : "", c.logits[i]);
  snprintf(extra + len, sizeof extra - len, "]");
  report(&w, ts, cpu, n, check, extra);
  rlx_session_free(c.s);
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
  const char *w4_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--budget-ms=", 12) == 0) budget_ms = atof(argv[i] + 12);
    else if (strncmp(argv[i], "--w4=", 5) == 0) w4_path = argv[i] + 5;
    else if (strncmp(argv[i], "--", 2) == 0) {
      fprintf(stderr, "usage: %s [--budget-ms=MS] [--w4=FILE] [SUBSTRING...]\n", argv[0]);
      return 2;
    }
  }
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
  if (wanted("W4 transformer fwd T=64", argc, argv)) {
    if (w4_path) run_transformer(w4_path, budget_ms);
    else fprintf(stderr, "bench_models_native: W4 skipped: no --w4=FILE (bench/bench_models.mjs writes it)\n");
  }
  rlx_models_clear_cache();
  return 0;
}
