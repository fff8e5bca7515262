/* exports.c - the wasm export surface of RLX (linked only into
 * web/pkg/rlx_web.wasm).  Export attributes live only in src/web/ (this
 * file; exports_webgpu.c for the GPU plan surface).
 * Each export is a thin wrapper over the public API of include/rlx.h and
 * include/rlx_models.h with the same name; pointers are byte offsets into
 * the exported `memory`, size_t is 32-bit.  JS (web/runtime/loader.js) allocates strings and
 * float buffers with rlx_wasm_alloc/rlx_wasm_free.  No logic lives here:
 * validation and error messages come from the library (rlx_last_error). */
#include <stddef.h>
#include <stdlib.h>
#include "rlx.h"
#include "rlx_models.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Declared in src/cpu/kernels.h and src/models/cache.h (internal); repeated
 * here so this file only depends on the public headers. */
const char *rlx_gemm_path(void);
int32_t rlx_cache_size(void);

/* 64-bit seeds cross the JS boundary as two 32-bit halves (an i64 would be
 * a BigInt in JS). */
static uint64_t seed64(uint32_t lo, uint32_t hi) { return ((uint64_t)hi << 32) | lo; }

/* ---- memory for JS ------------------------------------------------------ */
EXPORT(rlx_wasm_alloc) void *w_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
EXPORT(rlx_wasm_free) void w_free(void *p) { free(p); }

/* ---- status and info ---------------------------------------------------- */
EXPORT(rlx_last_error) const char *w_last_error(void) { return rlx_last_error(); }
EXPORT(rlx_status_name) const char *w_status_name(int32_t s) { return rlx_status_name((rlx_status)s); }
EXPORT(rlx_version) const char *w_version(void) { return rlx_version(); }
EXPORT(rlx_gemm_path) const char *w_gemm_path(void) { return rlx_gemm_path(); }

/* ---- ops ---------------------------------------------------------------- */
EXPORT(rlx_op_count) int32_t w_op_count(void) { return RLX_OP_COUNT; }
EXPORT(rlx_op_name) const char *w_op_name(int32_t op) { return rlx_op_name((rlx_op)op); }
/* RLX_OP_COUNT (== rlx_op_count()) when the name is unknown. */
EXPORT(rlx_op_from_name) int32_t w_op_from_name(const char *name) { return rlx_op_from_name(name); }

/* ---- graphs ------------------------------------------------------------- */
EXPORT(rlx_graph_new) rlx_graph *w_graph_new(void) { return rlx_graph_new(); }
EXPORT(rlx_graph_free) void w_graph_free(rlx_graph *g) { rlx_graph_free(g); }
EXPORT(rlx_graph_status) int32_t w_graph_status(const rlx_graph *g) { return rlx_graph_status(g); }
EXPORT(rlx_graph_error) const char *w_graph_error(const rlx_graph *g) { return rlx_graph_error(g); }
EXPORT(rlx_graph_node_count) int32_t w_graph_node_count(const rlx_graph *g) { return rlx_graph_node_count(g); }
EXPORT(rlx_node_shape) int32_t w_node_shape(const rlx_graph *g, rlx_node n, int32_t *dims) {
  return rlx_node_shape(g, n, dims);
}

EXPORT(rlx_input)
rlx_node w_input(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims, int32_t dtype) {
  return rlx_input(g, name, rank, dims, (rlx_dtype)dtype);
}
EXPORT(rlx_param)
rlx_node w_param(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims) {
  return rlx_param(g, name, rank, dims);
}
EXPORT(rlx_constant)
rlx_node w_constant(rlx_graph *g, int32_t rank, const int32_t *dims, const float *data) {
  return rlx_constant(g, rank, dims, data);
}
EXPORT(rlx_scalar) rlx_node w_scalar(rlx_graph *g, float value) { return rlx_scalar(g, value); }

EXPORT(rlx_op_node)
rlx_node w_op_node(rlx_graph *g, int32_t op, const rlx_node *inputs, int32_t n_inputs,
                   const int32_t *iattr, int32_t n_iattr, const float *fattr, int32_t n_fattr) {
  return rlx_op_node(g, (rlx_op)op, inputs, n_inputs, iattr, n_iattr, fattr, n_fattr);
}

