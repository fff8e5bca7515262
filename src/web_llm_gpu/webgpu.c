/* webgpu.c - rlx_llm_gpu.wasm's step export: a model's step compiled for
 * WebGPU (web/runtime/llm_webgpu.js runs its plan through webgpu.js, with
 * src/web/exports_webgpu.c linked into the module too). */
#include "../models/llm.h"
#include "../webgpu/wgpu.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Step k compiled for WebGPU, its params bound to the model's weights and
 * caches; NULL with rlx_last_error().  fuse 1: the fused graph (norms in
 * the products, rotations in attention_kv: what WebGPU runs), 0: the
 * plain one (to measure the difference).  Freed with
 * rlx_llm_session_free, before the model. */
EXPORT(rlx_llm_webgpu_step) rlx_session *w_webgpu_step(const rlx_llm *m, int32_t k, int32_t fuse) {
  rlx_session *s = NULL;
  return rlx_llm_compile_step(m, k, RLX_DEVICE_WEBGPU, fuse != 0, &s) == RLX_OK ? s : NULL;
}

/* The WGSL source of an embedded kernel the JS side runs on its own
 * (llm_argmax: greedy decoding on the GPU); NULL when unknown. */
EXPORT(rlx_llm_webgpu_shader) const char *w_webgpu_shader(const char *name) { return rlx_wgsl_source(name); }
