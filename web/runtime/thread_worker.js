// thread_worker.js - one helper thread of a threaded module (the language
// model's or rlx_web's; threads.js starts it: a module Worker in a browser, a
// worker_threads Worker in Node).  Its one message { module, memory, index,
// stackTop, deadPtr } instantiates the module on the shared memory (the
// start function sees the data already initialized and leaves it), points
// this instance's stack pointer at its own stack, answers { ready }, and
// runs the pool's loop (rlx_wasm_thread_run), which returns when the pool
// is stopped.  A trap in a kernel range sets the pool's dead flag, so the
// caller's join fails instead of waiting for a range that never ends.
import { WasiShim } from './wasi.js';

const node = typeof process === 'object' && !!process.versions?.node;
const port = node ? (await import('node:worker_threads')).parentPort : self;
const listen = (f) => (node ? port.on('message', f) : port.addEventListener('message', (e) => f(e.data)));

listen(({ module, memory, index, stackTop, deadPtr }) => {
  let instance;
  try {
    const wasi = new WasiShim();
    instance = new WebAssembly.Instance(module, { ...wasi.imports(module), env: { memory } });
    wasi.attach(instance, memory);
    instance.exports.rlx_wasm_set_stack_pointer(stackTop);
  } catch (err) {
    port.postMessage({ error: `Worker ${index}: ${err?.message ?? err}` });
    return;
  }
  port.postMessage({ ready: true });
  try {
    instance.exports.rlx_wasm_thread_run(index);
  } catch (err) {
    Atomics.store(new Int32Array(memory.buffer), deadPtr >>> 2, 1);
    port.postMessage({ error: `Worker ${index} trapped: ${err?.message ?? err}` });
  }
});
