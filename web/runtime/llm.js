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
//   await model.generate(prompt, { grammar: 'root ::= "yes" | "no"' });  // or jsonSchema: the text held to it (llm_grammar.js)
//   model.logits(ids);                            // the logits after ids (a fresh context)
//   await loadGguf(file, { backend: 'webgpu' });  // the steps on WebGPU (eval / logits then return Promises)
//   await loadGguf(file, { backend: 'webgl' });   // the steps on WebGL2 (likewise)
//   await loadGguf(file, { lora: [{ source: 'style.gguf', scale: 0.5 }] });  // LoRA adapters (llm_lora.js)
//   const t = await loadGguf(file, { train: true });  // the training build: t.finetune(text, options) (llm_finetune.js)
//   await loadGguf(file, { threads: 4 });        // 4 threads on the CPU where SharedArrayBuffer exists (llm_threads.js)
//   model.reset(); model.free();
//
// Sources: a File or Blob (read with stream(), or slice() where there is
// none), a Response (its body reader), an ArrayBuffer or a typed array, a
// URL (downloaded by llm_download.js: resumed after a dropped connection,
// cached in OPFS by llm_cache.js; in Node a path or file: URL is read from
// disk), or the parts of a split model (a list, or the first part's URL or
// path x-00001-of-0000N.gguf: llm_source.js partSources), each part in a
// buffer of its own that the model reads in place.  On the CPU and WebGL2
// the bytes go straight into the module's memory, which the model then
// reads in place: the weights are held once.  A file larger than the wasm32
// budget (RLX_GGUF_WASM32_DATA_BUDGET, 3.5 GiB) is refused before that
// buffer is allocated.  On WebGPU one file is streamed to GPU buffers
// instead, the module holding its header only (./llm_gpu_stream.js: the
// device's limits checked first).  Every bad argument is an RlxError naming the
// argument; the library's own refusals are RlxErrors with its message.
//
// Threads: on the CPU, options.threads (default: half the logical cores)
// > 1 loads the module's threaded build (rlx_llm_threads*.wasm, with
// options.train rlx_llm_train_threads*.wasm: its helper Workers on a shared
// memory; llm_threads.js) where SharedArrayBuffer exists (a cross-origin
// isolated page or Worker, or Node), the one-thread build otherwise;
// info.threads says how many run and info.threadsWhy why.  Results (logits,
// fine-tuning's losses and adapters) are bitwise the same for any count.
// free() ends the Workers.
//
// GgufWorker (llm_worker_client.js) runs the same API in a module Worker
// (llm_worker.js), so a page generates without blocking its UI; tokens
// arrive as messages.  The module instance is llm_module.js, the file's
// bytes come through llm_source.js, shared checks from llm_common.js.
//
// Backends: 'cpu' runs the steps in the module (wasm); 'webgpu' loads the
// module's WebGPU build (rlx_llm_gpu.wasm) and runs them on the GPU
// (./llm_webgpu.js), 'webgl' its WebGL2 build (rlx_llm_webgl.wasm,
// ./llm_webgl.js), sampling in the module as on the CPU; 'auto' takes
// WebGPU on a hardware adapter, else WebGL2 on a hardware renderer, else
// the CPU (software rasterizers such as SwiftShader run slower than the
// wasm CPU path: the order of backends.js's BACKEND_ORDER), and
// info.fallbacks says why each GPU backend was not taken.
import { RlxError, describe, optionsArg } from './loader.js';
import { simdOption, moduleFile } from './simd.js';
import { Generation } from './llm_stream.js';
import { STATUS, fail, functionOption, intOption, now, numberOption, yieldToEvents } from './llm_common.js';
import { LlmModule, instantiate } from './llm_module.js';
import { SOURCE_KINDS, fetchOptions, isPartList, isSource, openSource, partArrays, partSources, readSource } from './llm_source.js';
import { loraArrays, loraMessage, loraOption, readAdapters } from './llm_lora.js';
import { finetune } from './llm_finetune.js';
import { chat, chatPrompt } from './llm_chat.js';
import { templateInForce } from './llm_chat_template.js';
import { createChatCompletion } from './llm_openai.js';
import { threadsChoice, threadsOption } from './llm_threads.js';
import { GRAMMAR_OPTIONS, freeGrammar, grammarOption, parseGrammar } from './llm_grammar.js';

