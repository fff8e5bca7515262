/* shape_rules.c - one shape rule per op family: validates inputs and
 * attributes, normalizes negative axes, and sets the output shape.  Messages
 * say what is wrong; graph.c adds the node, op and input shapes.  The op
 * table here follows the op families the build has (src/core/families.h):
 * the browser modules build this file once each with theirs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/families.h"
#include "graph.h"
#include "rlx_op_info.h"

/* A rule of a family the build leaves out is never referenced (unused). */
#define RULE(name) \
  static __attribute__((unused)) rlx_status rlx_shape_##name(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap)
#define FAIL(code, ...) return (snprintf(msg, cap, __VA_ARGS__), (code))
#define IN(k) (&g->nodes[n->inputs[k]].shape)

/* The node holds exactly the int and float attributes of its op's set. */
static rlx_status want_attrs(const rlx_node_t *n, char *msg, size_t cap) {
  int32_t ni, nf;
  int has_list;
  rlx_attr_set_sizes(rlx_op_table[n->op].attrs, &ni, &nf, &has_list);
  if (n->n_iattr != ni || n->n_fattr != nf)
    FAIL(RLX_ERR_INVALID_ARG, "expects %d integer and %d float attributes, got %d and %d", (int)ni, (int)nf,
         (int)n->n_iattr, (int)n->n_fattr);
  return RLX_OK;
}
#define ATTRS()                                             \
  do {                                                      \
    rlx_status st_ = want_attrs(n, msg, cap);               \
    if (st_ != RLX_OK) return st_;                          \
  } while (0)

/* Normalizes *axis against rank; 0 if it is out of range. */
static int norm_axis(int32_t *axis, int32_t rank) {
  if (*axis < 0) *axis += rank;
  return *axis >= 0 && *axis < rank;
}

/* out = numpy broadcast of a and b; 0 if incompatible. */
static int broadcast(const rlx_shape *a, const rlx_shape *b, rlx_shape *out) {
  int32_t r = a->rank > b->rank ? a->rank : b->rank;
  out->rank = r;
  for (int32_t i = 0; i < r; i++) {
    int32_t da = i < r - a->rank ? 1 : a->dims[i - (r - a->rank)];
    int32_t db = i < r - b->rank ? 1 : b->dims[i - (r - b->rank)];
    if (da != db && da != 1 && db != 1) return 0;
    out->dims[i] = da == 1 ? db : da;
  }
  return 1;
}

RULE(leaf) {
  (void)g, (void)msg, (void)cap;
  return n->n_inputs == 0 ? RLX_OK : RLX_ERR_GRAPH;
}

RULE(unary) {
  ATTRS();
  n->shape = *IN(0);
  return RLX_OK;
}

RULE(binary) {
  ATTRS();
  if (!broadcast(IN(0), IN(1), &n->shape)) FAIL(RLX_ERR_SHAPE, "shapes do not broadcast");
  return RLX_OK;
}

RULE(ternary) {
  rlx_shape ab;
  ATTRS();
  if (!broadcast(IN(1), IN(2), &ab) || !broadcast(IN(0), &ab, &n->shape))
    FAIL(RLX_ERR_SHAPE, "condition and values do not broadcast");
  return RLX_OK;
}

RULE(matmul) {
  const rlx_shape *a = IN(0), *b = IN(1);
  rlx_shape ba, bb, batch;
  ATTRS();
  if (a->rank < 2 || b->rank < 2) FAIL(RLX_ERR_SHAPE, "both operands need rank >= 2");
  int32_t ta = ATTR_I(n, MATMUL, TRANS_A) != 0, tb = ATTR_I(n, MATMUL, TRANS_B) != 0;
  int32_t m = a->dims[a->rank - 2 + ta], ka = a->dims[a->rank - 1 - ta];
  int32_t kb = b->dims[b->rank - 2 + tb], nn = b->dims[b->rank - 1 - tb];
  if (ka != kb) FAIL(RLX_ERR_SHAPE, "inner dimensions differ (%d vs %d)", (int)ka, (int)kb);
  ba.rank = a->rank - 2;
  bb.rank = b->rank - 2;
  memcpy(ba.dims, a->dims, sizeof(int32_t) * (size_t)ba.rank);
  memcpy(bb.dims, b->dims, sizeof(int32_t) * (size_t)bb.rank);
  if (!broadcast(&ba, &bb, &batch)) FAIL(RLX_ERR_SHAPE, "batch dimensions do not broadcast");
  ATTR_I(n, MATMUL, TRANS_A) = ta;
  ATTR_I(n, MATMUL, TRANS_B) = tb;
  n->shape = batch;
  n->shape.dims[n->shape.rank++] = m;
  n->shape.dims[n->shape.rank++] = nn;
  return RLX_OK;
}

