/* lower_llm.c - WebGL2 lowerings of the language-model ops.
 *
 * matmul_q, gather_q: the weights stay in their GGUF type.  The planner
 * (plan_gl.c) gives the i32 input or param holding them a words texture:
 * RGBA32I, the table's words unchanged, 4 per texel, so the GPU holds the
 * file's bytes (bytes per weight: f32 4, f16 and bf16 2, q8_0 1.0625, q5_1
 * 0.75, q5_0 0.6875, q4_1 0.625, q4_0 and q4_K 0.5625, q5_K 0.6875, q6_K
 * 0.8203).  llm_matmul_q.frag and llm_gather_q.frag decode the values they need from
 * the blocks with integer ops (glsl/_llm_quant.glsl): one output element per
 * fragment, a block's scale once per run of 16 values.  The type is the
 * define QT (the WT rows of include/rlx_subops.def), one program per type.
 *
 * attention_kv: five passes.  llm_kv_write.frag appends k and v to the caches
 * (inputs 3 and 4, input or param leaves, whose textures it writes in
 * place: it draws over the whole cache and discards every texel but the
 * new rows, so it never reads what it writes); then llm_attention_kv.frag
 * writes the scores [S, Hq, C] of the keys each query sees, their row
 * statistics (max, sum of exponentials) and the output [S, Hq, Dv]. */
#include <math.h>

#include "../core/subops.h"
#include "gl_plan.h"

/* QT and the row stride (bytes) of the node's table; refuses a type the
 * kernels lack or rows past what a shader can index. */
static rlx_status table_of(const rlx_gl_ctx *c, int32_t *qt, int32_t *stride) {
  const int32_t op = c->node->op, xq8_slot = op == RLX_OP_MATMUL_Q   ? RLX_IATTR_QMATMUL_XQ8
                                             : op == RLX_OP_SWIGLU_Q ? RLX_IATTR_QSWIGLU_XQ8
                                                                     : -1;
  const int32_t norm_slot = op == RLX_OP_MATMUL_Q ? RLX_IATTR_QMATMUL_NORM : op == RLX_OP_SWIGLU_Q ? RLX_IATTR_QSWIGLU_NORM : -1;
  if (xq8_slot >= 0 && c->node->n_iattr > xq8_slot && c->node->iattr[xq8_slot])
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: %s with xq8 (x rounded to 8 bits) runs on the CPU only",
                     rlx_op_name(op));
  if (norm_slot >= 0 && c->node->n_iattr > norm_slot && c->node->iattr[norm_slot])
    return rlx_error(RLX_ERR_UNSUPPORTED,
                     "webgl: %s with norm runs on the CPU and WebGPU only (WebGL2 takes rms_norm as its own op)",
                     rlx_op_name(op));
  int32_t qtype = ATTR_I(c->node, QTABLE, QTYPE), rows = ATTR_I(c->node, QTABLE, ROWS), elems = 1, bytes = 0;
  *qt = rlx_wt_of_gguf_type(qtype, &elems, &bytes);
  if (*qt < 0)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: %s has no kernel for weight type %d", rlx_op_name(c->node->op),
                     (int)qtype);
  uint64_t row = (uint64_t)(ATTR_I(c->node, QTABLE, COLS) / elems) * (uint64_t)bytes;
  if (row * (uint64_t)rows > (uint64_t)INT32_MAX)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: %s's table of %d rows of %llu bytes is past what a shader indexes "
                     "(2 GiB)", rlx_op_name(c->node->op), (int)rows, (unsigned long long)row);
  *stride = (int32_t)row;
  return RLX_OK;
}

/* The one pass of matmul_q / gather_q: inputs 0 and 1 (and matmul_q's acc,
 * input 2, with ACC 1), the type as QT, u_i = {rows, cols, trans, row bytes}. */
static rlx_status quant_pass(const rlx_gl_ctx *c, rlx_gl_lowering *out, const char *shader, int32_t trans) {
  int32_t qt = -1, stride = 0;
  rlx_status st = table_of(c, &qt, &stride);
  if (st != RLX_OK) return st;
  rlx_gl_pass *p = rlx_gl_add(out, shader);
  rlx_gl_define(p, "QT", qt);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  if (c->node->n_inputs > 2) {
    rlx_gl_define(p, "ACC", 1);
    rlx_gl_in(p, RLX_GLT_INPUT, 2);
  }
  int32_t ints[4] = {ATTR_I(c->node, QTABLE, ROWS), ATTR_I(c->node, QTABLE, COLS), trans, stride};
  for (int k = 0; k < 4; k++) rlx_gl_int(p, ints[k]);
  return RLX_OK;
}

/* x[..., K] (trans 0) or x[..., N] (trans 1), w (words)(, acc) -> y[..., N]
 * or y[..., K] (+ acc); attributes qtype, rows N, cols K, trans */
rlx_status rlx_gl_lower_matmul_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return quant_pass(c, out, "llm_matmul_q", ATTR_I(c->node, QMATMUL, TRANS) != 0);
}

