/* fuse.h - fusion passes.  They run on the compiler's private copy of the
 * graph, before dead-code elimination: a pass replaces the root node of a
 * matched pattern in place by a fused node whose inputs are the pattern's
 * external inputs (all earlier nodes), so consumers keep their ids and the
 * bypassed nodes become dead.  Fused ops are forward-only (never seen by
 * autodiff, which runs before compile). */
#ifndef RLX_FUSE_H
#define RLX_FUSE_H

#include "../ir/graph.h"

/* Runs every pass; *fused receives the number of fused nodes made. */
rlx_status rlx_fuse(rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int32_t *fused);

#endif