RULE(reshape) {
  size_t known = 1, total = rlx_shape_numel(IN(0));
  int32_t infer_at = -1;
  if (n->n_fattr != 0 || n->n_iattr > RLX_MAX_RANK) FAIL(RLX_ERR_INVALID_ARG, "bad target dims");
  for (int32_t i = 0; i < n->n_iattr; i++) {
    int32_t d = n->iattr[i];
    if (d == -1 && infer_at < 0) {
      infer_at = i;
    } else if (d <= 0) {
      FAIL(RLX_ERR_SHAPE, "target dim %d is %d (dims must be positive, one may be -1)", (int)i, (int)d);
    } else if (!rlx_mul_size(known, (size_t)d, &known) || known > total) {
      FAIL(RLX_ERR_SHAPE, "target has more elements than the input (%zu)", total);
    }
  }
  if (infer_at >= 0) {
    if (total % known) FAIL(RLX_ERR_SHAPE, "cannot infer the -1 dim: %zu is not a multiple of %zu", total, known);
    n->iattr[infer_at] = (int32_t)(total / known);
    known = total;
  }
  if (known != total) FAIL(RLX_ERR_SHAPE, "element counts differ (%zu vs %zu)", known, total);
  n->shape.rank = n->n_iattr;
  memcpy(n->shape.dims, n->iattr, sizeof(int32_t) * (size_t)n->n_iattr);
  return RLX_OK;
}

RULE(permute) {
  const rlx_shape *x = IN(0);
  int32_t seen = 0;
  if (n->n_fattr != 0 || n->n_iattr != x->rank)
    FAIL(RLX_ERR_INVALID_ARG, "perm needs %d entries, got %d", (int)x->rank, (int)n->n_iattr);
  n->shape.rank = x->rank;
  for (int32_t i = 0; i < x->rank; i++) {
    int32_t p = n->iattr[i];
    if (!norm_axis(&p, x->rank) || (seen & (1 << p))) FAIL(RLX_ERR_INVALID_ARG, "perm is not a permutation of 0..%d", (int)x->rank - 1);
    seen |= 1 << p;
    n->iattr[i] = p;
    n->shape.dims[i] = x->dims[p];
  }
  return RLX_OK;
}

RULE(narrow) {
  const rlx_shape *x = IN(0);
  ATTRS();
  if (!norm_axis(&ATTR_I(n, NARROW, AXIS), x->rank))
    FAIL(RLX_ERR_INVALID_ARG, "axis %d is outside rank %d", (int)ATTR_I(n, NARROW, AXIS), (int)x->rank);
  int32_t axis = ATTR_I(n, NARROW, AXIS), start = ATTR_I(n, NARROW, START), len = ATTR_I(n, NARROW, LENGTH);
  if (start < 0 || len <= 0 || start > x->dims[axis] - len)
    FAIL(RLX_ERR_SHAPE, "range start %d length %d does not fit dim %d of size %d", (int)start, (int)len,
         (int)axis, (int)x->dims[axis]);
  n->shape = *x;
  n->shape.dims[axis] = len;
  return RLX_OK;
}

RULE(concat) {
  const rlx_shape *x = IN(0);
  ATTRS();
  if (!norm_axis(&ATTR_I(n, AXIS, AXIS), x->rank))
    FAIL(RLX_ERR_INVALID_ARG, "axis %d is outside rank %d", (int)ATTR_I(n, AXIS, AXIS), (int)x->rank);
  int32_t axis = ATTR_I(n, AXIS, AXIS);
  int64_t total = 0;
  for (int32_t k = 0; k < n->n_inputs; k++) {
    const rlx_shape *s = IN(k);
    if (s->rank != x->rank) FAIL(RLX_ERR_SHAPE, "input %d has rank %d, input 0 has %d", (int)k, (int)s->rank, (int)x->rank);
    for (int32_t i = 0; i < x->rank; i++)
      if (i != axis && s->dims[i] != x->dims[i])
        FAIL(RLX_ERR_SHAPE, "input %d differs from input 0 in dim %d (not the concat axis %d)", (int)k, (int)i, (int)axis);
    total += s->dims[axis];
  }
  if (total > INT32_MAX) FAIL(RLX_ERR_SHAPE, "concatenated dim is too large");
  n->shape = *x;
  n->shape.dims[axis] = (int32_t)total;
  return RLX_OK;
}

RULE(expand) {
  const rlx_shape *x = IN(0);
  if (n->n_fattr != 0 || n->n_iattr > RLX_MAX_RANK || n->n_iattr < x->rank)
    FAIL(RLX_ERR_SHAPE, "target rank %d is below the input rank %d", (int)n->n_iattr, (int)x->rank);
  int32_t off = n->n_iattr - x->rank;
  for (int32_t i = 0; i < n->n_iattr; i++) {
    int32_t d = n->iattr[i];
    if (d <= 0) FAIL(RLX_ERR_SHAPE, "target dim %d is %d", (int)i, (int)d);
    if (i >= off && x->dims[i - off] != 1 && x->dims[i - off] != d)
      FAIL(RLX_ERR_SHAPE, "dim %d of size %d cannot expand to %d", (int)(i - off), (int)x->dims[i - off], (int)d);
  }
  n->shape.rank = n->n_iattr;
  memcpy(n->shape.dims, n->iattr, sizeof(int32_t) * (size_t)n->n_iattr);
  return RLX_OK;
}

RULE(gather) {
  const rlx_shape *t = IN(0), *ids = IN(1);
  ATTRS();
  if (t->rank != 2) FAIL(RLX_ERR_SHAPE, "the table must be [rows, dim]");
  if (ids->rank >= RLX_MAX_RANK) FAIL(RLX_ERR_SHAPE, "ids have too many dims");
  n->shape = *ids;
  n->shape.dims[n->shape.rank++] = t->dims[1];
  return RLX_OK;
}

