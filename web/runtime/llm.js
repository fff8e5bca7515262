// llm.js - GGUF language models in a page, a Worker or Node 20, through the
// language-model module web/pkg/rlx_llm.wasm (src/web_llm/exports.c over
// include/rlx_llm.h).  Each model gets its own instance (its own wasm
// memory, given back by free()).
//
//   import { loadGguf } from './runtime/llm.js';
//   const model = await loadGguf(fileOrUrl, { nCtx: 2048, onProgress: ({ loaded, total }) => ... });
//   model.info;                                   // { arch, name, nVocab, nLayer, nParams, weightTypes, simd, ... }
//   model.tokenize('Hello', { addBos, special }); // ids (number[])
//   model.detokenize(ids);                        // text
//   const r = await model.generate('Once upon a time', { maxTokens: 32, temperature: 0.8, seed: 1,
//     stop: ['\n\n'], onToken: (text, id) => out.append(text), signal });
//   r.text; r.ids; r.stoppedBy; r.stats.generateTokensPerSecond;
//   for await (const { text, id } of model.generate(prompt)) out.append(text);  // or stream it
//   model.logits(ids);                            // the logits after ids (a fresh context)
//   await loadGguf(file, { backend: 'webgpu' });  // the steps on WebGPU (eval / logits then return Promises)
//   await loadGguf(file, { backend: 'webgl' });   // the steps on WebGL2 (likewise)
//   model.reset(); model.free();
//
// Sources: a File or Blob (read with stream(), or slice() where there is
// none), a Response (its body reader), an ArrayBuffer or a typed array, a
// URL (fetched; in Node a path or file: URL is read from disk).  The bytes go
// straight into one buffer of the module's memory, which the model then reads
// in place: the weights are held once.  A file larger than the wasm32 budget
// (RLX_GGUF_WASM32_DATA_BUDGET, 3.5 GiB) is refused before that buffer is
// allocated.  Every bad argument is an RlxError naming the function and the
// argument; the library's own refusals are RlxErrors with its message.
//
// GgufWorker runs the same API in a module Worker (llm_worker.js), so a page
// generates without blocking its UI; tokens arrive as messages.
//
// Backends: 'cpu' runs the steps in the module (wasm); 'webgpu' loads the
// module's WebGPU build (rlx_llm_gpu.wasm) and runs them on the GPU
// (./llm_webgpu.js), 'webgl' its WebGL2 build (rlx_llm_webgl.wasm,
// ./llm_webgl.js), sampling in the module as on the CPU; 'auto' takes
// WebGPU on a hardware adapter, else WebGL2 on a hardware renderer, else
// the CPU (software rasterizers such as SwiftShader run slower than the
// wasm CPU path: the order of backends.js's BACKEND_ORDER), and
// info.fallbacks says why each GPU backend was not taken.
import { WasiShim } from './wasi.js';
import { RlxError, describe, optionsArg } from './loader.js';
import { simdOption, moduleFile, moduleSimd } from './simd.js';
import { Generation } from './llm_stream.js';

export { RlxError };

const isNode = typeof process === 'object' && !!process.versions?.node;
const STATUS = { INVALID_ARG: -1, NO_MEMORY: -4, UNSUPPORTED: -6, STATE: -7 };
const STOPPED_BY = ['maxTokens', 'eog', 'stop', 'callback', 'context'];
const BACKENDS = ['auto', 'cpu', 'webgpu', 'webgl'];
const GPU_WASM = new URL('../pkg/rlx_llm_gpu.wasm', import.meta.url);
const WEBGL_WASM = new URL('../pkg/rlx_llm_webgl.wasm', import.meta.url);
const MAX_STOP = 16;           // stop strings per generation
const MAX_TEXT = 1 << 26;      // bytes of text to tokenize at once
const MAX_IDS = 1 << 24;       // ids in one call
const YIELD_MS = 16;           // a generation lets events in at least this often
const BLOB_SLICE = 8 << 20;    // bytes per slice() of a Blob without stream()
const PROGRESS_MS = 50;        // onProgress at most this often while loading
const now = () => (typeof performance === 'object' ? performance.now() : Date.now());

function fail(fn, message) {
  return new RlxError(STATUS.INVALID_ARG, `${fn}: ${message}`, 'invalid argument');
}

function gib(bytes) { return `${(bytes / 2 ** 30).toFixed(2)} GiB`; }

