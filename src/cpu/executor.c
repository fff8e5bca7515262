/* executor.c - runs a plan on the CPU: one kernel call per step through the
 * dispatch table generated from the op table.  In debug-poison mode every
 * arena region is filled with NaN once its value is dead, so a kernel that
 * reads freed memory (or a planner that overlaps live values) shows up as
 * NaN in the outputs.  Also the CPU backend's table (src/compile/backend.h):
 * its state is the kernels' scratch, kept across runs, and the session's
 * thread pool (src/core/pool.h), current on the running thread during a
 * run; the kernels reach it only through rlx_parallel_for.  The table holds
 * the kernels of the op families the build has (src/core/families.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compile/session.h"
#include "../core/families.h"
#include "../core/pool.h"
#include "kernels.h"

const rlx_cpu_kernel rlx_cpu_kernels[RLX_OP_COUNT] = {
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) [RLX_OP_##ID] = RLX_IF_BUILT(rlx_cpu_##name),
#include "rlx_ops.def"
#undef RLX_OP
};

/* Leaves and views have no kernel: the plan never schedules them. */
rlx_status rlx_cpu_input(const rlx_kargs *a) { (void)a; return RLX_OK; }
rlx_status rlx_cpu_param(const rlx_kargs *a) { (void)a; return RLX_OK; }
rlx_status rlx_cpu_constant(const rlx_kargs *a) { (void)a; return RLX_OK; }

static void poison_dead(rlx_session *s, int32_t step) {
  const rlx_plan *p = &s->plan;
  for (int32_t id = 0; id < p->graph.n_nodes; id++)
    if (p->first_step[id] >= 0 && p->last_step[id] == step) {
      float *v = s->arena + p->loc[id].offset;
      size_t n = rlx_shape_numel(&p->graph.nodes[id].shape);
      for (size_t i = 0; i < n; i++) v[i] = NAN;
    }
}

typedef struct {
  rlx_scratch scratch;
  rlx_pool *pool;
  rlx_scratch *thread_ws; /* the ranges' workspaces, one per thread of the pool */
  int32_t threads;
} cpu_state;

static rlx_status cpu_steps(rlx_session *s) {
  const rlx_plan *p = &s->plan;
  int32_t flags = 0;
  if (s->debug_poison)
    for (size_t i = 0; i < p->arena_floats; i++) s->arena[i] = NAN;
  for (int32_t step = 0; step < p->n_steps; step++) {
    int32_t id = p->steps[step];
    const rlx_node_t *n = &p->graph.nodes[id];
    rlx_kargs a;
    memset(&a, 0, sizeof a);
    a.node = n;
    for (int32_t k = 0; k < n->n_inputs; k++) {
      a.in_node[k] = &p->graph.nodes[n->inputs[k]];
      a.in[k] = rlx_session_value(s, n->inputs[k]);
    }
    a.out = rlx_session_value(s, id);
    a.scratch = &((cpu_state *)s->state)->scratch;
    a.flags = &flags;
    rlx_status st = rlx_cpu_kernels[n->op](&a);
    if (st != RLX_OK) {
      char why[512];
      snprintf(why, sizeof why, "%s", rlx_last_error());
      return rlx_error(st, "run: node %d (%s) failed: %s", (int)id, rlx_op_name(n->op), why);
    }
    if (s->debug_poison) poison_dead(s, step);
  }
  if (flags & RLX_KFLAG_BAD_INDEX)
    return rlx_error(RLX_ERR_INVALID_ARG, "run: an index (gather id or class label) was outside its range");
  /* Training steps: updated values overwrite their params once all steps ran. */
  for (int32_t i = 0; i < p->n_outputs; i++)
    if (p->assign_param[i] >= 0) {
      int32_t id = p->outputs[i];
      memcpy(s->param_data[p->assign_param[i]], rlx_session_value(s, id),
             rlx_shape_numel(&p->graph.nodes[id].shape) * sizeof(float));
    }
  return RLX_OK;
}

static rlx_status cpu_execute(rlx_session *s) {
  cpu_state *c = s->state;
  rlx_pool *prev = rlx_pool_use(c->pool);
  rlx_scratch *prev_ws = rlx_pool_workspaces(c->thread_ws);
  rlx_status st = cpu_steps(s);
  rlx_pool_workspaces(prev_ws);
  rlx_pool_use(prev);
  return st;
}

static rlx_status cpu_prepare(rlx_session *s) {
  cpu_state *c = rlx_calloc(1, sizeof *c);
  if (!(s->state = c)) return rlx_error(RLX_ERR_NO_MEMORY, "out of memory");
  rlx_status st = rlx_pool_acquire(s->threads, &c->pool);
  if (!RLX_THREADED || st != RLX_OK || !c->pool) return st;
  c->threads = s->threads;
  if (!(c->thread_ws = rlx_calloc((size_t)c->threads, sizeof(rlx_scratch))))
    return rlx_error(RLX_ERR_NO_MEMORY, "out of memory");
  return RLX_OK;
}

static void cpu_free_state(rlx_session *s) {
  cpu_state *c = s->state;
  if (!c) return;
  rlx_pool_release(c->pool);
  if (RLX_THREADED && c->thread_ws) {
    for (int32_t i = 0; i < c->threads; i++) rlx_scratch_release(&c->thread_ws[i]);
    rlx_free(c->thread_ws, (size_t)c->threads * sizeof(rlx_scratch));
  }
  rlx_scratch_release(&c->scratch);
  rlx_free(c, sizeof *c);
  s->state = NULL;
}

static int cpu_supports(rlx_op op) { return rlx_cpu_kernels[op] != NULL; }

const rlx_backend rlx_backend_cpu = {
    .name = "CPU",
    .device = RLX_DEVICE_CPU,
    .fuses = 1,
    .host_arena = 1,
    .supports_op = cpu_supports,
    .prepare = cpu_prepare,
    .run = cpu_execute,
    .free_state = cpu_free_state,
};
