/* grad_cases.c - one or more gradient checks per differentiable op. */
#include <stdio.h>
#include <string.h>

#include "../../src/core/subops.h" /* RLX_SUBOP_ROW: the unary rows of the op table */
#include "../../src/ir/attrs.h"      /* matmul_q's attribute slots (its acc input has no builder) */
#include "grad_case.h"
#include "ref_elementwise.h"
#include "rlx_gguf.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})
#define B static rlx_node
#define G grad_graph(b)

/* ---- binary and unary ---------------------------------------------------- */
/* p[0] the op (RLX_OP_<NAME>), p[1] the broadcast layout k of grad_<ID>_<k>
 * (GRAD_* in ref_elementwise.h): 0 [3,4]x[3,4], 1 [3,4]x[4], 2
 * [2,1,3]x[4,1], 3 rank 0 x [5]; x and y filled as the op's row in
 * ref_elementwise.c says.  No graph (the case fails) without a row. */
B binary(grad_builder *b, const grad_case *c) {
  const ref_binary *row = ref_binary_row((rlx_op)c->p[0]);
  if (!row) {
    fprintf(stderr, "%s: the op has no row in tests/c/ref_elementwise.c\n", c->name);
    return RLX_NO_NODE;
  }
  int kind_a = row->grad_fill_x, kind_b = row->grad_fill_y;
  rlx_node in[2];
  switch (c->p[1]) {
    case 1: in[0] = grad_in(b, 2, D(3, 4), kind_a, 0, 0), in[1] = grad_in(b, 1, D(4), kind_b, 0, 0); break;
    case 2: in[0] = grad_in(b, 3, D(2, 1, 3), kind_a, 0, 0), in[1] = grad_in(b, 2, D(4, 1), kind_b, 0, 0); break;
    case 3: in[0] = grad_in(b, 0, NULL, kind_a, 0, 0), in[1] = grad_in(b, 1, D(5), kind_b, 0, 0); break;
    default: in[0] = grad_in(b, 2, D(3, 4), kind_a, 0, 0), in[1] = grad_in(b, 2, D(3, 4), kind_b, 0, 0);
  }
  return rlx_op_node(G, (rlx_op)c->p[0], in, 2, NULL, 0, NULL, 0);
}

/* p[0] the op (RLX_OP_<NAME>), one case per unary row of the op table; x
 * is filled as its row in ref_elementwise.c says: in its domain (log, sqrt,
 * rsqrt: positive) or away from a kink (abs, relu at 0).  No graph (the
 * case fails) without a row. */
B unary(grad_builder *b, const grad_case *c) {
  int fill = ref_unary_grad_fill((rlx_op)c->p[0]);
  if (fill < 0) {
    fprintf(stderr, "%s: the op has no row in tests/c/ref_elementwise.c\n", c->name);
    return RLX_NO_NODE;
  }
  rlx_node x = grad_in(b, 2, D(3, 7), fill, 0, 0);
  return rlx_op_node(G, (rlx_op)c->p[0], &x, 1, NULL, 0, NULL, 0);
}

/* where(cond[3,1], a[3,4], b[4]) */
B where(grad_builder *b, const grad_case *c) {
  rlx_node cond = grad_in(b, 2, D(3, 1), FILL_BINARY, 1, 0);
  rlx_node x = grad_in(b, 2, D(3, 4), FILL_UNIFORM, 0, 0), y = grad_in(b, 1, D(4), FILL_UNIFORM, 0, 0);
  return rlx_where(G, cond, x, y);
}

/* ---- matmul and layout --------------------------------------------------- */
/* p[0] trans_a, p[1] trans_b, p[2] batch layout: 0 none, 1 [2]x[2], 2 [2,1]x[3] broadcast */
B matmul(grad_builder *b, const grad_case *c) {
  int ta = c->p[0], tb = c->p[1], lay = c->p[2];
  int32_t M = 3, K = 5, N = 4;
  int32_t da[4], db[4], ra = 0, rb = 0;
  if (lay == 1) da[ra++] = 2, db[rb++] = 2;
  if (lay == 2) da[ra++] = 2, da[ra++] = 1, db[rb++] = 3;
  da[ra++] = ta ? K : M, da[ra++] = ta ? M : K;
  db[rb++] = tb ? N : K, db[rb++] = tb ? K : N;
  rlx_node x = grad_in(b, ra, da, FILL_UNIFORM, 0, 0), y = grad_in(b, rb, db, FILL_UNIFORM, 0, 0);
  return rlx_matmul_t(G, x, y, ta, tb);
}

