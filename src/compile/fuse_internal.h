/* fuse_internal.h - what the fusion passes share: which nodes are live and
 * how often each is consumed (kept current by the driver in fuse.c), the
 * check that a pattern's intermediate nodes feed nothing outside it, and
 * the in-place replacement of a pattern's root by its fused node. */
#ifndef RLX_FUSE_INTERNAL_H
#define RLX_FUSE_INTERNAL_H

#include "fuse.h"

#define FUSE_MAX_PATTERN 64 /* nodes in one pattern, root excluded */

typedef struct {
  rlx_graph *g;
  const rlx_node *outputs;
  int32_t n_outputs;
  uint8_t *live;     /* per node: an output depends on it */
  uint8_t *output;   /* per node: it is one of the outputs */
  int32_t *uses;     /* per node: input slots of live nodes that read it */
} fuse_ctx;

/* The intermediate nodes of a pattern (deduplicated). */
typedef struct {
  int32_t n;
  int32_t ids[FUSE_MAX_PATTERN];
} fuse_set;

/* Adds id to s (once); 0 when the set is full. */
int fuse_set_add(fuse_set *s, int32_t id);

/* 1 when no node of s is an output and every live consumer of a node of s
 * is in s or is the root: then replacing the root leaves s dead. */
int fuse_only_feeds(const fuse_ctx *c, const fuse_set *s, int32_t root);

/* Replaces node root by proto (op, inputs, attributes) after running the
 * op's shape rule on it; 0 (graph untouched) if the rule fails or the
 * shape differs from the root's, 1 when replaced. */
int fuse_replace(fuse_ctx *c, int32_t root, const rlx_node_t *proto);

/* Passes: each tries to fuse the pattern rooted at root and returns 1 if it
 * did, 0 if not (the graph is then untouched). */
int rlx_fuse_attention_block(fuse_ctx *c, int32_t root);  /* fuse_attention.c */
int rlx_fuse_matmul_epilogue(fuse_ctx *c, int32_t root);  /* fuse_matmul.c */

#endif
