/* webgpu_plan.h - the WebGPU side of a compiled session: which GPU arena
 * each value lives in, the checks run on every lowering at compile time,
 * and the plan document (JSON) the executor in web/runtime/webgpu.js
 * replays.  Internal to the library: the WebGPU backend (backend.c) and
 * src/web.
 *
 * Arenas.  WebGPU forbids one buffer to be bound both read-only and
 * writable in one dispatch (usage scopes are per buffer, not per range), so
 * an op's output can never share a buffer with its inputs.  Values are
 * therefore coloured: each step's output gets the lowest arena index that
 * none of its arena inputs use (a handful of arenas in practice), and each
 * arena is packed separately by lifetime, 64-float (256-byte) aligned.  The
 * plan's arena offsets are rewritten to lie in one virtual arena, arena k
 * starting at base[k], so rlx_plan_check still holds.
 *
 * Host steps.  A lowering that returns RLX_OK with zero dispatches asks for
 * its step to run on the CPU between GPU passes (a host step).  None do
 * today.  The browser executor cannot run them, so the wasm build refuses
 * to compile such a plan; native builds accept it for introspection
 * (rlx_session_host_summary). */
#ifndef RLX_WEBGPU_PLAN_H
#define RLX_WEBGPU_PLAN_H

#include "../compile/session.h"
#include "../core/text.h"
#include "wgpu.h"

#define RLX_WGPU_ALIGN_FLOATS 64   /* storage offset alignment: 256 bytes */
#define RLX_WGPU_MAX_ARENAS (RLX_MAX_INPUTS + 1)
#define RLX_WGPU_UNIFORM_BINDING ((size_t)RLX_WGPU_MAX_UNIFORM * 4) /* bytes bound per dispatch */

typedef struct rlx_wgpu_state {
  int32_t n_arenas;
  size_t arena_base[RLX_WGPU_MAX_ARENAS];   /* floats, in the plan's virtual arena */
  size_t arena_floats[RLX_WGPU_MAX_ARENAS]; /* size of each GPU arena */
  int8_t *arena_of;       /* per node: arena index of values written by steps, else -1 */
  int32_t *const_index;   /* per node: index among the plan's constants, else -1 */
  int32_t *const_nodes;   /* node id per constant */
  int32_t n_consts;
  size_t scratch_bytes;   /* max over steps */
  int32_t host_steps, sync_points;
  rlx_text json;          /* the plan document, made on first request */
} rlx_wgpu_state;

/* The state of a session compiled for RLX_DEVICE_WEBGPU (s->state). */
static inline rlx_wgpu_state *rlx_wgpu_state_of(const rlx_session *s) { return (rlx_wgpu_state *)s->state; }

/* Lowers every step (checking each dispatch), colours and places the
 * arenas, indexes constants and counts host steps.  Sets s->state. */
rlx_status rlx_wgpu_prepare(rlx_session *s);
/* 1 when this build has op's lowering (prepare.c; src/core/families.h). */
int rlx_wgpu_supports(rlx_op op);
void rlx_wgpu_state_free(rlx_session *s);

/* Runs the lowering of step node id into out (zeroed first) with its checks. */
rlx_status rlx_wgpu_lower_step(const rlx_plan *p, int32_t id, rlx_wgpu_lowering *out);

/* The plan document; NULL (with rlx_last_error) when it cannot be made. */
const char *rlx_wgpu_plan_json(rlx_session *s, size_t *len);

/* For src/web/exports_webgpu.c (backend.c).  The plan document of a WebGPU
 * session (buffers, pipelines, dispatches, outputs, training assignments;
 * format in plan_json.c), made on first request and owned by the session;
 * NULL for other sessions.  len (optional) receives its length. */
const char *rlx_session_webgpu_plan(const rlx_session *s, size_t *len);
/* Values of constant i of the plan (the document's "constants", in order)
 * and their count in *len; NULL when out of range or not a WebGPU session. */
const float *rlx_session_constant_data(const rlx_session *s, int32_t i, size_t *len);

#endif