RULE(reduce) {
  const rlx_shape *x = IN(0);
  ATTRS();
  int32_t mask = ATTR_I(n, REDUCE, AXES), keep = ATTR_I(n, REDUCE, KEEPDIM) != 0;
  if (mask == 0 || (x->rank < 31 && (mask >> x->rank) != 0) || mask < 0)
    FAIL(RLX_ERR_INVALID_ARG, "axis mask 0x%x does not name axes of a rank-%d tensor", (unsigned)mask, (int)x->rank);
  ATTR_I(n, REDUCE, KEEPDIM) = keep;
  n->shape.rank = 0;
  for (int32_t i = 0; i < x->rank; i++) {
    if (!(mask & (1 << i)))
      n->shape.dims[n->shape.rank++] = x->dims[i];
    else if (keep)
      n->shape.dims[n->shape.rank++] = 1;
  }
  return RLX_OK;
}

RULE(axis_op) {
  const rlx_shape *x = IN(0);
  ATTRS();
  if (!norm_axis(&ATTR_I(n, AXIS, AXIS), x->rank))
    FAIL(RLX_ERR_INVALID_ARG, "axis %d is outside rank %d", (int)ATTR_I(n, AXIS, AXIS), (int)x->rank);
  n->shape = *x;
  return RLX_OK;
}

RULE(softmax_ce) {
  const rlx_shape *lg = IN(0), *lb = IN(1);
  ATTRS();
  if (lg->rank < 1) FAIL(RLX_ERR_SHAPE, "logits need a class axis");
  if (lb->rank != lg->rank - 1 || memcmp(lb->dims, lg->dims, sizeof(int32_t) * (size_t)lb->rank) != 0)
    FAIL(RLX_ERR_SHAPE, "labels must have the logits' shape without the class axis");
  n->shape = *lb;
  return RLX_OK;
}

RULE(norm) {
  const rlx_shape *x = IN(0);
  ATTRS();
  if (x->rank < 1) FAIL(RLX_ERR_SHAPE, "input needs rank >= 1");
  int32_t d = x->dims[x->rank - 1];
  for (int32_t k = 1; k < n->n_inputs; k++)
    if (IN(k)->rank != 1 || IN(k)->dims[0] != d)
      FAIL(RLX_ERR_SHAPE, "input %d must be [%d] (the last dim)", (int)k, (int)d);
  if (!(ATTR_F(n, NORM, EPS) >= 0.0f) || isinf(ATTR_F(n, NORM, EPS))) FAIL(RLX_ERR_INVALID_ARG, "eps must be finite and >= 0");
  n->shape = *x;
  return RLX_OK;
}

RULE(rope) { /* (x[, offset i32 [1]]) -> x's shape */
  const rlx_shape *x = IN(0);
  /* inverse and mode are optional (default 0): graphs made before them stay valid */
  if (n->n_iattr == RLX_IATTR_ROPE_INVERSE) ATTR_I(n, ROPE, INVERSE) = 0, n->n_iattr++;
  if (n->n_iattr == RLX_IATTR_ROPE_MODE) ATTR_I(n, ROPE, MODE) = 0, n->n_iattr++;
  ATTRS();
  if (ATTR_I(n, ROPE, INVERSE) != 0 && ATTR_I(n, ROPE, INVERSE) != 1) FAIL(RLX_ERR_INVALID_ARG, "inverse must be 0 or 1");
  if (ATTR_I(n, ROPE, MODE) != 0 && ATTR_I(n, ROPE, MODE) != 1)
    FAIL(RLX_ERR_INVALID_ARG, "mode must be 0 (NeoX halves) or 1 (adjacent pairs), got %d", (int)ATTR_I(n, ROPE, MODE));
  if (x->rank < 2) FAIL(RLX_ERR_SHAPE, "input needs rank >= 2 ([..., S, D])");
  if (x->dims[x->rank - 1] % 2) FAIL(RLX_ERR_SHAPE, "the last dim must be even");
  if (!(ATTR_F(n, ROPE, THETA) > 0.0f) || isinf(ATTR_F(n, ROPE, THETA))) FAIL(RLX_ERR_INVALID_ARG, "theta must be finite and > 0");
  if (ATTR_I(n, ROPE, POS_OFFSET) < 0) FAIL(RLX_ERR_INVALID_ARG, "pos_offset must be >= 0");
  if (n->n_inputs == 2 && (g->nodes[n->inputs[1]].dtype != RLX_I32 || rlx_shape_numel(IN(1)) != 1))
    FAIL(RLX_ERR_INVALID_ARG, "the offset (input 1) must be an i32 tensor of one element");
  if (g->nodes[n->inputs[0]].dtype != RLX_F32) FAIL(RLX_ERR_INVALID_ARG, "x must be f32");
  n->shape = *x;
  return RLX_OK;
}

/* Checks q, k, v (and the mask input at index mask_k) of attention and its
 * gradient; sets *out to the attention output shape. */
