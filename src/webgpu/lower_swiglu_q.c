/* lower_swiglu_q.c - the WebGPU lowering of swiglu_q: x[..., K], w_gate,
 * w_up (N x K tables of one GGUF type, bound as they are, like matmul_q's
 * weights in lower_llm.c) -> y[..., N] = silu(x Wg^T) * (x Wu^T).
 *  - up to MATVEC_MAX_M rows of x (decoding a token, short prompt steps):
 *    one dispatch of llm_swiglu_q.wgsl, both products and the combination;
 *  - more rows (prompts): the two products by matmul_q's own lowering (the
 *    tiled llm_matmul_q.wgsl), the gate's into the scratch and the up's into
 *    the output, then llm_silu_mul.wgsl combines them in place.
 * With norm, the kernels normalize x's rows as they read them
 * (_llm_norm.wgsl; the prompt path through matmul_q's norm).
 * silu is the CPU's formula with WGSL's exp (wgsl/_llm_silu.wgsl). */
#include <string.h>

#include "../core/subops.h"
#include "lower_reduce.h"
#include "rlx_gguf.h"
#include "wgpu.h"

#define MATVEC_MAX_M 4u /* as matmul_q's llm_matvec_q.wgsl */
#define MATVEC_ROWS 8u  /* output rows per workgroup (RPW in llm_swiglu_q.wgsl) */

/* matmul_q of x by input w (1: the gate, 2: the up table), appended to
 * out: its weights read from input w, its product written to the scratch
 * at [0, out_bytes) (to_scratch) or to the output; its own scratch, if any,
 * placed after out_bytes. */
static rlx_status product(const rlx_wgpu_ctx *c, int32_t w, int to_scratch, size_t out_bytes,
                          rlx_wgpu_lowering *out) {
  const int norm = c->node->n_iattr > RLX_IATTR_QSWIGLU_NORM && ATTR_I(c->node, QSWIGLU, NORM);
  rlx_node_t mm = *c->node;
  mm.op = RLX_OP_MATMUL_Q;
  mm.n_inputs = norm ? 3 : 2;
  mm.inputs[1] = c->node->inputs[w];
  mm.inputs[2] = c->node->inputs[3]; /* the norm's g (read with norm only) */
  mm.iattr[RLX_IATTR_QMATMUL_TRANS] = 0;
  mm.iattr[RLX_IATTR_QMATMUL_XQ8] = 0;
  mm.iattr[RLX_IATTR_QMATMUL_NORM] = norm;
  mm.n_iattr = RLX_IATTR_QMATMUL_NORM + 1;
  mm.fattr[RLX_FATTR_QMATMUL_EPS] = norm ? ATTR_F(c->node, QSWIGLU, EPS) : 0.0f;
  mm.n_fattr = RLX_FATTR_QMATMUL_EPS + 1;
  rlx_wgpu_ctx sub = *c;
  sub.node = &mm;
  sub.in_node[1] = c->in_node[w];
  sub.in_node[2] = norm ? c->in_node[3] : c->in_node[0];
  rlx_wgpu_lowering l;
  memset(&l, 0, sizeof l);
  rlx_status st = rlx_wgpu_lower_matmul_q(&sub, &l);
  if (st != RLX_OK) return st;
  if (out->n + l.n > RLX_WGPU_MAX_DISPATCH)
    return rlx_error(RLX_ERR_STATE, "webgpu: swiglu_q: %d dispatches past the limit", (int)(out->n + l.n));
  const size_t shift = rlx_wgpu_align256(out_bytes);
  for (int32_t i = 0; i < l.n; i++) {
    rlx_wgpu_dispatch *d = &out->d[out->n++];
    *d = l.d[i];
    for (int32_t b = 0; b < d->n_bindings; b++) {
      rlx_wgpu_binding *x = &d->bindings[b];
      if (x->kind == RLX_WB_INPUT && x->index == 1) x->index = w;
      else if (x->kind == RLX_WB_INPUT && x->index == 2) x->index = 3; /* g */
      else if (x->kind == RLX_WB_SCRATCH) x->offset += shift;
      else if (x->kind == RLX_WB_OUTPUT && to_scratch) *x = (rlx_wgpu_binding){RLX_WB_SCRATCH, 0, 0, out_bytes, 1};
    }
  }
  if (l.scratch_bytes + shift > out->scratch_bytes) out->scratch_bytes = l.scratch_bytes + shift;
  return RLX_OK;
}

/* x[..., K], w_gate, w_up -> y[..., N]; attributes qtype, rows N, cols K. */
rlx_status rlx_wgpu_lower_swiglu_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  if (c->node->n_iattr > RLX_IATTR_QSWIGLU_XQ8 && ATTR_I(c->node, QSWIGLU, XQ8))
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: swiglu_q with xq8 (x rounded to 8 bits) runs on the CPU only");
  const int32_t code = ATTR_I(c->node, QTABLE, QTYPE);
  const uint32_t N = (uint32_t)ATTR_I(c->node, QTABLE, ROWS), K = (uint32_t)ATTR_I(c->node, QTABLE, COLS);
  const uint32_t M = (uint32_t)(rlx_shape_numel(&c->in_node[0]->shape) / K);
  if (M > MATVEC_MAX_M) {
    const size_t bytes = (size_t)M * N * sizeof(float);
    rlx_status st = product(c, 1, 1, bytes, out);
    if (st != RLX_OK || (st = product(c, 2, 0, bytes, out)) != RLX_OK) return st;
    if (out->n >= RLX_WGPU_MAX_DISPATCH) return rlx_error(RLX_ERR_STATE, "webgpu: swiglu_q: too many dispatches");
    rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "llm_silu_mul");
    rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, bytes, 0);
    rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
    rlx_wgpu_u32(d, M * N);
    rlx_wgpu_grid1d(d, (size_t)M * N, 256);
    return RLX_OK;
  }
  int32_t elems = 1, block = 0;
  const int32_t sub = rlx_wt_of_gguf_type(code, &elems, &block);
  if (sub < 0)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: swiglu_q: weight type %d has no WebGPU kernel", (int)code);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "llm_swiglu_q");
  const int norm = c->node->n_iattr > RLX_IATTR_QSWIGLU_NORM && ATTR_I(c->node, QSWIGLU, NORM);
  rlx_wgpu_override(d, "QTYPE", (uint32_t)sub);
  rlx_wgpu_override(d, "NORM", (uint32_t)norm);
  for (int32_t k = 0; k < 3; k++) rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, norm ? 3 : 0, 0, 0, 0); /* g, or x (not read) */
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  const uint32_t words[5] = {N, K, M, K / (uint32_t)elems * (uint32_t)block, (K + 7) / 8};
  for (int k = 0; k < 5; k++) rlx_wgpu_u32(d, words[k]);
  rlx_wgpu_f32(d, norm ? ATTR_F(c->node, QSWIGLU, EPS) : 0.0f);
  rlx_wgpu_grid1d(d, N, MATVEC_ROWS);
  return RLX_OK;
}
