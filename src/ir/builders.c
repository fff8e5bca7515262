/* builders.c - the public graph builders.  Every builder fills a node
 * prototype and goes through rlx_graph_append, so the shape rules in
 * shape_rules.c are the single place where ops are validated. */
#include <stdio.h>
#include <string.h>

#include "graph.h"

static rlx_node fail_arg(rlx_graph *g, const char *what) {
  char msg[300];
  snprintf(msg, sizeof msg, "node %d: %s", g ? (int)g->n_nodes : -1, what);
  if (g && g->status == RLX_OK) {
    g->status = RLX_ERR_INVALID_ARG;
    g->error = rlx_strdup(msg);
  }
  rlx_error(RLX_ERR_INVALID_ARG, "%s", msg);
  return RLX_NO_NODE;
}

rlx_node rlx_op_node(rlx_graph *g, rlx_op op, const rlx_node *inputs, int32_t n_inputs,
                     const int32_t *iattr, int32_t n_iattr, const float *fattr, int32_t n_fattr) {
  rlx_node_t p;
  if (!g) return fail_arg(g, "graph is NULL");
  if (op < 0 || op >= RLX_OP_COUNT) return fail_arg(g, "unknown op");
  if (op == RLX_OP_INPUT || op == RLX_OP_PARAM || op == RLX_OP_CONSTANT)
    return fail_arg(g, "leaves are made with rlx_input, rlx_param and rlx_constant");
  if (n_inputs < 0 || n_inputs > RLX_MAX_INPUTS || (n_inputs > 0 && !inputs))
    return fail_arg(g, "bad input list");
  if (n_iattr < 0 || n_iattr > RLX_MAX_IATTR || (n_iattr > 0 && !iattr))
    return fail_arg(g, "bad integer attribute list");
  if (n_fattr < 0 || n_fattr > RLX_MAX_FATTR || (n_fattr > 0 && !fattr))
    return fail_arg(g, "bad float attribute list");
  memset(&p, 0, sizeof p);
  p.op = op;
  p.n_inputs = n_inputs;
  if (n_inputs) memcpy(p.inputs, inputs, (size_t)n_inputs * sizeof *inputs);
  p.n_iattr = n_iattr;
  if (n_iattr) memcpy(p.iattr, iattr, (size_t)n_iattr * sizeof *iattr);
  p.n_fattr = n_fattr;
  if (n_fattr) memcpy(p.fattr, fattr, (size_t)n_fattr * sizeof *fattr);
  return rlx_graph_append(g, &p);
}

static rlx_node leaf(rlx_graph *g, rlx_op op, const char *name, int32_t rank, const int32_t *dims,
                     rlx_dtype dt, const float *data) {
  rlx_node_t p;
  char msg[300];
  if (!g) return fail_arg(g, "graph is NULL");
  if (op != RLX_OP_CONSTANT) {
    if (!name || !name[0]) return fail_arg(g, "an input or param needs a non-empty name");
    if (strlen(name) > 200) return fail_arg(g, "name longer than 200 characters");
    if (rlx_graph_find(g, name) != RLX_NO_NODE) {
      snprintf(msg, sizeof msg, "the name '%s' is already used by another input or param", name);
      return fail_arg(g, msg);
    }
  } else if (!data) {
    return fail_arg(g, "constant data is NULL");
  }
  if (rank < 0 || rank > RLX_MAX_RANK) {
    snprintf(msg, sizeof msg, "rank %d is outside 0..%d", (int)rank, RLX_MAX_RANK);
    return fail_arg(g, msg);
  }
  if (rank > 0 && !dims) return fail_arg(g, "dims is NULL");
  if (dt != RLX_F32 && dt != RLX_I32) return fail_arg(g, "unknown dtype");
  memset(&p, 0, sizeof p);
  p.op = op;
  p.dtype = dt;
  p.shape.rank = rank;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] <= 0) {
      char d[128];
      rlx_format_dims(d, sizeof d, rank, dims);
      snprintf(msg, sizeof msg, "dims %s of '%s' must all be positive", d, name ? name : "constant");
      return fail_arg(g, msg);
    }
    p.shape.dims[i] = dims[i];
  }
  p.name = (char *)name;
  p.data = (float *)data;
  return rlx_graph_append(g, &p);
}

