/* exports.c - the thread-pool exports of the language-model module's
 * threaded builds (web/pkg/rlx_llm_threads*.wasm, the training build's
 * rlx_llm_train_threads*.wasm and rlx_web_threads*.wasm), beside
 * src/web_llm/exports.c: web/runtime/llm_threads.js starts the pool
 * (src/core/pool_wasm.c) before the model opens, runs each Worker's loop
 * on its own stack (stack.S sets the stack pointer) and stops it when the
 * model is freed. */
#include "../core/core.h"
#include "../core/pool.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(rlx_wasm_threads_start) int32_t w_threads_start(int32_t threads, int32_t stack_bytes) {
  return stack_bytes > 0 ? rlx_wasm_threads_start(threads, (size_t)stack_bytes)
                         : rlx_error(RLX_ERR_INVALID_ARG, "threads: a stack of %d bytes", (int)stack_bytes);
}
EXPORT(rlx_wasm_thread_stack) void *w_thread_stack(int32_t index) { return rlx_wasm_thread_stack(index); }
EXPORT(rlx_wasm_thread_run) void w_thread_run(int32_t index) { rlx_wasm_thread_run(index); }
EXPORT(rlx_wasm_threads_stop) void w_threads_stop(void) { rlx_wasm_threads_stop(); }
EXPORT(rlx_wasm_thread_dead_flag) int32_t *w_thread_dead_flag(void) { return rlx_wasm_thread_dead_flag(); }
