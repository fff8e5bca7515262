// size.test.mjs - the browser module stays within its download budget:
// web/pkg/rlx_web.wasm <= 303,000 bytes (300,000 until graphs indexed their
// names and arenas were packed in linear time, ~900 bytes; 301,000 until the
// fused Adam update adam_update, ~2,000 bytes: its kernel, shape rule, WGSL and
// GLSL shaders and lowerings, 302,963 when it was set), and so does its relaxed-SIMD build
// rlx_web_relaxed.wasm (bench/size.mjs prints the sizes of everything a page
// loads; `make bench` runs it).  The language-model module's WebGPU build,
// web/pkg/rlx_llm_gpu.wasm (rlx_llm.wasm plus the WebGPU backend, loaded
// only for backend 'webgpu'), and its WebGL2 build rlx_llm_webgl.wasm
// (backend 'webgl') have a budget of their own, 361,000 bytes each, and so
// do both builds of its training build rlx_llm_train.wasm (loadGguf's
// options.train: autodiff, the optimizer and the training ops on top of
// rlx_llm.wasm; 352,595 bytes when its budget was set to 360,000), 375,000,
// and its GPU builds rlx_llm_train_gpu.wasm (WebGPU) and
// rlx_llm_train_webgl.wasm (WebGL2), loaded for options.train with backend
// 'webgpu' / 'webgl': the training build plus the GPU module's backend,
// 435,000 bytes each (410,290 and 410,511 when it was set to 420,000).  Each
// of the language-model budgets grew (from 350,000, 360,000 and 420,000) by
// what generation under a grammar added to every build, all -Oz: the GBNF
// parser, matcher and sampler (src/models/grammar*.c, src/web_llm/grammar.c)
// 13,225 to 13,275 bytes (rlx_llm_gpu.wasm 339,315 -> 352,540;
// rlx_llm_webgl.wasm 336,977 -> 350,194; rlx_llm_train.wasm 355,411 ->
// 368,682; rlx_llm_train_gpu.wasm 413,517 -> 426,793).  The JSON Schema
// converter (src/models/json_*.c) was in each of them too, 18,197 to 19,944
// bytes, until it became a module of its own, rlx_json_schema.wasm, loaded
// on the first options.jsonSchema (web/runtime/llm_json_schema.js; -Oz,
// with the GBNF parser it checks its output with, the allocator and printf:
// 56,381 bytes when its budget was set); the budgets came down with it
// (rlx_llm_gpu.wasm 377,857 -> 357,913; rlx_llm_webgl.wasm 373,760 ->
// 355,563; rlx_llm_train.wasm 393,831 -> 374,087; rlx_llm_train_gpu.wasm
// 451,875 -> 432,201; rlx_llm_train_webgl.wasm 450,570 -> 432,345).
// Loading a model's header alone for WebGPU's streamed load
// (rlx_gguf_open_head, src/models/llm_external.c) added 2,579 to the GPU
// builds (rlx_llm_gpu.wasm 357,913 -> 360,492; rlx_llm_train_gpu.wasm
// 432,201 -> 434,789): 361,000 and 435,000.  The training build's threaded
// builds rlx_llm_train_threads*.wasm (tools/wasm_threads.mk) 377,000: the
// training build with atomics and the pool's exports (371,712 and 375,544
// bytes, relaxed, when set).
// rlx_web's threaded builds rlx_web_threads.wasm and
// rlx_web_threads_relaxed.wasm (init's threads > 1 where SharedArrayBuffer
// exists) have 308,000 bytes: the Worker pool (src/core/pool_wasm.c, its
// exports), the atomics and the shared memory's data set-up add about 4,400
// bytes to rlx_web.wasm (307,311 and 307,410 bytes when it was set).
// rlx_llm.wasm's own budget is in tests/common/llm_budget.mjs.  The budget
// assumes the build ran wasm-opt (binaryen, installed by tools/setup.sh;
// npm's binaryen for the relaxed build).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MODULE_FILES, relaxedSimdSupported } from '../../web/runtime/simd.js';

const BUDGET = 303_000;
const GPU_LLM_BUDGET = 361_000;
const TRAIN_LLM_BUDGET = 375_000;
const TRAIN_THREADS_LLM_BUDGET = 377_000;
const TRAIN_GPU_LLM_BUDGET = 435_000;
const SCHEMA_BUDGET = 57_000;
const WEB_THREADS_BUDGET = 308_000;

for (const [kind, budget] of [['web', BUDGET], ['webThreads', WEB_THREADS_BUDGET], ['llmTrain', TRAIN_LLM_BUDGET], ['llmTrainThreads', TRAIN_THREADS_LLM_BUDGET]]) for (const [build, url] of Object.entries(MODULE_FILES[kind])) {
  const file = fileURLToPath(url), name = file.split('/').pop();
  test(`${name} is within its ${budget.toLocaleString('en')}-byte budget and valid`, () => {
    const bytes = statSync(file).size;
    assert.ok(bytes <= budget, `web/pkg/${name} is ${bytes} bytes, ${bytes - budget} over the ${budget}-byte budget (run node bench/size.mjs)`);
    // An engine without relaxed SIMD (Node 20 without --experimental-wasm-relaxed-simd) must refuse the relaxed build.
    const valid = build === 'simd128' || relaxedSimdSupported();
    assert.equal(WebAssembly.validate(readFileSync(file)), valid, `${name} ${valid ? 'does not validate' : 'validates without relaxed SIMD'}`);
  });
}

for (const [name, budget] of [['rlx_llm_gpu.wasm', GPU_LLM_BUDGET], ['rlx_llm_webgl.wasm', GPU_LLM_BUDGET],
  ['rlx_llm_train_gpu.wasm', TRAIN_GPU_LLM_BUDGET], ['rlx_llm_train_webgl.wasm', TRAIN_GPU_LLM_BUDGET],
  ['rlx_json_schema.wasm', SCHEMA_BUDGET]]) {
  test(`${name} is within its ${budget.toLocaleString('en')}-byte budget and valid`, () => {
    const file = fileURLToPath(new URL(`../../web/pkg/${name}`, import.meta.url));
    const bytes = statSync(file).size;
    assert.ok(bytes <= budget, `web/pkg/${name} is ${bytes} bytes, ${bytes - budget} over its ${budget}-byte budget`);
    assert.ok(WebAssembly.validate(readFileSync(file)), `${name} does not validate`);
  });
}