static rlx_status check_attention(const rlx_graph *g, const rlx_node_t *n, int32_t mask_k, rlx_shape *out,
                                  char *msg, size_t cap) {
  const rlx_shape *q = IN(0), *k = IN(1), *v = IN(2);
  int32_t kind = ATTR_I(n, ATTENTION, MASK), window = ATTR_I(n, ATTENTION, WINDOW);
  if (q->rank != 4 || k->rank != 4 || v->rank != 4) FAIL(RLX_ERR_SHAPE, "q, k and v must be [B, H, S, D]");
  if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] || k->dims[1] != q->dims[1] || v->dims[1] != q->dims[1])
    FAIL(RLX_ERR_SHAPE, "q, k and v must share B and H");
  if (k->dims[3] != q->dims[3]) FAIL(RLX_ERR_SHAPE, "q and k must share the head dim");
  if (v->dims[2] != k->dims[2]) FAIL(RLX_ERR_SHAPE, "k and v must share the key length");
  if (kind < RLX_MASK_NONE || kind > RLX_MASK_BIAS) FAIL(RLX_ERR_INVALID_ARG, "unknown mask kind %d", (int)kind);
  int32_t wants_mask = kind == RLX_MASK_PADDING || kind == RLX_MASK_BIAS;
  if (wants_mask != (n->n_inputs == mask_k + 1))
    FAIL(RLX_ERR_GRAPH, "mask kind %d %s a mask tensor", (int)kind, wants_mask ? "needs" : "takes no");
  if (kind == RLX_MASK_SLIDING && window < 1) FAIL(RLX_ERR_INVALID_ARG, "sliding window must be >= 1, got %d", (int)window);
  if (!isfinite(ATTR_F(n, ATTENTION, SCALE))) FAIL(RLX_ERR_INVALID_ARG, "scale must be finite");
  if (kind == RLX_MASK_PADDING) {
    const rlx_shape *m = IN(mask_k);
    if (m->rank != 2 || m->dims[0] != q->dims[0] || m->dims[1] != k->dims[2])
      FAIL(RLX_ERR_SHAPE, "padding mask must be [B, Sk] = [%d, %d]", (int)q->dims[0], (int)k->dims[2]);
  }
  if (kind == RLX_MASK_BIAS) {
    rlx_shape scores = *q, b;
    scores.dims[3] = k->dims[2];
    if (IN(mask_k)->rank > 4 || !broadcast(IN(mask_k), &scores, &b) || !rlx_shape_equal(&b, &scores))
      FAIL(RLX_ERR_SHAPE, "bias must broadcast to [B, H, Sq, Sk]");
  }
  *out = *q;
  out->dims[3] = v->dims[3];
  return RLX_OK;
}

RULE(attention) {
  ATTRS();
  return check_attention(g, n, 3, &n->shape, msg, cap);
}

RULE(attention_grad) {
  rlx_shape y;
  ATTRS();
  rlx_status st = check_attention(g, n, 4, &y, msg, cap);
  if (st != RLX_OK) return st;
  if (!rlx_shape_equal(IN(3), &y)) FAIL(RLX_ERR_SHAPE, "dy must have the attention output's shape");
  size_t total = rlx_shape_numel(IN(0)) + rlx_shape_numel(IN(1)) + rlx_shape_numel(IN(2));
  if (total > (size_t)INT32_MAX) FAIL(RLX_ERR_SHAPE, "gradient too large");
  n->shape.rank = 1;
  n->shape.dims[0] = (int32_t)total;
  return RLX_OK;
}

/* Output size of a strided window: 0 if no window fits, -1 if the size
 * passes INT32_MAX. */
static int64_t window_out(int32_t in, int32_t k, int32_t stride, int32_t pad, int32_t dil) {
  int64_t span = (int64_t)dil * (k - 1) + 1, room = (int64_t)in + 2 * (int64_t)pad - span;
  int64_t out = room < 0 ? 0 : room / stride + 1;
  return out > INT32_MAX ? -1 : out;
}

/* [OH, OW] of a window over [H, W]: FAILs when none fits or it is too big. */
static rlx_status window_dims(const int32_t *hw, const int32_t *k, const int32_t *stride, const int32_t *pad,
                              const int32_t *dil, int32_t *out, char *msg, size_t cap) {
  for (int i = 0; i < 2; i++) {
    int64_t o = window_out(hw[i], k[i], stride[i], pad[i], dil[i]);
    if (o < 0) FAIL(RLX_ERR_SHAPE, "the output %s would pass %d", i ? "width" : "height", INT32_MAX);
    if (o < 1) FAIL(RLX_ERR_SHAPE, "the window does not fit the padded input");
    out[i] = (int32_t)o;
  }
  return RLX_OK;
}

/* Checks conv2d attributes (a node of the CONV set or one based on it) for
 * input [N, C, H, W] and weight [O, C/g, KH, KW] (given as dims) and sets
 * out to [N, O, OH, OW]. */
