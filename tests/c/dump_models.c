/* dump_models.c - native reference outputs of the model entry points of
 * include/rlx_models.h (MLP forward/loss/grads/train step, transformer
 * logits, vision init/batch/forward/train step) for fixed inputs, written as
 * JSON for tests/node/web_api.test.mjs, which runs the same calls through
 * web/pkg/rlx_web.js in wasm and compares.  Inputs are written too, so the
 * test does not have to regenerate them.  Floats are printed with %.9g,
 * which round-trips float32 exactly.
 *
 *   build/tests/dump_models build/tests/models_native.json */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_models.h"

static FILE *out;
static int failed;

static void fail(const char *what, rlx_status st) {
  fprintf(stderr, "dump_models: %s failed: %s (%s)\n", what, rlx_last_error(), rlx_status_name(st));
  failed = 1;
}

/* Deterministic values in [-scale, scale). */
static void fill(float *v, size_t n, uint32_t seed, float scale) {
  uint32_t s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    v[i] = ((float)(s >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
  }
}

/* "name": [v[0], v[stride], ...] (every stride-th value). */
static void floats(const char *name, const float *v, size_t n, size_t stride, int last) {
  fprintf(out, "\"%s\":[", name);
  for (size_t i = 0; i < n; i += stride) fprintf(out, i ? ",%.9g" : "%.9g", (double)v[i]);
  fprintf(out, "]%s", last ? "" : ",");
}

static void ints(const char *name, const int32_t *v, size_t n, int last) {
  fprintf(out, "\"%s\":[", name);
  for (size_t i = 0; i < n; i++) fprintf(out, i ? ",%d" : "%d", (int)v[i]);
  fprintf(out, "]%s", last ? "" : ",");
}

/* ---- MLP ------------------------------------------------------------------ */
static void dump_mlp(int32_t rows, int32_t in, int32_t hid, int32_t o, uint32_t seed, float lr, int last) {
  size_t nw1 = (size_t)in * hid, nw2 = (size_t)hid * o, np = nw1 + hid + nw2 + o;
  float *x = malloc(sizeof(float) * rows * in), *t = malloc(sizeof(float) * rows * o);
  float *p = malloc(sizeof(float) * np), *y = malloc(sizeof(float) * rows * o);
  float *grads = malloc(sizeof(float) * (np + 1)), *next = malloc(sizeof(float) * np), loss = 0;
  fill(x, (size_t)rows * in, seed, 1.0f);
  fill(t, (size_t)rows * o, seed + 1, 1.0f);
  fill(p, np, seed + 2, 0.5f);
  rlx_mlp m = {rows, in, hid, o, p, p + nw1, p + nw1 + hid, p + nw1 + hid + nw2};
  rlx_status st;
  if ((st = rlx_mlp_forward(&m, x, y)) != RLX_OK) fail("rlx_mlp_forward", st);
  if ((st = rlx_mlp_loss(&m, x, t, &loss)) != RLX_OK) fail("rlx_mlp_loss", st);
  if ((st = rlx_mlp_grads(&m, x, t, grads)) != RLX_OK) fail("rlx_mlp_grads", st);
  if ((st = rlx_mlp_train_step(&m, x, t, lr, next)) != RLX_OK) fail("rlx_mlp_train_step", st);
  fprintf(out, "{\"rows\":%d,\"in\":%d,\"hid\":%d,\"out\":%d,\"lr\":%.9g,", (int)rows, (int)in, (int)hid, (int)o,
          (double)lr);
  floats("x", x, (size_t)rows * in, 1, 0);
  floats("t", t, (size_t)rows * o, 1, 0);
  floats("w1", m.w1, nw1, 1, 0);
  floats("b1", m.b1, (size_t)hid, 1, 0);
  floats("w2", m.w2, nw2, 1, 0);
  floats("b2", m.b2, (size_t)o, 1, 0);
  floats("y", y, (size_t)rows * o, 1, 0);
  fprintf(out, "\"loss\":%.9g,", (double)loss);
  floats("grads", grads, np + 1, 1, 0);
  floats("params", next, np, 1, 1);
  fprintf(out, "}%s\n", last ? "" : ",");
  free(x), free(t), free(p), free(y), free(grads), free(next);
}

/* ---- transformer ------------------------------------------------------------ */
static void dump_transformer(const rlx_transformer_config *c, const float *tokens, int32_t n, int last) {
  float *next = malloc(sizeof(float) * c->vocab), *all = malloc(sizeof(float) * c->vocab * n);
  rlx_status st;
  if ((st = rlx_transformer_next_logits(c, tokens, n, next)) != RLX_OK) fail("rlx_transformer_next_logits", st);
  if ((st = rlx_transformer_logits(c, tokens, n, all)) != RLX_OK) fail("rlx_transformer_logits", st);
  fprintf(out, "{\"vocab\":%d,\"dim\":%d,\"n_layers\":%d,\"n_heads\":%d,\"head_dim\":%d,\"ffn\":%d,\"seed\":%llu,",
          (int)c->vocab, (int)c->dim, (int)c->n_layers, (int)c->n_heads, (int)c->head_dim, (int)c->ffn,
          (unsigned long long)c->seed);
  floats("tokens", tokens, (size_t)n, 1, 0);
  floats("next_logits", next, (size_t)c->vocab, 1, 0);
  floats("logits", all, (size_t)c->vocab * n, 1, 1);
  fprintf(out, "}%s\n", last ? "" : ",");
  free(next), free(all);
}

/* ---- vision ------------------------------------------------------------------ */
#define VISION_STRIDE 37 /* every 37th param / input value is written */

static void dump_vision(const char *slug, uint64_t seed, int32_t batch, float lr, int last) {
  rlx_vision_info info;
  rlx_status st = rlx_vision_info_get(slug, &info);
  if (st != RLX_OK) {
    fail("rlx_vision_info_get", st);
    return;
  }
  size_t xn = (size_t)batch * info.input_len, pn = info.param_flat_len;
  float *x = malloc(sizeof(float) * xn), *p = malloc(sizeof(float) * pn), *logits = malloc(sizeof(float) * batch * info.num_classes);
  int32_t *labels = malloc(sizeof(int32_t) * batch);
  float loss = 0;
  if ((st = rlx_vision_init_params(slug, seed, p, pn)) != RLX_OK) fail("rlx_vision_init_params", st);
  if ((st = rlx_vision_synthetic_batch(slug, seed, batch, x, xn, labels, batch)) != RLX_OK)
    fail("rlx_vision_synthetic_batch", st);
  fprintf(out, "{\"slug\":\"%s\",\"seed\":%llu,\"batch\":%d,\"lr\":%.9g,\"stride\":%d,\"param_flat_len\":%zu,", slug,
          (unsigned long long)seed, (int)batch, (double)lr, VISION_STRIDE, pn);
  floats("init_sample", p, pn, VISION_STRIDE, 0);
  floats("x_sample", x, xn, VISION_STRIDE, 0);
  ints("labels", labels, (size_t)batch, 0);
  if ((st = rlx_vision_forward(slug, batch, x, p, logits)) != RLX_OK) fail("rlx_vision_forward", st);
  floats("logits", logits, (size_t)batch * info.num_classes, 1, 0);
  if ((st = rlx_vision_train_step(slug, batch, x, labels, p, lr, &loss)) != RLX_OK) fail("rlx_vision_train_step", st);
  fprintf(out, "\"loss\":%.9g,", (double)loss);
  floats("updated_sample", p, pn, VISION_STRIDE, 1);
  fprintf(out, "}%s\n", last ? "" : ",");
  free(x), free(p), free(logits), free(labels);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT.json\n", argv[0]);
    return 2;
  }
  out = fopen(argv[1], "w");
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  fprintf(out, "{\"mlp\":[\n");
  dump_mlp(3, 4, 5, 2, 1, 0.05f, 0);
  dump_mlp(1, 3, 7, 3, 2, 0.1f, 0);
  dump_mlp(16, 1, 16, 1, 3, 0.01f, 1);
  fprintf(out, "],\"transformer\":[\n");
  const float tokens[] = {3, 1, 4, 1, 5};
  rlx_transformer_config tiny = {32, 32, 2, 4, 8, 64, 7, 0, 0};
  dump_transformer(&tiny, tokens, 5, 0);
  rlx_transformer_config one = {17, 12, 1, 3, 4, 20, 123456789012ull, 0, 0};
  dump_transformer(&one, tokens, 3, 1);
  fprintf(out, "],\"vision\":[\n");
  int32_t n = rlx_vision_count();
  for (int32_t i = 0; i < n; i++) dump_vision(rlx_vision_slug(i), 11 + (uint64_t)i, 2, 0.01f, i == n - 1);
  fprintf(out, "]}\n");
  if (fclose(out) != 0) failed = 1;
  rlx_models_clear_cache();
  if (failed) remove(argv[1]);
  return failed;
}