/* table (words: V rows of K values), ids[...] -> [..., K]; attributes
 * qtype, rows V, cols K */
rlx_status rlx_gl_lower_gather_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return quant_pass(c, out, "llm_gather_q", 0);
}

/* x[..., K], w_gate, w_up (words textures as matmul_q's, N rows of K
 * values each) -> y[..., N] = silu(x Wg^T) * (x Wu^T) in one pass,
 * llm_swiglu_q.frag; attributes qtype, rows N, cols K; u_i = {N, K, row
 * bytes}. */
rlx_status rlx_gl_lower_swiglu_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  int32_t qt = -1, stride = 0;
  rlx_status st = table_of(c, &qt, &stride);
  if (st != RLX_OK) return st;
  rlx_gl_pass *p = rlx_gl_add(out, "llm_swiglu_q");
  rlx_gl_define(p, "QT", qt);
  for (int32_t k = 0; k < 3; k++) rlx_gl_in(p, RLX_GLT_INPUT, k);
  rlx_gl_int(p, ATTR_I(c->node, QTABLE, ROWS));
  rlx_gl_int(p, ATTR_I(c->node, QTABLE, COLS));
  rlx_gl_int(p, stride);
  return RLX_OK;
}

/* src (input 1 or 2) appended to cache (input 3 or 4) at pos (input 5). */
static void kv_write(rlx_gl_lowering *l, int32_t src, int32_t cache, int32_t hkv, int32_t S, int32_t C, int32_t d) {
  rlx_gl_pass *p = rlx_gl_add(l, "llm_kv_write");
  rlx_gl_in(p, RLX_GLT_INPUT, src);
  rlx_gl_in(p, RLX_GLT_INPUT, 5);
  rlx_gl_out(p, RLX_GLT_INPUT, cache);
  int32_t ints[4] = {hkv, S, C, d};
  for (int k = 0; k < 4; k++) rlx_gl_int(p, ints[k]);
}

static rlx_gl_pass *attention_pass(rlx_gl_lowering *l, int32_t mode, const int32_t *ints, float scale) {
  rlx_gl_pass *p = rlx_gl_add(l, "llm_attention_kv");
  rlx_gl_define(p, "MODE", mode);
  for (int k = 0; k < 6; k++) rlx_gl_int(p, ints[k]);
  rlx_gl_float(p, scale);
  return p;
}

/* q[Hq, S, D], k[Hkv, S, D], v[Hkv, S, Dv], k_cache[Hkv, C, D],
 * v_cache[Hkv, C, Dv], pos[1] -> out[S, Hq, Dv]; attribute scale (<= 0:
 * 1/sqrt(D)).  Writes k and v into the caches at pos first. */
rlx_status rlx_gl_lower_attention_kv(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_shape *q = &c->in_node[0]->shape, *v = &c->in_node[2]->shape, *kc = &c->in_node[3]->shape;
  const int32_t hq = q->dims[0], S = q->dims[1], D = q->dims[2], hkv = v->dims[0], dv = v->dims[2], C = kc->dims[1];
  if ((uint64_t)S * (uint64_t)hq * (uint64_t)C > (uint64_t)INT32_MAX)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: attention_kv's %d x %d x %d scores are past what a shader indexes",
                     (int)S, (int)hq, (int)C);
  if (c->node->n_iattr > RLX_IATTR_ATTENTION_KV_ROPE && ATTR_I(c->node, ATTENTION_KV, ROPE))
    return rlx_error(RLX_ERR_UNSUPPORTED,
                     "webgl: attention_kv with rope runs on the CPU and WebGPU only (WebGL2 takes rope as its own op)");
  float scale = ATTR_F(c->node, ATTENTION_KV, SCALE);
  if (!(scale > 0.0f)) scale = 1.0f / sqrtf((float)D);
  kv_write(out, 1, 3, hkv, S, C, D);
  kv_write(out, 2, 4, hkv, S, C, dv);
  const int32_t ints[6] = {hq, hkv, S, C, D, dv};
  int32_t scores = rlx_gl_temp(out, (size_t)S * (size_t)hq * (size_t)C);
  int32_t stats = rlx_gl_temp(out, (size_t)S * (size_t)hq * 2);
  rlx_gl_pass *p = attention_pass(out, 0, ints, scale);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 3);
  rlx_gl_in(p, RLX_GLT_INPUT, 5);
  rlx_gl_out(p, RLX_GLT_TEMP, scores);
  p = attention_pass(out, 1, ints, scale);
  rlx_gl_in(p, RLX_GLT_TEMP, scores);
  rlx_gl_in(p, RLX_GLT_INPUT, 5);
  rlx_gl_out(p, RLX_GLT_TEMP, stats);
  p = attention_pass(out, 2, ints, scale);
  rlx_gl_in(p, RLX_GLT_TEMP, scores);
  rlx_gl_in(p, RLX_GLT_TEMP, stats);
  rlx_gl_in(p, RLX_GLT_INPUT, 4);
  rlx_gl_in(p, RLX_GLT_INPUT, 5);
  return RLX_OK;
}
