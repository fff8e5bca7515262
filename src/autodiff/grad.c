/* grad.c - the reverse walk: seed the loss with the d_output input, visit
 * nodes in reverse order, let each op's rule push adjoints to its inputs,
 * and sum contributions from several consumers.  The rules table follows
 * the op families the build has (src/core/families.h). */
#include "grad.h"

#include "../core/families.h"

#include <stdio.h>
#include <string.h>

static const rlx_grad_rule rules[RLX_OP_COUNT] = {
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) [RLX_OP_##ID] = RLX_IF_BUILT(rlx_grad_##name),
#include "rlx_ops.def"
#undef RLX_OP
};

const rlx_node_t *rlx_grad_node(const rlx_grad_ctx *c, rlx_node id) { return &c->g->nodes[id]; }
rlx_node rlx_grad_arg(const rlx_grad_ctx *c, rlx_node id, int32_t k) { return c->g->nodes[id].inputs[k]; }

int rlx_grad_wants(const rlx_grad_ctx *c, rlx_node id, int32_t k) {
  return c->depends[c->g->nodes[id].inputs[k]];
}

rlx_node rlx_grad_scale(rlx_grad_ctx *c, rlx_node x, float s) { return rlx_mul(c->g, x, rlx_scalar(c->g, s)); }

/* target is copied first: it may point into g->nodes, which the appended
 * reduce_sum can move. */
rlx_node rlx_grad_unbroadcast(rlx_grad_ctx *c, rlx_node x, const rlx_shape *target_in) {
  const rlx_node_t *n = rlx_graph_node(c->g, x);
  if (!n) return RLX_NO_NODE;
  rlx_shape s = n->shape, target = *target_in;
  int32_t axes[RLX_MAX_RANK], n_axes = 0, lead = s.rank - target.rank;
  for (int32_t i = 0; i < s.rank; i++)
    if (i < lead || (target.dims[i - lead] == 1 && s.dims[i] != 1)) axes[n_axes++] = i;
  if (n_axes == 0 && s.rank == target.rank) return x;
  rlx_node r = n_axes ? rlx_reduce_sum(c->g, x, axes, n_axes, 1) : x;
  return rlx_reshape(c->g, r, target.rank, target.dims);
}

void rlx_grad_accum(rlx_grad_ctx *c, rlx_node id, int32_t k, rlx_node contribution) {
  rlx_node in = c->g->nodes[id].inputs[k];
  if (!c->depends[in] || contribution == RLX_NO_NODE) return;
  rlx_shape target = c->g->nodes[in].shape; /* a copy: unbroadcast appends nodes */
  rlx_node v = rlx_grad_unbroadcast(c, contribution, &target);
  c->adj[in] = c->adj[in] == RLX_NO_NODE ? v : rlx_add(c->g, c->adj[in], v);
}

/* The d_output input: reused if the graph already has one of loss's shape,
 * else added.  RLX_OK with *seed set, or an error (with its message). */
static rlx_status seed_input(rlx_graph *g, const rlx_shape *shape, rlx_node *seed) {
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const rlx_node_t *n = &g->nodes[i];
    if (n->op == RLX_OP_INPUT && n->name && strcmp(n->name, "d_output") == 0) {
      if (!rlx_shape_equal(&n->shape, shape))
        return rlx_error(RLX_ERR_GRAPH, "grad: the graph has a 'd_output' input whose shape differs from the loss");
      *seed = i;
      return RLX_OK;
    }
  }
  *seed = rlx_input(g, "d_output", shape->rank, shape->dims, RLX_F32);
  if (*seed != RLX_NO_NODE) return RLX_OK;
  rlx_status st = g->status != RLX_OK ? g->status : RLX_ERR_GRAPH;
  return rlx_error(st, "grad: adding the 'd_output' input failed: %s", g->error ? g->error : "");
}

static void describe(const rlx_graph *g, rlx_node id, char *buf, size_t cap) {
  const rlx_node_t *n = &g->nodes[id];
  if (n->name) snprintf(buf, cap, "'%s' (node %d)", n->name, (int)id);
  else snprintf(buf, cap, "node %d (%s)", (int)id, rlx_op_name(n->op));
}

/* The op (matmul_q, gather_q or swiglu_q) that reads w as its quantized
 * weights on the loss's path, else RLX_OP_COUNT.  c->depends serves as
 * scratch. */
static rlx_op quantized_consumer(rlx_grad_ctx *c, rlx_node loss, rlx_node w) {
  const rlx_graph *g = c->g;
  rlx_op found = RLX_OP_COUNT;
  c->depends[loss] = 1;
  for (int32_t id = loss; id > w; id--) {
    const rlx_node_t *n = &g->nodes[id];
    if (!c->depends[id]) continue;
    for (int32_t k = 0; k < n->n_inputs; k++) c->depends[n->inputs[k]] = 1;
    if ((n->op == RLX_OP_MATMUL_Q && n->inputs[1] == w) || (n->op == RLX_OP_GATHER_Q && n->inputs[0] == w) ||
        (n->op == RLX_OP_SWIGLU_Q && (n->inputs[1] == w || n->inputs[2] == w)))
      found = n->op;
  }
  memset(c->depends, 0, (size_t)c->n_fwd);
  return found;
}

