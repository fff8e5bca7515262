/* webgl_no_reference.c - the browser module's stand-in for the C reference
 * executor of WebGL2 plans (src/webgl/reference.c), which the native
 * library uses to test the lowerings against the CPU.  In the browser the
 * passes are drawn by web/runtime/webgl.js, so running a WebGL2 session
 * through rlx_session_run reports where to run it instead. */
#include "../webgl/gl_plan.h"

rlx_status rlx_gl_execute(rlx_session *s) {
  (void)s;
  return rlx_error(RLX_ERR_UNSUPPORTED, "run: run WebGL2 sessions through web/runtime/webgl.js "
                                       "(this module has no C reference executor)");
}
