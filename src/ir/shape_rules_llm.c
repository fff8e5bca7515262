/* shape_rules_llm.c - shape rules of the quantized language-model ops
 * (matmul_q, gather_q, swiglu_q, attention_kv; see include/rlx_ops.def).
 * Same contract as shape_rules.c: validate inputs, dtypes and attributes,
 * set the output shape, or write a message and return a status. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../models/gguf_quants.h"
#include "graph.h"

#define FAIL(code, ...) return (snprintf(msg, cap, __VA_ARGS__), (code))
#define IN(k) (&g->nodes[n->inputs[k]].shape)
#define DTYPE(k) (g->nodes[n->inputs[k]].dtype)

rlx_status rlx_shape_matmul_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_gather_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_swiglu_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_attention_kv(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);

static rlx_status want_attrs(const rlx_node_t *n, char *msg, size_t cap) {
  int32_t ni, nf;
  int has_list;
  rlx_attr_set_sizes(rlx_op_table[n->op].attrs, &ni, &nf, &has_list);
  if (n->n_iattr != ni || n->n_fattr != nf)
    FAIL(RLX_ERR_INVALID_ARG, "expects %d integer and %d float attributes, got %d and %d", (int)ni, (int)nf,
         (int)n->n_iattr, (int)n->n_fattr);
  return RLX_OK;
}

/* The quantized table of input k: qtype, rows, cols (QTABLE's slots) and
 * the i32 storage big enough for rows * row bytes. */
static rlx_status check_table(const rlx_graph *g, const rlx_node_t *n, int32_t k, char *msg, size_t cap) {
  int32_t qtype = ATTR_I(n, QTABLE, QTYPE), rows = ATTR_I(n, QTABLE, ROWS), cols = ATTR_I(n, QTABLE, COLS);
  const char *name = qtype >= 0 ? rlx_gguf_type_name((rlx_gguf_type)qtype) : NULL;
  if (!name) {
    const char *known = qtype >= 0 ? rlx_wtype_known_name((uint32_t)qtype) : NULL;
    FAIL(RLX_ERR_INVALID_ARG, "qtype %d%s%s%s is not a supported GGUF weight type", (int)qtype, known ? " (" : "",
         known ? known : "", known ? ")" : "");
  }
  if (rows < 1 || cols < 1) FAIL(RLX_ERR_INVALID_ARG, "rows (%d) and cols (%d) must be >= 1", (int)rows, (int)cols);
  const int32_t block_elems = rlx_gguf_type_block_elems((rlx_gguf_type)qtype);
  const int32_t block_bytes = rlx_gguf_type_block_bytes((rlx_gguf_type)qtype);
  if (cols % block_elems)
    FAIL(RLX_ERR_SHAPE, "cols %d is not a multiple of the %s block (%d values)", (int)cols, name, (int)block_elems);
  if (DTYPE(k) != RLX_I32) FAIL(RLX_ERR_INVALID_ARG, "input %d (the %s weights) must be an i32 tensor", (int)k, name);
  uint64_t need = (uint64_t)rows * (uint64_t)(cols / block_elems) * (uint64_t)block_bytes;
  uint64_t have = (uint64_t)rlx_shape_numel(IN(k)) * 4u;
  if (have < need)
    FAIL(RLX_ERR_SHAPE, "%d rows of %d %s values take %llu bytes; input %d holds %llu", (int)rows, (int)cols, name,
         (unsigned long long)need, (int)k, (unsigned long long)have);
  return RLX_OK;
}

/* The optional attributes, the int ones from slot ints and the float ones
 * from slot floats on, are 0 when left out (all of them, or the ones
 * after those given). */
static void default_optional(rlx_node_t *n, int32_t ints, int32_t floats) {
  int32_t ni, nf;
  int has_list;
  rlx_attr_set_sizes(rlx_op_table[n->op].attrs, &ni, &nf, &has_list);
  if (n->n_iattr >= ints)
    while (n->n_iattr < ni) n->iattr[n->n_iattr++] = 0;
  if (n->n_fattr >= floats)
    while (n->n_fattr < nf) n->fattr[n->n_fattr++] = 0.0f;
}

