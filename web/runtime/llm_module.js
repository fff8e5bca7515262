// llm_module.js - one instance of a language-model module (rlx_llm.wasm or
// its WebGPU / WebGL2 and threaded builds): compiled once per URL,
// instantiated with the WASI shim (a threaded build on a shared memory, with
// its Workers started: threads.js), and wrapped with its memory helpers;
// a trap inside it (a bug, never bad arguments) becomes a 'fatal' RlxError
// and ends the instance.  The JSON Schema converter's module
// (llm_json_schema.js) is compiled, instantiated and wrapped the same way.
import { WasiShim, cstringAt, unshared } from './wasi.js';
import { instantiateModule, startThreads } from './threads.js';
import { RlxError } from './loader.js';
import { moduleSimd } from './simd.js';
import { STATUS, isNode, now } from './llm_common.js';

/** The WASI shim plus clock_time_get (the library's timers). */
export class LlmWasi extends WasiShim {
  imports(module) {
    const out = super.imports(module);
    const w = out.wasi_snapshot_preview1;
    if ('clock_time_get' in w) {
      w.clock_time_get = (id, _precision, ptr) => {
        const ms = id === 0 ? Date.now() : now();
        this.view().setBigUint64(ptr, BigInt(Math.round(ms * 1e6)), true);
        return 0;
      };
    }
    return out;
  }
}

const compiled = new Map(); // module URL -> Promise<WebAssembly.Module>

/** source (a URL, a path, bytes or a WebAssembly.Module) compiled; a URL's or path's Promise kept while it has not failed. */
export async function compileModule(source) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return WebAssembly.compile(source);
  const key = String(source);
  if (!compiled.has(key)) {
    const p = (async () => {
      const isFileUrl = source instanceof URL ? source.protocol === 'file:' : /^file:/.test(key);
      if (isNode && (isFileUrl || !/^https?:/.test(key))) {
        const { readFile } = await import('node:fs/promises');
        return WebAssembly.compile(await readFile(isFileUrl ? new URL(key) : key));
      }
      const response = await fetch(source);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      if (WebAssembly.compileStreaming && /^application\/wasm\b/.test(response.headers.get('content-type') ?? '')) {
        return WebAssembly.compileStreaming(response);
      }
      return WebAssembly.compile(await response.arrayBuffer());
    })();
    compiled.set(key, p);
    p.catch(() => compiled.delete(key));
  }
  return compiled.get(key);
}

/** One instance of rlx_llm.wasm with its memory helpers. */
export class LlmModule {
  constructor(instance, simd, memory = instance.exports.memory) {
    this.e = instance.exports;
    this.simd = simd; // 'relaxed' | 'simd128': the build (runtime/simd.js)
    this.memory = memory; // shared (and imported) in a threaded build
    this.pool = null; // a threaded build's Workers (threads.js)
    this.encoder = new TextEncoder();
    this.decoder = new TextDecoder();
    this.dead = null; // the trap that ended this instance
  }
  u8(ptr, n) { return new Uint8Array(this.memory.buffer, ptr, n); }
  i32(ptr, n) { return new Int32Array(this.memory.buffer, ptr, n); }
  f64(ptr, n) { return new Float64Array(this.memory.buffer, ptr, n); }
  /** Threads the model's steps run on: the caller and the pool's Workers. */
  get threads() { return this.pool?.threads ?? 1; }
  /** Stops a threaded build's Workers (the model's free); harmless twice. */
  close() {
    this.pool?.stop();
    this.pool = null;
  }
  /** The UTF-8 text of n bytes at ptr. */
  text(ptr, n) { return this.decoder.decode(unshared(this.u8(ptr, n))); }
  cstring(ptr) { return ptr ? cstringAt(this.memory, ptr) : ''; }
  alloc(bytes) {
    const ptr = this.call('rlx_wasm_alloc', bytes) >>> 0;
    if (!ptr) throw new RlxError(STATUS.NO_MEMORY, `wasm out of memory allocating ${bytes} bytes`, 'no memory');
    return ptr;
  }
  free(ptr) { if (ptr) this.call('rlx_wasm_free', ptr); }
  /** An export called with a trap (a bug, never bad arguments) turned into a 'fatal' RlxError. */
  call(name, ...args) {
    if (this.dead) throw new RlxError(STATUS.FATAL, `rlx_llm: the module hit a fatal error earlier (${this.dead}); load the model again`, 'fatal');
    try {
      return this.e[name](...args);
    } catch (err) {
      const trapped = err instanceof WebAssembly.RuntimeError || err?.name === 'WasiExit' ||
        (err instanceof RangeError && /call stack/i.test(err.message));
      if (!trapped) throw err;
      this.dead = err.message;
      const wrapped = new RlxError(STATUS.FATAL, `rlx_llm: fatal error inside the wasm module (in ${name}): ${err.message}. ` +
        'This is a bug in RLX, not in your arguments; load the model again.', 'fatal');
      wrapped.cause = err;
      throw wrapped;
    }
  }
  lastError() { return this.cstring(this.call('rlx_last_error')); }
  check(status, prefix = '') {
    if (status < 0) {
      throw new RlxError(status, prefix + this.lastError(), this.cstring(this.call('rlx_status_name', status)));
    }
    return status;
  }
  /** Runs fn(t) with t.alloc / t.str / t.i32 blocks freed afterwards. */
  scoped(fn) {
    const ptrs = [];
    const t = {
      alloc: (n) => { const p = this.alloc(n); ptrs.push(p); return p; },
      str: (s) => {
        const bytes = this.encoder.encode(s);
        const p = t.alloc(bytes.length + 1);
        const mem = this.u8(p, bytes.length + 1);
        mem.set(bytes);
        mem[bytes.length] = 0;
        return { ptr: p, len: bytes.length };
      },
      i32: (values) => {
        const p = t.alloc(4 * Math.max(values.length, 1));
        this.i32(p, values.length).set(values);
        return p;
      },
    };
    try { return fn(t); } finally { for (const p of ptrs) this.free(p); }
  }
}

/** An instance of wasm; a threaded build gets its pool of `threads` threads. */
export async function instantiate(wasm, threads = 1) {
  let module;
  try {
    module = await compileModule(wasm);
  } catch (err) {
    const e = new RlxError(STATUS.INVALID_ARG, `loadGguf: cannot load the language-model module from ${String(wasm).slice(0, 200)}: ${err?.message ?? err}`, 'invalid argument');
    e.cause = err;
    throw e;
  }
  const { instance, memory } = await instantiateModule('loadGguf', module, new LlmWasi(),
    { given: 'options.wasm', plain: 'rlx_llm.wasm' });
  if (typeof instance.exports.rlx_llm_open !== 'function') {
    throw new RlxError(STATUS.INVALID_ARG, 'loadGguf: options.wasm is not rlx_llm.wasm (no rlx_llm_open export)', 'invalid argument');
  }
  const mod = new LlmModule(instance, moduleSimd(module), memory);
  if (memory) mod.pool = await startThreads('loadGguf', mod, module, threads);
  return mod;
}
