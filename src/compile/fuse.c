/* fuse.c - the fusion pass driver: each pass visits the live nodes from the
 * last to the first (so a chain is matched from its outermost root and the
 * longest pattern wins) and tries to fuse the pattern rooted there; after
 * every rewrite liveness and consumer counts are recomputed, since nodes
 * the rewrite bypassed no longer count as consumers.  Also the helpers the
 * passes share (fuse_internal.h). */
#include "fuse_internal.h"

#include <stdio.h>
#include <string.h>

static void refresh(fuse_ctx *c) {
  const rlx_graph *g = c->g;
  memset(c->live, 0, (size_t)g->n_nodes);
  memset(c->uses, 0, (size_t)g->n_nodes * sizeof(int32_t));
  for (int32_t i = 0; i < c->n_outputs; i++) c->live[c->outputs[i]] = 1;
  for (int32_t id = g->n_nodes - 1; id >= 0; id--) {
    if (!c->live[id]) continue;
    const rlx_node_t *n = &g->nodes[id];
    for (int32_t k = 0; k < n->n_inputs; k++) {
      c->live[n->inputs[k]] = 1;
      c->uses[n->inputs[k]]++;
    }
  }
}

int fuse_set_add(fuse_set *s, int32_t id) {
  for (int32_t i = 0; i < s->n; i++)
    if (s->ids[i] == id) return 1;
  if (s->n == FUSE_MAX_PATTERN) return 0;
  s->ids[s->n++] = id;
  return 1;
}

int fuse_only_feeds(const fuse_ctx *c, const fuse_set *s, int32_t root) {
  for (int32_t i = 0; i < s->n; i++) {
    int32_t id = s->ids[i], inside = 0;
    if (id == root || c->output[id]) return 0;
    for (int32_t j = 0; j <= s->n; j++) { /* slots of the pattern's nodes (and the root) reading id */
      const rlx_node_t *n = &c->g->nodes[j < s->n ? s->ids[j] : root];
      for (int32_t k = 0; k < n->n_inputs; k++) inside += n->inputs[k] == id;
    }
    if (inside != c->uses[id]) return 0;
  }
  return 1;
}

int fuse_replace(fuse_ctx *c, int32_t root, const rlx_node_t *proto) {
  rlx_node_t *r = &c->g->nodes[root];
  rlx_node_t n = *proto;
  char msg[400];
  n.dtype = RLX_F32;
  n.name = NULL;
  n.data = NULL;
  n.shape.rank = 0;
  if (n.n_inputs < rlx_op_table[n.op].min_inputs || n.n_inputs > rlx_op_table[n.op].max_inputs) return 0;
  for (int32_t k = 0; k < n.n_inputs; k++)
    if (n.inputs[k] < 0 || n.inputs[k] >= root || c->g->nodes[n.inputs[k]].dtype != RLX_F32) return 0;
  if (rlx_op_table[n.op].shape(c->g, &n, msg, sizeof msg) != RLX_OK || !rlx_shape_equal(&n.shape, &r->shape)) return 0;
  /* a computed node owns no name or data */
  *r = n;
  return 1;
}

typedef int (*fuse_pass)(fuse_ctx *c, int32_t root);

rlx_status rlx_fuse(rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int32_t *fused) {
  static const fuse_pass passes[] = {rlx_fuse_attention_block, rlx_fuse_matmul_epilogue};
  fuse_ctx c = {g, outputs, n_outputs, NULL, NULL, NULL};
  *fused = 0;
  if (g->n_nodes == 0) return RLX_OK;
  c.live = rlx_calloc((size_t)g->n_nodes, 1);
  c.output = rlx_calloc((size_t)g->n_nodes, 1);
  c.uses = rlx_calloc((size_t)g->n_nodes, sizeof(int32_t));
  rlx_status st = RLX_OK;
  if (!c.live || !c.output || !c.uses) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "compile: out of memory in fusion");
  } else {
    for (int32_t i = 0; i < n_outputs; i++) c.output[outputs[i]] = 1;
    refresh(&c);
    for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++)
      for (int32_t id = g->n_nodes - 1; id >= 0; id--)
        if (c.live[id] && passes[p](&c, id)) {
          (*fused)++;
          refresh(&c);
        }
  }
  rlx_free(c.live, (size_t)g->n_nodes);
  rlx_free(c.output, (size_t)g->n_nodes);
  rlx_free(c.uses, (size_t)g->n_nodes * sizeof(int32_t));
  return st;
}