rlx_node rlx_input(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims, rlx_dtype dt) {
  return leaf(g, RLX_OP_INPUT, name, rank, dims, dt, NULL);
}
rlx_node rlx_param(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims) {
  return leaf(g, RLX_OP_PARAM, name, rank, dims, RLX_F32, NULL);
}
rlx_node rlx_param_dtype(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims, rlx_dtype dt) {
  return leaf(g, RLX_OP_PARAM, name, rank, dims, dt, NULL);
}
rlx_node rlx_constant(rlx_graph *g, int32_t rank, const int32_t *dims, const float *data) {
  return leaf(g, RLX_OP_CONSTANT, NULL, rank, dims, RLX_F32, data);
}
rlx_node rlx_scalar(rlx_graph *g, float value) { return rlx_constant(g, 0, NULL, &value); }

static rlx_node op1(rlx_graph *g, rlx_op op, rlx_node x) { return rlx_op_node(g, op, &x, 1, NULL, 0, NULL, 0); }
static rlx_node op2(rlx_graph *g, rlx_op op, rlx_node a, rlx_node b) {
  rlx_node in[2] = {a, b};
  return rlx_op_node(g, op, in, 2, NULL, 0, NULL, 0);
}

#define BINARY(fn, ID) \
  rlx_node rlx_##fn(rlx_graph *g, rlx_node a, rlx_node b) { return op2(g, RLX_OP_##ID, a, b); }
BINARY(add, ADD) BINARY(sub, SUB) BINARY(mul, MUL) BINARY(div, DIV) BINARY(max, MAX) BINARY(min, MIN)
BINARY(pow, POW) BINARY(eq, EQ) BINARY(ne, NE) BINARY(lt, LT) BINARY(le, LE) BINARY(gt, GT) BINARY(ge, GE)
#undef BINARY

#define UNARY(fn, ID) \
  rlx_node rlx_##fn(rlx_graph *g, rlx_node x) { return op1(g, RLX_OP_##ID, x); }
UNARY(neg, NEG) UNARY(abs, ABS) UNARY(exp, EXP) UNARY(log, LOG) UNARY(sqrt, SQRT) UNARY(rsqrt, RSQRT)
UNARY(tanh, TANH) UNARY(sigmoid, SIGMOID) UNARY(relu, RELU) UNARY(gelu, GELU) UNARY(silu, SILU)
#undef UNARY

rlx_node rlx_where(rlx_graph *g, rlx_node cond, rlx_node a, rlx_node b) {
  rlx_node in[3] = {cond, a, b};
  return rlx_op_node(g, RLX_OP_WHERE, in, 3, NULL, 0, NULL, 0);
}

rlx_node rlx_matmul(rlx_graph *g, rlx_node a, rlx_node b) { return rlx_matmul_t(g, a, b, 0, 0); }
rlx_node rlx_matmul_t(rlx_graph *g, rlx_node a, rlx_node b, int trans_a, int trans_b) {
  rlx_node in[2] = {a, b};
  int32_t at[] = {[RLX_IATTR_MATMUL_TRANS_A] = trans_a != 0, [RLX_IATTR_MATMUL_TRANS_B] = trans_b != 0};
  return rlx_op_node(g, RLX_OP_MATMUL, in, 2, at, RLX_LEN(at), NULL, 0);
}

