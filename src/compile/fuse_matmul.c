/* fuse_matmul.c - the matmul epilogue pass: a chain
 *
 *   [mul(] [relu|gelu|silu(] [add(] matmul(a, b) [, bias)] [)] [, m)]
 *
 * (add and mul in either operand order) becomes one fused_matmul(a, b[,
 * bias][, m]) in place of its outermost node.  The add and the mul must not
 * broadcast the product to a larger shape (they may broadcast bias and m),
 * and every bypassed node must feed only the chain. */
#include "fuse_internal.h"

#include <string.h>

/* A parsed chain: the nodes from the outermost (excluded) down to the matmul. */
typedef struct {
  fuse_set inner;        /* bypassed nodes, the matmul included */
  int32_t mm, act, bias; /* matmul node, activation code, bias node (or -1) */
} epilogue;

static int32_t act_code(rlx_op op) {
  switch (op) {
    case RLX_OP_RELU: return 1;
    case RLX_OP_GELU: return 2;
    case RLX_OP_SILU: return 3;
    default: return 0;
  }
}

/* Parses [act(] [add(] matmul [, bias)] [)] starting at node id; top says
 * whether id is the pattern's root (then it is not bypassed). */
static int parse_chain(const rlx_graph *g, int32_t id, int top, epilogue *e) {
  memset(e, 0, sizeof *e);
  e->bias = -1;
  const rlx_node_t *n = &g->nodes[id];
  if ((e->act = act_code(n->op)) != 0) {
    if (!top && !fuse_set_add(&e->inner, id)) return 0;
    top = 0;
    id = n->inputs[0];
    n = &g->nodes[id];
  }
  if (n->op == RLX_OP_ADD) {
    int side = g->nodes[n->inputs[0]].op == RLX_OP_MATMUL ? 0 : 1;
    const rlx_node_t *mm = &g->nodes[n->inputs[side]];
    if (mm->op != RLX_OP_MATMUL || !rlx_shape_equal(&mm->shape, &n->shape)) return 0;
    if (!top && !fuse_set_add(&e->inner, id)) return 0;
    top = 0;
    e->bias = n->inputs[1 - side];
    id = n->inputs[side];
    n = mm;
  }
  if (n->op != RLX_OP_MATMUL || top) return 0; /* a bare matmul has nothing to fuse */
  e->mm = id;
  return fuse_set_add(&e->inner, id);
}

static int in_set(const fuse_set *s, int32_t id) {
  for (int32_t i = 0; i < s->n; i++)
    if (s->ids[i] == id) return 1;
  return 0;
}

static int try_fuse(fuse_ctx *c, int32_t root, const epilogue *e, int32_t mul) {
  /* bias or m computed by the chain itself (add(x, x)): leave it alone */
  if ((e->bias >= 0 && in_set(&e->inner, e->bias)) || (mul >= 0 && in_set(&e->inner, mul))) return 0;
  if (!fuse_only_feeds(c, &e->inner, root)) return 0;
  const rlx_node_t *mm = &c->g->nodes[e->mm];
  rlx_node_t f;
  memset(&f, 0, sizeof f);
  f.op = RLX_OP_FUSED_MATMUL;
  f.inputs[f.n_inputs++] = mm->inputs[0];
  f.inputs[f.n_inputs++] = mm->inputs[1];
  if (e->bias >= 0) f.inputs[f.n_inputs++] = e->bias;
  if (mul >= 0) f.inputs[f.n_inputs++] = mul;
  f.n_iattr = RLX_IATTR_FUSED_MATMUL_HAS_MUL + 1;
  ATTR_I(&f, MATMUL, TRANS_A) = ATTR_I(mm, MATMUL, TRANS_A);
  ATTR_I(&f, MATMUL, TRANS_B) = ATTR_I(mm, MATMUL, TRANS_B);
  ATTR_I(&f, FUSED_MATMUL, ACT) = e->act;
  ATTR_I(&f, FUSED_MATMUL, HAS_BIAS) = e->bias >= 0;
  ATTR_I(&f, FUSED_MATMUL, HAS_MUL) = mul >= 0;
  return fuse_replace(c, root, &f);
}

int rlx_fuse_matmul_epilogue(fuse_ctx *c, int32_t root) {
  const rlx_graph *g = c->g;
  const rlx_node_t *r = &g->nodes[root];
  epilogue e;
  if (r->op != RLX_OP_MUL) return parse_chain(g, root, 1, &e) && try_fuse(c, root, &e, -1);
  /* mul: the side with the longer chain first */
  epilogue sides[2];
  int ok[2];
  for (int s = 0; s < 2; s++)
    ok[s] = rlx_shape_equal(&g->nodes[r->inputs[s]].shape, &r->shape) && parse_chain(g, r->inputs[s], 0, &sides[s]);
  int first = (ok[1] && (!ok[0] || sides[1].inner.n > sides[0].inner.n)) ? 1 : 0;
  for (int t = 0; t < 2; t++) {
    int s = t ? 1 - first : first;
    if (ok[s] && try_fuse(c, root, &sides[s], r->inputs[1 - s])) return 1;
  }
  return 0;
}
