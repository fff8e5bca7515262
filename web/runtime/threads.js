// threads.js - the threads of the wasm modules on the CPU, shared by the
// language-model module (llm_threads.js, llm_module.js) and rlx_web.wasm
// (loader.js): the threads option, whether a threaded build can run here
// (threadsChoice), and the pool of helper Workers of a threaded build
// (startThreads; web/pkg/rlx_llm_threads*.wasm, rlx_llm_train_threads*.wasm,
// rlx_web_threads*.wasm, tools/wasm_threads.mk).  A threaded build imports a shared
// WebAssembly.Memory; each of its threads - 1 Workers (thread_worker.js)
// instantiates the same module on that memory with its own stack and runs
// the pool's loop (src/core/pool_wasm.c), sleeping in memory.atomic.wait32
// between loops.  The thread that calls the module (a page's main thread, a
// Worker, Node's main thread) hands out each kernel's fixed ranges, runs
// some itself and spins for the join, never waiting: Atomics.wait traps on a
// page's main thread, so both a page and a Worker can run the module.
// Results are bitwise the same for any thread count.  Stopping the pool
// (a model's free, rlx_web's free() or a new init) wakes the Workers and
// terminates them.
import { RlxError, describe, fail, isNode } from './loader.js';
import { STATUS } from './constants.js';

export const MAX_THREADS = 64;               // RLX_WASM_MAX_THREADS (src/core/pool.h)
const STACK_BYTES = 1 << 20;                 // each Worker's stack: the main one's (-z stack-size in the Makefile)
// A threaded module's memory import: --initial-memory (4 MiB) and --max-memory (4 GiB) of the Makefile, in pages.
const MEMORY = { initial: 64, maximum: 65536, shared: true };
const START_MS = 30_000;                     // a Worker that is not running by then is an error
const WORKER_URL = new URL('./thread_worker.js', import.meta.url);

let live = 0; // Workers started and not yet ended (liveThreadWorkers)

/** Workers of threaded modules that have not ended yet (tests check that free() leaves none). */
export function liveThreadWorkers() { return live; }

/** The default thread count: half the logical cores (as wllama), at least 1. */
export async function defaultThreads() {
  let cores = globalThis.navigator?.hardwareConcurrency;
  if (!cores && isNode) cores = (await import('node:os')).availableParallelism?.() ?? 1;
  return Math.max(1, Math.floor((cores || 1) / 2));
}

/** The checked threads option named `what` of fn (undefined: defaultThreads()). */
export async function threadsOption(fn, v, what = 'options.threads') {
  if (v === undefined) return defaultThreads();
  if (!Number.isInteger(v) || v < 1 || v > MAX_THREADS) {
    throw fail(fn, `${what} must be an integer from 1 to ${MAX_THREADS}, got ${describe(v)}`);
  }
  return v;
}

/**
 * Whether a threaded build can run `threads` threads here: { threaded, why }
 * (`what` names the option in the reason).  It needs SharedArrayBuffer (a
 * cross-origin isolated page or Worker: COOP + COEP headers; always in Node)
 * and Workers.
 */
export function threadsChoice(threads, what = 'options.threads') {
  if (threads === 1) return { threaded: false, why: `${what} is 1` };
  if (typeof SharedArrayBuffer !== 'function') {
    return { threaded: false, why: 'no SharedArrayBuffer here (the page is not cross-origin isolated: serve it with ' +
      'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)' };
  }
  if (!isNode && globalThis.crossOriginIsolated !== true) {
    return { threaded: false, why: 'the page is not cross-origin isolated (crossOriginIsolated is false)' };
  }
  if (!isNode && typeof Worker !== 'function') return { threaded: false, why: 'no Worker here' };
  return { threaded: true, why: `${threads} threads: the calling thread and ${threads - 1} Worker${threads > 2 ? 's' : ''} on a shared memory` };
}

/** Whether a compiled module is a threaded build (it imports its memory). */
export function isThreadedModule(module) {
  return WebAssembly.Module.imports(module).some((i) => i.kind === 'memory');
}

/** An RlxError of a threaded build's set-up (threadsFailed: the loaders then fall back to one thread). */
function setupError(fn, message, cause, what) {
  const e = fail(fn, `${message} (${cause?.message ?? cause}); ${what} 1 runs without them`);
  e.cause = cause;
  e.threadsFailed = true;
  return e;
}

