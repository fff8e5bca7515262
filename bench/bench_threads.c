/* bench_threads.c - the native work at 1 and 2 threads (and any other
 * counts given with --threads=1,2,...): GEMM 256 / 512 / 1024 (rlx_gemm on
 * the thread pool; OpenBLAS cblas_sgemm at the same counts through
 * openblas_set_num_threads), the four vision models' training steps at
 * batch 64 (rlx_vision_train_step, the sessions' threads from RLX_THREADS),
 * elementwise adds at sizes around RLX_PARALLEL_MIN_WORK (where splitting
 * starts to pay), and with --lm=FILE a language model's 64-token prompt
 * and 32 one-token steps (rlx_llm_options.threads; --xq8: 8-bit
 * activations).  The contenders' calls are interleaved so they see the
 * same load (GEMM: rounds of BLOCK calls of each, after untimed ones for
 * WARM_MS: seen on a VM, a core idle for a while ran the next few ms of work
 * up to 2x slower, one thread or two); medians.  After each OpenBLAS block the bench sleeps
 * BLAS_SETTLE_MS: OpenBLAS's threads spin for a while after a call
 * (THREAD_TIMEOUT, 2^28 cycles by default), and on a machine with no spare
 * core they would take the core our next call's second thread needs (seen:
 * ours on 2 threads 0.9-1.0x one thread interleaved call by call,
 * 1.8-2.0x alone).  Prints one JSON object per line.
 *   bench_threads [--threads=1,2] [--iters=N] [--quick] [--lm=FILE.gguf] [--xq8] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "../src/core/pool.h"
#include "../src/cpu/kernels.h"
#include "rlx_llm.h"
#include "rlx_models.h"

void openblas_set_num_threads(int n);

#define MAX_T 8
#define BLAS_SETTLE_MS 300 /* longer than OpenBLAS's spin after a call */
#define BLOCK 3            /* GEMM calls in a row per contender and round */
#define WARM_MS 30         /* untimed calls first: cores idle for a while run slow for some ms */

static int n_threads = 2, threads[MAX_T] = {1, 2};

/* An add of n floats (a graph of one op, so the session's loop decides
 * whether to split: every add below RLX_PARALLEL_MIN_WORK / 4 elements runs
 * inline) at each thread count, in microseconds. */
static void add_sizes(int iters) {
  const int32_t sizes[4] = {1 << 13, 1 << 15, 1 << 17, 1 << 20};
  for (int i = 0; i < 4; i++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node x = rlx_input(g, "x", 1, &sizes[i], RLX_F32), y = rlx_input(g, "y", 1, &sizes[i], RLX_F32);
    rlx_node z = rlx_add(g, x, y);
    float *v = calloc((size_t)sizes[i], sizeof(float));
    rlx_session *s[MAX_T];
    for (int k = 0; k < n_threads; k++) {
      rlx_compile_options o = {RLX_DEVICE_CPU, 1, 0, threads[k]};
      if (rlx_compile(g, &z, 1, &o, &s[k]) != RLX_OK) exit(1);
      rlx_session_set_input(s[k], "x", v, (size_t)sizes[i]);
      rlx_session_set_input(s[k], "y", v, (size_t)sizes[i]);
    }
    double t[MAX_T][64];
    const int reps = (1 << 22) / sizes[i];
    for (int it = -2; it < iters; it++)
      for (int k = 0; k < n_threads; k++) {
        double t0 = now_ms();
        for (int r = 0; r < reps; r++) rlx_session_run(s[k]);
        if (it >= 0) t[k][it] = (now_ms() - t0) * 1e3 / reps;
      }
    for (int k = 0; k < n_threads; k++) {
      printf("{\"kind\":\"add\",\"n\":%d,\"threads\":%d,\"us\":%.2f}\n", (int)sizes[i], threads[k],
             median_of(t[k], iters));
      rlx_session_free(s[k]);
    }
    free(v);
    rlx_graph_free(g);
  }
}

/* A 64-token prompt, then 32 single tokens, at each thread count. */
static void language_model(const char *path, int xq8, int iters) {
  rlx_llm *m[MAX_T];
  rlx_llm_info info;
  for (int k = 0; k < n_threads; k++) {
    rlx_llm_options o = {.n_ctx = 256, .xq8 = xq8, .threads = threads[k]};
    if (rlx_llm_open_file(path, &o, &m[k]) != RLX_OK) {
      fprintf(stderr, "bench_threads: %s\n", rlx_last_error());
      exit(1);
    }
  }
  rlx_llm_get_info(m[0], &info);
  int32_t ids[96];
  for (int i = 0; i < 96; i++) ids[i] = (i * 131 + 7) % info.n_vocab;
  double prompt[MAX_T][64], gen[MAX_T][64];
  for (int it = -1; it < iters; it++)
    for (int k = 0; k < n_threads; k++) {
      rlx_llm_reset(m[k]);
      double t0 = now_ms();
      if (rlx_llm_eval(m[k], ids, 64, NULL) != RLX_OK) exit(1);
      double t1 = now_ms();
      for (int i = 0; i < 32; i++)
        if (rlx_llm_eval(m[k], ids + 64 + i, 1, NULL) != RLX_OK) exit(1);
      double t2 = now_ms();
      if (it >= 0) prompt[k][it] = 64 / ((t1 - t0) / 1e3), gen[k][it] = 32 / ((t2 - t1) / 1e3);
    }
  for (int k = 0; k < n_threads; k++) {
    printf("{\"kind\":\"lm\",\"weights\":\"%s\",\"xq8\":%d,\"threads\":%d,\"prompt_tps\":%.1f,\"gen_tps\":%.1f}\n",
           info.weight_types, xq8, threads[k], median_of(prompt[k], iters), median_of(gen[k], iters));
    rlx_llm_free(m[k]);
  }
}