B layout(grad_builder *b, const grad_case *c) {
  if (c->p[0] == 4) { /* expand of size-1 and new leading axes */
    rlx_node z = grad_in(b, 3, D(2, 1, 4), FILL_UNIFORM, 0, 0);
    return rlx_expand(G, z, 4, D(3, 2, 5, 4));
  }
  rlx_node x = grad_in(b, 3, D(2, 3, 4), FILL_UNIFORM, 0, 0);
  switch (c->p[0]) {
    case 0: return rlx_reshape(G, x, 2, D(4, -1));
    case 1: return rlx_permute(G, x, D(2, 0, 1));
    case 2: return rlx_narrow(G, x, 2, 1, 2);
    case 3: {
      rlx_node y = grad_in(b, 3, D(2, 2, 4), FILL_UNIFORM, 0, 0);
      rlx_node xs[3] = {x, y, x};
      return rlx_concat(G, xs, 3, 1);
    }
    default: return x;
  }
}

/* gather: table[6,4] by f32 ids[2,3] (repeats sum in the gradient) */
B gather(grad_builder *b, const grad_case *c) {
  rlx_node table = grad_in(b, 2, D(6, 4), FILL_UNIFORM, 0, 0);
  rlx_node ids = grad_in(b, 2, D(2, 5), FILL_LABELS, 1, 6);
  return rlx_gather(G, table, ids);
}

/* p[0]: 0 sum, 1 mean, 2 max; p[1] axis mask layout: 0 {1}, 1 {0,2} keepdim, 2 all */
B reduce(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 3, D(3, 4, 5), c->p[0] == 2 ? FILL_DISTINCT : FILL_UNIFORM, 0, 0);
  static const int32_t a0[] = {1}, a1[] = {0, 2}, a2[] = {0, 1, 2};
  const int32_t *axes = c->p[1] == 0 ? a0 : c->p[1] == 1 ? a1 : a2;
  int32_t n = c->p[1] == 0 ? 1 : c->p[1] == 1 ? 2 : 3, keep = c->p[1] == 1;
  if (c->p[0] == 0) return rlx_reduce_sum(G, x, axes, n, keep);
  if (c->p[0] == 1) return rlx_reduce_mean(G, x, axes, n, keep);
  return rlx_reduce_max(G, x, axes, n, keep);
}

/* ---- softmax family and norms -------------------------------------------- */
B softmaxes(grad_builder *b, const grad_case *c) {
  if (c->p[0] == 2) {
    rlx_node logits = grad_in(b, 2, D(6, 7), FILL_UNIFORM, 0, 0);
    rlx_node labels = grad_in(b, 1, D(6), FILL_LABELS, 1, 7);
    return rlx_softmax_cross_entropy(G, logits, labels);
  }
  rlx_node x = grad_in(b, 3, D(2, 5, 3), FILL_UNIFORM, 0, 0);
  return c->p[0] == 0 ? rlx_softmax(G, x, c->p[1]) : rlx_log_softmax(G, x, c->p[1]);
}

B norms(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 3, D(2, 3, 9), FILL_UNIFORM, 0, 0);
  rlx_node w = grad_in(b, 1, D(9), FILL_POSITIVE, 0, 0);
  if (c->p[0] == 0) return rlx_rms_norm(G, x, w, 1e-5f);
  rlx_node bias = grad_in(b, 1, D(9), FILL_UNIFORM, 0, 0);
  return rlx_layer_norm(G, x, w, bias, 1e-5f);
}

B rope(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 4, D(2, 2, 5, 6), FILL_UNIFORM, 0, 0);
  return rlx_rope(G, x, 10000.0f, c->p[0]);
}

