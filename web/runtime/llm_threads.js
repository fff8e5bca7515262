// llm_threads.js - the threads of the language-model module on the CPU:
// which build loadGguf runs (threadsChoice: the GPU backends have no
// threaded build; the rest is threads.js's choice, shared with rlx_web.wasm,
// as are the option, the shared memory and the pool of helper Workers of
// web/pkg/rlx_llm_threads*.wasm and the training build's
// rlx_llm_train_threads*.wasm).
import { threadsChoice as choice } from './threads.js';

export { MAX_THREADS, liveThreadWorkers, defaultThreads, threadsOption } from './threads.js';

/**
 * Whether the threaded build can run `threads` threads here: { threaded,
 * why }.  Only on the CPU; there where SharedArrayBuffer and Workers exist
 * (threads.js).
 */
export function threadsChoice(threads, { backend = 'cpu' } = {}) {
  if (backend !== 'cpu') return { threaded: false, why: `backend '${backend}' runs the steps on the GPU` };
  return choice(threads);
}
