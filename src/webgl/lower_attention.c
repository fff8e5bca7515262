/* lower_attention.c - WebGL2 lowerings of the sequence ops: rope (rope.frag)
 * and scaled dot-product attention with every mask kind, forward and
 * backward (attention.frag).
 *
 * RoPE (NeoX halves or adjacent pairs, positions shifted by an optional
 * offset input): angles in exact fixed-point turns (see rope.frag), so large
 * positions keep the CPU's precision (cos/sin of a float angle within
 * [-pi, pi]: ~1e-7).  One pass when the tensor is a single [S, D] slice;
 * otherwise a table pass ([S, D] of cos and sin) and an apply pass.
 *
 * Attention: a statistics pass (per query row the max score and the sum of
 * exponentials; for the gradient also delta = sum P dP) into a temp, then
 * one pass writing the output, whose fragments recompute the scores they
 * need: y[i, e] loops over the keys of row i; the packed gradient
 * [dq | dk | dv] loops over keys (dq) or queries (dk, dv).  No score matrix
 * is stored, so any sequence length fits the texture limits; the cost is
 * Sk (D + 1) per output value (forward) and Sk or Sq times (D + Dv) per
 * gradient value. */
#include <math.h>

#include "gl_plan.h"

/* ---- rope ---------------------------------------------------------------- */

#define RLX_ROPE_MAX_BITS 13 /* 7 + 3 * 13 ints: D / 2 <= 8192 */

/* x in [0, 1] as 48-bit fixed point (1 becomes the largest fraction). */
static void push_limbs(rlx_gl_pass *p, double x) {
  double scaled = floor(x * 281474976710656.0); /* 2^48 */
  uint64_t v = scaled >= 281474976710655.0 ? 281474976710655ull : (uint64_t)scaled;
  rlx_gl_int(p, (int32_t)(v & 0xffff));
  rlx_gl_int(p, (int32_t)((v >> 16) & 0xffff));
  rlx_gl_int(p, (int32_t)((v >> 32) & 0xffff));
}

static void rope_uniforms(rlx_gl_pass *p, int32_t d, int32_t seq, int32_t pos0, int32_t nbits, double theta,
                          float sign) {
  rlx_gl_int(p, d);
  rlx_gl_int(p, seq);
  rlx_gl_int(p, pos0);
  rlx_gl_int(p, nbits);
  push_limbs(p, 1.0 / (2.0 * 3.14159265358979323846)); /* turns per radian */
  for (int32_t k = 0; k < nbits; k++) push_limbs(p, pow(theta, -2.0 * (double)(1 << k) / (double)d));
  rlx_gl_float(p, sign);
}

/* x[..., S, D] (, offset i32 [1]) -> y[..., S, D], D even; attributes
 * theta, pos_offset, inverse, mode (0 NeoX halves, 1 adjacent pairs: the
 * define PAIRS); the offset input (define OFFSET) is the last input of the
 * passes that compute angles. */
rlx_status rlx_gl_lower_rope(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int pairs = c->node->n_iattr > RLX_IATTR_ROPE_MODE && ATTR_I(c->node, ROPE, MODE) == 1;
  const int offset = c->node->n_inputs > 1;
  const rlx_shape *s = &c->in_node[0]->shape;
  int32_t d = s->dims[s->rank - 1], seq = s->dims[s->rank - 2], half = d / 2, nbits = 0;
  double theta = ATTR_F(c->node, ROPE, THETA);
  float sign = c->node->n_iattr > 1 && ATTR_I(c->node, ROPE, INVERSE) ? -1.0f : 1.0f;
  while (nbits < 31 && (half - 1) >> nbits) nbits++;
  if (!(theta >= 1.0))
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: rope needs theta >= 1 (got %g)", theta);
  if (nbits > RLX_ROPE_MAX_BITS)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: rope rows of %d values are too long (at most %d)", (int)d,
                     2 << RLX_ROPE_MAX_BITS);
  size_t table = (size_t)seq * (size_t)d;
  if (rlx_shape_numel(s) == table) {
    rlx_gl_pass *p = rlx_gl_add(out, "rope");
    rlx_gl_define(p, "MODE", 0);
    if (pairs) rlx_gl_define(p, "PAIRS", 1);
    if (offset) rlx_gl_define(p, "OFFSET", 1);
    rlx_gl_in(p, RLX_GLT_INPUT, 0);
    if (offset) rlx_gl_in(p, RLX_GLT_INPUT, 1);
    rope_uniforms(p, d, seq, ATTR_I(c->node, ROPE, POS_OFFSET), nbits, theta, sign);
    return RLX_OK;
  }
  int32_t t = rlx_gl_temp(out, table);
  rlx_gl_pass *p = rlx_gl_add(out, "rope");
  rlx_gl_define(p, "MODE", 1);
  if (offset) {
    rlx_gl_define(p, "OFFSET", 1);
    rlx_gl_in(p, RLX_GLT_INPUT, 1);
  }
  rlx_gl_out(p, RLX_GLT_TEMP, t);
  rope_uniforms(p, d, seq, ATTR_I(c->node, ROPE, POS_OFFSET), nbits, theta, sign);
  p = rlx_gl_add(out, "rope");
  rlx_gl_define(p, "MODE", 2);
  if (pairs) rlx_gl_define(p, "PAIRS", 1);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_TEMP, t);
  rope_uniforms(p, d, seq, ATTR_I(c->node, ROPE, POS_OFFSET), nbits, theta, sign);
  return RLX_OK;
}