/* norm (0 or 1) with its weight g[K] as input k (the last) and eps. */
static rlx_status check_norm(const rlx_graph *g, const rlx_node_t *n, int32_t norm, int32_t k, int32_t K, float eps,
                             char *msg, size_t cap) {
  if (norm != 0 && norm != 1) FAIL(RLX_ERR_INVALID_ARG, "norm must be 0 or 1, got %d", (int)norm);
  if (!isfinite(eps) || eps < 0.0f) FAIL(RLX_ERR_INVALID_ARG, "eps must be finite and >= 0");
  if (norm && n->n_inputs != k + 1)
    FAIL(RLX_ERR_INVALID_ARG, "norm takes its weight g[%d] as input %d, the last (%d inputs given)", (int)K, (int)k,
         (int)n->n_inputs);
  if (norm && (DTYPE(k) != RLX_F32 || IN(k)->rank != 1 || IN(k)->dims[0] != K))
    FAIL(RLX_ERR_SHAPE, "norm's weight (input %d) must be f32 [%d]", (int)k, (int)K);
  return RLX_OK;
}
/* xq8 is 0 or 1, and 1 needs a product over rows of a multiple of 32 values. */
static rlx_status check_xq8(int32_t xq8, int32_t K, int32_t trans, char *msg, size_t cap) {
  if (xq8 != 0 && xq8 != 1) FAIL(RLX_ERR_INVALID_ARG, "xq8 must be 0 or 1, got %d", (int)xq8);
  if (xq8 && (trans || K % 32))
    FAIL(RLX_ERR_INVALID_ARG, "xq8 rounds x in blocks of 32 along K: it needs trans 0 and K a multiple of 32 (K %d%s)",
         (int)K, trans ? ", trans 1" : "");
  return RLX_OK;
}

rlx_status rlx_shape_matmul_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  default_optional(n, RLX_IATTR_QMATMUL_XQ8, RLX_FATTR_QMATMUL_EPS);
  rlx_status st = want_attrs(n, msg, cap);
  if (st != RLX_OK || (st = check_table(g, n, 1, msg, cap)) != RLX_OK) return st;
  int32_t rows = ATTR_I(n, QTABLE, ROWS), cols = ATTR_I(n, QTABLE, COLS), trans = ATTR_I(n, QMATMUL, TRANS);
  const int32_t norm = ATTR_I(n, QMATMUL, NORM);
  const rlx_shape *x = IN(0);
  if (trans != 0 && trans != 1) FAIL(RLX_ERR_INVALID_ARG, "trans must be 0 or 1");
  if ((st = check_xq8(ATTR_I(n, QMATMUL, XQ8), cols, trans, msg, cap)) != RLX_OK) return st;
  if ((st = check_norm(g, n, norm, 2, cols, ATTR_F(n, QMATMUL, EPS), msg, cap)) != RLX_OK) return st;
  if (norm && trans) FAIL(RLX_ERR_INVALID_ARG, "norm normalizes x[..., cols]: it needs trans 0");
  if (DTYPE(0) != RLX_F32) FAIL(RLX_ERR_INVALID_ARG, "x must be f32");
  if (x->rank < 1) FAIL(RLX_ERR_SHAPE, "x needs rank >= 1");
  int32_t in = trans ? rows : cols, out = trans ? cols : rows;
  if (x->dims[x->rank - 1] != in)
    FAIL(RLX_ERR_SHAPE, "x's last dim is %d; %s needs %d", (int)x->dims[x->rank - 1],
         trans ? "trans (x[..., rows])" : "x[..., cols]", (int)in);
  n->shape = *x;
  n->shape.dims[x->rank - 1] = out;
  if (!norm && n->n_inputs > 2 && (DTYPE(2) != RLX_F32 || !rlx_shape_equal(IN(2), &n->shape)))
    FAIL(RLX_ERR_SHAPE, "acc (input 2) must be f32 of the output's shape");
  return RLX_OK;
}

rlx_status rlx_shape_gather_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  rlx_status st = want_attrs(n, msg, cap);
  if (st != RLX_OK || (st = check_table(g, n, 0, msg, cap)) != RLX_OK) return st;
  const rlx_shape *ids = IN(1);
  if (ids->rank >= RLX_MAX_RANK) FAIL(RLX_ERR_SHAPE, "ids have too many dims");
  n->shape = *ids;
  n->shape.dims[n->shape.rank++] = ATTR_I(n, QTABLE, COLS);
  return RLX_OK;
}

/* (x[..., K], w_gate, w_up: N x K tables of one type) -> [..., N] */
rlx_status rlx_shape_swiglu_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  default_optional(n, RLX_IATTR_QSWIGLU_XQ8, RLX_FATTR_QSWIGLU_EPS);
  rlx_status st = want_attrs(n, msg, cap);
  for (int32_t k = 1; k <= 2 && st == RLX_OK; k++) st = check_table(g, n, k, msg, cap);
  if (st == RLX_OK) st = check_xq8(ATTR_I(n, QSWIGLU, XQ8), ATTR_I(n, QTABLE, COLS), 0, msg, cap);
  if (st == RLX_OK)
    st = check_norm(g, n, ATTR_I(n, QSWIGLU, NORM), 3, ATTR_I(n, QTABLE, COLS), ATTR_F(n, QSWIGLU, EPS), msg, cap);
  if (st != RLX_OK) return st;
  if (!ATTR_I(n, QSWIGLU, NORM) && n->n_inputs > 3) FAIL(RLX_ERR_INVALID_ARG, "input 3 (a norm's weight) needs norm 1");
  const rlx_shape *x = IN(0);
  if (DTYPE(0) != RLX_F32) FAIL(RLX_ERR_INVALID_ARG, "x must be f32");
  if (x->rank < 1 || x->dims[x->rank - 1] != ATTR_I(n, QTABLE, COLS))
    FAIL(RLX_ERR_SHAPE, "x must be [..., cols] (cols %d)", (int)ATTR_I(n, QTABLE, COLS));
  n->shape = *x;
  n->shape.dims[x->rank - 1] = ATTR_I(n, QTABLE, ROWS);
  return RLX_OK;
}

