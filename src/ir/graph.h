/* graph.h - the IR: an append-only, topologically ordered list of nodes.
 * A node is an op, its input node ids, its attributes and its inferred
 * output shape.  Shape rules run when a node is added, so every node in a
 * graph without a recorded error is well formed. */
#ifndef RLX_GRAPH_H
#define RLX_GRAPH_H

#include "../core/core.h"
#include "../core/name_set.h"
#include "attrs.h"

typedef struct {
  int32_t rank;
  int32_t dims[RLX_MAX_RANK];
} rlx_shape;

typedef struct {
  rlx_op op;
  rlx_dtype dtype;
  int32_t n_inputs;
  int32_t inputs[RLX_MAX_INPUTS];
  int32_t n_iattr;
  int32_t iattr[RLX_MAX_IATTR];
  int32_t n_fattr;
  float fattr[RLX_MAX_FATTR];
  rlx_shape shape;
  char *name;  /* input/param name (owned) */
  float *data; /* constant values (owned, numel floats) */
} rlx_node_t;

struct rlx_graph {
  rlx_node_t *nodes;
  int32_t n_nodes, cap_nodes;
  rlx_status status; /* first builder error */
  char *error;       /* its message (owned) */
  /* The named nodes (inputs, params) of nodes [0, indexed) by name, for
   * rlx_graph_find: rlx_graph_append adds each node's name; a graph whose
   * nodes are written directly (the planner's copies) calls
   * rlx_graph_index after. */
  rlx_name_set names;
  int32_t indexed;
};

/* Adds the names of nodes [indexed, n_nodes) to the index:
 * RLX_ERR_NO_MEMORY (no message) or RLX_OK. */
rlx_status rlx_graph_index(rlx_graph *g);

/* Shape rule: validate n's inputs and attributes and set n->shape (and
 * normalize attributes).  On failure return a status and write a message
 * (without the node prefix) into msg. */
typedef rlx_status (*rlx_shape_rule)(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);

typedef struct {
  const char *name;
  rlx_shape_rule shape;
  int8_t min_inputs, max_inputs;
  uint8_t attrs; /* rlx_attr_set: its named attributes (include/rlx_attrs.def) */
} rlx_op_info;

/* Built per module (src/ir/shape_rules.c): an op of a family the build
 * leaves out (src/core/families.h) has a NULL shape rule. */
extern const rlx_op_info rlx_op_table[RLX_OP_COUNT];

/* 1 when this build has op (its family is built), else 0 (src/ir/op_info.c). */
int rlx_op_built(rlx_op op);
/* RLX_ERR_UNSUPPORTED with "<who>: op <name> is not in <where> (a <family>
 * op: those are in <module>)"; where NULL: "this module". */
rlx_status rlx_op_absent(rlx_op op, const char *who, const char *where);
/* The same message written into msg (for shape-rule style callers). */
void rlx_op_absent_message(rlx_op op, char *msg, size_t cap);

/* 1 when op writes its input k in place (its side effect, include/
 * rlx_ops.def): attention_kv's caches, adam_update's moments. */
int rlx_op_writes_input(rlx_op op, int32_t k);

size_t rlx_shape_numel(const rlx_shape *s);
int rlx_shape_equal(const rlx_shape *a, const rlx_shape *b);
/* "add(node 3: [2, 3], node 5: [4])"-style description of a node's inputs. */
void rlx_describe_node(const rlx_graph *g, int32_t id, char *buf, size_t cap);

/* Appends a node after checking arity, input ids and the shape rule.
 * Returns its id or RLX_NO_NODE (the error is recorded in g). */
rlx_node rlx_graph_append(rlx_graph *g, const rlx_node_t *proto);

/* Re-checks every node (used by the compiler on graphs it did not build). */
rlx_status rlx_graph_verify(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs);

static inline const rlx_node_t *rlx_graph_node(const rlx_graph *g, int32_t id) {
  return (id >= 0 && id < g->n_nodes) ? &g->nodes[id] : NULL;
}

#endif