rlx_node rlx_reshape(rlx_graph *g, rlx_node x, int32_t rank, const int32_t *dims) {
  if (rank < 0 || rank > RLX_MAX_RANK || (rank > 0 && !dims)) return fail_arg(g, "reshape: bad target dims");
  return rlx_op_node(g, RLX_OP_RESHAPE, &x, 1, dims, rank, NULL, 0);
}
rlx_node rlx_expand(rlx_graph *g, rlx_node x, int32_t rank, const int32_t *dims) {
  if (rank < 0 || rank > RLX_MAX_RANK || (rank > 0 && !dims)) return fail_arg(g, "expand: bad target dims");
  return rlx_op_node(g, RLX_OP_EXPAND, &x, 1, dims, rank, NULL, 0);
}
rlx_node rlx_permute(rlx_graph *g, rlx_node x, const int32_t *perm) {
  int32_t rank = g ? rlx_node_shape(g, x, NULL) : -1;
  if (rank < 0) return op1(g, RLX_OP_PERMUTE, x); /* reports the bad node */
  if (rank > 0 && !perm) return fail_arg(g, "permute: perm is NULL");
  return rlx_op_node(g, RLX_OP_PERMUTE, &x, 1, perm, rank, NULL, 0);
}
rlx_node rlx_transpose(rlx_graph *g, rlx_node x, int32_t axis0, int32_t axis1) {
  int32_t rank = g ? rlx_node_shape(g, x, NULL) : -1, perm[RLX_MAX_RANK];
  if (rank < 0) return op1(g, RLX_OP_PERMUTE, x);
  if (axis0 < 0) axis0 += rank;
  if (axis1 < 0) axis1 += rank;
  if (axis0 < 0 || axis0 >= rank || axis1 < 0 || axis1 >= rank) {
    char msg[120];
    snprintf(msg, sizeof msg, "transpose: axes %d and %d are outside a rank-%d tensor", (int)axis0,
             (int)axis1, (int)rank);
    return fail_arg(g, msg);
  }
  for (int32_t i = 0; i < rank; i++) perm[i] = i;
  perm[axis0] = axis1;
  perm[axis1] = axis0;
  return rlx_op_node(g, RLX_OP_PERMUTE, &x, 1, perm, rank, NULL, 0);
}
rlx_node rlx_narrow(rlx_graph *g, rlx_node x, int32_t axis, int32_t start, int32_t length) {
  int32_t at[] = {[RLX_IATTR_NARROW_AXIS] = axis, [RLX_IATTR_NARROW_START] = start, [RLX_IATTR_NARROW_LENGTH] = length};
  return rlx_op_node(g, RLX_OP_NARROW, &x, 1, at, RLX_LEN(at), NULL, 0);
}
rlx_node rlx_concat(rlx_graph *g, const rlx_node *xs, int32_t n, int32_t axis) {
  return rlx_op_node(g, RLX_OP_CONCAT, xs, n, &axis, 1, NULL, 0);
}
rlx_node rlx_gather(rlx_graph *g, rlx_node table, rlx_node ids) { return op2(g, RLX_OP_GATHER, table, ids); }

static rlx_node reduce(rlx_graph *g, rlx_op op, rlx_node x, const int32_t *axes, int32_t n_axes, int keepdim) {
  int32_t rank = g ? rlx_node_shape(g, x, NULL) : -1, mask = 0;
  if (rank < 0) return op1(g, op, x);
  if (n_axes <= 0 || !axes) return fail_arg(g, "reduce: needs at least one axis");
  for (int32_t i = 0; i < n_axes; i++) {
    int32_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) {
      char msg[120];
      snprintf(msg, sizeof msg, "%s: axis %d is outside a rank-%d tensor", rlx_op_name(op), (int)axes[i],
               (int)rank);
      return fail_arg(g, msg);
    }
    mask |= 1 << a;
  }
  int32_t at[] = {[RLX_IATTR_REDUCE_AXES] = mask, [RLX_IATTR_REDUCE_KEEPDIM] = keepdim != 0};
  return rlx_op_node(g, op, &x, 1, at, RLX_LEN(at), NULL, 0);
}
rlx_node rlx_reduce_sum(rlx_graph *g, rlx_node x, const int32_t *axes, int32_t n, int keepdim) {
  return reduce(g, RLX_OP_REDUCE_SUM, x, axes, n, keepdim);
}
rlx_node rlx_reduce_mean(rlx_graph *g, rlx_node x, const int32_t *axes, int32_t n, int keepdim) {
  return reduce(g, RLX_OP_REDUCE_MEAN, x, axes, n, keepdim);
}
rlx_node rlx_reduce_max(rlx_graph *g, rlx_node x, const int32_t *axes, int32_t n, int keepdim) {
  return reduce(g, RLX_OP_REDUCE_MAX, x, axes, n, keepdim);
}

