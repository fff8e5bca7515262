// instance.js - the one live instance of rlx_web.wasm behind every entry
// point of the runtime (./vision.js, ./models.js, ./select.js, the SDK and
// ../pkg/rlx_web.js): init() loads it once (idempotent), live() gives it or
// a clear error before init(), and a trap inside wasm (which the library is
// written never to do) is reported on console.error, discards the instance
// and surfaces as an RlxError; the next `await init()` loads a fresh one.
// init({ threads }) loads the threaded build (loader.js, threads.js) where it
// can run; free() or a new init with another thread count stops its Workers.
import { loadRlx, Rlx, RlxError, FATAL_STATUS as FATAL } from './loader.js';
import { simdOption } from './simd.js';
import { threadsOption } from './threads.js';
import { STATUS } from './constants.js';

let current = null;  // { rt, dead, source } of the live instance
let loading = null;  // the pending init() promise
let lastSource;       // undefined: ../pkg/rlx_web.wasm, or its relaxed-SIMD build
let lastSimd;         // the simd option of the last init() that gave one
let lastThreads;      // the threads option of the last init() that gave one (undefined: the default)

/**
 * Loads rlx_web.wasm (default: next to ../pkg/rlx_web.js, or its relaxed-SIMD build
 * where the engine has relaxed SIMD: ./simd.js; or a URL, path,
 * bytes or a WebAssembly.Module, also as `{ module_or_path }`; `{ simd:
 * 'simd128' }` forces the plain build; `{ threads }` (1 .. 64, default half
 * the logical cores) loads the threaded build rlx_web_threads*.wasm where
 * SharedArrayBuffer exists and threads > 1: the runtime's threads and
 * threadsWhy say what runs and why) and installs the fatal-error hook.
 * Calling it again returns the same module, unless the previous instance hit
 * a fatal error or was freed (free()), or `threads` differs from the live
 * one's: then a fresh one is loaded (the old one's Workers stopped).
 */
export function init(source) {
  let threads;
  if (source && typeof source === 'object' && ('module_or_path' in source || 'simd' in source || 'threads' in source)) {
    try {
      if (source.simd !== undefined) lastSimd = simdOption('init', source.simd, 'simd');
      if (source.threads !== undefined) threads = threadsOption('init', source.threads, 'threads');
    } catch (err) {
      return Promise.reject(err);
    }
    source = source.module_or_path;
  }
  return (async () => {
    if (threads !== undefined) {
      threads = await threads;
      if (current && !current.dead && threads !== current.threadsAsked) free();
      lastThreads = threads;
    }
    if (current && !current.dead) return current.rt;
    if (loading) return loading;
    if (source !== undefined && source !== null) lastSource = source;
    const src = lastSource;
    loading = (async () => {
      try {
        const raw = await loadRlx(src, { simd: lastSimd, threads: lastThreads });
        const state = { rt: null, dead: false, raw, threadsAsked: lastThreads };
        state.rt = new Rlx({ exports: guardExports(raw.exports, state) }, raw.simd);
        state.rt.pool = raw.pool;
        state.rt.threadsWhy = raw.threadsWhy;
        current = state;
        return state.rt;
      } finally {
        loading = null;
      }
    })();
    return loading;
  })();
}

/**
 * Drops the live instance: a threaded build's Workers are stopped, and the
 * next `await init()` loads a fresh instance; the old one's graphs, sessions
 * and models refuse every call but their free() from now on (an RlxError).
 * Harmless without one.
 */
export function free() {
  if (!current) return;
  current.freed = true; // its exports refuse from now on (a session's run would wait for the stopped Workers)
  current.rt.close();
  current = null;
}

/** The spec's `start`: the hook is installed by init(); this only checks it ran. */
export function start() {
  live();
}

/**
 * Wraps every exported function so that a trap (WebAssembly.RuntimeError,
 * e.g. "unreachable" from abort(); a stack overflow; a WasiExit) is printed
 * with a clear message, marks the instance dead, and surfaces as an RlxError.
 */
function guardExports(raw, state) {
  const guarded = {};
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value !== 'function') {
      guarded[name] = value;
      continue;
    }
    guarded[name] = (...args) => {
      if (state.freed && !name.endsWith('_free')) throw new RlxError(STATUS.STATE, `rlx_web: ${name} on an instance dropped by free(); call \`await init()\` for a fresh one`);
      if (state.dead) throw deadError();
      try {
        return value(...args);
      } catch (err) {
        const trapped = err instanceof WebAssembly.RuntimeError || err?.name === 'WasiExit' ||
          (err instanceof RangeError && /call stack/i.test(err.message)); // wasm stack overflow
        if (!trapped) throw err;
        state.dead = true;
        state.rt.dead = state.raw.dead = true;
        state.rt.close(); // its Workers: the instance is not used again
        const message = `rlx_web: fatal error inside the wasm module (in ${name}): ${err.message}. ` +
          'This is a bug in RLX, not in your arguments; the instance is discarded and ' +
          'the next `await init()` loads a fresh one.';
        console.error(message);
        const wrapped = new RlxError(FATAL, message, 'fatal');
        wrapped.cause = err;
        throw wrapped;
      }
    };
  }
  return guarded;
}

function deadError() {
  return new RlxError(FATAL, 'rlx_web: the wasm module hit a fatal error earlier; call `await init()` to load a fresh instance', 'fatal');
}

/** The loaded runtime, or a clear error before init(). */
export function live() {
  if (!current) throw new RlxError(STATUS.STATE, 'rlx_web: not initialized: call `await init()` first');
  if (current.dead) throw deadError();
  return current.rt;
}

/** The live runtime after init(): the Rlx of ./loader.js, the internal Graph / Session binding under WebGraph. */
export function runtime() {
  return live();
}

/** The live runtime, or null before init() or after a fatal error (never throws). */
export function loaded() {
  return current && !current.dead ? current.rt : null;
}
