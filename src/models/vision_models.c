/* vision_models.c - the four vision classifiers: their table (slugs, params
 * in order with shapes), the graph builders, deterministic initialization
 * and synthetic batches.  The cached forward/train entry points are in
 * vision_api.c.
 *
 * Conventions shared by every model:
 *  - inputs "x" [batch, input_dims...] (f32) and "labels" [batch] (i32);
 *    logits [batch, 10]; loss = mean softmax cross-entropy over the batch.
 *  - conv weights are [O, C, KH, KW] with a bias param [O], added by
 *    broadcasting after a reshape to [O, 1, 1] inside the graph;
 *    fully connected weights are [in, out] with a bias [out].
 *  - init: biases (rank-1 params) are exactly zero; every weight element is
 *    uniform in [-sqrt(2 / fan_in), +sqrt(2 / fan_in)) (He-style bound, as the
 *    reference uses), fan_in = in for [in, out] and C*KH*KW for [O, C, KH, KW].
 *    Element j of param k draws rlx_uniform(rlx_hash64(seed, k), j), so a
 *    value depends only on (seed, param index, element).
 *  - synthetic batch: x[i] = 2 * rlx_uniform(rlx_hash64(seed, SYNTH_STREAM), i) - 1
 *    (uniform in [-1, 1)), label of sample i = (seed + i) mod 10.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "vision.h"

#define NUM_CLASSES 10
#define SYNTH_STREAM UINT64_C(0x73796e7468) /* "synth": apart from param indices */

typedef struct {
  const char *name;
  int32_t rank;
  int32_t dims[4];
} param_spec;

/* Adds the layers from x to the logits; p holds the param nodes in order. */
typedef rlx_node (*logits_fn)(rlx_graph *g, rlx_node x, int32_t batch, const rlx_node *p);

typedef struct {
  const char *slug, *alias, *title;
  int32_t input_rank;
  int32_t input_dims[3];
  int32_t n_params;
  param_spec params[RLX_VISION_MAX_PARAMS];
  logits_fn logits;
} model_def;

/* ---- layers ---------------------------------------------------------------- */

#define D(...) ((const int32_t[]){__VA_ARGS__})

/* x[N, C, H, W] conv w[O, C, K, K] + b[O] -> [N, O, OH, OW] */
static rlx_node conv_bias(rlx_graph *g, rlx_node x, rlx_node w, rlx_node b, int32_t stride, int32_t pad) {
  rlx_conv2d_params cp = {stride, stride, pad, pad, 1, 1, 1};
  int32_t bias_dims[RLX_MAX_RANK] = {0};
  rlx_node_shape(g, b, bias_dims);
  rlx_node y = rlx_conv2d(g, x, w, &cp);
  return rlx_add(g, y, rlx_reshape(g, b, 3, D(bias_dims[0], 1, 1)));
}

static rlx_node max_pool2(rlx_graph *g, rlx_node x) {
  rlx_pool2d_params pp = {2, 2, 2, 2, 0, 0};
  return rlx_max_pool2d(g, x, &pp);
}

/* x[N, in] w[in, out] + b[out] -> [N, out] */
static rlx_node dense(rlx_graph *g, rlx_node x, rlx_node w, rlx_node b) { return rlx_add(g, rlx_matmul(g, x, w), b); }

/* ---- the models ------------------------------------------------------------ */

/* [N,1,28,28] -> conv3x3 1->8, relu, pool -> [N,8,13,13] -> conv3x3 8->16, relu,
 * pool -> [N,16,5,5] -> flatten 400 -> fc 10 */
static rlx_node mnist_cnn(rlx_graph *g, rlx_node x, int32_t batch, const rlx_node *p) {
  rlx_node h = max_pool2(g, rlx_relu(g, conv_bias(g, x, p[0], p[1], 1, 0)));
  h = max_pool2(g, rlx_relu(g, conv_bias(g, h, p[2], p[3], 1, 0)));
  return dense(g, rlx_reshape(g, h, 2, D(batch, 400)), p[4], p[5]);
}

