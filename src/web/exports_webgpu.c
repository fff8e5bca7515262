/* exports_webgpu.c - the wasm exports web/runtime/webgpu.js needs to run a
 * session compiled for RLX_DEVICE_WEBGPU: its plan document, constant data
 * and the host copies of inputs and params to upload, and the host summary.
 * Thin wrappers over internal calls (src/webgpu/webgpu_plan.h,
 * src/compile/session.h); pointers are byte offsets into the exported
 * memory.  Also linked into build/wasm-tests/opcases.wasm. */
#include <stddef.h>

#include "../webgpu/webgpu_plan.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* The plan (NUL-terminated JSON) or 0 (then rlx_webgpu_last_error). */
EXPORT(rlx_webgpu_plan) const char *w_webgpu_plan(const rlx_session *s) { return rlx_session_webgpu_plan(s, NULL); }
EXPORT(rlx_webgpu_plan_len) size_t w_webgpu_plan_len(const rlx_session *s) {
  size_t len = 0;
  rlx_session_webgpu_plan(s, &len);
  return len;
}
EXPORT(rlx_webgpu_last_error) const char *w_webgpu_last_error(void) { return rlx_last_error(); }
EXPORT(rlx_webgpu_constant_data) const float *w_webgpu_constant_data(const rlx_session *s, int32_t i) {
  return rlx_session_constant_data(s, i, NULL);
}
EXPORT(rlx_webgpu_input_data) const float *w_webgpu_input_data(const rlx_session *s, int32_t i) {
  return rlx_session_input_data(s, i);
}
EXPORT(rlx_webgpu_param_data) const float *w_webgpu_param_data(rlx_session *s, int32_t i) {
  return rlx_session_param_data(s, i);
}

EXPORT(rlx_session_requires_host_execution) int32_t w_requires_host_execution(const rlx_session *s) {
  return rlx_session_requires_host_execution(s);
}
/* Writes steps_total, host_steps, sync_points to out[0..2]. */
EXPORT(rlx_session_host_summary) int32_t w_host_summary(const rlx_session *s, int32_t *out) {
  return rlx_session_host_summary(s, out, out + 1, out + 2);
}