rlx_node rlx_softmax(rlx_graph *g, rlx_node x, int32_t axis) {
  return rlx_op_node(g, RLX_OP_SOFTMAX, &x, 1, &axis, 1, NULL, 0);
}
rlx_node rlx_log_softmax(rlx_graph *g, rlx_node x, int32_t axis) {
  return rlx_op_node(g, RLX_OP_LOG_SOFTMAX, &x, 1, &axis, 1, NULL, 0);
}
rlx_node rlx_softmax_cross_entropy(rlx_graph *g, rlx_node logits, rlx_node labels) {
  return op2(g, RLX_OP_SOFTMAX_CE, logits, labels);
}
rlx_node rlx_rms_norm(rlx_graph *g, rlx_node x, rlx_node w, float eps) {
  rlx_node in[2] = {x, w};
  return rlx_op_node(g, RLX_OP_RMS_NORM, in, 2, NULL, 0, &eps, 1);
}
rlx_node rlx_layer_norm(rlx_graph *g, rlx_node x, rlx_node w, rlx_node b, float eps) {
  rlx_node in[3] = {x, w, b};
  return rlx_op_node(g, RLX_OP_LAYER_NORM, in, 3, NULL, 0, &eps, 1);
}
rlx_node rlx_rope(rlx_graph *g, rlx_node x, float theta, int32_t pos_offset) {
  int32_t at[] = {[RLX_IATTR_ROPE_POS_OFFSET] = pos_offset, [RLX_IATTR_ROPE_INVERSE] = 0};
  return rlx_op_node(g, RLX_OP_ROPE, &x, 1, at, RLX_LEN(at), &theta, 1);
}
rlx_node rlx_rope_ext(rlx_graph *g, rlx_node x, rlx_node offset, float theta, int32_t pos_offset, int32_t mode) {
  rlx_node in[2] = {x, offset};
  int32_t at[] = {[RLX_IATTR_ROPE_POS_OFFSET] = pos_offset, [RLX_IATTR_ROPE_INVERSE] = 0, [RLX_IATTR_ROPE_MODE] = mode};
  return rlx_op_node(g, RLX_OP_ROPE, in, offset == RLX_NO_NODE ? 1 : 2, at, RLX_LEN(at), &theta, 1);
}
rlx_node rlx_matmul_q(rlx_graph *g, rlx_node x, rlx_node w, int32_t qtype, int32_t rows, int32_t cols, int trans) {
  rlx_node in[2] = {x, w};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = qtype, [RLX_IATTR_QTABLE_ROWS] = rows, [RLX_IATTR_QTABLE_COLS] = cols,
                  [RLX_IATTR_QMATMUL_TRANS] = trans != 0};
  return rlx_op_node(g, RLX_OP_MATMUL_Q, in, 2, at, RLX_LEN(at), NULL, 0);
}
rlx_node rlx_gather_q(rlx_graph *g, rlx_node table, rlx_node ids, int32_t qtype, int32_t rows, int32_t cols) {
  rlx_node in[2] = {table, ids};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = qtype, [RLX_IATTR_QTABLE_ROWS] = rows, [RLX_IATTR_QTABLE_COLS] = cols};
  return rlx_op_node(g, RLX_OP_GATHER_Q, in, 2, at, RLX_LEN(at), NULL, 0);
}
rlx_node rlx_swiglu_q(rlx_graph *g, rlx_node x, rlx_node w_gate, rlx_node w_up, int32_t qtype, int32_t rows,
                      int32_t cols) {
  rlx_node in[3] = {x, w_gate, w_up};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = qtype, [RLX_IATTR_QTABLE_ROWS] = rows, [RLX_IATTR_QTABLE_COLS] = cols};
  return rlx_op_node(g, RLX_OP_SWIGLU_Q, in, 3, at, RLX_LEN(at), NULL, 0);
}
rlx_node rlx_attention_kv(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, rlx_node k_cache, rlx_node v_cache,
                          rlx_node pos, float scale) {
  rlx_node in[6] = {q, k, v, k_cache, v_cache, pos};
  return rlx_op_node(g, RLX_OP_ATTENTION_KV, in, 6, NULL, 0, &scale, 1);
}
rlx_node rlx_attention(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, rlx_mask_kind kind, int32_t window,
                       rlx_node mask, float scale) {
  rlx_node in[4] = {q, k, v, mask};
  int32_t at[] = {[RLX_IATTR_ATTENTION_MASK] = (int32_t)kind, [RLX_IATTR_ATTENTION_WINDOW] = window};
  int32_t n = (kind == RLX_MASK_PADDING || kind == RLX_MASK_BIAS) ? 4 : 3;
  if (n == 4 && mask == RLX_NO_NODE && g && g->status == RLX_OK)
    return fail_arg(g, "attention: mask kinds padding and bias need a mask tensor");
  return rlx_op_node(g, RLX_OP_ATTENTION, in, n, at, RLX_LEN(at), &scale, 1);
}
rlx_node rlx_conv2d(rlx_graph *g, rlx_node x, rlx_node w, const rlx_conv2d_params *p) {
  if (!p) return fail_arg(g, "conv2d: params are NULL");
  rlx_node in[2] = {x, w};
  int32_t at[] = {[RLX_IATTR_CONV_STRIDE_H] = p->stride_h, [RLX_IATTR_CONV_STRIDE_W] = p->stride_w,
                  [RLX_IATTR_CONV_PAD_H] = p->pad_h,       [RLX_IATTR_CONV_PAD_W] = p->pad_w,
                  [RLX_IATTR_CONV_DIL_H] = p->dilation_h,  [RLX_IATTR_CONV_DIL_W] = p->dilation_w,
                  [RLX_IATTR_CONV_GROUPS] = p->groups};
  return rlx_op_node(g, RLX_OP_CONV2D, in, 2, at, RLX_LEN(at), NULL, 0);
}
static rlx_node pool(rlx_graph *g, rlx_op op, rlx_node x, const rlx_pool2d_params *p) {
  if (!p) return fail_arg(g, "pool2d: params are NULL");
  int32_t at[] = {[RLX_IATTR_POOL_KERNEL_H] = p->kernel_h, [RLX_IATTR_POOL_KERNEL_W] = p->kernel_w,
                  [RLX_IATTR_POOL_STRIDE_H] = p->stride_h, [RLX_IATTR_POOL_STRIDE_W] = p->stride_w,
                  [RLX_IATTR_POOL_PAD_H] = p->pad_h,       [RLX_IATTR_POOL_PAD_W] = p->pad_w};
  return rlx_op_node(g, op, &x, 1, at, RLX_LEN(at), NULL, 0);
}
rlx_node rlx_max_pool2d(rlx_graph *g, rlx_node x, const rlx_pool2d_params *p) {
  return pool(g, RLX_OP_MAX_POOL2D, x, p);
}
rlx_node rlx_avg_pool2d(rlx_graph *g, rlx_node x, const rlx_pool2d_params *p) {
  return pool(g, RLX_OP_AVG_POOL2D, x, p);
}
rlx_node rlx_global_avg_pool(rlx_graph *g, rlx_node x) { return op1(g, RLX_OP_GLOBAL_AVG_POOL, x); }