static rlx_status check_conv(const rlx_node_t *n, const int32_t *x, const int32_t *w, rlx_shape *out, char *msg,
                             size_t cap) {
  const int32_t stride[2] = {ATTR_I(n, CONV, STRIDE_H), ATTR_I(n, CONV, STRIDE_W)};
  const int32_t pad[2] = {ATTR_I(n, CONV, PAD_H), ATTR_I(n, CONV, PAD_W)};
  const int32_t dil[2] = {ATTR_I(n, CONV, DIL_H), ATTR_I(n, CONV, DIL_W)}, groups = ATTR_I(n, CONV, GROUPS);
  if (stride[0] < 1 || stride[1] < 1 || pad[0] < 0 || pad[1] < 0 || dil[0] < 1 || dil[1] < 1 || groups < 1)
    FAIL(RLX_ERR_INVALID_ARG, "stride and dilation must be >= 1, padding >= 0, groups >= 1");
  if (x[1] % groups || w[0] % groups)
    FAIL(RLX_ERR_SHAPE, "channels %d and filters %d must divide by groups %d", (int)x[1], (int)w[0], (int)groups);
  if (w[1] != x[1] / groups)
    FAIL(RLX_ERR_SHAPE, "w has %d input channels per group, x gives %d", (int)w[1], (int)(x[1] / groups));
  out->rank = 4;
  out->dims[0] = x[0];
  out->dims[1] = w[0];
  return window_dims(x + 2, w + 2, stride, pad, dil, out->dims + 2, msg, cap);
}

RULE(conv2d) {
  const rlx_shape *x = IN(0), *w = IN(1);
  ATTRS();
  if (x->rank != 4 || w->rank != 4) FAIL(RLX_ERR_SHAPE, "x must be [N, C, H, W] and w [O, C/groups, KH, KW]");
  return check_conv(n, x->dims, w->dims, &n->shape, msg, cap);
}

static rlx_status want_dy(const rlx_shape *dy, const rlx_shape *y, char *msg, size_t cap) {
  char want[96];
  if (rlx_shape_equal(dy, y)) return RLX_OK;
  rlx_format_dims(want, sizeof want, y->rank, y->dims);
  FAIL(RLX_ERR_SHAPE, "dy must be %s (the forward output)", want);
}

RULE(conv2d_grad_input) { /* (dy, w) -> [N, C, H, W] */
  const rlx_shape *dy = IN(0), *w = IN(1);
  rlx_shape y;
  ATTRS();
  if (dy->rank != 4 || w->rank != 4) FAIL(RLX_ERR_SHAPE, "dy and w must have rank 4");
  const int32_t in_h = ATTR_I(n, CONV_GRAD_INPUT, IN_H), in_w = ATTR_I(n, CONV_GRAD_INPUT, IN_W);
  const int32_t groups = ATTR_I(n, CONV, GROUPS);
  if (in_h < 1 || in_w < 1 || groups < 1) FAIL(RLX_ERR_INVALID_ARG, "input height, width and groups must be >= 1");
  int64_t channels = (int64_t)w->dims[1] * groups;
  if (channels > INT32_MAX) FAIL(RLX_ERR_SHAPE, "%d groups of %d channels pass %d", (int)groups, (int)w->dims[1], INT32_MAX);
  int32_t x[4] = {dy->dims[0], (int32_t)channels, in_h, in_w};
  rlx_status st = check_conv(n, x, w->dims, &y, msg, cap);
  if (st != RLX_OK) return st;
  if ((st = want_dy(dy, &y, msg, cap)) != RLX_OK) return st;
  n->shape.rank = 4;
  memcpy(n->shape.dims, x, sizeof x);
  return RLX_OK;
}

RULE(conv2d_grad_weight) { /* (x, dy) -> [O, C/g, KH, KW] */
  const rlx_shape *x = IN(0), *dy = IN(1);
  rlx_shape y;
  ATTRS();
  if (dy->rank != 4 || x->rank != 4) FAIL(RLX_ERR_SHAPE, "x and dy must have rank 4");
  const int32_t kh = ATTR_I(n, CONV_GRAD_WEIGHT, KERNEL_H), kw = ATTR_I(n, CONV_GRAD_WEIGHT, KERNEL_W);
  const int32_t groups = ATTR_I(n, CONV, GROUPS);
  if (kh < 1 || kw < 1 || groups < 1) FAIL(RLX_ERR_INVALID_ARG, "kernel size and groups must be >= 1");
  int32_t w[4] = {dy->dims[1], x->dims[1] / groups, kh, kw};
  rlx_status st = check_conv(n, x->dims, w, &y, msg, cap);
  if (st != RLX_OK) return st;
  if ((st = want_dy(dy, &y, msg, cap)) != RLX_OK) return st;
  n->shape.rank = 4;
  memcpy(n->shape.dims, w, sizeof w);
  return RLX_OK;
}

/* Checks pooling attributes (a node of the POOL set or one based on it)
 * for x [N, C, H, W] and sets out to [N, C, OH, OW]. */
static rlx_status check_pool(const rlx_node_t *n, const rlx_shape *x, rlx_shape *out, char *msg, size_t cap) {
  const int32_t k[2] = {ATTR_I(n, POOL, KERNEL_H), ATTR_I(n, POOL, KERNEL_W)};
  const int32_t stride[2] = {ATTR_I(n, POOL, STRIDE_H), ATTR_I(n, POOL, STRIDE_W)};
  const int32_t pad[2] = {ATTR_I(n, POOL, PAD_H), ATTR_I(n, POOL, PAD_W)}, dil[2] = {1, 1};
  if (x->rank != 4) FAIL(RLX_ERR_SHAPE, "x must be [N, C, H, W]");
  if (k[0] < 1 || k[1] < 1 || stride[0] < 1 || stride[1] < 1 || pad[0] < 0 || pad[1] < 0 || pad[0] >= k[0] ||
      pad[1] >= k[1])
    FAIL(RLX_ERR_INVALID_ARG, "kernel and stride must be >= 1 and padding in [0, kernel)");
  *out = *x;
  return window_dims(x->dims + 2, k, stride, pad, dil, out->dims + 2, msg, cap);
}