/* rope_ext: p[0] pos_offset, p[1] mode, p[2] 1: an offset input (in [0, 50)) */
B rope_ext(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 3, D(3, 4, 8), FILL_UNIFORM, 0, 0);
  rlx_node offset = c->p[2] ? grad_in(b, 1, D(1), FILL_INDEX, 1, 50) : RLX_NO_NODE;
  return rlx_rope_ext(G, x, offset, 500.0f, c->p[0], c->p[1]);
}

/* matmul_q: p[0] GGUF type, p[1] N, p[2] K, p[3] trans, p[4] x rows, p[5]
 * 1: with the acc input, 2: with norm (its weight g[K], eps 1e-5); x, acc
 * and g are differentiable, w is not */
B matmul_q(grad_builder *b, const grad_case *c) {
  int32_t N = c->p[1], K = c->p[2], trans = c->p[3];
  int32_t words = rlx_gguf_type_block_bytes((rlx_gguf_type)c->p[0]) * (N * K / rlx_gguf_type_block_elems((rlx_gguf_type)c->p[0]));
  rlx_node x = grad_in(b, 2, D(c->p[4], trans ? N : K), FILL_UNIFORM, 0, 0);
  rlx_node w = grad_in(b, 1, D((words + 3) / 4), FILL_GGUF, 1, c->p[0]);
  if (!c->p[5]) return rlx_matmul_q(G, x, w, c->p[0], N, K, trans);
  const int norm = c->p[5] == 2;
  rlx_node in[3] = {x, w, norm ? grad_in(b, 1, D(K), FILL_POSITIVE, 0, 0)
                               : grad_in(b, 2, D(c->p[4], trans ? K : N), FILL_UNIFORM, 0, 0)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = N, [RLX_IATTR_QTABLE_COLS] = K,
                  [RLX_IATTR_QMATMUL_TRANS] = trans, [RLX_IATTR_QMATMUL_XQ8] = 0, [RLX_IATTR_QMATMUL_NORM] = norm};
  float eps[] = {[RLX_FATTR_QMATMUL_EPS] = 1e-5f};
  return rlx_op_node(G, RLX_OP_MATMUL_Q, in, 3, at, RLX_LEN(at), eps, RLX_LEN(eps));
}

/* swiglu_q: p[0] GGUF type, p[1] N, p[2] K, p[3] x rows, p[4] 1: with
 * norm (its weight g[K]); x and g are differentiable (two tables of one
 * type and shape) */
B swiglu_q(grad_builder *b, const grad_case *c) {
  int32_t N = c->p[1], K = c->p[2], qt = c->p[0];
  rlx_gguf_type t = (rlx_gguf_type)qt;
  int32_t words = (rlx_gguf_type_block_bytes(t) * (N * K / rlx_gguf_type_block_elems(t)) + 3) / 4;
  rlx_node x = grad_in(b, 2, D(c->p[3], K), FILL_UNIFORM, 0, 0);
  rlx_node gate = grad_in(b, 1, D(words), FILL_GGUF, 1, qt), up = grad_in(b, 1, D(words), FILL_GGUF, 1, qt);
  if (!c->p[4]) return rlx_swiglu_q(G, x, gate, up, qt, N, K);
  rlx_node in[4] = {x, gate, up, grad_in(b, 1, D(K), FILL_POSITIVE, 0, 0)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = qt, [RLX_IATTR_QTABLE_ROWS] = N, [RLX_IATTR_QTABLE_COLS] = K,
                  [RLX_IATTR_QSWIGLU_XQ8] = 0, [RLX_IATTR_QSWIGLU_NORM] = 1};
  float eps[] = {[RLX_FATTR_QSWIGLU_EPS] = 1e-5f};
  return rlx_op_node(G, RLX_OP_SWIGLU_Q, in, 4, at, RLX_LEN(at), eps, RLX_LEN(eps));
}

