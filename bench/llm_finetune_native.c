/* llm_finetune_native.c - LoRA fine-tuning speed of one GGUF model natively
 * (one thread), for bench/llm_finetune.mjs: the model's first training
 * windows of a text (seq tokens each, in file order), a warm-up step (the
 * compile), then `steps` timed optimizer steps of `batch` windows, each
 * starting from the same adapters (set back after every step, so every
 * step computes the same thing).  Prints one JSON line:
 *
 *   { "loss": first step's loss, "tokens_per_s": training tokens (batch
 *     seq per step) over the timed steps' wall time, "ms_per_step": [...],
 *     "peak_rss_bytes": the process's peak resident set, "file_bytes",
 *     "adapter_bytes": A and B as f32 }
 *
 *   llm_finetune_native MODEL.gguf TEXT [--seq 128] [--batch 4] [--steps 5]
 *                       [--rank 8] [--targets attn_q,attn_v] [--optimizer adamw|sgd]
 *                       [--dump-ids FILE]
 *
 * --dump-ids writes the windows for bench/peft_lora.py: batch * (seq + 1)
 * little-endian int32, each window's ids and then its last target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_clock.h"
#include "rlx_models.h"

static int fail(const char *what) {
  fprintf(stderr, "llm_finetune_native: %s: %s\n", what, rlx_last_error());
  return 1;
}

/* Every pair's A and B saved (save 1) or set back (save 0). */
static int pairs(rlx_llm_finetune *ft, float **store, int save, size_t *bytes) {
  int32_t n = rlx_llm_finetune_pair_count(ft);
  size_t total = 0;
  for (int32_t i = 0; i < n; i++) {
    rlx_llm_finetune_pair_info p;
    if (rlx_llm_finetune_pair(ft, i, &p) != RLX_OK) return -1;
    size_t na = (size_t)p.rank * p.n_in, nb = (size_t)p.n_out * p.rank;
    total += (na + nb) * sizeof(float);
    if (save && !(store[i] = malloc((na + nb) * sizeof(float)))) return -1;
    rlx_status s = save ? rlx_llm_finetune_get_pair(ft, p.name, store[i], na, store[i] + na, nb)
                        : rlx_llm_finetune_set_pair(ft, p.name, store[i], na, store[i] + na, nb);
    if (s != RLX_OK) return -1;
  }
  if (bytes) *bytes = total;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: llm_finetune_native MODEL.gguf TEXT [--seq N] [--batch B] [--steps N] [--rank R] "
                    "[--targets T] [--optimizer adamw|sgd]\n");
    return 2;
  }
  rlx_llm_finetune_options o = rlx_llm_finetune_default_options();
  int32_t batch = 4, steps = 5;
  const char *dump = NULL;
  for (int i = 3; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--seq")) o.seq = atoi(v);
    else if (!strcmp(k, "--batch")) batch = atoi(v);
    else if (!strcmp(k, "--steps")) steps = atoi(v);
    else if (!strcmp(k, "--rank")) o.rank = atoi(v), o.alpha = 2.0f * o.rank;
    else if (!strcmp(k, "--targets")) o.targets = v;
    else if (!strcmp(k, "--dump-ids")) dump = v;
    else if (!strcmp(k, "--optimizer")) o.optimizer.kind = !strcmp(v, "sgd") ? RLX_OPT_SGD : RLX_OPT_ADAMW;
    else {
      fprintf(stderr, "llm_finetune_native: unknown option %s\n", k);
      return 2;
    }
  }
  if (batch < 1 || steps < 1) {
    fprintf(stderr, "llm_finetune_native: --batch and --steps must be >= 1\n");
    return 2;
  }
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(argv[1], NULL, &m) != RLX_OK) return fail("open");
  rlx_llm_data_options dopt = rlx_llm_data_default_options();
  dopt.seq = o.seq, dopt.shuffle = 0, dopt.valid_fraction = 0;
  rlx_llm_data_source src = {.path = argv[2], .format = RLX_LLM_DATA_TEXT};
  rlx_llm_data *d = NULL;
  rlx_llm_finetune *ft = NULL;
  if (rlx_llm_data_new(m, &src, NULL, &dopt, &d) != RLX_OK) return fail("data");
  if (rlx_llm_finetune_new(m, &o, &ft) != RLX_OK) return fail("finetune_new");
  size_t n = (size_t)batch * o.seq;
  int32_t *ids = malloc(n * sizeof *ids), *targets = malloc(n * sizeof *targets);
  float *mask = malloc(n * sizeof *mask), **store = calloc((size_t)rlx_llm_finetune_pair_count(ft), sizeof *store);
  double *ms = malloc((size_t)steps * sizeof *ms);
  size_t adapter_bytes = 0;
  if (!ids || !targets || !mask || !store || !ms) return fprintf(stderr, "llm_finetune_native: out of memory\n"), 1;
  if (rlx_llm_data_windows(d, RLX_LLM_DATA_TRAIN, 0, batch, ids, targets, mask) != RLX_OK) return fail("windows");
  if (dump) {
    FILE *f = fopen(dump, "wb");
    int ok = f != NULL;
    for (int32_t w = 0; ok && w < batch; w++)
      ok = fwrite(ids + (size_t)w * o.seq, sizeof *ids, (size_t)o.seq, f) == (size_t)o.seq &&
           fwrite(targets + (size_t)w * o.seq + o.seq - 1, sizeof *ids, 1, f) == 1;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) return fprintf(stderr, "llm_finetune_native: cannot write %s\n", dump), 1;
  }
  if (pairs(ft, store, 1, &adapter_bytes) != 0) return fail("pairs");
  float loss = 0, l;
  if (rlx_llm_finetune_step(ft, ids, targets, mask, batch, &loss) != RLX_OK) return fail("warm-up step");
  double total = 0;
  for (int32_t s = 0; s < steps; s++) {
    if (pairs(ft, store, 0, NULL) != 0) return fail("set pairs");
    double t0 = now_ms();
    if (rlx_llm_finetune_step(ft, ids, targets, mask, batch, &l) != RLX_OK) return fail("step");
    ms[s] = now_ms() - t0, total += ms[s];
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  struct stat st;
  long long file_bytes = stat(argv[1], &st) == 0 ? (long long)st.st_size : -1;
  printf("{\"loss\": %.7g, \"tokens_per_s\": %.2f, \"ms_per_step\": [", loss, (double)n * steps / (total / 1e3));
  for (int32_t s = 0; s < steps; s++) printf("%s%.1f", s ? ", " : "", ms[s]);
  printf("], \"peak_rss_bytes\": %lld, \"file_bytes\": %lld, \"adapter_bytes\": %zu}\n", (long long)ru.ru_maxrss * 1024,
         file_bytes, adapter_bytes);
  for (int32_t i = 0; i < rlx_llm_finetune_pair_count(ft); i++) free(store[i]);
  free(store), free(ids), free(targets), free(mask), free(ms);
  rlx_llm_finetune_free(ft);
  rlx_llm_data_free(d);
  rlx_llm_free(m);
  return 0;
}
