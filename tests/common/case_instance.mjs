// case_instance.mjs - one instance of an op-case module of tests/c: the
// plain build/wasm-tests/opcases.wasm, or opcases_threads.wasm on `threads`
// threads with every parallel loop split (work threshold 1).  Shared by
// tests/node/web_threads.test.mjs and, served to a page,
// tests/browser/llm_threads.test.mjs; the runtime's WasiShim,
// instantiateModule and startThreads are passed in, since the two load them
// from different places.  Returns { e: the exports, buffer(): the memory's
// buffer now, stop(): ends the Workers }.
export async function caseInstance(module, threads, { WasiShim, instantiateModule, startThreads }) {
  const { instance, memory } = await instantiateModule('test', module, new WasiShim({ stdout: () => {}, stderr: () => {} }),
    { given: 'the op-case module', plain: 'opcases.wasm' });
  const e = instance.exports;
  let pool = null;
  if (memory) {
    const check = (st) => { if (st < 0) throw new Error(`rlx_wasm_threads_start: status ${st}`); };
    pool = await startThreads('test', { call: (n, ...a) => e[n](...a), check, memory, dead: false }, module, threads);
    e.threads_set_min_work(1);
  }
  return { e, buffer: () => (memory ?? e.memory).buffer, stop: () => pool?.stop() };
}