RULE(pool2d) {
  ATTRS();
  return check_pool(n, IN(0), &n->shape, msg, cap);
}

RULE(max_pool2d_grad) { /* (x, dy) -> x's shape */
  rlx_shape y;
  ATTRS();
  rlx_status st = check_pool(n, IN(0), &y, msg, cap);
  if (st == RLX_OK) st = want_dy(IN(1), &y, msg, cap);
  n->shape = *IN(0);
  return st;
}

RULE(avg_pool2d_grad) { /* (dy) -> [N, C, H, W] */
  const rlx_shape *dy = IN(0);
  rlx_shape x, y;
  ATTRS();
  if (dy->rank != 4) FAIL(RLX_ERR_SHAPE, "dy must have rank 4");
  x = *dy;
  x.dims[2] = ATTR_I(n, AVG_POOL_GRAD, IN_H);
  x.dims[3] = ATTR_I(n, AVG_POOL_GRAD, IN_W);
  if (x.dims[2] < 1 || x.dims[3] < 1) FAIL(RLX_ERR_INVALID_ARG, "input height and width must be >= 1");
  rlx_status st = check_pool(n, &x, &y, msg, cap);
  if (st == RLX_OK) st = want_dy(dy, &y, msg, cap);
  n->shape = x;
  return st;
}

RULE(global_pool) {
  const rlx_shape *x = IN(0);
  ATTRS();
  if (x->rank != 4) FAIL(RLX_ERR_SHAPE, "x must be [N, C, H, W]");
  n->shape.rank = 2;
  n->shape.dims[0] = x->dims[0];
  n->shape.dims[1] = x->dims[1];
  return RLX_OK;
}

RULE(grad_pointwise) { /* (x, dy) -> dx */
  ATTRS();
  if (!rlx_shape_equal(IN(0), IN(1))) FAIL(RLX_ERR_SHAPE, "x and dy must have the same shape");
  n->shape = *IN(0);
  return RLX_OK;
}

RULE(narrow_grad) { /* (dy) -> input shape */
  const rlx_shape *dy = IN(0);
  ATTRS();
  if (!norm_axis(&ATTR_I(n, NARROW_GRAD, AXIS), dy->rank))
    FAIL(RLX_ERR_INVALID_ARG, "axis %d is outside rank %d", (int)ATTR_I(n, NARROW_GRAD, AXIS), (int)dy->rank);
  int32_t axis = ATTR_I(n, NARROW_GRAD, AXIS), start = ATTR_I(n, NARROW_GRAD, START), full = ATTR_I(n, NARROW_GRAD, FULL);
  if (start < 0 || full < 1 || start > full - dy->dims[axis])
    FAIL(RLX_ERR_SHAPE, "range start %d length %d does not fit a dim of size %d", (int)start, (int)dy->dims[axis], (int)full);
  n->shape = *dy;
  n->shape.dims[axis] = full;
  return RLX_OK;
}

RULE(scatter_add) { /* (ids[...], dy[..., D]) -> [V, D] */
  const rlx_shape *ids = IN(0), *dy = IN(1);
  ATTRS();
  if (ATTR_I(n, SCATTER_ADD, ROWS) < 1) FAIL(RLX_ERR_INVALID_ARG, "row count V must be >= 1");
  if (dy->rank != ids->rank + 1 || memcmp(dy->dims, ids->dims, sizeof(int32_t) * (size_t)ids->rank) != 0)
    FAIL(RLX_ERR_SHAPE, "dy must be the ids' shape plus a row dim");
  n->shape.rank = 2;
  n->shape.dims[0] = ATTR_I(n, SCATTER_ADD, ROWS);
  n->shape.dims[1] = dy->dims[dy->rank - 1];
  return RLX_OK;
}

RULE(axis_grad) { /* (y, dy) -> dx */
  ATTRS();
  if (!rlx_shape_equal(IN(0), IN(1))) FAIL(RLX_ERR_SHAPE, "y and dy must have the same shape");
  if (!norm_axis(&ATTR_I(n, AXIS, AXIS), IN(0)->rank))
    FAIL(RLX_ERR_INVALID_ARG, "axis %d is outside rank %d", (int)ATTR_I(n, AXIS, AXIS), (int)IN(0)->rank);
  n->shape = *IN(0);
  return RLX_OK;
}

RULE(softmax_ce_grad) { /* (logits, labels, dy) -> logits' shape */
  rlx_status st = rlx_shape_softmax_ce(g, n, msg, cap);
  if (st != RLX_OK) return st;
  if (!rlx_shape_equal(IN(2), &n->shape)) FAIL(RLX_ERR_SHAPE, "dy must have the labels' shape");
  n->shape = *IN(0);
  return RLX_OK;
}

