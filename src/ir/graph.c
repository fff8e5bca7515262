/* graph.c - graph storage, node appending with arity/shape checks, leaf
 * builders, and node descriptions for error messages.  The first error is
 * recorded in the graph; later builders fed RLX_NO_NODE stay silent. */
#include "graph.h"

#include <stdio.h>
#include <string.h>

#define RLX_MAX_NUMEL ((size_t)INT32_MAX)

rlx_graph *rlx_graph_new(void) {
  rlx_graph *g = rlx_calloc(1, sizeof *g);
  if (!g) rlx_error(RLX_ERR_NO_MEMORY, "rlx_graph_new: out of memory");
  return g;
}

static void node_release(rlx_node_t *n) {
  rlx_strfree(n->name);
  if (n->data) rlx_free(n->data, rlx_shape_numel(&n->shape) * sizeof(float));
  n->name = NULL;
  n->data = NULL;
}

void rlx_graph_free(rlx_graph *g) {
  if (!g) return;
  for (int32_t i = 0; i < g->n_nodes; i++) node_release(&g->nodes[i]);
  rlx_free(g->nodes, (size_t)g->cap_nodes * sizeof(rlx_node_t));
  rlx_name_set_free(&g->names);
  rlx_strfree(g->error);
  rlx_free(g, sizeof *g);
}

rlx_status rlx_graph_status(const rlx_graph *g) { return g ? g->status : RLX_ERR_INVALID_ARG; }
const char *rlx_graph_error(const rlx_graph *g) {
  if (!g) return "graph is NULL";
  return g->error ? g->error : "";
}
int32_t rlx_graph_node_count(const rlx_graph *g) { return g ? g->n_nodes : 0; }

int32_t rlx_node_shape(const rlx_graph *g, rlx_node id, int32_t *dims) {
  const rlx_node_t *n = g ? rlx_graph_node(g, id) : NULL;
  if (!n) return -1;
  if (dims) memcpy(dims, n->shape.dims, (size_t)n->shape.rank * sizeof(int32_t));
  return n->shape.rank;
}

