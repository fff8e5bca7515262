/* grad_train.c - the small models of grad_train.h. */
#include "grad_train.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

static void fill(float *x, size_t n, unsigned seed, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = scale * (float)((double)((seed * 2654435761u + i * 40503u) % 2000u) / 1000.0 - 1.0);
}

train_model train_model_new(int is_cnn) {
  train_model m = {rlx_graph_new(), 0, {0}, 0, {0}, {0}, is_cnn};
  rlx_graph *g = m.g;
  if (!is_cnn) { /* x[8,6] -> tanh(x w1 + b1) w2 + b2 -> mean cross-entropy over 3 classes */
    m.n_params = 4;
    size_t sizes[4] = {30, 5, 15, 3};
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    for (int i = 0; i < 4; i++) m.sizes[i] = sizes[i], m.names[i] = names[i];
    rlx_node x = rlx_input(g, "x", 2, D(8, 6), RLX_F32), labels = rlx_input(g, "labels", 1, D(8), RLX_I32);
    m.params[0] = rlx_param(g, "w1", 2, D(6, 5)), m.params[1] = rlx_param(g, "b1", 1, D(5));
    m.params[2] = rlx_param(g, "w2", 2, D(5, 3)), m.params[3] = rlx_param(g, "b2", 1, D(3));
    rlx_node h = rlx_tanh(g, rlx_add(g, rlx_matmul(g, x, m.params[0]), m.params[1]));
    rlx_node logits = rlx_add(g, rlx_matmul(g, h, m.params[2]), m.params[3]);
    m.loss = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, logits, labels), D(0), 1, 0);
  } else { /* x[4,1,8,8] -> conv 3x3 (3 filters) + bias -> relu -> maxpool 2 -> fc -> mean CE */
    m.n_params = 3;
    size_t sizes[3] = {27, 3, 108};
    const char *names[3] = {"cw", "cb", "fc"};
    for (int i = 0; i < 3; i++) m.sizes[i] = sizes[i], m.names[i] = names[i];
    rlx_node x = rlx_input(g, "x", 4, D(4, 1, 8, 8), RLX_F32), labels = rlx_input(g, "labels", 1, D(4), RLX_I32);
    m.params[0] = rlx_param(g, "cw", 4, D(3, 1, 3, 3)), m.params[1] = rlx_param(g, "cb", 3, D(3, 1, 1));
    m.params[2] = rlx_param(g, "fc", 2, D(27, 4));
    rlx_conv2d_params cp = {1, 1, 0, 0, 1, 1, 1};
    rlx_pool2d_params pp = {2, 2, 2, 2, 0, 0};
    rlx_node h = rlx_max_pool2d(g, rlx_relu(g, rlx_add(g, rlx_conv2d(g, x, m.params[0], &cp), m.params[1])), &pp);
    rlx_node logits = rlx_matmul(g, rlx_reshape(g, h, 2, D(4, 27)), m.params[2]);
    m.loss = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, logits, labels), D(0), 1, 0);
  }
  return m;
}

void train_model_free(train_model *m) {
  rlx_graph_free(m->g);
  m->g = NULL;
}

void train_model_init(const train_model *m, int32_t i, float *out) { fill(out, m->sizes[i], 11 + (unsigned)i, 0.5f); }

rlx_status train_model_feed(rlx_session *s, const train_model *m) {
  float x[256], p[128];
  int32_t labels[8];
  size_t nx = m->is_cnn ? 256 : 48, nl = m->is_cnn ? 4 : 8;
  rlx_status st;
  fill(x, nx, 5, 1.0f);
  for (size_t i = 0; i < nl; i++) labels[i] = (int32_t)(i % (m->is_cnn ? 4 : 3));
  if ((st = rlx_session_set_input(s, "x", x, nx)) != RLX_OK) return st;
  if ((st = rlx_session_set_input_i32(s, "labels", labels, nl)) != RLX_OK) return st;
  for (int32_t i = 0; i < m->n_params; i++) {
    train_model_init(m, i, p);
    if ((st = rlx_session_set_param(s, m->names[i], p, m->sizes[i])) != RLX_OK) return st;
  }
  return RLX_OK;
}

rlx_status train_model_run(int is_cnn, const rlx_optimizer *opt, int steps, float *first, float *last) {
  train_model m = train_model_new(is_cnn);
  rlx_session *s = NULL;
  rlx_status st = rlx_compile_train(m.g, m.loss, m.params, m.n_params, opt, NULL, &s);
  if (st == RLX_OK) st = train_model_feed(s, &m);
  for (int i = 0; i <= steps && st == RLX_OK; i++) {
    st = rlx_session_run(s);
    if (st == RLX_OK) *(i == 0 ? first : last) = rlx_session_output(s, 0)[0];
  }
  rlx_session_free(s);
  train_model_free(&m);
  return st;
}