/* ---- attention ------------------------------------------------------------ */

/* An attention.frag pass: defines, inputs q, k, v (, dy) (, mask) (, stats)
 * and uniforms. */
static rlx_gl_pass *attention_pass(const rlx_gl_ctx *c, rlx_gl_lowering *l, int mode, int grad, int32_t stats) {
  const rlx_shape *q = &c->in_node[0]->shape;
  int32_t B = q->dims[0], H = q->dims[1], Sq = q->dims[2], D = q->dims[3];
  int32_t Sk = c->in_node[1]->shape.dims[2], Dv = c->in_node[2]->shape.dims[3];
  int32_t kind = ATTR_I(c->node, ATTENTION, MASK), mask_at = grad ? 4 : 3;
  int has_mask = c->node->n_inputs > mask_at && (kind == RLX_MASK_PADDING || kind == RLX_MASK_BIAS);
  int32_t strides[RLX_MAX_RANK] = {0, 0, 0, 0};
  if (has_mask && kind == RLX_MASK_BIAS) {
    rlx_shape scores = {4, {B, H, Sq, Sk}};
    rlx_gl_broadcast_strides(&c->in_node[mask_at]->shape, &scores, strides);
  }
  float scale = ATTR_F(c->node, ATTENTION, SCALE) > 0.0f ? ATTR_F(c->node, ATTENTION, SCALE) : (float)(1.0 / sqrt((double)D));
  rlx_gl_pass *p = rlx_gl_add(l, "attention");
  rlx_gl_define(p, "MODE", mode);
  rlx_gl_define(p, "GRAD", grad);
  rlx_gl_define(p, "MASK", has_mask ? kind : 0);
  rlx_gl_define(p, "HAS_MASK", has_mask);
  for (int32_t k = 0; k < 3 + grad; k++) rlx_gl_in(p, RLX_GLT_INPUT, k);
  if (has_mask) rlx_gl_in(p, RLX_GLT_INPUT, mask_at);
  if (mode != 0) rlx_gl_in(p, RLX_GLT_TEMP, stats);
  int32_t ints[12] = {B, H, Sq, Sk, D, Dv, kind, ATTR_I(c->node, ATTENTION, WINDOW), strides[0], strides[1], strides[2], strides[3]};
  for (int k = 0; k < 12; k++) rlx_gl_int(p, ints[k]);
  rlx_gl_float(p, scale);
  return p;
}

static rlx_status lower_attention(const rlx_gl_ctx *c, rlx_gl_lowering *out, int grad) {
  const rlx_shape *q = &c->in_node[0]->shape;
  size_t rows = (size_t)q->dims[0] * (size_t)q->dims[1] * (size_t)q->dims[2];
  int32_t stats = rlx_gl_temp(out, rows * (grad ? 3 : 2));
  rlx_gl_out(attention_pass(c, out, 0, grad, -1), RLX_GLT_TEMP, stats);
  attention_pass(c, out, grad ? 2 : 1, grad, stats);
  return RLX_OK;
}

/* q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv] (, mask) -> y[B,H,Sq,Dv];
 * attributes mask, window, scale (<= 0: 1/sqrt(D));
 * mask: PADDING [B,Sk] nonzero = keep, BIAS additive, broadcast to [B,H,Sq,Sk] */
rlx_status rlx_gl_lower_attention(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_attention(c, out, 0); }

/* q, k, v, dy[B,H,Sq,Dv] (, mask) -> [numel(q) + numel(k) + numel(v)] = dq, dk, dv flat */
rlx_status rlx_gl_lower_attention_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_attention(c, out, 1);
}