/**
 * Instantiates a compiled module over `wasi` (a WasiShim): a threaded build
 * on a new shared memory, refused where there is no SharedArrayBuffer
 * (naming `given`, where the module came from, and `plain`, the build to
 * give instead).  Returns { instance, memory: the shared memory, else
 * undefined }; a threaded build's Workers are startThreads'.
 */
export async function instantiateModule(fn, module, wasi, { given, plain, what = 'options.threads' }) {
  let memory;
  if (isThreadedModule(module)) {
    if (typeof SharedArrayBuffer !== 'function') {
      throw new RlxError(STATUS.UNSUPPORTED, `${fn}: ${given} is a threaded build, which needs SharedArrayBuffer ` +
        `(a cross-origin isolated page); give ${plain}`);
    }
    memory = threadsMemory(fn, what);
  }
  const imports = wasi.imports(module);
  if (memory) imports.env = { memory };
  const instance = await WebAssembly.instantiate(module, imports);
  wasi.attach(instance, memory);
  instance.exports._initialize?.();
  return { instance, memory };
}

/** The shared memory a threaded build is instantiated on. */
export function threadsMemory(fn, what = 'options.threads') {
  try {
    return new WebAssembly.Memory(MEMORY);
  } catch (err) {
    throw setupError(fn, 'cannot reserve the threaded build\'s shared memory (up to 4 GiB)', err, what);
  }
}

async function spawn() {
  if (isNode) {
    const { Worker } = await import('node:worker_threads');
    // No Node options of the parent (--input-type=module with -e would stop it); V8's flags are the process's anyway
    const w = new Worker(WORKER_URL, { execArgv: [] });
    const on = (kind, f) => w.on(kind, f);
    on('exit', () => { live--; });
    // unref (once running: a 'message' listener refs the Worker again): a module never freed does not keep Node running
    return { post: (m) => w.postMessage(m), on, running: () => w.unref(), end: () => { w.terminate(); } };
  }
  const w = new Worker(WORKER_URL, { type: 'module' });
  let ended = false;
  const on = (kind, f) => w.addEventListener(kind, kind === 'message' ? (e) => f(e.data) : (e) => f(e.error ?? e.message ?? e));
  return { post: (m) => w.postMessage(m), on, running: () => {}, end: () => { if (!ended) { ended = true; w.terminate(); live--; } } };
}

/**
 * Starts the pool of an instance of a threaded build with `threads` threads
 * in all; resolves once every Worker runs its loop.  mod: { call(name,
 * ...args) (an export; throws once the instance trapped), check(status)
 * (throws the module's error for a negative status), memory, dead (truthy
 * once it trapped) }; module: the compiled module.  Returns { threads,
 * stop() } (stop: harmless twice).
 */
export async function startThreads(fn, mod, module, threads, what = 'options.threads') {
  mod.check(mod.call('rlx_wasm_threads_start', threads, STACK_BYTES), `${fn}: `);
  const deadPtr = mod.call('rlx_wasm_thread_dead_flag') >>> 0;
  const workers = [];
  const stop = () => {
    if (!mod.dead) mod.call('rlx_wasm_threads_stop'); // wakes them: each loop returns
    for (const w of workers.splice(0)) w.end();
  };
  try {
    await Promise.all(Array.from({ length: threads - 1 }, async (_, k) => {
      const index = k + 1;
      const w = await spawn();
      live++;
      workers.push(w);
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`not running after ${START_MS / 1000} s`)), START_MS);
        const settle = (f, v) => { clearTimeout(timer); f(v); };
        w.on('message', (m) => {
          if (m?.ready) {
            w.running();
            settle(resolve);
          }
          else if (m?.error) settle(reject, new Error(m.error));
        });
        w.on('error', (err) => settle(reject, err));
        w.post({ module, memory: mod.memory, index, stackTop: mod.call('rlx_wasm_thread_stack', index) >>> 0, deadPtr });
      });
    }));
  } catch (err) {
    stop();
    throw setupError(fn, `cannot start the module's ${threads - 1} Worker thread${threads > 2 ? 's' : ''}`, err, what);
  }
  return { threads, stop };
}
