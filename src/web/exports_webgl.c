/* exports_webgl.c - the wasm exports web/runtime/webgl.js needs to run a
 * session compiled for RLX_DEVICE_WEBGL: its plan document and the host
 * copies of inputs and params to upload when the executor starts.  Thin
 * wrappers over internal calls (src/webgl/gl_plan.h, src/compile/session.h);
 * pointers are byte offsets into the exported memory.  Also linked into
 * build/wasm-tests/webgl_cases.wasm. */
#include <stddef.h>

#include "../webgl/gl_plan.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* The plan (NUL-terminated JSON, rebuilt on each call, valid until the
 * next call or the session's free) or 0 (then rlx_webgl_last_error). */
EXPORT(rlx_webgl_plan) const char *w_webgl_plan(const rlx_session *s) { return rlx_session_webgl_plan(s, NULL); }
EXPORT(rlx_webgl_last_error) const char *w_webgl_last_error(void) { return rlx_last_error(); }
/* Host copy of input i (0 until set; i32 inputs hold int32 bits) and of param i. */
EXPORT(rlx_webgl_input_data) const float *w_webgl_input_data(const rlx_session *s, int32_t i) {
  return rlx_session_input_data(s, i);
}
EXPORT(rlx_webgl_param_data) const float *w_webgl_param_data(rlx_session *s, int32_t i) {
  return rlx_session_param_data(s, i);
}
