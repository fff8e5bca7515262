// llm_budget.mjs - the download budget of the language-model module
// web/pkg/rlx_llm.wasm, which its relaxed-SIMD and threaded builds share
// (tests/node/llm_wasm.test.mjs, llm_threads.test.mjs hold them to it), in
// bytes of the file wasm-opt wrote.  300,000 until generation under a
// grammar came to the web modules: the GBNF parser, matcher and sampler
// (src/models/grammar*.c) +13,240 bytes, all -Oz (rlx_llm.wasm 284,563 ->
// 297,803).  The JSON Schema converter (src/models/json_*.c, +20,012) was
// in it too until it became a module of its own, rlx_json_schema.wasm
// (budget in tests/node/size.test.mjs): rlx_llm.wasm 323,208 -> 303,196,
// rlx_llm_threads_relaxed.wasm, the largest build, 324,068 -> 304,109.
export const LLM_BUDGET = 305_000;
