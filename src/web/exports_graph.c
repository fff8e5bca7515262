/* exports_graph.c - the wasm exports that describing a model in code from JS
 * needs beyond exports.c (WebGraph and the SDK in web/pkg/rlx_web.js,
 * web/rlx.ts): autodiff, finding leaves by name, the vision models as graphs and
 * the shapes and dtypes of a session's inputs.  Thin
 * wrappers over include/rlx.h and include/rlx_models.h with the same names;
 * pointers are byte offsets into the exported memory, size_t is 32-bit.  No
 * logic lives here: checks and messages come from the library. */
#include <stddef.h>
#include "rlx.h"
#include "rlx_models.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* outputs receives n_wrt + 1 node ids: the loss, then one gradient per wrt. */
EXPORT(rlx_grad_with_loss)
int32_t w_grad_with_loss(rlx_graph *g, rlx_node loss, const rlx_node *wrt, int32_t n_wrt, rlx_node *outputs) {
  return rlx_grad_with_loss(g, loss, wrt, n_wrt, outputs);
}

EXPORT(rlx_graph_find) rlx_node w_graph_find(const rlx_graph *g, const char *name) { return rlx_graph_find(g, name); }

/* The node ids of the logits and the loss are written to out[0], out[1]. */
EXPORT(rlx_vision_build)
int32_t w_vision_build(rlx_graph *g, const char *slug, int32_t batch, rlx_node *out) {
  return rlx_vision_build(g, slug, batch, out, out ? out + 1 : NULL);
}

EXPORT(rlx_session_input_shape) int32_t w_input_shape(const rlx_session *s, int32_t i, int32_t *dims) {
  return rlx_session_input_shape(s, i, dims);
}
EXPORT(rlx_session_input_dtype) int32_t w_input_dtype(const rlx_session *s, int32_t i) {
  return (int32_t)rlx_session_input_dtype(s, i);
}

/* One training step (forward, backward, optimizer) compiled for device; the
 * optimizer as plain numbers: kind (rlx_optimizer_kind), lr, momentum,
 * beta1, beta2, eps, weight_decay.  The new session is written to *out. */
EXPORT(rlx_compile_train)
int32_t w_compile_train(rlx_graph *g, rlx_node loss, const rlx_node *params, int32_t n_params, int32_t kind,
                        float lr, float momentum, float beta1, float beta2, float eps, float weight_decay,
                        int32_t device, int32_t skip_fusion, rlx_session **out) {
  rlx_optimizer opt = {(rlx_optimizer_kind)kind, lr, momentum, beta1, beta2, eps, weight_decay};
  rlx_compile_options copt = {(rlx_device)device, skip_fusion, 0, 0};
  return rlx_compile_train(g, loss, params, n_params, &opt, &copt, out);
}
EXPORT(rlx_session_set_lr) int32_t w_session_set_lr(rlx_session *s, float lr) { return rlx_session_set_lr(s, lr); }
