/* wasm_threads_cases.c - the one export build/wasm-tests/opcases_threads.wasm
 * (the op cases of opcases.wasm built threaded: tools/wasm_threads.mk) adds:
 * the parallel-for's work threshold, which tests/node/web_threads.test.mjs
 * lowers to 1 so that the tiny op cases split across the Workers too. */
#include <stddef.h>

#include "../../src/core/pool.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(threads_set_min_work) void w_threads_set_min_work(int32_t units) { rlx_parallel_set_min_work((size_t)units); }
