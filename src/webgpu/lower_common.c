/* lower_common.c - helpers the per-op WebGPU lowerings share: adding a
 * dispatch, bindings, override constants, uniform words, grid sizes, rope's
 * frequency constants. */
#include <math.h>
#include <string.h>

#include "wgpu.h"

rlx_wgpu_dispatch *rlx_wgpu_add(rlx_wgpu_lowering *l, const char *shader) {
  if (l->n >= RLX_WGPU_MAX_DISPATCH) return NULL;
  rlx_wgpu_dispatch *d = &l->d[l->n++];
  memset(d, 0, sizeof *d);
  d->shader = shader;
  d->groups[0] = d->groups[1] = d->groups[2] = 1;
  return d;
}

void rlx_wgpu_override(rlx_wgpu_dispatch *d, const char *name, uint32_t value) {
  if (d->n_overrides >= RLX_WGPU_MAX_OVERRIDES) return;
  d->override_names[d->n_overrides] = name;
  d->override_values[d->n_overrides++] = value;
}

void rlx_wgpu_bind(rlx_wgpu_dispatch *d, rlx_wgpu_binding_kind kind, int32_t index, size_t offset, size_t bytes,
                   int writable) {
  if (d->n_bindings >= RLX_WGPU_MAX_BINDINGS) return;
  d->bindings[d->n_bindings++] = (rlx_wgpu_binding){kind, index, offset, bytes, writable};
}

void rlx_wgpu_bind_inputs(rlx_wgpu_dispatch *d, int32_t n_inputs) {
  for (int32_t k = 0; k < n_inputs; k++) rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
}

void rlx_wgpu_u32(rlx_wgpu_dispatch *d, uint32_t v) {
  if (d->n_uniform < RLX_WGPU_MAX_UNIFORM) d->uniform[d->n_uniform++] = v;
}

void rlx_wgpu_f32(rlx_wgpu_dispatch *d, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  rlx_wgpu_u32(d, bits);
}

void rlx_wgpu_shape(rlx_wgpu_dispatch *d, const rlx_shape *s) {
  rlx_wgpu_u32(d, (uint32_t)s->rank);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < s->rank ? (uint32_t)s->dims[i] : 1u);
}

void rlx_wgpu_bcast_strides(rlx_wgpu_dispatch *d, const rlx_shape *in, const rlx_shape *out) {
  uint32_t strides[RLX_MAX_RANK] = {0};
  uint32_t stride = 1;
  for (int32_t i = in->rank - 1; i >= 0; i--) {
    int32_t o = i + (out->rank - in->rank);
    strides[o] = in->dims[i] == 1 ? 0u : stride;
    stride *= (uint32_t)in->dims[i];
  }
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, strides[i]);
}

void rlx_wgpu_grid1d(rlx_wgpu_dispatch *d, size_t n, uint32_t per_group) {
  size_t groups = (n + per_group - 1) / per_group;
  if (groups == 0) groups = 1;
  d->groups[0] = (uint32_t)(groups < 65535 ? groups : 65535);
  d->groups[1] = (uint32_t)((groups + 65534) / 65535);
  d->groups[2] = 1;
}

/* Top 12 significant bits of v (exact). */
static float top12(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  bits &= 0xfffff000u;
  memcpy(&v, &bits, sizeof v);
  return v;
}

void rlx_wgpu_rope_freqs(rlx_wgpu_dispatch *d, double theta, uint32_t D, uint32_t i0, uint32_t n_i) {
  for (uint32_t i = i0; i < i0 + n_i; i++) {
    double g = pow(theta, -2.0 * (double)i / (double)D) / (2.0 * 3.14159265358979323846);
    float a = top12((float)g);
    double rest = g - (double)a;
    float b = top12((float)rest);
    rlx_wgpu_f32(d, a);
    rlx_wgpu_f32(d, b);
    rlx_wgpu_f32(d, (float)(rest - (double)b));
  }
}

rlx_status rlx_wgpu_missing(const rlx_wgpu_ctx *c) {
  return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: op %s has no WebGPU kernel in this build",
                   rlx_op_name(c->node->op));
}