export { RlxError };
export { GgufWorker } from './llm_worker_client.js';

const STOPPED_BY = ['maxTokens', 'eog', 'stop', 'callback', 'context'];
const BACKENDS = ['auto', 'cpu', 'webgpu', 'webgl'];
const GPU_WASM = new URL('../pkg/rlx_llm_gpu.wasm', import.meta.url);
const WEBGL_WASM = new URL('../pkg/rlx_llm_webgl.wasm', import.meta.url);
const TRAIN_GPU_WASM = new URL('../pkg/rlx_llm_train_gpu.wasm', import.meta.url);
const TRAIN_WEBGL_WASM = new URL('../pkg/rlx_llm_train_webgl.wasm', import.meta.url);
/** generate()'s options (chat() takes them too). */
export const GENERATE_OPTIONS = Object.freeze(['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'repeatPenalty', 'repeatLastN', 'seed',
  'stop', ...GRAMMAR_OPTIONS, 'onToken', 'signal']);
const MAX_STOP = 16;           // stop strings per generation
const MAX_TEXT = 1 << 26;      // bytes of text to tokenize at once
const MAX_IDS = 1 << 24;       // ids in one call
const YIELD_MS = 16;           // a generation lets events in at least this often
const PROGRESS_MS = 50;        // onProgress at most this often while loading

function gib(bytes) { return `${(bytes / 2 ** 30).toFixed(2)} GiB`; }