/** The WASI shim plus clock_time_get (the library's timers). */
class LlmWasi extends WasiShim {
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

async function compileModule(source) {
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
class LlmModule {
  constructor(instance, simd) {
    this.e = instance.exports;
    this.simd = simd; // 'relaxed' | 'simd128': the build (runtime/simd.js)
    this.memory = this.e.memory;
    this.encoder = new TextEncoder();
    this.decoder = new TextDecoder();
    this.dead = null; // the trap that ended this instance
  }
  u8(ptr, n) { return new Uint8Array(this.memory.buffer, ptr, n); }
  i32(ptr, n) { return new Int32Array(this.memory.buffer, ptr, n); }
  f64(ptr, n) { return new Float64Array(this.memory.buffer, ptr, n); }
  cstring(ptr) {
    ptr >>>= 0;
    if (!ptr) return '';
    const mem = new Uint8Array(this.memory.buffer);
    let end = ptr;
    while (end < mem.length && mem[end] !== 0) end++;
    return this.decoder.decode(mem.subarray(ptr, end));
  }
  alloc(bytes) {
    const ptr = this.call('rlx_wasm_alloc', bytes) >>> 0;
    if (!ptr) throw new RlxError(STATUS.NO_MEMORY, `wasm out of memory allocating ${bytes} bytes`, 'no memory');
    return ptr;
  }
  free(ptr) { if (ptr) this.call('rlx_wasm_free', ptr); }
  /** An export called with a trap (a bug, never bad arguments) turned into a 'fatal' RlxError. */
  call(name, ...args) {
    if (this.dead) throw new RlxError(-8, `rlx_llm: the module hit a fatal error earlier (${this.dead}); load the model again`, 'fatal');
    try {
      return this.e[name](...args);
    } catch (err) {
      const trapped = err instanceof WebAssembly.RuntimeError || err?.name === 'WasiExit' ||
        (err instanceof RangeError && /call stack/i.test(err.message));
      if (!trapped) throw err;
      this.dead = err.message;
      const wrapped = new RlxError(-8, `rlx_llm: fatal error inside the wasm module (in ${name}): ${err.message}. ` +
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

async function instantiate(wasm) {
  let module;
  try {
    module = await compileModule(wasm);
  } catch (err) {
    const e = new RlxError(STATUS.INVALID_ARG, `loadGguf: cannot load the language-model module from ${String(wasm).slice(0, 200)}: ${err?.message ?? err}`, 'invalid argument');
    e.cause = err;
    throw e;
  }
  const wasi = new LlmWasi();
  const instance = await WebAssembly.instantiate(module, wasi.imports(module));
  wasi.attach(instance);
  instance.exports._initialize?.();
  if (typeof instance.exports.rlx_llm_open !== 'function') {
    throw new RlxError(STATUS.INVALID_ARG, 'loadGguf: options.wasm is not rlx_llm.wasm (no rlx_llm_open export)', 'invalid argument');
  }
  return new LlmModule(instance, moduleSimd(module));
}

// ---- sources ---------------------------------------------------------------

const SOURCE_KINDS = 'a URL or path, a File or Blob, a Response, an ArrayBuffer or a Uint8Array';

/** { size (bytes, or null when unknown), chunks (async iterable of Uint8Array), name } of a source. */
async function openSource(fn, source) {
  if (source instanceof ArrayBuffer) return { size: source.byteLength, chunks: [new Uint8Array(source)], name: 'bytes' };
  if (ArrayBuffer.isView(source)) {
    return { size: source.byteLength, chunks: [new Uint8Array(source.buffer, source.byteOffset, source.byteLength)], name: 'bytes' };
  }
  if (typeof Blob === 'function' && source instanceof Blob) {
    const name = typeof source.name === 'string' ? source.name : 'blob';
    return { size: source.size, chunks: blobChunks(source), name };
  }
  if (typeof Response === 'function' && source instanceof Response) return responseSource(fn, source, source.url || 'response');
  if (typeof source === 'string' || source instanceof URL) {
    const text = String(source);
    if (text === '') throw fail(fn, 'source is an empty string (give a URL, a path, a File or bytes)');
    const isFileUrl = source instanceof URL ? source.protocol === 'file:' : /^file:/i.test(text);
    if (isNode && (isFileUrl || !/^https?:/i.test(text))) return fileSource(fn, isFileUrl ? new URL(text) : text);
    let response;
    try {
      response = await fetch(source);
    } catch (err) {
      const e = new RlxError(STATUS.INVALID_ARG, `${fn}: cannot fetch ${text.slice(0, 200)}: ${err?.message ?? err}`, 'invalid argument');
      e.cause = err;
      throw e;
    }
    return responseSource(fn, response, text);
  }
  throw fail(fn, `source must be ${SOURCE_KINDS}, got ${describe(source)}`);
}

async function* blobChunks(blob) {
  if (typeof blob.stream === 'function') {
    yield* readerChunks(blob.stream().getReader());
    return;
  }
  for (let off = 0; off < blob.size; off += BLOB_SLICE) {
    yield new Uint8Array(await blob.slice(off, Math.min(off + BLOB_SLICE, blob.size)).arrayBuffer());
  }
}

async function* readerChunks(reader) {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value?.length) yield value;
    }
  } finally {
    reader.releaseLock?.();
  }
}

function responseSource(fn, response, name) {
  if (!response.ok) throw new RlxError(-5, `${fn}: cannot fetch ${name.slice(0, 200)}: HTTP ${response.status}`, 'not found');
  if (!response.body) throw fail(fn, `the response for ${name.slice(0, 200)} has no body`);
  if (response.bodyUsed) throw fail(fn, 'the Response body was read already');
  // Content-Length counts the encoded bytes: only an unencoded body's is the file's size.
  const encoding = (response.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  const length = response.headers.get('content-length');
  const size = encoding === 'identity' && length !== null && /^\d+$/.test(length.trim()) ? Number(length) : null;
  return { size, chunks: readerChunks(response.body.getReader()), name };
}

async function fileSource(fn, path) {
  const fs = await import('node:fs');
  let stat;
  try {
    stat = await fs.promises.stat(path);
  } catch (err) {
    const e = new RlxError(-5, `${fn}: cannot read ${String(path).slice(0, 200)}: ${err?.code ?? err?.message ?? err}`, 'not found');
    e.cause = err;
    throw e;
  }
  if (!stat.isFile()) throw fail(fn, `${String(path).slice(0, 200)} is not a file`);
  // The stream is opened when the first chunk is asked for (never for a refused file).
  const chunks = (async function* () { yield* fs.createReadStream(path, { highWaterMark: 4 << 20 }); })();
  return { size: stat.size, chunks, name: String(path) };
}

function intOption(fn, what, v, min, max, dflt) {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min || v > max) throw fail(fn, `${what} must be an integer from ${min} to ${max}, got ${describe(v)}`);
  return v;
}

function numberOption(fn, what, v, test, rule, dflt) {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || !test(v)) throw fail(fn, `${what} must be ${rule}, got ${describe(v)}`);
  return v;
}

function functionOption(fn, what, v) {
  if (v !== undefined && typeof v !== 'function') throw fail(fn, `${what} must be a function, got ${describe(v)}`);
  return v;
}

/**
 * Loads a GGUF language model.  options: { nCtx (KV cache positions; 0 or
 * undefined: the model's context length, at most 4096), onProgress({ loaded,
 * total }) (total null when the size is not known in advance), wasm (where
 * rlx_llm.wasm is: URL, path, bytes or a WebAssembly.Module), simd ('auto'
 * (the default): the relaxed-SIMD build where the engine has relaxed SIMD;
 * 'simd128' forces the plain build, 'relaxed' the relaxed one; see
 * runtime/simd.js; info.simd says which was loaded), backend
 * ('auto' (the default: WebGPU on a hardware adapter, else WebGL2 on a
 * hardware renderer, else the CPU), 'cpu', 'webgpu' or 'webgl'; info.backend
 * says which runs, info.fallbacks [{ backend, reason }] why a better one did
 * not), gpu (for WebGPU: a GPUDevice or a GPU such as navigator.gpu, the
 * default), gpuWasm (the WebGPU build, rlx_llm_gpu.wasm, as wasm),
 * webglWasm (the WebGL2 build, rlx_llm_webgl.wasm), xq8 (true: on the
 * CPU, products with block-quantized weights round their input to 8 bits
 * per 32 values first, as llama.cpp does, and run as int8 dot products:
 * faster generation, logits within that rounding; not on a GPU backend:
 * refused with 'webgpu' / 'webgl', not applied where 'auto' picks a GPU;
 * info.xq8 says whether it is on) }.  A 'webgpu' or 'webgl' that cannot run
 * here is an RlxError with reason 'unavailable'.
 */
export async function loadGguf(source, options = undefined) {
  const fn = 'loadGguf';
  const o = optionsArg(fn, options);
  const nCtx = intOption(fn, 'options.nCtx', o.nCtx, 0, 0x7fffffff, 0);
  const onProgress = functionOption(fn, 'options.onProgress', o.onProgress);
  const backend = o.backend ?? 'auto';
  if (!BACKENDS.includes(backend)) throw fail(fn, `options.backend must be ${BACKENDS.map((b) => `'${b}'`).join(', ')}, got ${describe(backend)}`);
  const simd = simdOption(fn, o.simd);
  if (o.xq8 !== undefined && typeof o.xq8 !== 'boolean') throw fail(fn, `options.xq8 must be true or false, got ${describe(o.xq8)}`);
  if (o.xq8 && (backend === 'webgpu' || backend === 'webgl')) {
    throw fail(fn, `options.xq8 (8-bit activations) runs on the CPU only; backend '${backend}' keeps f32 activations (leave xq8 out)`);
  }
  const isWasm = (w) => typeof w === 'string' || w instanceof URL || w instanceof ArrayBuffer || ArrayBuffer.isView(w) ||
    w instanceof WebAssembly.Module;
  for (const k of ['wasm', 'gpuWasm', 'webglWasm']) {
    if (o[k] !== undefined && !isWasm(o[k])) throw fail(fn, `options.${k} must be a URL, a path, bytes or a WebAssembly.Module, got ${describe(o[k])}`);
  }
  // The GPU first (an explicit 'webgpu' or 'webgl' that cannot run is refused before anything is read)
  let gpu = backend === 'cpu' || backend === 'webgl' ? null : await chooseWebGpu(fn, backend, o.gpu);
  if (backend === 'webgl' || (backend === 'auto' && !gpu.device)) gpu = await chooseWebGl(fn, backend, gpu?.fallbacks ?? []);
  const wasm = gpu?.device ? (o.gpuWasm ?? GPU_WASM) : gpu?.gl ? (o.webglWasm ?? WEBGL_WASM) : (o.wasm ?? moduleFile('llm', simd));
  const okSource = typeof source === 'string' || source instanceof URL || source instanceof ArrayBuffer ||
    ArrayBuffer.isView(source) || (typeof Blob === 'function' && source instanceof Blob) ||
    (typeof Response === 'function' && source instanceof Response);
  if (!okSource) {
    gpu?.release?.();
    throw fail(fn, `source must be ${SOURCE_KINDS}, got ${describe(source)}`);
  }

  let src, mod;
  try {
    src = await openSource(fn, source);
    mod = await instantiate(wasm);
    if (gpu?.device && typeof mod.e.rlx_llm_webgpu_step !== 'function') {
      throw fail(fn, 'options.gpuWasm is not rlx_llm_gpu.wasm (no rlx_llm_webgpu_step export)');
    }
    if (gpu?.gl && typeof mod.e.rlx_llm_webgl_step !== 'function') {
      throw fail(fn, 'options.webglWasm is not rlx_llm_webgl.wasm (no rlx_llm_webgl_step export)');
    }
  } catch (err) {
    gpu?.release?.();
    throw err;
  }
  const budget = mod.call('rlx_llm_data_budget');
  const tooBig = (bytes) => new RlxError(STATUS.NO_MEMORY, `${fn}: ${src.name.slice(0, 200)} is ${bytes} bytes (${gib(bytes)}), ` +
    `more than the ${gib(budget)} a wasm32 module can hold for a model's weights (RLX_GGUF_WASM32_DATA_BUDGET); ` +
    'take a smaller or more quantized file (e.g. Q4_K of a model up to about 6 billion parameters)', 'no memory');
  // Progress at most every PROGRESS_MS (a Blob's stream gives 64 KiB chunks), and always at 0 and at the end.
  let lastProgress = -Infinity;
  const progress = (loaded, force = false) => {
    if (!onProgress || (!force && now() - lastProgress < PROGRESS_MS && loaded !== src.size)) return;
    lastProgress = now();
    onProgress({ loaded, total: src.size });
  };
  if (src.size !== null && src.size > budget) {
    gpu?.release?.();
    await src.chunks.return?.();
    throw tooBig(src.size);
  }
  if (src.size === 0) {
    gpu?.release?.();
    throw fail(fn, `${src.name.slice(0, 200)} is empty (0 bytes), not a GGUF file`);
  }

  let ptr = 0;
  let loaded = 0;
  try {
    progress(0, true);
    if (src.size !== null) {
      ptr = mod.call('rlx_llm_buffer_new', src.size) >>> 0;
      if (!ptr) mod.check(STATUS.NO_MEMORY, `${fn}: `);
      for await (const chunk of src.chunks) {
        if (loaded + chunk.length > src.size) throw fail(fn, `${src.name.slice(0, 200)} sent more than the ${src.size} bytes it announced`);
        mod.u8(ptr + loaded, chunk.length).set(chunk);
        loaded += chunk.length;
        progress(loaded);
      }
      if (loaded !== src.size) throw fail(fn, `${src.name.slice(0, 200)} ended after ${loaded} of its ${src.size} bytes`);
    } else {
      // Size unknown (no Content-Length, or an encoded body): the chunks are
      // kept until the end, then copied once into the buffer.
      const chunks = [];
      for await (const chunk of src.chunks) {
        loaded += chunk.length;
        if (loaded > budget) throw tooBig(loaded);
        chunks.push(chunk);
        progress(loaded);
      }
      progress(loaded, true);
      if (loaded === 0) throw fail(fn, `${src.name.slice(0, 200)} is empty (0 bytes), not a GGUF file`);
      ptr = mod.call('rlx_llm_buffer_new', loaded) >>> 0;
      if (!ptr) mod.check(STATUS.NO_MEMORY, `${fn}: `);
      let off = 0;
      for (const chunk of chunks) { mod.u8(ptr + off, chunk.length).set(chunk); off += chunk.length; }
    }
    const handle = mod.scoped((t) => {
      const out = t.alloc(4);
      mod.i32(out, 1)[0] = 0;
      const xq8 = o.xq8 && !gpu?.device && !gpu?.gl ? 1 : 0; // the CPU only
      mod.check(mod.call('rlx_llm_open', ptr, loaded, nCtx, xq8, out), `${fn}: ${src.name.slice(0, 200)}: `);
      return mod.i32(out, 1)[0] >>> 0;
    });
    const model = new GgufModel(mod, handle, ptr, loaded, gpu ?? { backend: 'cpu', fallbacks: [] });
    ptr = 0; // the model's now
    gpu = null; // and so is the GPU context
    if (model.gpu) {
      try {
        await model.gpu.warm(fn); // the decoding step's plan and the weights' upload: part of loading
      } catch (err) {
        model.free();
        throw err;
      }
    }
    return model;
  } catch (err) {
    if (ptr && !mod.dead) mod.free(ptr);
    gpu?.release?.();
    throw err;
  }
}

/**
 * Whether WebGPU runs the model: { backend, fallbacks, device?, software? }.
 * 'webgpu' takes any adapter (software too) or throws (reason
 * 'unavailable'); 'auto' takes a hardware adapter and otherwise falls back
 * to the CPU with the reason.
 */
async function chooseWebGpu(fn, backend, source) {
  if (source !== undefined && !(source && typeof source === 'object' &&
      (typeof source.createBuffer === 'function' || typeof source.requestAdapter === 'function'))) {
    throw fail(fn, `options.gpu must be a GPUDevice or a GPU (navigator.gpu), got ${describe(source)}`);
  }
  if (backend === 'auto' && source === undefined && !globalThis.navigator?.gpu) {
    return { backend: 'cpu', fallbacks: [{ backend: 'webgpu', reason: 'WebGPU is not available here (no navigator.gpu)' }] };
  }
  const { webGpuDevice, LlmWebGpu } = await import('./llm_webgpu.js');
  let found;
  try {
    found = await webGpuDevice(`${fn}: options.backend '${backend}'`, source, backend === 'webgpu');
  } catch (err) {
    if (backend === 'webgpu') throw err;
    return { backend: 'cpu', fallbacks: [{ backend: 'webgpu', reason: err.message.replace(/^.*?: WebGPU cannot run the model here: /, '') }] };
  }
  if (!found.device) { // 'auto' on a software adapter
    return { backend: 'cpu', fallbacks: [{ backend: 'webgpu', reason: `the WebGPU adapter is ${found.software}, a software renderer: ` +
      'slower than the wasm CPU path (ask for backend \'webgpu\' to use it anyway)' }] };
  }
  return { backend: 'webgpu', fallbacks: [], device: found.device, software: found.software,
    steps: (mod, handle, info) => new LlmWebGpu(mod, handle, found.device, info, !found.software) };
}

/**
 * Whether WebGL2 runs the model: { backend, fallbacks, gl?, software?,
 * release?, steps? }.  'webgl' takes any renderer (software too) or throws
 * (reason 'unavailable'); 'auto' (after WebGPU, whose fallbacks come in)
 * takes a hardware renderer and otherwise falls back to the CPU with the
 * reason.
 */
async function chooseWebGl(fn, backend, fallbacks) {
  const { webGlContext, LlmWebGl } = await import('./llm_webgl.js');
  let found;
  try {
    found = webGlContext(`${fn}: options.backend '${backend}'`, backend === 'webgl');
  } catch (err) {
    if (backend === 'webgl') throw err;
    return { backend: 'cpu', fallbacks: [...fallbacks, { backend: 'webgl', reason: err.message.replace(/^.*?: WebGL2 cannot run the model here: /, '') }] };
  }
  if (!found.gl) { // 'auto' on a software renderer
    return { backend: 'cpu', fallbacks: [...fallbacks, { backend: 'webgl', reason: `the WebGL2 renderer is ${found.software}, a software ` +
      'renderer: slower than the wasm CPU path (ask for backend \'webgl\' to use it anyway)' }] };
  }
  const { gl } = found;
  return { backend: 'webgl', fallbacks, gl, software: found.software, release: () => gl.getExtension('WEBGL_lose_context')?.loseContext(),
    steps: (mod, handle, info) => new LlmWebGl(mod, handle, gl, info) };
}

/** A model loaded by loadGguf. */
export class GgufModel {
  constructor(mod, handle, buffer, fileBytes, backend = { backend: 'cpu', fallbacks: [] }) {
    if (!(mod instanceof LlmModule)) throw new RlxError(STATUS.STATE, 'GgufModel: made by loadGguf()', 'bad state');
    this.mod = mod;
    this.handle = handle;
    this.buffer = buffer;
    this.running = false;     // a generate() (or, on a GPU, an eval) is in progress
    this.freeLater = false;   // free() came during generate()
    const fallbacks = backend.fallbacks.map((f) => Object.freeze({ ...f }));
    this.info = Object.freeze({ ...this.readInfo(), fileBytes, simd: mod.simd, backend: backend.backend,
      fallbacks: Object.freeze(fallbacks), ...(backend.software ? { software: backend.software } : {}) });
    this.defaults = this.readDefaults();
    this.gpu = backend.steps ? backend.steps(mod, handle, this.info) : null; // LlmWebGpu or LlmWebGl (llm_gpu_steps.js)
  }

  live(fn) {
    if (!this.handle || this.freeLater) throw new RlxError(STATUS.STATE, `${fn}: the model was freed`, 'bad state');
    return this.handle;
  }

  readInfo() {
    const m = this.mod;
    const n = m.call('rlx_llm_info_count');
    return m.scoped((t) => {
      const nums = t.alloc(8 * n);
      const strs = t.alloc(4 * n);
      m.check(m.call('rlx_llm_info_read', this.handle, nums, strs));
      const info = {};
      for (let i = 0; i < n; i++) {
        const key = m.cstring(m.call('rlx_llm_info_field', i)).replace(/_([a-z])/g, (_, c) => c.toUpperCase());
        const s = m.i32(strs, n)[i] >>> 0;
        info[key] = s ? m.cstring(s) : m.f64(nums, n)[i];
      }
      for (const k of ['ropeNeox', 'tiedOutput', 'addBos', 'xq8']) info[k] = !!info[k];
      return info;
    });
  }

  /** The library's sampling defaults (rlx_llm_sampling_default). */
  readDefaults() {
    const m = this.mod;
    return m.scoped((t) => {
      const out = t.alloc(8 * 7);
      m.call('rlx_llm_sampling_default', out);
      const [temperature, topK, topP, minP, repeatPenalty, repeatLastN, maxTokens] = m.f64(out, 7);
      return Object.freeze({ temperature, topK, topP, minP, repeatPenalty, repeatLastN, maxTokens, seed: 0 });
    });
  }

  /** Tokens evaluated so far (the context kept in the KV cache). */
  get position() {
    const h = this.live('GgufModel.position');
    return this.mod.call('rlx_llm_position', h);
  }

  /**
   * text -> ids (number[]).  options: { addBos: true | false (default: as the
   * file says), special: parse special-token text such as "<|im_start|>"
   * into those tokens (default true, as generate() does with a prompt) }.
   */
  tokenize(text, options = undefined) {
    const fn = 'GgufModel.tokenize';
    const h = this.live(fn);
    if (typeof text !== 'string') throw fail(fn, `text must be a string, got ${describe(text)}`);
    const o = optionsArg(fn, options);
    if (o.addBos !== undefined && typeof o.addBos !== 'boolean') throw fail(fn, `options.addBos must be true, false or undefined, got ${describe(o.addBos)}`);
    if (o.special !== undefined && typeof o.special !== 'boolean') throw fail(fn, `options.special must be true, false or undefined, got ${describe(o.special)}`);
    const addBos = o.addBos === undefined ? -1 : o.addBos ? 1 : 0;
    const special = o.special === false ? 0 : 1;
    const m = this.mod;
    return m.scoped((t) => {
      const s = t.str(text);
      if (s.len > MAX_TEXT) throw fail(fn, `text has ${s.len} bytes; at most ${MAX_TEXT} at once`);
      const nPtr = t.alloc(4);
      let cap = s.len + 8;
      for (let attempt = 0; attempt < 2; attempt++) {
        const ids = t.alloc(4 * cap);
        const st = m.call('rlx_llm_tokenize', h, s.ptr, s.len, addBos, special, ids, cap, nPtr);
        const n = m.i32(nPtr, 1)[0] >>> 0;
        if (st < 0 && n > cap && attempt === 0) { cap = n; continue; }
        m.check(st, `${fn}: `);
        return Array.from(m.i32(ids, n));
      }
      throw new RlxError(STATUS.STATE, `${fn}: the token count changed between two calls`, 'bad state');
    });
  }

  /** ids -> text (control tokens render as nothing). */
  detokenize(ids) {
    const fn = 'GgufModel.detokenize';
    const h = this.live(fn);
    const list = this.idsArg(fn, 'ids', ids, true);
    const m = this.mod;
    return m.scoped((t) => {
      const p = t.i32(list);
      const lenPtr = t.alloc(4);
      let cap = 8 * list.length + 16;
      for (let attempt = 0; attempt < 2; attempt++) {
        const buf = t.alloc(cap);
        const st = m.call('rlx_llm_detokenize', h, p, list.length, buf, cap, lenPtr);
        const len = m.i32(lenPtr, 1)[0] >>> 0;
        if (st < 0 && len + 1 > cap && attempt === 0) { cap = len + 1; continue; }
        m.check(st, `${fn}: `);
        return m.decoder.decode(m.u8(buf, len)); // whole UTF-8: the library made bad bytes U+FFFD
      }
      throw new RlxError(STATUS.STATE, `${fn}: the text length changed between two calls`, 'bad state');
    });
  }

  /**
   * Appends ids to the context and returns the logits after the last one
   * (Float32Array of nVocab); on WebGPU and WebGL2 a Promise of them.
   */
  eval(ids) {
    const fn = 'GgufModel.eval';
    const h = this.live(fn);
    if (this.running) throw new RlxError(STATUS.STATE, `${fn}: a generation is running on this model`, 'bad state');
    const list = this.idsArg(fn, 'ids', ids, false);
    if (this.gpu) return this.gpuEval(fn, list);
    const m = this.mod;
    return m.scoped((t) => {
      const logits = t.alloc(4 * this.info.nVocab);
      m.check(m.call('rlx_llm_eval', h, t.i32(list), list.length, logits), `${fn}: `);
      return new Float32Array(m.memory.buffer, logits, this.info.nVocab).slice();
    });
  }

  /** On a GPU: eval's steps there, the model marked running meanwhile. */
  async gpuEval(fn, ids) {
    this.running = true;
    try {
      return await this.gpu.eval(fn, Array.from(ids));
    } finally {
      this.running = false;
      if (this.freeLater) this.release();
    }
  }

  /** The logits after ids from an empty context (which then holds ids): reset() and eval(ids) (a Promise on WebGPU and WebGL2). */
  logits(ids) {
    this.idsArg('GgufModel.logits', 'ids', ids, false);
    this.reset();
    return this.eval(ids);
  }

  /** Forgets the context. */
  reset() {
    const fn = 'GgufModel.reset';
    const h = this.live(fn);
    if (this.running) throw new RlxError(STATUS.STATE, `${fn}: a generation is running on this model (stop it first)`, 'bad state');
    this.mod.call('rlx_llm_reset', h);
  }

  idsArg(fn, what, ids, allowEmpty) {
    const ok = Array.isArray(ids) || ids instanceof Int32Array || ids instanceof Uint32Array;
    if (!ok) throw fail(fn, `${what} must be an Array or Int32Array of token ids, got ${describe(ids)}`);
    if (ids.length > MAX_IDS) throw fail(fn, `${what} has ${ids.length} ids; at most ${MAX_IDS}`);
    if (!allowEmpty && ids.length === 0) throw fail(fn, `${what} is empty (give at least one token id)`);
    const n = this.info.nVocab;
    for (let i = 0; i < ids.length; i++) {
      const v = ids[i];
      if (!Number.isInteger(v) || v < 0 || v >= n) throw fail(fn, `${what}[${i}] must be a token id from 0 to ${n - 1}, got ${describe(v)}`);
    }
    return ids;
  }

  /**
   * Generates from a prompt (text, tokenized as tokenize() does, or ids).
   * options (the library's defaults where left out: greedy, 64 tokens):
   * maxTokens, temperature (0: greedy), topK (0: off), topP (1: off), minP
   * (0: off), repeatPenalty (1: off), repeatLastN, seed (an integer >= 0 or
   * a BigInt below 2^64), stop (strings; the text before one is kept),
   * onToken(text, id) (each generated token with the text it completes,
   * possibly ''; return false to stop), signal (an AbortSignal).
   * Returns a Generation (llm_stream.js): an async iterable of the pieces
   * ({ text, id }; leaving the loop early stops it) and a Promise that
   * resolves to { text, ids, promptIds, stoppedBy ('maxTokens' | 'eog' |
   * 'stop' | 'context' (the KV cache is full) | 'callback' | 'abort'), stats: { promptTokens, generatedTokens,
   * promptSeconds, generateSeconds, promptTokensPerSecond,
   * generateTokensPerSecond } }.  The context starts from the prompt.
   */
  generate(prompt, options = undefined) {
    // The model is taken now, not when the generation starts a microtask
    // later: a second generate() before the first has ended is refused
    // however fast the first one runs.
    const busy = this.running;
    this.running = true;
    return new Generation(async (push, stopRequested) => {
      const fn = 'GgufModel.generate';
      if (busy) throw new RlxError(STATUS.STATE, `${fn}: a generation is already running on this model (await it, or stop it through its signal)`, 'bad state');
      try {
        return await this.run(fn, prompt, options, push, stopRequested);
      } finally {
        this.running = false;
        if (this.freeLater && this.handle) this.release(); // free() came while it ran
      }
    });
  }

  async run(fn, prompt, options, push, stopRequested) {
    const h = this.live(fn);
    const o = optionsArg(fn, options);
    const known = ['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'repeatPenalty', 'repeatLastN', 'seed', 'stop', 'onToken', 'signal'];
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) throw fail(fn, `unknown option ${k} (known: ${known.join(', ')})`);
    }
    const d = this.defaults;
    const maxTokens = intOption(fn, 'options.maxTokens', o.maxTokens, 0, 1 << 24, d.maxTokens);
    const temperature = numberOption(fn, 'options.temperature', o.temperature, (v) => v >= 0, 'a number >= 0 (0: greedy)', d.temperature);
    const topK = intOption(fn, 'options.topK', o.topK, 0, 0x7fffffff, d.topK);
    const topP = numberOption(fn, 'options.topP', o.topP, (v) => v >= 0 && v <= 1, 'a number from 0 to 1 (1: off)', d.topP);
    const minP = numberOption(fn, 'options.minP', o.minP, (v) => v >= 0 && v <= 1, 'a number from 0 to 1 (0: off)', d.minP);
    const repeatPenalty = numberOption(fn, 'options.repeatPenalty', o.repeatPenalty, (v) => v > 0, 'a number > 0 (1: off)', d.repeatPenalty);
    const repeatLastN = intOption(fn, 'options.repeatLastN', o.repeatLastN, -1, 0x7fffffff, d.repeatLastN);
    let seed = o.seed ?? 0;
    if (typeof seed === 'number') {
      if (!Number.isSafeInteger(seed) || seed < 0) throw fail(fn, `options.seed must be an integer from 0 to 2^53 - 1 or a BigInt below 2^64, got ${describe(seed)}`);
      seed = BigInt(seed);
    } else if (typeof seed !== 'bigint' || seed < 0n || seed >= 1n << 64n) {
      throw fail(fn, `options.seed must be an integer from 0 to 2^53 - 1 or a BigInt below 2^64, got ${describe(o.seed)}`);
    }
    const stop = o.stop ?? [];
    if (!Array.isArray(stop)) throw fail(fn, `options.stop must be an Array of strings, got ${describe(stop)}`);
    if (stop.length > MAX_STOP) throw fail(fn, `options.stop has ${stop.length} strings; at most ${MAX_STOP}`);
    stop.forEach((s, i) => {
      if (typeof s !== 'string' || s === '') throw fail(fn, `options.stop[${i}] must be a non-empty string, got ${describe(s)}`);
    });
    const onToken = functionOption(fn, 'options.onToken', o.onToken);
    const signal = o.signal;
    if (signal !== undefined && (signal === null || typeof signal !== 'object' || typeof signal.aborted !== 'boolean')) {
      throw fail(fn, `options.signal must be an AbortSignal, got ${describe(signal)}`);
    }
    let promptIds;
    if (typeof prompt === 'string') {
      promptIds = this.tokenize(prompt);
      if (promptIds.length === 0) throw fail(fn, 'prompt gives no tokens (an empty text, and this file adds no BOS): give some text or ids');
    } else if (Array.isArray(prompt) || prompt instanceof Int32Array || prompt instanceof Uint32Array) {
      promptIds = Array.from(this.idsArg(fn, 'prompt', prompt, false));
    } else {
      throw fail(fn, `prompt must be a string or an Array of token ids, got ${describe(prompt)}`);
    }

    const m = this.mod;
    const ptrs = [];
    const keep = (p) => (ptrs.push(p), p);
    let gen = 0;
    try {
      const idsPtr = keep(m.alloc(4 * promptIds.length));
      m.i32(idsPtr, promptIds.length).set(promptIds);
      const stopPtrs = stop.map((s) => {
        const bytes = m.encoder.encode(s);
        const p = keep(m.alloc(bytes.length + 1));
        m.u8(p, bytes.length + 1).set([...bytes, 0]);
        return p;
      });
      const stopArr = keep(m.alloc(4 * Math.max(stopPtrs.length, 1)));
      m.i32(stopArr, stopPtrs.length).set(stopPtrs);
      const scratch = keep(m.alloc(4 * 5)); // gen, id, text, len, done
      const statsPtr = keep(m.alloc(8 * 5));
      m.i32(scratch, 5).fill(0);

      const t0 = now();
      m.check(m.call('rlx_llm_generator_new', h, idsPtr, promptIds.length, temperature, topK, topP, minP, repeatPenalty,
        repeatLastN, Number(seed & 0xffffffffn), Number(seed >> 32n), maxTokens, stopArr, stopPtrs.length, this.gpu ? 1 : 0,
        scratch), `${fn}: `);
      gen = m.i32(scratch, 1)[0] >>> 0;
      if (this.gpu) await this.gpu.eval(fn, promptIds); // the generator samples what the GPU computed
      const promptSeconds = (now() - t0) / 1000;

      let text = '';
      const ids = [];
      let stoppedBy = null;
      let generateMs = 0;
      let lastYield = now();
      // Greedy on WebGPU: the argmax is taken on the GPU and the next steps
      // are submitted before the host reads it (./llm_gpu_greedy.js).
      const onGpu = this.gpu?.greedy && m.call('rlx_llm_generator_greedy', gen) === 1;
      let decoder = null;
      try {
        while (stoppedBy === null) {
          if (signal?.aborted || this.freeLater || stopRequested()) { stoppedBy = 'abort'; break; }
          const t = now();
          const pending = this.gpu ? m.call('rlx_llm_generator_pending', gen) : -1;
          const pos = m.call('rlx_llm_position', h);
          if (pending >= 0 && pos < this.info.nCtx && onGpu) {
            decoder ??= this.gpu.greedy(fn, pending, pos, Math.min(maxTokens - ids.length, this.info.nCtx - pos));
            const chosen = await decoder.next();
            m.check(m.call('rlx_llm_generator_next_chosen', gen, chosen, scratch + 4, scratch + 8, scratch + 12, scratch + 16), `${fn}: `);
          } else {
            if (pending >= 0 && pos < this.info.nCtx) await this.gpu.eval(fn, [pending]);
            m.check(m.call('rlx_llm_generator_next', gen, scratch + 4, scratch + 8, scratch + 12, scratch + 16), `${fn}: `);
          }
          generateMs += now() - t;
          const [, id, textPtr, len, done] = m.i32(scratch, 5);
          const piece = len ? m.decoder.decode(m.u8(textPtr >>> 0, len >>> 0)) : '';
          if (id >= 0) ids.push(id);
          text += piece;
          if ((id >= 0 || piece) && push({ text: piece, id }) && !done) {
            await yieldToEvents(); // a for-await loop reads the piece (and may leave) before the next token
            lastYield = now();
          }
          const more = (id >= 0 || piece) && onToken ? onToken(piece, id) !== false : true;
          if (done) {
            m.call('rlx_llm_generator_stats', gen, statsPtr);
            stoppedBy = STOPPED_BY[m.f64(statsPtr, 5)[4]] ?? 'maxTokens';
          } else if (!more) {
            stoppedBy = 'callback';
          }
          if (stoppedBy === null && now() - lastYield >= YIELD_MS) {
            await yieldToEvents();
            lastYield = now();
          }
        }
      } finally {
        await decoder?.close(); // nothing of this generation is left running on the GPU
      }
      m.call('rlx_llm_generator_stats', gen, statsPtr);
      const [promptTokens, generatedTokens] = m.f64(statsPtr, 5);
      const generateSeconds = generateMs / 1000;
      const rate = (n, s) => (s > 0 ? n / s : null);
      return {
        text, ids, promptIds, stoppedBy,
        stats: {
          promptTokens, generatedTokens, promptSeconds, generateSeconds,
          promptTokensPerSecond: rate(promptTokens, promptSeconds),
          generateTokensPerSecond: rate(generatedTokens, generateSeconds),
        },
      };
    } finally {
      if (!m.dead) {
        if (gen) m.call('rlx_llm_generator_free', gen);
        for (const p of ptrs) m.free(p);
      }
    }
  }

  /** Frees the model and its memory (during a generation: when it stops, which it then does). Harmless twice. */
  free() {
    if (!this.handle) return;
    if (this.running) { this.freeLater = true; return; }
    this.release();
  }

  release() {
    const m = this.mod;
    this.gpu?.free();
    this.gpu = null;
    if (!m.dead) {
      m.call('rlx_llm_free', this.handle);
      m.free(this.buffer);
    }
    this.handle = 0;
    this.buffer = 0;
    this.mod = null; // the instance and its memory go with the last reference to it
  }
}

/** Lets queued events in (a Worker's 'stop' message, a page's clicks) without setTimeout's clamp. */
function yieldToEvents() {
  if (isNode) return new Promise((resolve) => setImmediate(resolve));
  if (typeof MessageChannel === 'function') {
    return new Promise((resolve) => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { ch.port1.close(); resolve(); };
      ch.port2.postMessage(0);
    });
  }
  return new Promise((resolve) => setTimeout(resolve, 0));
}