static rlx_status walk(rlx_grad_ctx *c, rlx_node loss, const rlx_node *wrt, int32_t n_wrt, rlx_node seed) {
  rlx_graph *g = c->g;
  char what[160];
  for (int32_t i = 0; i < n_wrt; i++) {
    if (g->nodes[wrt[i]].dtype == RLX_I32) {
      describe(g, wrt[i], what, sizeof what);
      rlx_op q = quantized_consumer(c, loss, wrt[i]);
      if (q != RLX_OP_COUNT)
        return rlx_error(RLX_ERR_GRAPH, "grad: cannot differentiate with respect to %s: %s: quantized weights have no "
                         "gradient", what, rlx_op_name(q));
      return rlx_error(RLX_ERR_INVALID_ARG, "grad: cannot differentiate with respect to %s: it is an i32 tensor", what);
    }
    c->depends[wrt[i]] = 1;
  }
  for (int32_t id = 0; id <= loss; id++) /* forward: does a requested leaf flow into id? */
    for (int32_t k = 0; k < g->nodes[id].n_inputs && !c->depends[id]; k++)
      if (c->depends[g->nodes[id].inputs[k]] && g->nodes[g->nodes[id].inputs[k]].dtype == RLX_F32) c->depends[id] = 1;
  c->adj[loss] = seed;
  for (int32_t id = loss; id >= 0; id--) {
    rlx_op op = g->nodes[id].op; /* rules append nodes: no pointers kept across them */
    if (c->adj[id] == RLX_NO_NODE || g->nodes[id].n_inputs == 0) continue;
    if (!rules[op]) return rlx_op_absent(op, "grad", NULL); /* a family this build leaves out */
    rlx_status st = rules[op](c, id, c->adj[id]);
    if (st != RLX_OK) return st;
    if (g->status != RLX_OK)
      return rlx_error(g->status, "grad: building the gradient of node %d (%s) failed: %s", (int)id,
                       rlx_op_name(op), g->error ? g->error : "");
  }
  for (int32_t i = 0; i < n_wrt; i++)
    if (c->adj[wrt[i]] == RLX_NO_NODE) {
      describe(g, wrt[i], what, sizeof what);
      return rlx_error(RLX_ERR_GRAPH,
                       "grad: no gradient reaches %s: it does not influence the loss, or only through "
                       "non-differentiable inputs (comparisons, labels, ids, where conditions)", what);
    }
  return RLX_OK;
}

rlx_status rlx_grad_with_loss(rlx_graph *g, rlx_node loss, const rlx_node *wrt, int32_t n_wrt, rlx_node *outputs) {
  if (!g) return rlx_error(RLX_ERR_INVALID_ARG, "grad: graph is NULL");
  if (g->status != RLX_OK) return rlx_error(g->status, "grad: the graph has an error: %s", g->error ? g->error : "");
  if (!rlx_graph_node(g, loss)) return rlx_error(RLX_ERR_GRAPH, "grad: loss refers to unknown node %d", (int)loss);
  if (n_wrt < 1 || !wrt || !outputs) return rlx_error(RLX_ERR_INVALID_ARG, "grad: needs at least one param and an outputs array");
  for (int32_t i = 0; i < n_wrt; i++)
    if (!rlx_graph_node(g, wrt[i]) || wrt[i] > loss)
      return rlx_error(RLX_ERR_GRAPH, "grad: param %d refers to node %d, which is not part of the loss's graph", (int)i, (int)wrt[i]);
  if (g->nodes[loss].dtype != RLX_F32) return rlx_error(RLX_ERR_INVALID_ARG, "grad: the loss must be f32");
  rlx_shape loss_shape = g->nodes[loss].shape;
  rlx_node seed;
  rlx_status seeded = seed_input(g, &loss_shape, &seed);
  if (seeded != RLX_OK) return seeded;
  rlx_grad_ctx c = {g, NULL, NULL, loss + 1};
  c.adj = rlx_malloc((size_t)c.n_fwd * sizeof(rlx_node));
  c.depends = rlx_calloc((size_t)c.n_fwd, 1);
  rlx_status st = RLX_OK;
  if (!c.adj || !c.depends) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "grad: out of memory");
  } else {
    for (int32_t i = 0; i < c.n_fwd; i++) c.adj[i] = RLX_NO_NODE;
    st = walk(&c, loss, wrt, n_wrt, seed);
  }
  if (st == RLX_OK) {
    outputs[0] = loss;
    for (int32_t i = 0; i < n_wrt; i++) outputs[1 + i] = c.adj[wrt[i]];
  }
  rlx_free(c.adj, (size_t)c.n_fwd * sizeof(rlx_node));
  rlx_free(c.depends, (size_t)c.n_fwd);
  return st;
}

rlx_status rlx_grad(rlx_graph *g, rlx_node loss, const rlx_node *wrt, int32_t n_wrt, rlx_node *grads) {
  if (!grads || n_wrt < 1) return rlx_error(RLX_ERR_INVALID_ARG, "grad: needs at least one param and a grads array");
  size_t bytes = ((size_t)n_wrt + 1) * sizeof(rlx_node);
  rlx_node *tmp = rlx_malloc(bytes);
  if (!tmp) return rlx_error(RLX_ERR_NO_MEMORY, "grad: out of memory");
  rlx_status st = rlx_grad_with_loss(g, loss, wrt, n_wrt, tmp);
  if (st == RLX_OK) memcpy(grads, tmp + 1, (size_t)n_wrt * sizeof(rlx_node));
  rlx_free(tmp, bytes);
  return st;
}
