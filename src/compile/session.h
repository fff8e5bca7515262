/* session.h - a compiled plan bound to a device and its buffers.  The
 * session owns params (persisting across runs), inputs, the arena and the
 * kernels' scratch.  Executors (src/cpu/executor.c, later GPU ones) run it. */
#ifndef RLX_SESSION_H
#define RLX_SESSION_H

#include "../cpu/kernels.h"
#include "plan.h"

struct rlx_session {
  rlx_plan plan;
  rlx_device device;
  int debug_poison;
  float *arena;         /* plan.arena_floats */
  float **input_data;   /* per input; i32 inputs hold int32 bits */
  uint8_t *input_set;   /* per input: set since compile */
  float **param_data;   /* per param */
  rlx_scratch scratch;  /* kernel workspace, grown on demand */
  int ran;              /* outputs are valid */
  struct rlx_wgpu_state *webgpu; /* WebGPU sessions: arenas and the plan document (src/webgpu/webgpu_plan.h) */
  struct rlx_gl_state *webgl;    /* WebGL2 sessions: textures and passes (src/webgl/gl_plan.h) */
};

/* Storage of node id (an arena region, an input, a param or constant data). */
float *rlx_session_value(const rlx_session *s, int32_t id);

/* Runs every step of the plan on the CPU. */
rlx_status rlx_cpu_execute(rlx_session *s);

#endif