// ---- the Worker client -------------------------------------------------------

/** RlxError from a Worker's { message, status, statusName }. */
function remoteError(e) {
  return new RlxError(e?.status ?? -1, e?.message ?? String(e), e?.statusName ?? '');
}

/**
 * A model in a module Worker (llm_worker.js): the same calls as GgufModel,
 * each a Promise; generate() streams its tokens to options.onToken as they
 * arrive, and stop() (or options.signal) ends it.
 *
 *   const lm = new GgufWorker();
 *   const info = await lm.load(file, { nCtx: 2048, onProgress });
 *   const r = await lm.generate('Hello', { maxTokens: 32, onToken: (text) => ... });
 *   lm.stop(); await lm.free(); lm.terminate();
 */
export class GgufWorker {
  constructor(workerUrl = undefined) {
    if (typeof Worker !== 'function') throw new RlxError(STATUS.STATE, 'GgufWorker: this environment has no Worker (use loadGguf directly)', 'bad state');
    this.worker = workerUrl === undefined
      ? new Worker(new URL('./llm_worker.js', import.meta.url), { type: 'module' })
      : new Worker(workerUrl, { type: 'module' });
    this.pending = new Map(); // id -> { resolve, reject, onEvent }
    this.nextId = 1;
    this.info = null;
    this.worker.onmessage = (event) => {
      const msg = event.data ?? {};
      const entry = this.pending.get(msg.id);
      if (!entry) return;
      if (msg.event) { entry.onEvent?.(msg); return; }
      this.pending.delete(msg.id);
      if (msg.ok) entry.resolve(msg.value);
      else entry.reject(remoteError(msg.error));
    };
    this.worker.onerror = (event) => {
      const err = new RlxError(-8, `GgufWorker: the worker failed: ${event.message ?? 'it could not start'}`, 'fatal');
      for (const entry of this.pending.values()) entry.reject(err);
      this.pending.clear();
    };
  }

