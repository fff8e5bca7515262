/* backend.c - the WebGPU backend's table (src/compile/backend.h): plans
 * without fusion (the GPU has no fused kernels), arena values 256-byte
 * aligned, every step lowered to dispatches at compile time (prepare.c).
 * Inputs and params keep host copies (set before the executor starts, e.g.
 * the presets of training sessions); the arenas live on the GPU only, and
 * web/runtime/webgpu.js runs the plan document (plan_json.c).  Also the
 * WebGPU-only calls of include/rlx.h. */
#include "webgpu_plan.h"

static void wgpu_host_summary(const rlx_session *s, int32_t *host_steps, int32_t *sync_points) {
  const rlx_wgpu_state *w = rlx_wgpu_state_of(s);
  if (host_steps) *host_steps = w->host_steps;
  if (sync_points) *sync_points = w->sync_points;
}

const rlx_backend rlx_backend_webgpu = {
    .name = "WebGPU",
    .device = RLX_DEVICE_WEBGPU,
    .fuses = 0,
    .arena_align = RLX_WGPU_ALIGN_FLOATS,
    .host_arena = 0,
    .supports_op = rlx_wgpu_supports,
    .prepare = rlx_wgpu_prepare,
    .run = NULL,
    .runner = "web/runtime/webgpu.js",
    .free_state = rlx_wgpu_state_free,
    /* made on first request (training sessions record their assignments
     * after compiling) and cached in the session */
    .plan_json = rlx_wgpu_plan_json,
    .host_summary = wgpu_host_summary,
};

/* ---- include/rlx.h ------------------------------------------------------ */

const char *rlx_session_webgpu_plan(const rlx_session *s, size_t *len) {
  if (len) *len = 0;
  if (!s || s->device != RLX_DEVICE_WEBGPU || !s->state) return NULL;
  return rlx_session_plan_json(s, len);
}

const float *rlx_session_constant_data(const rlx_session *s, int32_t i, size_t *len) {
  if (len) *len = 0;
  if (!s || s->device != RLX_DEVICE_WEBGPU || !s->state) return NULL;
  const rlx_wgpu_state *w = rlx_wgpu_state_of(s);
  if (i < 0 || i >= w->n_consts) return NULL;
  const rlx_node_t *n = &s->plan.graph.nodes[w->const_nodes[i]];
  if (len) *len = rlx_shape_numel(&n->shape);
  return n->data;
}
