/* backend.h - the one contract every device backend implements (internal).
 * A backend is a table of functions, as ggml's ggml_backend_i: the generic
 * layers (src/ir, src/autodiff, src/compile) reach a device only through
 * it and never name one.  The table of all backends, indexed by
 * rlx_device, is made in one place (src/core/backends.c, which lists
 * where each backend defines its entry, next to its code).
 *
 * Compiling for a device (session.c): the plan is built (with the fusion
 * passes only if the backend has fused kernels, arena values aligned to
 * arena_align), prepare binds it to the device (lowers every step, places
 * the device's buffers, sets s->state), then the session allocates the
 * host copies of inputs and params (and the arena when host_arena).
 * Reading and writing params, inputs and outputs is the same for every
 * backend: they go through those host buffers. */
#ifndef RLX_BACKEND_H
#define RLX_BACKEND_H

#include "plan.h"

typedef struct rlx_backend {
  const char *name;   /* in messages, e.g. "CPU" */
  rlx_device device;
  int fuses;          /* 1: plans keep the fusion passes (unless the options skip them) */
  size_t arena_align; /* floats every arena value is aligned to; 0: the planner's default */
  int host_arena;     /* 1: the session holds plan.arena_floats on the host */
  /* 1 when this build of the backend has op (a kernel or lowering of a
   * family the build has, src/core/families.h); rlx_compile refuses a plan
   * holding another op by name before prepare.  NULL: every op. */
  int (*supports_op)(rlx_op op);
  /* Binds the built plan to the device and sets s->state; NULL: nothing to do.
   * May rewrite the plan's arena offsets (rlx_plan_check must still hold). */
  rlx_status (*prepare)(rlx_session *s);
  /* One run with every needed input set; NULL: rlx_session_run refuses the
   * session, which `runner` (a JS executor) runs instead. */
  rlx_status (*run)(rlx_session *s);
  const char *runner;
  void (*free_state)(rlx_session *s); /* frees s->state; NULL: none */
  /* The plan document a JS executor replays (NUL-terminated JSON owned by
   * the session), NULL with rlx_last_error when it cannot be made; NULL
   * entry: the backend has none. */
  const char *(*plan_json)(rlx_session *s, size_t *len);
  /* Steps run on the host and GPU -> host round trips per run; NULL entry:
   * every step runs on the host, with no round trips. */
  void (*host_summary)(const rlx_session *s, int32_t *host_steps, int32_t *sync_points);
} rlx_backend;

/* The backend of device d, or NULL when this build has none (d valid) or
 * d is no device (*known = 0).  src/core/backends.c. */
const rlx_backend *rlx_backend_for(rlx_device d, int *known);

#endif