  request(op, args, onEvent) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      try {
        this.worker.postMessage({ id, op, ...args });
      } catch (err) {
        this.pending.delete(id);
        reject(fail(`GgufWorker.${op}`, `cannot send the arguments to the worker: ${err?.message ?? err}`));
      }
    });
  }

  /** Loads a model (replacing one loaded before); resolves to its info.  source: a URL (resolved against the page), a File or Blob, or bytes. */
  async load(source, options = undefined) {
    const fn = 'GgufWorker.load';
    const o = optionsArg(fn, options);
    const onProgress = functionOption(fn, 'options.onProgress', o.onProgress);
    let src = source;
    if (typeof source === 'string' || source instanceof URL) {
      src = new URL(String(source), globalThis.document?.baseURI ?? globalThis.location?.href).href;
    } else if (!(source instanceof ArrayBuffer || ArrayBuffer.isView(source) || (typeof Blob === 'function' && source instanceof Blob))) {
      throw fail(fn, `source must be a URL, a File or Blob, an ArrayBuffer or a Uint8Array, got ${describe(source)}`);
    }
    const { onProgress: _, ...rest } = o;
    this.info = await this.request('load', { source: src, options: rest }, (msg) => onProgress?.({ loaded: msg.loaded, total: msg.total }));
    return this.info;
  }

  tokenize(text, options = undefined) { return this.request('tokenize', { text, options }); }
  detokenize(ids) { return this.request('detokenize', { ids }); }
  reset() { return this.request('reset', {}); }
  free() { return this.request('free', {}); }

  /** As GgufModel.generate; onToken(text, id) is called as the tokens arrive (its result does not stop the run: use stop()). */
  async generate(prompt, options = undefined) {
    const fn = 'GgufWorker.generate';
    const o = optionsArg(fn, options);
    const onToken = functionOption(fn, 'options.onToken', o.onToken);
    const { onToken: _, signal, ...rest } = o;
    if (signal !== undefined && (signal === null || typeof signal !== 'object' || typeof signal.aborted !== 'boolean')) {
      throw fail(fn, `options.signal must be an AbortSignal, got ${describe(signal)}`);
    }
    const onAbort = () => this.stop();
    signal?.addEventListener?.('abort', onAbort);
    try {
      if (signal?.aborted) this.stop();
      return await this.request('generate', { prompt, options: rest }, (msg) => onToken?.(msg.text, msg.tokenId));
    } finally {
      signal?.removeEventListener?.('abort', onAbort);
    }
  }

  /** Ends the running generation (it resolves with stoppedBy 'abort'). */
  stop() { this.worker.postMessage({ op: 'stop' }); }

  terminate() {
    this.worker.terminate();
    const err = new RlxError(STATUS.STATE, 'GgufWorker: terminated', 'bad state');
    for (const entry of this.pending.values()) entry.reject(err);
    this.pending.clear();
  }
}