/* ---- compile ------------------------------------------------------------ */
/* Options as plain ints; the new session is written to *out. */
EXPORT(rlx_compile)
int32_t w_compile(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int32_t device,
                  int32_t skip_fusion, int32_t debug_poison, rlx_session **out) {
  rlx_compile_options opt = {(rlx_device)device, skip_fusion, debug_poison, 0};
  return rlx_compile(g, outputs, n_outputs, &opt, out);
}
EXPORT(rlx_session_free) void w_session_free(rlx_session *s) { rlx_session_free(s); }

/* ---- sessions ----------------------------------------------------------- */
EXPORT(rlx_session_set_param)
int32_t w_set_param(rlx_session *s, const char *name, const float *data, size_t len) {
  return rlx_session_set_param(s, name, data, len);
}
EXPORT(rlx_session_get_param)
int32_t w_get_param(const rlx_session *s, const char *name, float *data, size_t len) {
  return rlx_session_get_param(s, name, data, len);
}
EXPORT(rlx_session_set_input)
int32_t w_set_input(rlx_session *s, const char *name, const float *data, size_t len) {
  return rlx_session_set_input(s, name, data, len);
}
EXPORT(rlx_session_set_input_i32)
int32_t w_set_input_i32(rlx_session *s, const char *name, const int32_t *data, size_t len) {
  return rlx_session_set_input_i32(s, name, data, len);
}
EXPORT(rlx_session_run) int32_t w_run(rlx_session *s) { return rlx_session_run(s); }

EXPORT(rlx_session_output_count) int32_t w_output_count(const rlx_session *s) {
  return rlx_session_output_count(s);
}
EXPORT(rlx_session_output_shape) int32_t w_output_shape(const rlx_session *s, int32_t i, int32_t *dims) {
  return rlx_session_output_shape(s, i, dims);
}
EXPORT(rlx_session_output_len) size_t w_output_len(const rlx_session *s, int32_t i) {
  return rlx_session_output_len(s, i);
}
EXPORT(rlx_session_output) const float *w_output(const rlx_session *s, int32_t i) {
  return rlx_session_output(s, i);
}
EXPORT(rlx_session_read_output)
int32_t w_read_output(const rlx_session *s, int32_t i, float *dst, size_t len) {
  return rlx_session_read_output(s, i, dst, len);
}

EXPORT(rlx_session_arena_bytes) size_t w_arena_bytes(const rlx_session *s) { return rlx_session_arena_bytes(s); }
EXPORT(rlx_session_step_count) int32_t w_step_count(const rlx_session *s) { return rlx_session_step_count(s); }
EXPORT(rlx_session_input_count) int32_t w_input_count(const rlx_session *s) { return rlx_session_input_count(s); }
EXPORT(rlx_session_param_count) int32_t w_param_count(const rlx_session *s) { return rlx_session_param_count(s); }
EXPORT(rlx_session_input_name) const char *w_input_name(const rlx_session *s, int32_t i) {
  return rlx_session_input_name(s, i);
}
EXPORT(rlx_session_param_name) const char *w_param_name(const rlx_session *s, int32_t i) {
  return rlx_session_param_name(s, i);
}
EXPORT(rlx_session_param_len) size_t w_param_len(const rlx_session *s, int32_t i) {
  return rlx_session_param_len(s, i);
}

/* ---- models (include/rlx_models.h) -------------------------------------- */
EXPORT(rlx_models_clear_cache) void w_models_clear_cache(void) { rlx_models_clear_cache(); }
/* Sessions currently cached (tests check that repeated calls reuse them). */
EXPORT(rlx_models_cache_size) int32_t w_models_cache_size(void) { return rlx_cache_size(); }

EXPORT(rlx_vision_count) int32_t w_vision_count(void) { return rlx_vision_count(); }
EXPORT(rlx_vision_slug) const char *w_vision_slug(int32_t i) { return rlx_vision_slug(i); }
EXPORT(rlx_vision_info_get)
int32_t w_vision_info_get(const char *slug, rlx_vision_info *info) { return rlx_vision_info_get(slug, info); }

/* The layout of rlx_vision_info for JS: sizeof, then the byte offset of each
 * field in the order below (RLX_VISION_INFO_FIELDS entries in all). */