size_t rlx_shape_numel(const rlx_shape *s) {
  size_t n = 1;
  for (int32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

int rlx_shape_equal(const rlx_shape *a, const rlx_shape *b) {
  if (a->rank != b->rank) return 0;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

const char *rlx_op_name(rlx_op op) {
  return (op >= 0 && op < RLX_OP_COUNT) ? rlx_op_table[op].name : "unknown-op";
}

rlx_op rlx_op_from_name(const char *name) {
  if (!name) return RLX_OP_COUNT;
  for (int i = 0; i < RLX_OP_COUNT; i++)
    if (strcmp(rlx_op_table[i].name, name) == 0) return (rlx_op)i;
  return RLX_OP_COUNT;
}

void rlx_describe_node(const rlx_graph *g, int32_t id, char *buf, size_t cap) {
  const rlx_node_t *n = rlx_graph_node(g, id);
  char dims[128];
  size_t used;
  if (!n) {
    snprintf(buf, cap, "node %d (unknown)", (int)id);
    return;
  }
  used = (size_t)snprintf(buf, cap, "node %d (%s", (int)id, rlx_op_name(n->op));
  if (n->name && used < cap) used += (size_t)snprintf(buf + used, cap - used, " '%s'", n->name);
  rlx_format_dims(dims, sizeof dims, n->shape.rank, n->shape.dims);
  if (used < cap) snprintf(buf + used, cap - used, ": %s)", dims);
}

/* Records the first error of the graph (later ones are dropped). */
static rlx_node graph_fail(rlx_graph *g, rlx_status code, const char *msg) {
  if (g->status == RLX_OK) {
    g->status = code;
    g->error = rlx_strdup(msg);
  }
  rlx_error(code, "%s", msg);
  return RLX_NO_NODE;
}

static rlx_status grow(rlx_graph *g) {
  if (g->n_nodes < g->cap_nodes) return RLX_OK;
  if (g->cap_nodes >= (1 << 24)) return RLX_ERR_NO_MEMORY;
  int32_t cap = g->cap_nodes ? g->cap_nodes * 2 : 32;
  rlx_node_t *p = rlx_realloc(g->nodes, (size_t)g->cap_nodes * sizeof *p, (size_t)cap * sizeof *p);
  if (!p) return RLX_ERR_NO_MEMORY;
  g->nodes = p;
  g->cap_nodes = cap;
  return RLX_OK;
}

static const char *node_name_at(const void *ctx, uint32_t idx, size_t *len) {
  const char *name = ((const rlx_graph *)ctx)->nodes[idx].name;
  *len = strlen(name);
  return name;
}

rlx_status rlx_graph_index(rlx_graph *g) {
  for (; g->indexed < g->n_nodes; g->indexed++)
    if (g->nodes[g->indexed].name && rlx_name_set_add(&g->names, node_name_at, g, (uint32_t)g->indexed) != RLX_OK)
      return RLX_ERR_NO_MEMORY;
  return RLX_OK;
}

rlx_node rlx_graph_find(const rlx_graph *g, const char *name) {
  const int64_t i = g && name ? rlx_name_set_find(&g->names, node_name_at, g, name, strlen(name)) : -1;
  return i < 0 ? RLX_NO_NODE : (rlx_node)i;
}

int rlx_op_writes_input(rlx_op op, int32_t k) {
  return (op == RLX_OP_ATTENTION_KV && (k == 3 || k == 4)) || (op == RLX_OP_ADAM_UPDATE && (k == 2 || k == 3));
}

/* Input k of `op` may be an i32 index tensor. */
static int accepts_i32(rlx_op op, int32_t k) {
  switch (op) {
    case RLX_OP_SCATTER_ADD: return k == 0;
    case RLX_OP_GATHER_Q: return k <= 1;   /* the quantized table, ids */
    case RLX_OP_SWIGLU_Q: return k >= 1;   /* the two quantized weights */
    case RLX_OP_ATTENTION_KV: return k == 5; /* pos */
    default: return k == 1 && (op == RLX_OP_GATHER || op == RLX_OP_SOFTMAX_CE || op == RLX_OP_SOFTMAX_CE_GRAD ||
                               op == RLX_OP_MATMUL_Q || op == RLX_OP_ROPE);
  }
}

/* Shared checks: arity, input ids, dtypes, attribute counts. */
static rlx_status check_inputs(const rlx_graph *g, const rlx_node_t *p, char *msg, size_t cap) {
  const rlx_op_info *info = &rlx_op_table[p->op];
  if (p->n_inputs < info->min_inputs || p->n_inputs > info->max_inputs) {
    if (info->min_inputs == info->max_inputs)
      snprintf(msg, cap, "expects %d inputs, got %d", info->min_inputs, (int)p->n_inputs);
    else
      snprintf(msg, cap, "expects %d to %d inputs, got %d", info->min_inputs, info->max_inputs,
               (int)p->n_inputs);
    return RLX_ERR_GRAPH;
  }
  if (p->n_iattr < 0 || p->n_iattr > RLX_MAX_IATTR || p->n_fattr < 0 || p->n_fattr > RLX_MAX_FATTR) {
    snprintf(msg, cap, "bad attribute count (%d ints, %d floats)", (int)p->n_iattr, (int)p->n_fattr);
    return RLX_ERR_INVALID_ARG;
  }
  for (int32_t k = 0; k < p->n_inputs; k++) {
    const rlx_node_t *in = rlx_graph_node(g, p->inputs[k]);
    if (!in) {
      snprintf(msg, cap, "input %d refers to unknown node %d (graph has %d nodes)", (int)k,
               (int)p->inputs[k], (int)g->n_nodes);
      return RLX_ERR_GRAPH;
    }
    if (in->dtype == RLX_I32 && !accepts_i32(p->op, k)) {
      snprintf(msg, cap, "input %d is an i32 tensor (node %d); this op needs f32", (int)k,
               (int)p->inputs[k]);
      return RLX_ERR_INVALID_ARG;
    }
  }
  return RLX_OK;
}

/* Runs the checks and the shape rule on a node (in place). */
static rlx_status infer(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  rlx_status st = check_inputs(g, n, msg, cap);
  if (st != RLX_OK) return st;
  if (n->op != RLX_OP_INPUT && n->op != RLX_OP_PARAM && n->op != RLX_OP_CONSTANT) n->dtype = RLX_F32;
  if (!rlx_op_built(n->op)) return rlx_op_absent_message(n->op, msg, cap), RLX_ERR_UNSUPPORTED;
  st = rlx_op_table[n->op].shape(g, n, msg, cap);
  if (st != RLX_OK) return st;
  size_t numel = 1;
  for (int32_t i = 0; i < n->shape.rank; i++) {
    if (n->shape.dims[i] <= 0 || !rlx_mul_size(numel, (size_t)n->shape.dims[i], &numel) ||
        numel > RLX_MAX_NUMEL) {
      snprintf(msg, cap, "output would have %s elements (limit %d)",
               n->shape.dims[i] <= 0 ? "no" : "too many", INT32_MAX);
      return RLX_ERR_SHAPE;
    }
  }
  return RLX_OK;
}

/* "add(node 3 [2, 3], node 5 [4])" for error messages. */
static void describe_inputs(const rlx_graph *g, const rlx_node_t *p, char *buf, size_t cap) {
  size_t used = (size_t)snprintf(buf, cap, "%s(", rlx_op_name(p->op));
  for (int32_t k = 0; k < p->n_inputs && used < cap; k++) {
    const rlx_node_t *in = rlx_graph_node(g, p->inputs[k]);
    char dims[96] = "?";
    if (in) rlx_format_dims(dims, sizeof dims, in->shape.rank, in->shape.dims);
    used += (size_t)snprintf(buf + used, cap - used, "%snode %d %s", k ? ", " : "", (int)p->inputs[k], dims);
  }
  if (used < cap) snprintf(buf + used, cap - used, ")");
}

rlx_node rlx_graph_append(rlx_graph *g, const rlx_node_t *proto) {
  char msg[400], what[400], full[900];
  if (!g) {
    rlx_error(RLX_ERR_INVALID_ARG, "graph is NULL");
    return RLX_NO_NODE;
  }
  if (proto->op < 0 || proto->op >= RLX_OP_COUNT)
    return graph_fail(g, RLX_ERR_GRAPH, "unknown op id");
  for (int32_t k = 0; k < proto->n_inputs && k < RLX_MAX_INPUTS; k++)
    if (proto->inputs[k] == RLX_NO_NODE) {
      /* An earlier builder failed; its error is already recorded. */
      if (g->status == RLX_OK)
        return graph_fail(g, RLX_ERR_GRAPH, "an input is RLX_NO_NODE (a failed builder)");
      return RLX_NO_NODE;
    }
  rlx_node_t n = *proto;
  const char *name = proto->name; /* proto may lie in g->nodes, which grow() moves */
  const float *data = proto->data;
  n.name = NULL;
  n.data = NULL;
  msg[0] = 0;
  rlx_status st = infer(g, &n, msg, sizeof msg);
  if (st != RLX_OK) {
    describe_inputs(g, proto, what, sizeof what);
    snprintf(full, sizeof full, "node %d (%s): %s; got %s", (int)g->n_nodes, rlx_op_name(proto->op), msg, what);
    return graph_fail(g, st, full);
  }
  if (grow(g) != RLX_OK) return graph_fail(g, RLX_ERR_NO_MEMORY, "out of memory adding a node");
  if (name && !(n.name = rlx_strdup(name)))
    return graph_fail(g, RLX_ERR_NO_MEMORY, "out of memory adding a node");
  if (data) {
    size_t bytes = rlx_shape_numel(&n.shape) * sizeof(float);
    n.data = rlx_malloc(bytes);
    if (!n.data) {
      rlx_strfree(n.name);
      return graph_fail(g, RLX_ERR_NO_MEMORY, "out of memory copying a constant");
    }
    memcpy(n.data, data, bytes);
  }
  g->nodes[g->n_nodes++] = n;
  if (rlx_graph_index(g) != RLX_OK) { /* a named node: an input or param, no data */
    g->n_nodes--;
    rlx_strfree(n.name);
    return graph_fail(g, RLX_ERR_NO_MEMORY, "out of memory adding a node");
  }
  return g->n_nodes - 1;
}

rlx_status rlx_graph_verify(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs) {
  char msg[400], what[400];
  if (!g) return rlx_error(RLX_ERR_INVALID_ARG, "graph is NULL");
  if (g->status != RLX_OK) return rlx_error(g->status, "graph has an error: %s", g->error ? g->error : "");
  if (!outputs || n_outputs <= 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "compile needs at least one output (got %d)", (int)n_outputs);
  for (int32_t i = 0; i < n_outputs; i++)
    if (!rlx_graph_node(g, outputs[i]))
      return rlx_error(RLX_ERR_GRAPH, "output %d refers to unknown node %d (graph has %d nodes)", (int)i,
                       (int)outputs[i], (int)g->n_nodes);
  for (int32_t id = 0; id < g->n_nodes; id++) {
    const rlx_node_t *orig = &g->nodes[id];
    rlx_node_t n = *orig;
    for (int32_t k = 0; k < n.n_inputs && k < RLX_MAX_INPUTS; k++)
      if (n.inputs[k] >= id)
        return rlx_error(RLX_ERR_GRAPH, "node %d (%s): input %d refers to node %d, not an earlier node",
                         (int)id, rlx_op_name(n.op), (int)k, (int)n.inputs[k]);
    msg[0] = 0;
    rlx_status st = infer(g, &n, msg, sizeof msg);
    if (st == RLX_OK && !rlx_shape_equal(&n.shape, &orig->shape)) {
      st = RLX_ERR_SHAPE;
      snprintf(msg, sizeof msg, "recorded shape does not match its inputs");
    }
    if (st != RLX_OK) {
      describe_inputs(g, orig, what, sizeof what);
      return rlx_error(st, "node %d (%s): %s; got %s", (int)id, rlx_op_name(orig->op), msg, what);
    }
  }
  return RLX_OK;
}