/* [N,784] -> fc 128, relu -> fc 10 */
static rlx_node mnist_mlp(rlx_graph *g, rlx_node x, int32_t batch, const rlx_node *p) {
  (void)batch;
  return dense(g, rlx_relu(g, dense(g, x, p[0], p[1])), p[2], p[3]);
}

/* [N,3,32,32] -> 3 x (conv3x3 pad 1, relu, pool): 32, 64, 128 channels ->
 * [N,128,4,4] -> flatten 2048 -> fc 10 */
static rlx_node cifar_cnn(rlx_graph *g, rlx_node x, int32_t batch, const rlx_node *p) {
  rlx_node h = x;
  for (int i = 0; i < 3; i++) h = max_pool2(g, rlx_relu(g, conv_bias(g, h, p[2 * i], p[2 * i + 1], 1, 1)));
  return dense(g, rlx_reshape(g, h, 2, D(batch, 2048)), p[6], p[7]);
}

/* [N,3,32,32] -> stem conv 32, relu -> block1 (identity skip) -> block2
 * (stride 2, 1x1 conv skip) -> [N,64,16,16] -> global avg pool -> fc 10 */
static rlx_node resnet(rlx_graph *g, rlx_node x, int32_t batch, const rlx_node *p) {
  (void)batch;
  rlx_node stem = rlx_relu(g, conv_bias(g, x, p[0], p[1], 1, 1));
  rlx_node a = rlx_relu(g, conv_bias(g, stem, p[2], p[3], 1, 1));
  rlx_node h1 = rlx_relu(g, rlx_add(g, conv_bias(g, a, p[4], p[5], 1, 1), stem));
  rlx_node c = rlx_relu(g, conv_bias(g, h1, p[6], p[7], 2, 1));
  rlx_node d = conv_bias(g, c, p[8], p[9], 1, 1);
  rlx_node skip = conv_bias(g, h1, p[10], p[11], 2, 0);
  rlx_node h2 = rlx_relu(g, rlx_add(g, d, skip));
  return dense(g, rlx_global_avg_pool(g, h2), p[12], p[13]);
}

/* Training on every backend is the design target: the CPU executor trains
 * all four now; the WebGPU and WebGL executors are meant to run every
 * forward and backward op on the device (the reference could train only
 * mnist-mlp on WebGL), so until they exist these flags state the goal. */
static const model_def models[] = {
    {"mnist-cnn", "mnist_cnn", "MNIST CNN", 3, {1, 28, 28}, 6,
     {{"conv1_w", 4, {8, 1, 3, 3}},
      {"conv1_b", 1, {8}},
      {"conv2_w", 4, {16, 8, 3, 3}},
      {"conv2_b", 1, {16}},
      {"fc_w", 2, {400, 10}},
      {"fc_b", 1, {10}}},
     mnist_cnn},
    {"mnist-mlp", "mnist_mlp", "MNIST MLP", 1, {784}, 4,
     {{"w1", 2, {784, 128}}, {"b1", 1, {128}}, {"w2", 2, {128, 10}}, {"b2", 1, {10}}},
     mnist_mlp},
    {"cifar-cnn", "cifar_cnn", "CIFAR-10 CNN", 3, {3, 32, 32}, 8,
     {{"conv1_w", 4, {32, 3, 3, 3}},
      {"conv1_b", 1, {32}},
      {"conv2_w", 4, {64, 32, 3, 3}},
      {"conv2_b", 1, {64}},
      {"conv3_w", 4, {128, 64, 3, 3}},
      {"conv3_b", 1, {128}},
      {"fc_w", 2, {2048, 10}},
      {"fc_b", 1, {10}}},
     cifar_cnn},
    {"resnet", "resnet-cifar", "ResNet (CIFAR-10)", 3, {3, 32, 32}, 14,
     {{"stem_w", 4, {32, 3, 3, 3}},
      {"stem_b", 1, {32}},
      {"b1a_w", 4, {32, 32, 3, 3}},
      {"b1a_b", 1, {32}},
      {"b1b_w", 4, {32, 32, 3, 3}},
      {"b1b_b", 1, {32}},
      {"b2a_w", 4, {64, 32, 3, 3}},
      {"b2a_b", 1, {64}},
      {"b2b_w", 4, {64, 64, 3, 3}},
      {"b2b_b", 1, {64}},
      {"skip_w", 4, {64, 32, 1, 1}},
      {"skip_b", 1, {64}},
      {"fc_w", 2, {64, 10}},
      {"fc_b", 1, {10}}},
     resnet},
};
#define N_MODELS ((int32_t)(sizeof models / sizeof models[0]))