/* p[0] mask kind, p[1] Sq, p[2] Sk */
B attention(grad_builder *b, const grad_case *c) {
  int32_t Bn = 2, H = 2, Sq = c->p[1], Sk = c->p[2], Dh = 4, Dv = 3;
  rlx_node q = grad_in(b, 4, D(Bn, H, Sq, Dh), FILL_UNIFORM, 0, 0);
  rlx_node k = grad_in(b, 4, D(Bn, H, Sk, Dh), FILL_UNIFORM, 0, 0);
  rlx_node v = grad_in(b, 4, D(Bn, H, Sk, Dv), FILL_UNIFORM, 0, 0);
  rlx_node mask = RLX_NO_NODE;
  if (c->p[0] == RLX_MASK_PADDING) mask = grad_in(b, 2, D(Bn, Sk), FILL_BINARY, 1, 0);
  if (c->p[0] == RLX_MASK_BIAS) mask = grad_in(b, 4, D(1, H, Sq, Sk), FILL_UNIFORM, 1, 0);
  return rlx_attention(G, q, k, v, (rlx_mask_kind)c->p[0], 2, mask, 0.0f);
}

/* ---- vision ---------------------------------------------------------------- */
/* p: stride, pad, dilation, groups */
B conv(grad_builder *b, const grad_case *c) {
  int32_t g = c->p[3];
  rlx_node x = grad_in(b, 4, D(2, 2 * g, 7, 6), FILL_UNIFORM, 0, 0);
  rlx_node w = grad_in(b, 4, D(2 * g, 2, 3, 2), FILL_UNIFORM, 0, 0);
  rlx_conv2d_params p = {c->p[0], c->p[0], c->p[1], c->p[1], c->p[2], c->p[2], g};
  return rlx_conv2d(G, x, w, &p);
}

/* p[0]: 0 max, 1 avg, 2 global; p[1] padding; p[2] stride */
B pool(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 4, D(2, 3, 7, 6), c->p[0] == 0 ? FILL_DISTINCT : FILL_UNIFORM, 0, 0);
  rlx_pool2d_params p = {3, 2, c->p[2], c->p[2], c->p[1], c->p[1]};
  if (c->p[0] == 0) return rlx_max_pool2d(G, x, &p);
  if (c->p[0] == 1) return rlx_avg_pool2d(G, x, &p);
  return rlx_global_avg_pool(G, x);
}

/* ---- composites ---------------------------------------------------------- */
/* A small MLP with a mean cross-entropy loss; every input is a param. */
B mlp(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 2, D(4, 6), FILL_UNIFORM, 1, 0);
  rlx_node w1 = grad_in(b, 2, D(6, 5), FILL_UNIFORM, 0, 0), b1 = grad_in(b, 1, D(5), FILL_UNIFORM, 0, 0);
  rlx_node w2 = grad_in(b, 2, D(5, 3), FILL_UNIFORM, 0, 0), b2 = grad_in(b, 1, D(3), FILL_UNIFORM, 0, 0);
  rlx_node labels = grad_in(b, 1, D(4), FILL_LABELS, 1, 3);
  rlx_node h = rlx_tanh(G, rlx_add(G, rlx_matmul(G, x, w1), b1));
  rlx_node logits = rlx_add(G, rlx_matmul(G, h, w2), b2);
  return rlx_reduce_mean(G, rlx_softmax_cross_entropy(G, logits, labels), D(0), 1, 0);
}

/* conv -> relu -> maxpool -> flatten -> fc, mean cross-entropy */
B cnn(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 4, D(2, 1, 8, 8), FILL_UNIFORM, 1, 0);
  rlx_node w = grad_in(b, 4, D(3, 1, 3, 3), FILL_UNIFORM, 0, 0), bias = grad_in(b, 3, D(3, 1, 1), FILL_UNIFORM, 0, 0);
  rlx_node fc = grad_in(b, 2, D(27, 4), FILL_UNIFORM, 0, 0);
  rlx_node labels = grad_in(b, 1, D(2), FILL_LABELS, 1, 4);
  rlx_conv2d_params cp = {1, 1, 0, 0, 1, 1, 1};
  rlx_pool2d_params pp = {2, 2, 2, 2, 0, 0};
  rlx_node h = rlx_max_pool2d(G, rlx_relu(G, rlx_add(G, rlx_conv2d(G, x, w, &cp), bias)), &pp);
  rlx_node logits = rlx_matmul(G, rlx_reshape(G, h, 2, D(2, 27)), fc);
  return rlx_reduce_mean(G, rlx_softmax_cross_entropy(G, logits, labels), D(0), 1, 0);
}