RULE(norm_grad) { /* (x, w, dy) -> dx */
  ATTRS();
  const rlx_shape *x = IN(0);
  if (x->rank < 1) FAIL(RLX_ERR_SHAPE, "input needs rank >= 1");
  if (IN(1)->rank != 1 || IN(1)->dims[0] != x->dims[x->rank - 1]) FAIL(RLX_ERR_SHAPE, "w must be [%d]", (int)x->dims[x->rank - 1]);
  if (!rlx_shape_equal(IN(2), x)) FAIL(RLX_ERR_SHAPE, "x and dy must have the same shape");
  n->shape = *x;
  return RLX_OK;
}

RULE(norm_grad_weight) { /* (x, dy) -> [D] */
  ATTRS();
  const rlx_shape *x = IN(0);
  if (x->rank < 1) FAIL(RLX_ERR_SHAPE, "input needs rank >= 1");
  if (!rlx_shape_equal(IN(1), x)) FAIL(RLX_ERR_SHAPE, "x and dy must have the same shape");
  n->shape.rank = 1;
  n->shape.dims[0] = x->dims[x->rank - 1];
  return RLX_OK;
}

RULE(adam_update) { /* (p, g, m, v, lr, bias1, bias2) -> p's shape */
  ATTRS();
  const float b1 = ATTR_F(n, ADAM, BETA1), b2 = ATTR_F(n, ADAM, BETA2), eps = ATTR_F(n, ADAM, EPS);
  if (!(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1 && eps > 0 && eps < INFINITY && isfinite(ATTR_F(n, ADAM, WEIGHT_DECAY))))
    FAIL(RLX_ERR_INVALID_ARG, "beta1 and beta2 must lie in [0, 1), eps be > 0, all finite");
  for (int32_t k = 1; k < 7; k++)
    if (k < 4 ? !rlx_shape_equal(IN(k), IN(0)) : rlx_shape_numel(IN(k)) != 1)
      FAIL(RLX_ERR_SHAPE, "grad, m and v must have p's shape, lr, bias1 and bias2 one value");
  const rlx_node_t *m = &g->nodes[n->inputs[2]], *v = &g->nodes[n->inputs[3]];
  if (m->n_inputs || v->n_inputs || m->op == RLX_OP_CONSTANT || v->op == RLX_OP_CONSTANT || m == v ||
      n->inputs[0] == n->inputs[2] || n->inputs[0] == n->inputs[3])
    FAIL(RLX_ERR_GRAPH, "m and v must be input or param leaves other than p and each other (updated in place)");
  n->shape = *IN(0);
  return RLX_OK;
}

/* ==== fused ops (made by the compiler's fusion passes; see rlx_ops.def) ==== */

/* Input k must broadcast to `out` without enlarging it. */
static int broadcasts_into(const rlx_shape *in, const rlx_shape *out) {
  rlx_shape b;
  return in->rank <= out->rank && broadcast(in, out, &b) && rlx_shape_equal(&b, out);
}

RULE(fused_matmul) { /* (a, b[, bias][, mul]) -> act(a.b + bias) * mul */
  ATTRS();
  int32_t act = ATTR_I(n, FUSED_MATMUL, ACT), has_bias = ATTR_I(n, FUSED_MATMUL, HAS_BIAS) != 0;
  int32_t has_mul = ATTR_I(n, FUSED_MATMUL, HAS_MUL) != 0;
  if (act < 0 || act > 3) FAIL(RLX_ERR_INVALID_ARG, "activation %d is unknown (0 none, 1 relu, 2 gelu, 3 silu)", (int)act);
  if (n->n_inputs != 2 + has_bias + has_mul)
    FAIL(RLX_ERR_GRAPH, "expects %d inputs (a, b%s%s), got %d", (int)(2 + has_bias + has_mul), has_bias ? ", bias" : "",
         has_mul ? ", mul" : "", (int)n->n_inputs);
  rlx_node_t mm = *n; /* the plain product: FUSED_MATMUL's set starts with MATMUL's */
  mm.op = RLX_OP_MATMUL;
  mm.n_inputs = 2;
  mm.n_iattr = rlx_attr_set_count(RLX_ATTRS_MATMUL);
  rlx_status st = rlx_shape_matmul(g, &mm, msg, cap);
  if (st != RLX_OK) return st;
  ATTR_I(n, MATMUL, TRANS_A) = ATTR_I(&mm, MATMUL, TRANS_A);
  ATTR_I(n, MATMUL, TRANS_B) = ATTR_I(&mm, MATMUL, TRANS_B);
  ATTR_I(n, FUSED_MATMUL, HAS_BIAS) = has_bias;
  ATTR_I(n, FUSED_MATMUL, HAS_MUL) = has_mul;
  n->shape = mm.shape;
  for (int32_t k = 2; k < n->n_inputs; k++)
    if (!broadcasts_into(IN(k), &n->shape))
      FAIL(RLX_ERR_SHAPE, "the %s must broadcast to the product's shape", k == 2 && has_bias ? "bias" : "multiplier");
  return RLX_OK;
}

