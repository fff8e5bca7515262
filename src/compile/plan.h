/* plan.h - the compiled, device-neutral form of a graph: which nodes run in
 * which order, and where every value lives (an input, param or constant
 * buffer, or a region of one shared arena).  Executors only read a plan. */
#ifndef RLX_PLAN_H
#define RLX_PLAN_H

#include "../ir/graph.h"

typedef enum {
  RLX_LOC_ARENA = 0, /* offset floats into the session arena */
  RLX_LOC_INPUT,     /* index into the plan's inputs          */
  RLX_LOC_PARAM,     /* index into the plan's params          */
  RLX_LOC_CONST      /* node data of the plan's graph         */
} rlx_loc_kind;

typedef struct {
  rlx_loc_kind kind;
  int32_t index;  /* input/param index, or the node id for constants */
  size_t offset;  /* in floats: arena offset, or offset into the buffer (views) */
} rlx_loc;

typedef struct {
  rlx_graph graph;      /* compacted copy: live nodes plus every input/param */
  rlx_loc *loc;         /* per node */
  int32_t *steps;       /* node ids run in order (views are not steps) */
  int32_t n_steps;
  int32_t *first_step;  /* per node: step that writes it (-1: not in the arena) */
  int32_t *last_step;   /* per node: last step that reads it (n_steps: an output) */
  int32_t *inputs, n_inputs; /* node ids of inputs, in declaration order */
  uint8_t *input_needed;     /* per input: some output depends on it */
  size_t input_needed_len;
  int32_t *params, n_params;
  int32_t *outputs, n_outputs;
  int32_t n_user_outputs;  /* outputs visible through the session API */
  int32_t *assign_param;   /* per output: param index it overwrites after a run, or -1 */
  size_t arena_floats;
  size_t arena_align;   /* floats every arena value is aligned to */
  int32_t n_fused;      /* nodes made by fusion passes */
} rlx_plan;

/* A reshape is a view: it shares its input's storage and runs no kernel. */
int rlx_plan_is_view(const rlx_node_t *n);
/* Storage root of node id: itself, or the value a chain of views reads. */
int32_t rlx_plan_root(const rlx_plan *p, int32_t id);

/* Greedy arena packing by lifetime, shared by the planner and GPU
 * backends that split the arena: every value written by a step
 * (first_step >= 0), numel rounded up to arena_align, largest first (ties
 * by id), goes to the lowest offset free over its lifetime among the
 * values placed before it in the same group (group[id]; NULL: one group
 * 0).  offset[id] receives its offset in floats within its group (other
 * entries untouched); group_floats[g] is raised to the end of every value
 * of group g.  RLX_ERR_NO_MEMORY (no message) or RLX_OK. */
rlx_status rlx_plan_pack(const rlx_plan *p, const int8_t *group, size_t *offset, size_t *group_floats);

/* Verify, fuse (unless skip_fusion), drop dead nodes, order steps, plan memory. */
rlx_status rlx_plan_build(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int skip_fusion,
                          rlx_plan *plan);
/* The same with every arena value aligned to align_floats floats (a power
 * of two >= 16; rlx_plan_build uses 16, GPU plans 64 = 256 bytes). */
rlx_status rlx_plan_build_aligned(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int skip_fusion,
                                  size_t align_floats, rlx_plan *plan);
void rlx_plan_free(rlx_plan *plan);

/* Checks the memory plan: every arena value inside the arena, and no two
 * values whose lifetimes overlap share bytes.  RLX_OK or RLX_ERR_STATE. */
rlx_status rlx_plan_check(const rlx_plan *plan);

#endif