/**
 * Loads a GGUF language model.  options: { nCtx (KV cache positions; 0 or
 * undefined: the model's context length, at most 4096), onProgress({ loaded,
 * total, stage }) (total null when the size is not known in advance; stage
 * 'compiling' once, after the bytes are in, while a GPU backend builds its
 * pipelines and uploads the weights, else undefined), wasm (where
 * rlx_llm.wasm is: URL, path, bytes or a WebAssembly.Module), simd ('auto'
 * (the default): the relaxed-SIMD build where the engine has relaxed SIMD;
 * 'simd128' forces the plain build, 'relaxed' the relaxed one; see
 * runtime/simd.js; info.simd says which was loaded), backend
 * ('auto' (the default: WebGPU on a hardware adapter, else WebGL2 on a
 * hardware renderer, else the CPU), 'cpu', 'webgpu' or 'webgl'; info.backend
 * says which runs, info.fallbacks [{ backend, reason }] why a better one did
 * not), gpu (for WebGPU: a GPUDevice or a GPU such as navigator.gpu, the
 * default), gpuWasm (the WebGPU build, rlx_llm_gpu.wasm, as wasm),
 * webglWasm (the WebGL2 build, rlx_llm_webgl.wasm), schemaWasm (the JSON
 * Schema converter, rlx_json_schema.wasm, which the first options.jsonSchema
 * loads: llm_json_schema.js), xq8 (true: on the
 * CPU, products with block-quantized weights round their input to 8 bits
 * per 32 values first, as llama.cpp does, and run as int8 dot products:
 * faster generation, logits within that rounding; not on a GPU backend:
 * refused with 'webgpu' / 'webgl', not applied where 'auto' picks a GPU;
 * info.xq8 says whether it is on), lora ([{ source, scale }]: LoRA adapter
 * files, from any source the model may come from, applied while generating
 * on every backend, each with its scale (default 1); llm_lora.js; info.nLora,
 * nLoraPairs and loraBytes say what was applied), train (true: the
 * module's training build, so that model.finetune() runs: on the CPU
 * rlx_llm_train.wasm, or rlx_llm_train_threads.wasm where threads run
 * (trainWasm); with backend 'webgpu' its WebGPU build
 * rlx_llm_train_gpu.wasm and with 'webgl' its WebGL2 build
 * rlx_llm_train_webgl.wasm (trainWasm too; they generate on that GPU and
 * fine-tune on it: llm_finetune_webgpu.js, llm_finetune_webgl.js); backend
 * 'auto' picks as for generation: a hardware GPU, else the CPU with the
 * reasons in info.fallbacks), threads (1 .. 64, default half the logical
 * cores, at least 1: the CPU steps' threads, through the threaded build
 * where SharedArrayBuffer exists; info.threads and info.threadsWhy say what
 * runs and why), cache (an http(s) URL's download kept in OPFS under its
 * URL: true, the default where OPFS exists, or 'no'; llm_cache.js),
 * retries (resumes of a stopped download in a row, 0 .. 100, default 4),
 * signal (an AbortSignal that aborts a download), stream (WebGPU without
 * lora or train, one file: true, the default, streams the file to GPU
 * buffers, never whole in wasm memory, info.streamed true; false reads it
 * into the module's memory first, under its budget), gpuBindingLimit
 * (bytes, at least 16: a lower binding size than the device's
 * maxStorageBufferBindingSize, a tensor over it refused) }.  onProgress also gets a
 * download's { stage: 'resume', attempt, retries, at, reason }, 'restart',
 * 'cached' and 'stale' events, and { part, parts } for a split model.  A 'webgpu' or 'webgl'
 * that cannot run here is an RlxError with reason 'unavailable'.
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
  const lora = loraOption(fn, o.lora);
  if (o.train !== undefined && typeof o.train !== 'boolean') throw fail(fn, `options.train must be true or false, got ${describe(o.train)}`);
  const threads = await threadsOption(fn, o.threads);
  const fetching = fetchOptions(fn, o);
  if (o.stream !== undefined && typeof o.stream !== 'boolean') throw fail(fn, `options.stream must be true or false, got ${describe(o.stream)}`);
  const bindingLimit = o.gpuBindingLimit === undefined ? undefined
    : intOption(fn, 'options.gpuBindingLimit', o.gpuBindingLimit, 16, Number.MAX_SAFE_INTEGER, 0);
  const isWasm = (w) => typeof w === 'string' || w instanceof URL || w instanceof ArrayBuffer || ArrayBuffer.isView(w) ||
    w instanceof WebAssembly.Module;
  for (const k of ['wasm', 'gpuWasm', 'webglWasm', 'trainWasm', 'schemaWasm']) {
    if (o[k] !== undefined && !isWasm(o[k])) throw fail(fn, `options.${k} must be a URL, a path, bytes or a WebAssembly.Module, got ${describe(o[k])}`);
  }
  // The GPU first (an explicit 'webgpu' or 'webgl' that cannot run is refused before anything is read)
  const cpuOnly = backend === 'cpu';
  let gpu = cpuOnly || backend === 'webgl' ? null : await chooseWebGpu(fn, backend, o.gpu);
  if (!cpuOnly && (backend === 'webgl' || (backend === 'auto' && !gpu.device))) gpu = await chooseWebGl(fn, backend, gpu?.fallbacks ?? []);
  let threading = threadsChoice(threads, { backend: gpu?.device ? 'webgpu' : gpu?.gl ? 'webgl' : 'cpu' });
  const cpuKind = o.train ? 'llmTrain' : 'llm'; // the CPU build's kind in MODULE_FILES; its threaded build is kind + 'Threads'
  const given = o.train ? o.trainWasm : o.wasm; // the caller's CPU build
  const wasm = gpu?.device ? (o.train ? (o.trainWasm ?? TRAIN_GPU_WASM) : (o.gpuWasm ?? GPU_WASM))
    : gpu?.gl ? (o.train ? (o.trainWasm ?? TRAIN_WEBGL_WASM) : (o.webglWasm ?? WEBGL_WASM))
      : (given ?? moduleFile(threading.threaded ? `${cpuKind}Threads` : cpuKind, simd));
  if (!isSource(source) && !isPartList(source)) {
    gpu?.release?.();
    throw fail(fn, `source must be ${SOURCE_KINDS}, got ${describe(source)}`);
  }

  let src, mod;
  let sources;
  try {
    sources = partSources(fn, source);
  } catch (err) {
    gpu?.release?.();
    throw err;
  }
  const downloading = { ...fetching, onEvent: (e) => onProgress?.(sources.length > 1 ? { ...e, part: part + 1, parts: sources.length } : e) };
  let part = 0;
  try {
    src = await openSource(fn, sources[0], downloading);
    mod = await instantiate(wasm, threading.threaded ? threads : 1).catch((err) => {
      // No shared memory or Workers after all (a memory limit, a CSP): the one-thread build, with the reason
      if (!err?.threadsFailed || given) throw err;
      threading = { threaded: false, why: err.message.replace(/^loadGguf: /, '').replace(/; options\.threads 1 .*$/, '; one thread runs') };
      return instantiate(moduleFile(cpuKind, simd), 1);
    });
    const option = o.train ? 'options.trainWasm' : 'options.wasm';
    mod.threadsWhy = mod.pool ? (threading.threaded ? threading.why : `${option} is a threaded build: ${mod.threads} thread(s)`)
      : threading.threaded ? `${option} is a build without threads` : threading.why;
    if (o.train && gpu?.device && typeof mod.e.rlx_llm_finetune_webgpu !== 'function') {
      throw fail(fn, 'options.trainWasm is not rlx_llm_train_gpu.wasm (no rlx_llm_finetune_webgpu export)');
    }
    if (o.train && gpu?.gl && typeof mod.e.rlx_llm_finetune_webgl !== 'function') {
      throw fail(fn, 'options.trainWasm is not rlx_llm_train_webgl.wasm (no rlx_llm_finetune_webgl export)');
    }
    if (gpu?.device && typeof mod.e.rlx_llm_webgpu_step !== 'function') {
      throw fail(fn, 'options.gpuWasm is not rlx_llm_gpu.wasm (no rlx_llm_webgpu_step export)');
    }
    if (gpu?.gl && typeof mod.e.rlx_llm_webgl_step !== 'function') {
      throw fail(fn, 'options.webglWasm is not rlx_llm_webgl.wasm (no rlx_llm_webgl_step export)');
    }
    if (o.train && typeof mod.e.rlx_llm_finetune_new !== 'function') {
      throw fail(fn, 'options.trainWasm is not rlx_llm_train.wasm (no rlx_llm_finetune_new export)');
    }
  } catch (err) {
    mod?.close();
    gpu?.release?.();
    throw err;
  }
  // WebGPU (no LoRA, no training, one file): streamed to GPU buffers, never whole in wasm memory (llm_gpu_stream.js)
  const streamed = !!gpu?.device && !o.train && lora.length === 0 && o.stream !== false && sources.length === 1;
  const budget = mod.call('rlx_llm_data_budget');
  const tooBig = (bytes) => new RlxError(STATUS.NO_MEMORY, `${fn}: ${src.name.slice(0, 200)}${part ? ' (with the parts before it)' : ''} is ${bytes} bytes (${gib(bytes)}), ` +
    `more than the ${gib(budget)} a wasm32 module can hold for a model's weights (RLX_GGUF_WASM32_DATA_BUDGET); ` +
    'take a smaller or more quantized file (e.g. Q4_K of a model up to about 6 billion parameters)', 'no memory');
  // Progress at most every PROGRESS_MS (a Blob's stream gives 64 KiB chunks), always at 0 and at the end, and
  // the last count held back is given PROGRESS_MS later (a download that stalls shows what it has);
  // over the parts of a split model: the bytes of the parts read so far, and the total once the last part's size is known.
  let lastProgress = -Infinity;
  let before = 0;
  let held = null; // the timer of a count held back
  const progress = (loaded, force = false) => {
    if (!onProgress) return;
    clearTimeout(held);
    held = null;
    if (!force && now() - lastProgress < PROGRESS_MS && loaded !== src.size) {
      held = setTimeout(() => progress(loaded, true), PROGRESS_MS);
      return;
    }
    lastProgress = now();
    const last = part === sources.length - 1;
    onProgress({ loaded: before + loaded, total: last && src.size !== null ? before + src.size : null,
      ...(sources.length > 1 ? { part: part + 1, parts: sources.length } : {}) });
  };
  if (streamed) return loadStreamed(fn, mod, src, gpu, { nCtx, progress, bindingLimit, onProgress });

  const parts = []; // [{ ptr, size }] until the model holds them
  let loaded = 0;
  let adapters = []; // [{ ptr, size, name }] until the model holds them
  try {
    for (; part < sources.length; part++) {
      if (part > 0) src = await openSource(fn, sources[part], downloading);
      const read = await readSource(fn, mod, src, { budget: budget - before, tooBig: (n) => tooBig(before + n), onBytes: (n) => progress(n, n === 0) });
      parts.push(read);
      if (part < sources.length - 1) before += read.size;
    }
    part = sources.length - 1;
    loaded = before + parts[parts.length - 1].size;
    progress(parts[parts.length - 1].size, true);
    clearTimeout(held);
    adapters = await readAdapters(fn, mod, lora);
    const handle = mod.scoped((t) => {
      const out = t.alloc(4);
      mod.i32(out, 1)[0] = 0;
      const xq8 = o.xq8 && !gpu?.device && !gpu?.gl ? 1 : 0; // the CPU only
      const status = mod.call('rlx_llm_open', ...partArrays(mod, t, parts), nCtx, xq8, ...loraArrays(mod, t, adapters, lora), out);
      try {
        mod.check(status, `${fn}: ${src.name.slice(0, 200)}: `);
      } catch (err) {
        err.message = loraMessage(err.message, adapters);
        throw err;
      }
      return mod.i32(out, 1)[0] >>> 0;
    });
    const model = new GgufModel(mod, handle, [...parts], loaded, gpu ?? { backend: 'cpu', fallbacks: [] });
    model.adapters = adapters.map((a) => a.ptr);
    model.schemaWasm = o.schemaWasm;
    adapters = [];
    parts.length = 0; // the model's now
    gpu = null; // and so is the GPU context
    return await ready(fn, model, onProgress, loaded, loaded);
  } catch (err) {
    clearTimeout(held);
    if (!mod.dead) for (const p of [...parts, ...adapters].map((a) => a.ptr)) mod.free(p);
    mod.close();
    gpu?.release?.();
    throw err;
  }
}

/** A loaded model made ready: its GPU's decoding step compiled (the weights' upload, where they are in memory) and its chat template read. */
async function ready(fn, model, onProgress, loaded, total) {
  try {
    if (model.gpu) {
      onProgress?.({ loaded, total, stage: 'compiling' });
      await model.gpu.warm(fn); // the decoding step's plan: part of loading
    }
    model.chatTemplate = await templateInForce(fn, model);
    return model;
  } catch (err) {
    model.free();
    throw err;
  }
}