/* ---- lookup and info ------------------------------------------------------- */

static size_t spec_numel(const param_spec *s) {
  size_t n = 1;
  for (int32_t d = 0; d < s->rank; d++) n *= (size_t)s->dims[d];
  return n;
}

static rlx_status find_model(const char *slug, const model_def **out) {
  if (!slug) return rlx_error(RLX_ERR_INVALID_ARG, "vision: the model slug is NULL");
  for (int32_t i = 0; i < N_MODELS; i++)
    if (strcmp(slug, models[i].slug) == 0 || strcmp(slug, models[i].alias) == 0) {
      *out = &models[i];
      return RLX_OK;
    }
  return rlx_error(RLX_ERR_NOT_FOUND,
                   "vision: unknown model '%.64s' (known: mnist-cnn, mnist-mlp, cifar-cnn, resnet; "
                   "aliases mnist_cnn, mnist_mlp, cifar_cnn, resnet-cifar)",
                   slug);
}

int32_t rlx_vision_count(void) { return N_MODELS; }

const char *rlx_vision_slug(int32_t i) { return i >= 0 && i < N_MODELS ? models[i].slug : NULL; }

static void fill_info(const model_def *m, rlx_vision_info *info) {
  memset(info, 0, sizeof *info);
  info->slug = m->slug;
  info->title = m->title;
  info->input_rank = m->input_rank;
  info->input_len = 1;
  for (int32_t d = 0; d < m->input_rank; d++) {
    info->input_dims[d] = m->input_dims[d];
    info->input_len *= (size_t)m->input_dims[d];
  }
  info->num_classes = NUM_CLASSES;
  info->n_params = m->n_params;
  for (int32_t k = 0; k < m->n_params; k++) {
    const param_spec *s = &m->params[k];
    info->param_names[k] = s->name;
    info->param_ranks[k] = s->rank;
    memcpy(info->param_dims[k], s->dims, sizeof s->dims);
    info->param_sizes[k] = spec_numel(s);
    info->param_flat_len += info->param_sizes[k];
  }
  info->train_cpu = info->train_webgpu = info->train_webgl = 1;
}

rlx_status rlx_vision_info_get(const char *slug, rlx_vision_info *info) {
  const model_def *m;
  rlx_status st = find_model(slug, &m);
  if (st != RLX_OK) return st;
  if (!info) return rlx_error(RLX_ERR_INVALID_ARG, "vision_info_get: info is NULL");
  fill_info(m, info);
  return RLX_OK;
}

/* ---- graphs ---------------------------------------------------------------- */

rlx_status rlx_vision_build_with_params(rlx_graph *g, const char *slug, int32_t batch, rlx_node *logits,
                                        rlx_node *loss, rlx_node *params) {
  const model_def *m;
  rlx_status st = find_model(slug, &m);
  if (st != RLX_OK) return st;
  if (!g || !logits || !loss || !params)
    return rlx_error(RLX_ERR_INVALID_ARG, "vision_build: the graph and the logits/loss out-pointers must not be NULL");
  if (batch <= 0) return rlx_error(RLX_ERR_INVALID_ARG, "vision_build: batch must be at least 1 (got %d)", (int)batch);
  int32_t xdims[4] = {batch, 0, 0, 0};
  memcpy(xdims + 1, m->input_dims, (size_t)m->input_rank * sizeof(int32_t));
  rlx_node x = rlx_input(g, "x", m->input_rank + 1, xdims, RLX_F32);
  rlx_node labels = rlx_input(g, "labels", 1, &batch, RLX_I32);
  for (int32_t k = 0; k < m->n_params; k++) params[k] = rlx_param(g, m->params[k].name, m->params[k].rank, m->params[k].dims);
  rlx_node out = m->logits(g, x, batch, params);
  rlx_node mean_ce = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, out, labels), D(0), 1, 0);
  if (rlx_graph_status(g) != RLX_OK)
    return rlx_error(rlx_graph_status(g), "vision_build(%s, batch %d): %s", m->slug, (int)batch, rlx_graph_error(g));
  *logits = out;
  *loss = mean_ce;
  return RLX_OK;
}