/* One value used by several consumers: gradients must sum. */
B fan_out(grad_builder *b, const grad_case *c) {
  rlx_node x = grad_in(b, 2, D(3, 4), FILL_UNIFORM, 0, 0);
  rlx_node y = rlx_mul(G, x, rlx_tanh(G, x));
  return rlx_add(G, y, rlx_exp(G, rlx_reduce_sum(G, x, D(1), 1, 1)));
}

#define UN_UNARY(ID, name) {"grad_unary_" #ID, unary, {RLX_OP_##ID}, 0},
#define UN_BINARY(ID, name)
#define UN_POINTWISE_GRAD(ID, name)
#define UN_NONE(ID, name)
static const grad_case cases[] = {
#define RLX_OP(ID, name, lo, hi, rule, attrs) RLX_SUBOP_ROW(rule, UN, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
    {"grad_where", where, {0}, 0},
    {"grad_matmul", matmul, {0, 0, 0}, 0}, {"grad_matmul_ta", matmul, {1, 0, 0}, 0},
    {"grad_matmul_tb", matmul, {0, 1, 1}, 0}, {"grad_matmul_tab_batch", matmul, {1, 1, 1}, 0},
    {"grad_matmul_broadcast_batch", matmul, {0, 0, 2}, 0}, {"grad_matmul_ta_broadcast", matmul, {1, 0, 2}, 0},
    {"grad_reshape", layout, {0}, 0}, {"grad_permute", layout, {1}, 0}, {"grad_narrow", layout, {2}, 0},
    {"grad_concat", layout, {3}, 0}, {"grad_expand", layout, {4}, 0}, {"grad_gather", gather, {0}, 0},
    {"grad_reduce_sum", reduce, {0, 0}, 0}, {"grad_reduce_sum_keep", reduce, {0, 1}, 0},
    {"grad_reduce_mean", reduce, {1, 1}, 0}, {"grad_reduce_mean_all", reduce, {1, 2}, 0},
    {"grad_reduce_max", reduce, {2, 0}, 0}, {"grad_reduce_max_keep", reduce, {2, 1}, 0},
    {"grad_softmax_last", softmaxes, {0, 2}, 0}, {"grad_softmax_middle", softmaxes, {0, 1}, 0},
    {"grad_log_softmax_first", softmaxes, {1, 0}, 0}, {"grad_log_softmax_last", softmaxes, {1, 2}, 0},
    {"grad_softmax_cross_entropy", softmaxes, {2}, 0},
    {"grad_rms_norm", norms, {0}, 0}, {"grad_layer_norm", norms, {1}, 0},
    {"grad_rope", rope, {0}, 0}, {"grad_rope_offset", rope, {3}, 0},
    {"grad_rope_pairs", rope_ext, {2, 1, 0}, 0}, {"grad_rope_offset_input_neox", rope_ext, {0, 0, 1}, 0},
    {"grad_rope_offset_input_pairs", rope_ext, {1, 1, 1}, 0},
    {"grad_matmul_q_q4_0", matmul_q, {RLX_GGUF_TYPE_Q4_0, 5, 64, 0, 3}, 0},
    {"grad_matmul_q_q4_K_trans", matmul_q, {RLX_GGUF_TYPE_Q4_K, 4, 256, 1, 2}, 0},
    {"grad_matmul_q_q8_0_decode", matmul_q, {RLX_GGUF_TYPE_Q8_0, 6, 32, 0, 1}, 0},
    {"grad_matmul_q_f16_trans", matmul_q, {RLX_GGUF_TYPE_F16, 7, 5, 1, 3}, 0},
    {"grad_matmul_q_q8_0_acc", matmul_q, {RLX_GGUF_TYPE_Q8_0, 6, 32, 0, 2, 1}, 0},
    {"grad_matmul_q_f16_trans_acc", matmul_q, {RLX_GGUF_TYPE_F16, 7, 5, 1, 3, 1}, 0},
    {"grad_swiglu_q_q8_0_decode", swiglu_q, {RLX_GGUF_TYPE_Q8_0, 7, 32, 1}, 0},
    {"grad_swiglu_q_q4_K", swiglu_q, {RLX_GGUF_TYPE_Q4_K, 5, 256, 3}, 0},
    {"grad_swiglu_q_f16", swiglu_q, {RLX_GGUF_TYPE_F16, 6, 9, 2}, 0},
    {"grad_matmul_q_norm_q8_0", matmul_q, {RLX_GGUF_TYPE_Q8_0, 6, 32, 0, 2, 2}, 0},
    {"grad_matmul_q_norm_f16_decode", matmul_q, {RLX_GGUF_TYPE_F16, 5, 9, 0, 1, 2}, 0},
    {"grad_swiglu_q_norm_q4_0", swiglu_q, {RLX_GGUF_TYPE_Q4_0, 5, 32, 2, 1}, 0},
    {"grad_swiglu_q_norm_f16_decode", swiglu_q, {RLX_GGUF_TYPE_F16, 6, 9, 1, 1}, 0},
    {"grad_attention_none", attention, {RLX_MASK_NONE, 4, 4}, 0},
    {"grad_attention_causal", attention, {RLX_MASK_CAUSAL, 4, 4}, 0},
    {"grad_attention_causal_decode", attention, {RLX_MASK_CAUSAL, 2, 5}, 0},
    {"grad_attention_sliding", attention, {RLX_MASK_SLIDING, 5, 5}, 0},
    {"grad_attention_padding", attention, {RLX_MASK_PADDING, 3, 6}, 0},
    {"grad_attention_bias", attention, {RLX_MASK_BIAS, 3, 4}, 0},
    {"grad_conv2d", conv, {1, 0, 1, 1}, 0}, {"grad_conv2d_stride_pad", conv, {2, 1, 1, 1}, 0},
    {"grad_conv2d_dilation", conv, {1, 1, 2, 1}, 0}, {"grad_conv2d_groups", conv, {1, 1, 1, 2}, 0},
    {"grad_max_pool2d", pool, {0, 0, 2}, 0}, {"grad_max_pool2d_pad", pool, {0, 1, 1}, 0},
    {"grad_avg_pool2d", pool, {1, 0, 2}, 0}, {"grad_avg_pool2d_pad", pool, {1, 1, 1}, 0},
    {"grad_global_avg_pool", pool, {2}, 0},
    {"grad_mlp", mlp, {0}, 0}, {"grad_cnn", cnn, {0}, 0}, {"grad_fan_out", fan_out, {0}, 0},
};

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* Before those, built on first use: grad_<ID>_<k> for each layout k of a
 * binary op's row (none for NO_GRAD); grad_<ID>_0 alone, which fails, for
 * an op without a row. */
static struct {
  grad_case c;
  char name[40];
} binary_cases[REF_N_BINARY_OPS * GRAD_N_LAYOUTS];
static int n_binary_cases = -1;

static int binary_count(void) {
  if (n_binary_cases >= 0) return n_binary_cases;
  n_binary_cases = 0;
  for (int i = 0; i < REF_N_BINARY_OPS; i++) {
    const ref_op_row *op = &ref_binary_ops[i];
    const ref_binary *row = ref_binary_row(op->op);
    unsigned layouts = row ? row->grad : GRAD_SAME;
    for (int k = 0; k < GRAD_N_LAYOUTS; k++) {
      if (!(layouts & (1u << k))) continue;
      char *name = binary_cases[n_binary_cases].name;
      snprintf(name, sizeof binary_cases[0].name, "grad_%s_%d", op->id, k);
      binary_cases[n_binary_cases++].c = (grad_case){name, binary, {op->op, k}, 0};
    }
  }
  return n_binary_cases;
}

int gradcase_count(void) { return binary_count() + N_CASES; }
const grad_case *gradcase_get(int i) {
  int nb = binary_count();
  if (i < 0 || i >= nb + N_CASES) return NULL;
  return i < nb ? &binary_cases[i].c : &cases[i - nb];
}