/* (q[Hq, S, D], k[Hkv, S, D], v[Hkv, S, Dv], k_cache[Hkv, C, D],
 * v_cache[Hkv, C, Dv], pos[1] i32) -> [S, Hq, Dv] */
rlx_status rlx_shape_attention_kv(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  default_optional(n, RLX_IATTR_ATTENTION_KV_ROPE, RLX_FATTR_ATTENTION_KV_THETA);
  rlx_status st = want_attrs(n, msg, cap);
  if (st != RLX_OK) return st;
  static const char *const names[6] = {"q", "k", "v", "k_cache", "v_cache", "pos"};
  for (int32_t k = 0; k < 5; k++) {
    if (DTYPE(k) != RLX_F32) FAIL(RLX_ERR_INVALID_ARG, "%s must be f32", names[k]);
    if (IN(k)->rank != 3) FAIL(RLX_ERR_SHAPE, "%s must have rank 3", names[k]);
  }
  const rlx_shape *q = IN(0), *kk = IN(1), *v = IN(2), *kc = IN(3), *vc = IN(4);
  int32_t hq = q->dims[0], s = q->dims[1], d = q->dims[2], hkv = kk->dims[0], dv = v->dims[2], c = kc->dims[1];
  if (kk->dims[1] != s || kk->dims[2] != d) FAIL(RLX_ERR_SHAPE, "k must be [Hkv, %d, %d]", (int)s, (int)d);
  if (v->dims[0] != hkv || v->dims[1] != s) FAIL(RLX_ERR_SHAPE, "v must be [%d, %d, Dv]", (int)hkv, (int)s);
  if (hq % hkv) FAIL(RLX_ERR_SHAPE, "q's %d heads are not a multiple of the %d key/value heads", (int)hq, (int)hkv);
  if (kc->dims[0] != hkv || kc->dims[2] != d) FAIL(RLX_ERR_SHAPE, "k_cache must be [%d, C, %d]", (int)hkv, (int)d);
  if (vc->dims[0] != hkv || vc->dims[1] != c || vc->dims[2] != dv)
    FAIL(RLX_ERR_SHAPE, "v_cache must be [%d, %d, %d]", (int)hkv, (int)c, (int)dv);
  for (int32_t k = 3; k < 5; k++) {
    rlx_op op = g->nodes[n->inputs[k]].op;
    if (op != RLX_OP_INPUT && op != RLX_OP_PARAM)
      FAIL(RLX_ERR_GRAPH, "%s must be an input or param (the op writes into it), not a %s node", names[k],
           rlx_op_name(op));
    for (int32_t j = 0; j < 6; j++)
      if (j != k && n->inputs[j] == n->inputs[k]) FAIL(RLX_ERR_GRAPH, "%s is also given as %s", names[k], names[j]);
  }
  if (DTYPE(5) != RLX_I32 || rlx_shape_numel(IN(5)) != 1) FAIL(RLX_ERR_INVALID_ARG, "pos must be an i32 tensor of one element");
  if (!isfinite(ATTR_F(n, ATTENTION_KV, SCALE))) FAIL(RLX_ERR_INVALID_ARG, "scale must be finite");
  const int32_t rope = ATTR_I(n, ATTENTION_KV, ROPE);
  const float theta = ATTR_F(n, ATTENTION_KV, THETA);
  if (rope < 0 || rope > 2) FAIL(RLX_ERR_INVALID_ARG, "rope must be 0 (none), 1 (NeoX halves) or 2 (pairs), got %d", (int)rope);
  if (rope && !(isfinite(theta) && theta > 0.0f)) FAIL(RLX_ERR_INVALID_ARG, "rope needs theta > 0 (finite)");
  if (rope && d % 2) FAIL(RLX_ERR_SHAPE, "rope rotates pairs: D (%d) must be even", (int)d);
  n->shape.rank = 3;
  n->shape.dims[0] = s;
  n->shape.dims[1] = hq;
  n->shape.dims[2] = dv;
  return RLX_OK;
}