/** loadGguf on WebGPU with the file streamed to the GPU's buffers (llm_gpu_stream.js): the module holds its header only. */
async function loadStreamed(fn, mod, src, gpu, { nCtx, progress, bindingLimit, onProgress }) {
  let r = null;
  let model;
  try {
    const { streamToWebGpu } = await import('./llm_gpu_stream.js');
    progress(0, true);
    r = await streamToWebGpu(fn, mod, src, gpu.device, { nCtx, progress, bindingLimit });
    model = new GgufModel(mod, r.handle, [], r.loaded, { ...gpu, streamed: true });
  } catch (err) {
    if (r && !mod.dead) mod.call('rlx_llm_free', r.handle);
    for (const b of r?.shared.values() ?? []) b.destroy();
    mod.close();
    gpu.release?.();
    throw err;
  }
  model.gpu.adopt(r.shared); // the step plans' weights and caches
  return ready(fn, model, onProgress, r.loaded, src.size);
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
  constructor(mod, handle, parts, fileBytes, backend = { backend: 'cpu', fallbacks: [] }) {
    if (!(mod instanceof LlmModule)) throw new RlxError(STATUS.STATE, 'GgufModel: made by loadGguf()', 'bad state');
    this.mod = mod;
    this.handle = handle;
    this.parts = parts;       // [{ ptr, size }]: the file's bytes (each part of a split model), read in place by the model
    this.adapters = [];       // the LoRA adapters' buffers (llm_lora.js), read in place by the model
    this.running = false;     // a generate() (or, on a GPU, an eval) is in progress
    this.training = false;    // a finetune() is in progress (llm_finetune.js)
    this.freeLater = false;   // free() came during generate()
    this.chatTemplate = null; // { name, source, why }: the chat template in force (llm_chat_template.js), set by loadGguf
    this.chatState = null;    // what the kept conversation knows of the KV cache (llm_chat.js)
    this.schemaWasm = undefined; // loadGguf's options.schemaWasm: where the JSON Schema converter is (llm_json_schema.js)
    const fallbacks = backend.fallbacks.map((f) => Object.freeze({ ...f }));
    this.info = Object.freeze({ ...this.readInfo(), fileBytes, simd: mod.simd, threads: mod.threads,
      threadsWhy: mod.threadsWhy ?? '', backend: backend.backend, streamed: !!backend.streamed,
      fallbacks: Object.freeze(fallbacks), ...(backend.software ? { software: backend.software } : {}) });
    this.defaults = this.readDefaults();
    this.gpu = backend.steps ? backend.steps(mod, handle, this.info) : null; // LlmWebGpu or LlmWebGl (llm_gpu_steps.js)
    this.device = backend.device ?? backend.gl ?? null; // the GPUDevice or WebGL2 context (fine-tuning runs there too)
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
        return m.text(buf, len); // whole UTF-8: the library made bad bytes U+FFFD
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
   * maxTokens, temperature (0, or anything below 1e-6: greedy), topK (0: off), topP (1: off), minP
   * (0: off), repeatPenalty (1: off), repeatLastN, seed (an integer >= 0 or
   * a BigInt below 2^64), stop (strings; the text before one is kept),
   * grammar (GBNF text) or jsonSchema (a JSON schema: an object or its JSON
   * text): every token continues a text of the grammar, and an
   * end-of-generation token comes only where that text is whole
   * (llm_grammar.js; a malformed one is an RlxError with the parser's
   * message), onToken(text, id) (each generated token with the text it completes,
   * possibly ''; return false to stop), signal (an AbortSignal).
   * Returns a Generation (llm_stream.js): an async iterable of the pieces
   * ({ text, id }; leaving the loop early stops it) and a Promise that
   * resolves to { text, ids, promptIds, stoppedBy ('maxTokens' | 'eog' |
   * 'stop' | 'context' (the KV cache is full) | 'callback' | 'abort'), stats: { promptTokens, generatedTokens,
   * promptSeconds, generateSeconds, promptTokensPerSecond,
   * generateTokensPerSecond } }.  The context starts from the prompt.
   */
  generate(prompt, options = undefined) {
    const fn = 'GgufModel.generate';
    return this.exclusive(fn, (push, stopRequested) => this.run(fn, prompt, options, push, stopRequested));
  }

  /** A Generation of work(push, stopRequested) with the model taken (generate(), chat()). */
  exclusive(fn, work) {
    // The model is taken now, not when the generation starts a microtask
    // later: a second generate() before the first has ended is refused
    // however fast the first one runs.
    const busy = this.running;
    this.running = true;
    return new Generation(async (push, stopRequested) => {
      if (busy) throw new RlxError(STATUS.STATE, `${fn}: a generation is already running on this model (await it, or stop it through its signal)`, 'bad state');
      try {
        return await work(push, stopRequested);
      } finally {
        this.running = false;
        if (this.freeLater && this.handle) this.release(); // free() came while it ran
      }
    });
  }

  /**
   * generate()'s work; cached: the prompt's first tokens already in the KV
   * cache (a kept conversation, llm_chat.js), not evaluated again; more:
   * option names the caller checks itself.
   */
  async run(fn, prompt, options, push, stopRequested, cached = 0, more = []) {
    const h = this.live(fn);
    const o = optionsArg(fn, options);
    const known = [...GENERATE_OPTIONS, ...more];
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) throw fail(fn, `unknown option ${k} (known: ${known.join(', ')})`);
    }
    const d = this.defaults;
    const maxTokens = intOption(fn, 'options.maxTokens', o.maxTokens, 0, 1 << 24, d.maxTokens);
    const temperature = numberOption(fn, 'options.temperature', o.temperature, (v) => v >= 0, 'a number >= 0 (below 1e-6: greedy)', d.temperature);
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
    const constraint = grammarOption(fn, o);
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
    let grammar = 0;
    try {
      if (constraint) grammar = await parseGrammar(fn, m, constraint, this.schemaWasm);
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
        cached, grammar, scratch), `${fn}: `);
      gen = m.i32(scratch, 1)[0] >>> 0;
      if (this.gpu) await this.gpu.eval(fn, promptIds.slice(cached)); // the generator samples what the GPU computed
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
          const piece = len ? m.text(textPtr >>> 0, len >>> 0) : '';
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
        freeGrammar(m, grammar); // after the generator, which holds it
        for (const p of ptrs) m.free(p);
      }
    }
  }

  /**
   * A conversation's next reply (llm_chat.js): messages [{ role: 'system' |
   * 'user' | 'assistant', content }] ending with a user message, options
   * generate()'s plus template (a built-in template's name), jinja (a Jinja
   * chat template instead of the file's) and overflow ('refuse' | 'drop').
   * A Generation as generate() returns, resolving to { text, ids,
   * promptIds, stoppedBy, finishReason, template, stats: { promptTokens,
   * cachedTokens, evaluatedTokens, generatedTokens, droppedMessages, ... } }.
   * The KV cache is kept between calls: only the new tokens are evaluated.
   */
  chat(messages, options = undefined) { return chat(this, messages, options); }

  /** The prompt chat() would evaluate, not run: Promise of { text, ids, template }. */
  chatPrompt(messages, options = undefined) { return chatPrompt(this, messages, options); }

  /** OpenAI's chat completions over chat() (llm_openai.js): Promise of a 'chat.completion', or of an async iterable of chunks. */
  createChatCompletion(request) { return createChatCompletion(this, request); }

  /**
   * LoRA fine-tuning on data (a text, or { text | jsonl, valid? }) with
   * options as `rlx finetune`'s; a model loaded with { train: true }.
   * Resolves to { adapter (llama.cpp's LoRA GGUF bytes), steps, losses,
   * validLosses, stopped }; llm_finetune.js says the rest.
   */
  finetune(data, options = undefined) { return finetune(this, data, options); }

  /** Frees the model and its memory (during a generation or fine-tuning: when it stops, which it then does). Harmless twice. */
  free() {
    if (!this.handle) return;
    if (this.running || this.training) { this.freeLater = true; return; }
    this.release();
  }

  release() {
    const m = this.mod;
    this.gpu?.free();
    this.gpu?.dispose?.(); // a streamed model's weights (llm_webgpu.js)
    this.gpu = null;
    if (!m.dead) {
      m.call('rlx_llm_free', this.handle);
      for (const p of this.parts) m.free(p.ptr);
      for (const p of this.adapters) m.free(p);
    }
    m.close(); // a threaded build's Workers end here
    this.adapters = [];
    this.handle = 0;
    this.parts = [];
    this.mod = null; // the instance and its memory go with the last reference to it
  }
}
