/* session.h - a compiled plan bound to a device and its buffers.  The
 * session owns params (persisting across runs), inputs and, for backends
 * that run on the host, the arena; the backend (backend.h) owns whatever
 * else the device needs (s->state: the CPU kernels' scratch, GPU arenas,
 * textures and passes). */
#ifndef RLX_SESSION_H
#define RLX_SESSION_H

#include "backend.h"
#include "plan.h"

struct rlx_session {
  rlx_plan plan;
  rlx_device device;
  const rlx_backend *backend;
  void *state;          /* the backend's (see its prepare) */
  int debug_poison;
  float *arena;         /* plan.arena_floats when backend->host_arena */
  float **input_data;   /* per input; i32 inputs hold int32 bits */
  uint8_t *input_set;   /* per input: set since compile */
  float **param_data;   /* per param (i32 params hold int32 bits) */
  uint8_t *param_bound; /* per param: param_data is the caller's memory (rlx_session_bind_param) */
  int ran;              /* outputs are valid */
  int32_t threads;      /* as resolved at compile (the CPU backend's pool) */
};

/* Storage of node id (an arena region, an input, a param or constant data). */
float *rlx_session_value(const rlx_session *s, int32_t id);

/* ---- what JS executors read (src/web/exports_*.c) ---------------------- */

/* The plan document of a session whose backend has one (backend.h
 * plan_json): NUL-terminated JSON owned by the session, len (optional)
 * its length; else NULL with rlx_last_error. */
const char *rlx_session_plan_json(const rlx_session *s, size_t *len);
/* 1 when some step of a GPU plan must run on the host between GPU passes
 * (no lowering asks for that today; the browser build refuses such plans at
 * compile), else 0. */
int rlx_session_requires_host_execution(const rlx_session *s);
/* Steps of the plan, those run on the host, and the GPU -> host round trips
 * a run needs besides reading the outputs.  Any pointer may be NULL. */
rlx_status rlx_session_host_summary(const rlx_session *s, int32_t *steps_total, int32_t *host_steps,
                                    int32_t *sync_points);
/* The host copies of input i (NULL until set; i32 inputs hold int32 bits)
 * and of param i (NULL when out of range or out of memory; zeros until
 * set), as set through the session API:
 * a GPU executor uploads them when it starts (training sessions preset
 * "d_output" and "rlx.lr"). */
const float *rlx_session_input_data(const rlx_session *s, int32_t i);
const float *rlx_session_param_data(rlx_session *s, int32_t i);

#endif