enum { RLX_VISION_INFO_FIELDS = 16 };
EXPORT(rlx_vision_info_layout) int32_t w_vision_info_layout(int32_t *out) {
  if (!out) return RLX_VISION_INFO_FIELDS;
  const int32_t layout[RLX_VISION_INFO_FIELDS] = {
      (int32_t)sizeof(rlx_vision_info),
      offsetof(rlx_vision_info, slug),         offsetof(rlx_vision_info, title),
      offsetof(rlx_vision_info, input_rank),   offsetof(rlx_vision_info, input_dims),
      offsetof(rlx_vision_info, num_classes),  offsetof(rlx_vision_info, n_params),
      offsetof(rlx_vision_info, param_names),  offsetof(rlx_vision_info, param_sizes),
      offsetof(rlx_vision_info, param_ranks),  offsetof(rlx_vision_info, param_dims),
      offsetof(rlx_vision_info, input_len),    offsetof(rlx_vision_info, param_flat_len),
      offsetof(rlx_vision_info, train_cpu),    offsetof(rlx_vision_info, train_webgpu),
      offsetof(rlx_vision_info, train_webgl)};
  for (int i = 0; i < RLX_VISION_INFO_FIELDS; i++) out[i] = layout[i];
  return RLX_VISION_INFO_FIELDS;
}

EXPORT(rlx_vision_init_params)
int32_t w_vision_init_params(const char *slug, uint32_t seed_lo, uint32_t seed_hi, float *flat, size_t len) {
  return rlx_vision_init_params(slug, seed64(seed_lo, seed_hi), flat, len);
}
EXPORT(rlx_vision_synthetic_batch)
int32_t w_vision_synthetic_batch(const char *slug, uint32_t seed_lo, uint32_t seed_hi, int32_t batch, float *x,
                                 size_t x_len, int32_t *labels, size_t labels_len) {
  return rlx_vision_synthetic_batch(slug, seed64(seed_lo, seed_hi), batch, x, x_len, labels, labels_len);
}
EXPORT(rlx_vision_forward)
int32_t w_vision_forward(const char *slug, int32_t batch, const float *x, const float *params, float *logits) {
  return rlx_vision_forward(slug, batch, x, params, logits);
}
/* The loss is written to *loss. */
EXPORT(rlx_vision_grads)
int32_t w_vision_grads(const char *slug, int32_t batch, const float *x, const int32_t *labels, const float *params,
                       float *grads, float *loss) {
  return rlx_vision_grads(slug, batch, x, labels, params, grads, loss);
}

EXPORT(rlx_vision_train_step)
int32_t w_vision_train_step(const char *slug, int32_t batch, const float *x, const int32_t *labels, float *params,
                            float lr, float *loss) {
  return rlx_vision_train_step(slug, batch, x, labels, params, lr, loss);
}

/* The MLP: the rlx_mlp fields as arguments. */
#define MLP_ARGS int32_t rows, int32_t in, int32_t hid, int32_t out, const float *w1, const float *b1, \
                 const float *w2, const float *b2
#define MLP_INIT {rows, in, hid, out, w1, b1, w2, b2}
EXPORT(rlx_mlp_forward) int32_t w_mlp_forward(MLP_ARGS, const float *x, float *y) {
  const rlx_mlp m = MLP_INIT;
  return rlx_mlp_forward(&m, x, y);
}
EXPORT(rlx_mlp_loss) int32_t w_mlp_loss(MLP_ARGS, const float *x, const float *t, float *loss) {
  const rlx_mlp m = MLP_INIT;
  return rlx_mlp_loss(&m, x, t, loss);
}
EXPORT(rlx_mlp_grads) int32_t w_mlp_grads(MLP_ARGS, const float *x, const float *t, float *grads) {
  const rlx_mlp m = MLP_INIT;
  return rlx_mlp_grads(&m, x, t, grads);
}
EXPORT(rlx_mlp_train_step)
int32_t w_mlp_train_step(MLP_ARGS, const float *x, const float *t, float lr, float *params_out) {
  const rlx_mlp m = MLP_INIT;
  return rlx_mlp_train_step(&m, x, t, lr, params_out);
}

/* The transformer: the config fields as arguments; all_positions = 0 gives
 * the last position's logits (vocab values), 1 every position's. */
EXPORT(rlx_transformer_logits)
int32_t w_transformer_logits(int32_t vocab, int32_t dim, int32_t n_layers, int32_t n_heads, int32_t head_dim,
                             int32_t ffn, uint32_t seed_lo, uint32_t seed_hi, int32_t window, int32_t skip_fusion,
                             const float *tokens, int32_t n_tokens, int32_t all_positions, float *logits) {
  const rlx_transformer_config cfg = {vocab, dim, n_layers, n_heads, head_dim, ffn, seed64(seed_lo, seed_hi),
                                      window, skip_fusion};
  return all_positions ? rlx_transformer_logits(&cfg, tokens, n_tokens, logits)
                       : rlx_transformer_next_logits(&cfg, tokens, n_tokens, logits);
}