static void gemm(int size, int iters) {
  const size_t n = (size_t)size * size;
  float *A = malloc(n * sizeof(float)), *B = malloc(n * sizeof(float)), *C = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) A[i] = (float)(i % 17) / 17.0f - 0.5f, B[i] = (float)(i % 13) / 13.0f - 0.5f;
  rlx_pool *pools[MAX_T];
  for (int k = 0; k < n_threads; k++)
    if (rlx_pool_acquire(threads[k], &pools[k]) != RLX_OK) exit(1);
  double ours[MAX_T][64 * BLOCK], blas[MAX_T][64 * BLOCK];
  rlx_scratch s = {0};
  for (int it = 0; it < iters; it++)
    for (int k = 0; k < n_threads; k++) {
      rlx_pool *prev = rlx_pool_use(pools[k]);
      const double warm = now_ms() + WARM_MS;
      for (int b = -1; b < BLOCK; b++) { /* a block of calls after untimed ones for WARM_MS */
        rlx_gemm_args g = {size, size, size, A, size, 0, B, size, 0, C, size, 0};
        double t0 = now_ms();
        if (rlx_gemm(&g, &s) != RLX_OK) exit(1);
        if (b >= 0) ours[k][it * BLOCK + b] = now_ms() - t0;
        else if (t0 < warm) b--;
      }
      rlx_pool_use(prev);
      openblas_set_num_threads(threads[k]);
      const double warm_blas = now_ms() + WARM_MS;
      for (int b = -1; b < BLOCK; b++) {
        double t0 = now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size, 1.0f, A, size, B, size, 0.0f, C, size);
        if (b >= 0) blas[k][it * BLOCK + b] = now_ms() - t0;
        else if (t0 < warm_blas) b--;
      }
      nanosleep(&(struct timespec){0, BLAS_SETTLE_MS * 1000000L}, NULL);
    }
  for (int k = 0; k < n_threads; k++) {
    const double flop = 2.0 * size * size * size, mo = median_of(ours[k], iters * BLOCK),
                 mb = median_of(blas[k], iters * BLOCK);
    printf("{\"kind\":\"gemm\",\"size\":%d,\"threads\":%d,\"ours_ms\":%.3f,\"ours_gflops\":%.1f,"
           "\"openblas_ms\":%.3f,\"openblas_gflops\":%.1f}\n",
           size, threads[k], mo, flop / (mo * 1e6), mb, flop / (mb * 1e6));
    rlx_pool_release(pools[k]);
  }
  rlx_scratch_release(&s);
  free(A), free(B), free(C);
}

static void vision(const char *slug, int32_t batch, int iters) {
  rlx_vision_info info;
  if (rlx_vision_info_get(slug, &info) != RLX_OK) exit(1);
  float *p = malloc(info.param_flat_len * sizeof(float)), *x = malloc((size_t)batch * info.input_len * sizeof(float));
  int32_t *labels = malloc((size_t)batch * sizeof(int32_t));
  rlx_vision_init_params(slug, 1, p, info.param_flat_len);
  rlx_vision_synthetic_batch(slug, 2, batch, x, (size_t)batch * info.input_len, labels, (size_t)batch);
  double t[MAX_T][64];
  for (int it = -2; it < iters; it++)
    for (int k = 0; k < n_threads; k++) {
      char text[8];
      snprintf(text, sizeof text, "%d", threads[k]);
      setenv("RLX_THREADS", text, 1); /* the cached session per thread count */
      float loss;
      double t0 = now_ms();
      if (rlx_vision_train_step(slug, batch, x, labels, p, 0.0f, &loss) != RLX_OK) exit(1);
      if (it >= 0) t[k][it] = now_ms() - t0;
    }
  for (int k = 0; k < n_threads; k++)
    printf("{\"kind\":\"train\",\"model\":\"%s\",\"batch\":%d,\"threads\":%d,\"ms\":%.3f}\n", slug, (int)batch,
           threads[k], median_of(t[k], iters));
  free(p), free(x), free(labels);
}

int main(int argc, char **argv) {
  int iters = 7, quick = 0, xq8 = 0;
  const char *lm = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--threads=", 10)) {
      n_threads = 0;
      for (char *s = argv[i] + 10; *s && n_threads < MAX_T; s += *s == ',')
        threads[n_threads++] = (int)strtol(s, &s, 10);
    } else if (!strncmp(argv[i], "--iters=", 8)) {
      iters = atoi(argv[i] + 8);
    } else if (!strcmp(argv[i], "--quick")) {
      quick = 1;
    } else if (!strncmp(argv[i], "--lm=", 5)) {
      lm = argv[i] + 5;
    } else if (!strcmp(argv[i], "--xq8")) {
      xq8 = 1;
    } else {
      fprintf(stderr, "usage: bench_threads [--threads=1,2] [--iters=N] [--quick] [--lm=FILE.gguf] [--xq8]\n");
      return 2;
    }
  }
  if (iters < 1 || iters > 64) iters = 7;
  if (quick) iters = 3;
  if (lm) {
    language_model(lm, xq8, iters);
    return 0;
  }
  add_sizes(iters);
  const int sizes[3] = {256, 512, 1024};
  for (int i = 0; i < 3; i++) gemm(sizes[i], iters);
  const char *models[4] = {"mnist-mlp", "mnist-cnn", "cifar-cnn", "resnet"};
  for (int m = 0; m < 4; m++) vision(models[m], quick ? 16 : 64, iters);
  return 0;
}
