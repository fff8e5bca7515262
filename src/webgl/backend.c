/* backend.c - the WebGL2 backend's table (src/compile/backend.h): plans
 * without fusion (every op has its lowering), every step lowered to render
 * passes over textures at compile time (plan_gl.c).  The session's buffers
 * are those of a CPU session, arena included, so rlx_session_run runs the
 * C reference executor (reference.c; the browser module has a stand-in
 * reporting RLX_ERR_UNSUPPORTED, src/web/webgl_no_reference.c) and leaves
 * the outputs where the session API reads them; web/runtime/webgl.js runs
 * the plan document (plan_json.c).  Also rlx_session_webgl_plan. */
#include "gl_plan.h"

static rlx_status gl_prepare(rlx_session *s) { return rlx_gl_prepare(s, 0); }

const rlx_backend rlx_backend_webgl = {
    .name = "WebGL2",
    .device = RLX_DEVICE_WEBGL,
    .fuses = 0,
    .host_arena = 1,
    .supports_op = rlx_gl_supports,
    .prepare = gl_prepare,
    .run = rlx_gl_execute,
    .runner = "web/runtime/webgl.js",
    .free_state = rlx_gl_state_free,
    .plan_json = rlx_gl_plan_json,
};

/* ---- include/rlx.h ------------------------------------------------------ */

const char *rlx_session_webgl_plan(const rlx_session *s, size_t *len) {
  if (len) *len = 0;
  if (!s) {
    rlx_error(RLX_ERR_INVALID_ARG, "webgl_plan: session is NULL");
    return NULL;
  }
  if (s->device != RLX_DEVICE_WEBGL || !s->state) {
    rlx_error(RLX_ERR_INVALID_ARG, "webgl_plan: the session was not compiled for RLX_DEVICE_WEBGL");
    return NULL;
  }
  return rlx_session_plan_json(s, len);
}