RULE(fused_attention) { /* (x, wqkv | wq, wk, wv, wo[, mask]) -> [(B,) S, Eo] */
  ATTRS();
  const int32_t H = ATTR_I(n, FUSED_ATTENTION, HEADS), Dh = ATTR_I(n, FUSED_ATTENTION, HEAD_DIM);
  const int32_t kind = ATTR_I(n, FUSED_ATTENTION, MASK), window = ATTR_I(n, FUSED_ATTENTION, WINDOW);
  const int32_t packed = ATTR_I(n, FUSED_ATTENTION, PACKED), rope = ATTR_I(n, FUSED_ATTENTION, ROPE);
  const int32_t pos = ATTR_I(n, FUSED_ATTENTION, POS_OFFSET), inverse = ATTR_I(n, FUSED_ATTENTION, ROPE_INVERSE);
  if (H < 1 || Dh < 1) FAIL(RLX_ERR_INVALID_ARG, "heads (%d) and head dim (%d) must be >= 1", (int)H, (int)Dh);
  if ((packed | rope | inverse) & ~1) FAIL(RLX_ERR_INVALID_ARG, "packed, rope and inverse flags must be 0 or 1");
  if ((int64_t)H * Dh * 3 > INT32_MAX) FAIL(RLX_ERR_SHAPE, "%d heads of %d are too wide", (int)H, (int)Dh);
  if (kind < RLX_MASK_NONE || kind > RLX_MASK_BIAS) FAIL(RLX_ERR_INVALID_ARG, "unknown mask kind %d", (int)kind);
  if (kind == RLX_MASK_SLIDING && window < 1) FAIL(RLX_ERR_INVALID_ARG, "sliding window must be >= 1, got %d", (int)window);
  if (!isfinite(ATTR_F(n, FUSED_ATTENTION, SCALE))) FAIL(RLX_ERR_INVALID_ARG, "scale must be finite");
  if (rope) {
    if (Dh % 2) FAIL(RLX_ERR_SHAPE, "head dim %d must be even for RoPE", (int)Dh);
    if (!(ATTR_F(n, FUSED_ATTENTION, THETA) > 0.0f) || isinf(ATTR_F(n, FUSED_ATTENTION, THETA))) FAIL(RLX_ERR_INVALID_ARG, "theta must be finite and > 0");
    if (pos < 0) FAIL(RLX_ERR_INVALID_ARG, "pos_offset must be >= 0");
  }
  const int32_t n_w = packed ? 1 : 3, wants_mask = kind == RLX_MASK_PADDING || kind == RLX_MASK_BIAS;
  if (n->n_inputs != 2 + n_w + wants_mask)
    FAIL(RLX_ERR_GRAPH, "expects %d inputs (x, %s, wo%s), got %d", (int)(2 + n_w + wants_mask),
         packed ? "wqkv" : "wq, wk, wv", wants_mask ? ", mask" : "", (int)n->n_inputs);
  const rlx_shape *x = IN(0);
  if (x->rank != 2 && x->rank != 3) FAIL(RLX_ERR_SHAPE, "x must be [S, E] or [B, S, E]");
  const int32_t B = x->rank == 3 ? x->dims[0] : 1, S = x->dims[x->rank - 2], E = x->dims[x->rank - 1], HD = H * Dh;
  for (int32_t k = 1; k <= n_w; k++) {
    const rlx_shape *w = IN(k);
    int32_t cols = packed ? 3 * HD : HD;
    if (w->rank != 2 || w->dims[0] != E || w->dims[1] != cols)
      FAIL(RLX_ERR_SHAPE, "%s must be [%d, %d]", packed ? "wqkv" : (k == 1 ? "wq" : k == 2 ? "wk" : "wv"), (int)E, (int)cols);
  }
  const rlx_shape *wo = IN(1 + n_w);
  if (wo->rank != 2 || wo->dims[0] != HD) FAIL(RLX_ERR_SHAPE, "wo must be [%d, Eo]", (int)HD);
  if (kind == RLX_MASK_PADDING) {
    const rlx_shape *m = IN(2 + n_w);
    if (m->rank != 2 || m->dims[0] != B || m->dims[1] != S)
      FAIL(RLX_ERR_SHAPE, "padding mask must be [B, S] = [%d, %d]", (int)B, (int)S);
  }
  if (kind == RLX_MASK_BIAS) {
    rlx_shape scores = {4, {B, H, S, S}};
    if (!broadcasts_into(IN(2 + n_w), &scores)) FAIL(RLX_ERR_SHAPE, "bias must broadcast to [B, H, S, S]");
  }
  n->shape = *x;
  n->shape.dims[x->rank - 1] = wo->dims[1];
  return RLX_OK;
}
/* ==== end of the fused ops' rules ==== */

/* The quantized language-model ops' rules (shape_rules_llm.c). */
rlx_status rlx_shape_matmul_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_gather_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_swiglu_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_attention_kv(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);

const rlx_op_info rlx_op_table[RLX_OP_COUNT] = {
#define RLX_OP(ID, op_name, min_in, max_in, rule, set)                                          \
  [RLX_OP_##ID] = {.name = #op_name, .shape = RLX_IF_BUILT(rlx_shape_##rule), .min_inputs = min_in, .max_inputs = max_in, \
                   .attrs = RLX_ATTRS_##set},
#include "rlx_ops.def"
#undef RLX_OP
};

/* Elementwise: the output is the inputs' broadcast shape, element for
 * element (include/rlx_op_info.h). */
int32_t rlx_op_is_elementwise(rlx_op op) {
  if ((int)op < 0 || op >= RLX_OP_COUNT) return -1;
  rlx_shape_rule r = rlx_op_table[op].shape;
  return r == rlx_shape_unary || r == rlx_shape_binary || r == rlx_shape_ternary;
}