rlx_status rlx_vision_build(rlx_graph *g, const char *slug, int32_t batch, rlx_node *logits, rlx_node *loss) {
  rlx_node params[RLX_VISION_MAX_PARAMS];
  return rlx_vision_build_with_params(g, slug, batch, logits, loss, params);
}

/* ---- data ------------------------------------------------------------------ */

static size_t fan_in(const param_spec *s) {
  if (s->rank == 2) return (size_t)s->dims[0];        /* [in, out] */
  return (size_t)s->dims[1] * s->dims[2] * s->dims[3]; /* [O, C, KH, KW] */
}

rlx_status rlx_vision_init_params(const char *slug, uint64_t seed, float *flat, size_t len) {
  const model_def *m;
  rlx_status st = find_model(slug, &m);
  if (st != RLX_OK) return st;
  rlx_vision_info info;
  fill_info(m, &info);
  if (!flat) return rlx_error(RLX_ERR_INVALID_ARG, "vision_init_params: flat is NULL");
  if (len != info.param_flat_len)
    return rlx_error(RLX_ERR_INVALID_ARG, "vision_init_params: %s has %zu param values, got len %zu", m->slug,
                     info.param_flat_len, len);
  for (int32_t k = 0; k < m->n_params; k++) {
    const param_spec *s = &m->params[k];
    size_t n = info.param_sizes[k];
    if (s->rank == 1) {
      memset(flat, 0, n * sizeof(float));
    } else {
      float bound = sqrtf(2.0f / (float)fan_in(s));
      uint64_t stream = rlx_hash64(seed, (uint64_t)k);
      for (size_t j = 0; j < n; j++) flat[j] = (2.0f * rlx_uniform(stream, j) - 1.0f) * bound;
    }
    flat += n;
  }
  return RLX_OK;
}

rlx_status rlx_vision_synthetic_batch(const char *slug, uint64_t seed, int32_t batch, float *x, size_t x_len,
                                      int32_t *labels, size_t labels_len) {
  const model_def *m;
  rlx_status st = find_model(slug, &m);
  if (st != RLX_OK) return st;
  rlx_vision_info info;
  fill_info(m, &info);
  size_t want;
  if (batch <= 0) return rlx_error(RLX_ERR_INVALID_ARG, "vision_synthetic_batch: batch must be at least 1 (got %d)", (int)batch);
  if (!x || !labels) return rlx_error(RLX_ERR_INVALID_ARG, "vision_synthetic_batch: x and labels must not be NULL");
  if (!rlx_mul_size((size_t)batch, info.input_len, &want) || x_len != want || labels_len != (size_t)batch)
    return rlx_error(RLX_ERR_INVALID_ARG,
                     "vision_synthetic_batch: %s with batch %d needs x_len %zu and labels_len %d (got %zu and %zu)",
                     m->slug, (int)batch, (size_t)batch * info.input_len, (int)batch, x_len, labels_len);
  uint64_t stream = rlx_hash64(seed, SYNTH_STREAM);
  for (size_t i = 0; i < want; i++) x[i] = 2.0f * rlx_uniform(stream, i) - 1.0f;
  for (int32_t i = 0; i < batch; i++) labels[i] = (int32_t)((seed + (uint64_t)i) % NUM_CLASSES);
  return RLX_OK;
}
