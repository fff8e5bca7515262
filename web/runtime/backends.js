// backends.js - which backend runs a model or a graph here.
//
// Four parts, used by ./select.js (init_webgpu, init_webgl,
// backend_environment, backend_candidates and select_backend) and by
// ./webgraph.js:
//  - the environment: what this page, Worker or Node process can run, each
//    backend with `available` and, when not, the `reason`.  A GPU backend is
//    available only when its executor can really run plans here: WebGPU needs
//    the wasm's plan exports, web/runtime/webgpu.js and a device obtained by
//    initWebGpu() (device creation is asynchronous); WebGL2 needs the wasm's
//    plan export and a WebGL2 context with float render targets, which is
//    made synchronously on first use (initWebGl() only checks it up front or
//    turns WebGL2 off).  Nothing is ever reported available that would
//    silently run elsewhere.
//  - executorFor(): the one place that knows which executor class runs a
//    compiled session on each backend (./cpu.js, ./webgpu.js, ./webgl.js;
//    all with the contract of ./executor.js).
//  - candidates(): pure.  From an environment snapshot, a model description
//    and a request, every viable backend best first (webgpu, webgl, cpu);
//    an explicit request gives exactly one candidate or a refusal with the
//    reason; 'auto' always ends with 'cpu'.  A GPU backend that runs on a
//    software rasterizer (a WebGPU fallback adapter, SwiftShader, llvmpipe,
//    ...: `software` in its status, from softwareAdapter() /
//    softwareWebGl()) ranks below the wasm CPU path for 'auto': it is left
//    out with that reason; an explicit request still gets it.
//  - select(): walks the candidates, compiling each with a callback that
//    throws when the backend cannot take the graph (a missing lowering, a
//    plan that needs host execution); the first that compiles wins, and
//    every better backend that was not used comes back with its reason.

import { CpuExecutor } from './cpu.js';
import * as webglExecutor from './webgl.js';

export const BACKEND_ORDER = Object.freeze(['webgpu', 'webgl', 'cpu']);

/** Each backend's name for people: the one table of them (pages, the cluster and errors use it). */
export const BACKEND_LABEL = Object.freeze({ cpu: 'CPU', webgpu: 'WebGPU', webgl: 'WebGL2' });

const ALIASES = {
  cpu: 'cpu', wasm: 'cpu',
  webgpu: 'webgpu', gpu: 'webgpu', wgpu: 'webgpu',
  webgl: 'webgl', webgl2: 'webgl', opengl: 'webgl', gl: 'webgl',
  auto: 'auto', '': 'auto',
};

/** A request ('auto', a backend or an alias, any case) as 'auto' | 'cpu' | 'webgpu' | 'webgl', or null. */
export function normalizeRequest(request) {
  if (request === undefined || request === null) return 'auto';
  if (typeof request !== 'string') return null;
  const key = request.trim().toLowerCase();
  return Object.hasOwn(ALIASES, key) ? ALIASES[key] : null; // never 'constructor' or 'toString'
}

// ---- software rasterizers ------------------------------------------------------------

// Names of CPU implementations of WebGPU / WebGL, as adapters and renderer
// strings spell them (Chromium: "ANGLE (Google, Vulkan 1.3.0 (SwiftShader
// Device (Subzero) ...), SwiftShader driver)", Dawn: architecture
// "swiftshader"; Mesa: "llvmpipe (LLVM 15.0.6, 256 bits)", "softpipe",
// lavapipe; Windows: "Microsoft Basic Render Driver" (WARP)).
const SOFTWARE_NAMES = [
  [/swift\s*shader/i, 'SwiftShader'],
  [/llvmpipe/i, 'llvmpipe'],
  [/lavapipe/i, 'lavapipe'],
  [/softpipe/i, 'softpipe'],
  [/microsoft basic render/i, 'Microsoft Basic Render Driver'],
  [/\bsoftware\b/i, 'a software renderer'],
];

/** The software rasterizer a renderer or adapter string names ('SwiftShader', 'llvmpipe', ...), or null. */
export function softwareName(text) {
  if (typeof text !== 'string' || text === '') return null;
  for (const [pattern, name] of SOFTWARE_NAMES) if (pattern.test(text)) return name;
  return null;
}

function field(o, name) {
  try {
    const v = o?.[name];
    return typeof v === 'string' ? v : '';
  } catch {
    return '';
  }
}

/**
 * Whether a WebGPU adapter is a software one: adapterOrInfo is a GPUAdapter
 * (its .info, or its deprecated isFallbackAdapter), a GPUDevice (its
 * .adapterInfo) or a GPUAdapterInfo.  Returns the rasterizer's name
 * ('SwiftShader', 'llvmpipe', ..., or 'a fallback adapter' when only
 * isFallbackAdapter says so), or null for a hardware (or unknown) adapter.
 */
export function softwareAdapter(adapterOrInfo) {
  const o = adapterOrInfo;
  if (!o || typeof o !== 'object') return null;
  let info = o;
  try {
    info = o.info ?? o.adapterInfo ?? o;
  } catch {
    info = o;
  }
  const text = ['vendor', 'architecture', 'device', 'description'].map((k) => field(info, k)).join(' ');
  const named = softwareName(text);
  if (named) return named;
  let fallback = false;
  try {
    fallback = info.isFallbackAdapter === true || o.isFallbackAdapter === true;
  } catch {
    fallback = false;
  }
  return fallback ? 'a fallback adapter' : null;
}

const UNMASKED_RENDERER_WEBGL = 0x9246; // WEBGL_debug_renderer_info
const RENDERER = 0x1F01;

/**
 * Whether a WebGL context renders in software: its UNMASKED_RENDERER_WEBGL
 * (WEBGL_debug_renderer_info) or, without that extension, its RENDERER
 * string names SwiftShader, llvmpipe, softpipe, "Software", ...  Returns
 * the name, or null for a hardware (or unknown) renderer.
 */
export function softwareWebGl(gl) {
  if (!gl || typeof gl.getParameter !== 'function') return null;
  let text = '';
  try {
    const ext = gl.getExtension?.('WEBGL_debug_renderer_info');
    if (ext) text = String(gl.getParameter(ext.UNMASKED_RENDERER_WEBGL ?? UNMASKED_RENDERER_WEBGL) ?? '');
  } catch {
    text = '';
  }
  try {
    text = `${text} ${String(gl.getParameter(gl.RENDERER ?? RENDERER) ?? '')}`;
  } catch {
    // the unmasked string (if any) decides
  }
  return softwareName(text);
}

// ---- WebGPU: one device per environment, obtained up front ---------------------

const webgpuState = { device: null, reason: null, source: null, executor: null, software: null };

function gpuOf(source) {
  if (source && typeof source === 'object' && typeof source.requestAdapter === 'function') return source;
  return globalThis.navigator?.gpu ?? null;
}

/**
 * Obtains the WebGPU device the webgpu backend uses (once; later calls
 * return the same answer unless the device was lost).  source: true / nothing
 * (navigator.gpu), a GPU object (e.g. npm `webgpu`'s create([]) in Node) or a
 * GPUDevice.  Resolves to true when WebGPU is usable; never throws: the reason
 * is kept for backend_environment().
 */
export async function initWebGpu(rt, source) {
  if (source === false) {
    webgpuState.reason = 'WebGPU was turned off (init_webgpu(false))';
    webgpuState.device = null;
    return false;
  }
  if (webgpuState.device) return true;
  if (typeof rt?.exports?.rlx_webgpu_plan !== 'function') return false; // environment(rt) says why
  try {
    webgpuState.executor ??= await import('./webgpu.js');
    let device;
    let software = null;
    if (source && typeof source === 'object' && typeof source.createBuffer === 'function') {
      device = source;
      software = softwareAdapter(device);
    } else {
      const gpu = gpuOf(source);
      if (!gpu) {
        webgpuState.reason = 'WebGPU is not available here (no navigator.gpu)';
        return false;
      }
      const adapter = await gpu.requestAdapter();
      if (!adapter) {
        webgpuState.reason = 'WebGPU: no GPU adapter is available';
        return false;
      }
      software = softwareAdapter(adapter);
      if (!software && !adapter.info && typeof adapter.requestAdapterInfo === 'function') {
        software = softwareAdapter(await adapter.requestAdapterInfo().catch(() => null)); // before GPUAdapter.info
      }
      // The largest buffers the adapter allows: plans of big models need them.
      const want = ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxStorageBuffersPerShaderStage'];
      const requiredLimits = {};
      for (const name of want) if (adapter.limits?.[name] !== undefined) requiredLimits[name] = adapter.limits[name];
      device = await adapter.requestDevice({ requiredLimits });
    }
    webgpuState.device = device;
    webgpuState.reason = null;
    webgpuState.software = software;
    device.lost?.then((info) => {
      if (webgpuState.device !== device) return;
      webgpuState.device = null;
      webgpuState.reason = `the WebGPU device was lost: ${info?.message || info?.reason || 'unknown reason'}`;
    });
    return true;
  } catch (err) {
    webgpuState.device = null;
    webgpuState.reason = `WebGPU could not be initialized: ${err?.message ?? err}`;
    return false;
  }
}

/** The device and executor module of the webgpu backend, or null. */
export function webgpuRuntime() {
  return webgpuState.device ? { device: webgpuState.device, executor: webgpuState.executor } : null;
}

function webgpuStatus(rt) {
  if (webgpuState.device) {
    return webgpuState.software ? { available: true, reason: null, software: webgpuState.software } : { available: true, reason: null };
  }
  if (rt && typeof rt.exports?.rlx_webgpu_plan !== 'function') {
    return { available: false, reason: 'this rlx_web.wasm has no WebGPU plan exports' };
  }
  if (webgpuState.reason) return { available: false, reason: webgpuState.reason };
  if (!gpuOf()) return { available: false, reason: 'WebGPU is not available here (no navigator.gpu)' };
  return { available: false, reason: 'WebGPU is offered here but not initialized: call `await init_webgpu()` first' };
}

// ---- WebGL2: the executor and a float-capable context, made on first use ----------

const webglState = { reason: null, off: false, canvas: null };
let webgl2Float = null;
let webglSoftware = null; // the software rasterizer of the probed context, or null

function newCanvas() {
  if (typeof OffscreenCanvas === 'function') return new OffscreenCanvas(1, 1);
  if (typeof document === 'object' && document?.createElement) return document.createElement('canvas');
  return null;
}

/**
 * Whether a WebGL2 context with EXT_color_buffer_float can be made here
 * (probed once; the same probe reads its renderer, see softwareWebGl()).
 */
export function hasWebGL2Float(refresh = false) {
  if (webgl2Float !== null && !refresh) return webgl2Float;
  webgl2Float = false;
  webglSoftware = null;
  try {
    const gl = newCanvas()?.getContext('webgl2');
    if (gl) {
      webgl2Float = !!gl.getExtension('EXT_color_buffer_float');
      webglSoftware = softwareWebGl(gl);
      gl.getExtension('WEBGL_lose_context')?.loseContext();
    }
  } catch {
    webgl2Float = false;
  }
  return webgl2Float;
}

const WEBGL_MISSING = 'the WebGL2 executor is not in this build yet (rlx_web.wasm has no rlx_webgl_plan export; ' +
  'web/runtime/webgl.js runs the plans once it lands)';
const NO_WEBGL2 = 'WebGL2 with EXT_color_buffer_float is not available here';

/**
 * Checks up front that the webgl backend can run here (it also initialises
 * itself on first use, so calling this is optional); enable === false turns
 * it off, true turns it back on.  When the shared canvas's context was lost
 * a new canvas (and context) replaces it: that is how a lost context is
 * recovered.  Resolves to whether it is usable; never throws.
 */
export async function initWebGl(rt, enable = true) {
  webglState.off = enable === false;
  if (webglState.canvas && contextLost(webglState.canvas)) webglState.canvas = null;
  if (webglState.off) {
    webglState.reason = 'WebGL2 was turned off (init_webgl(false))';
    return false;
  }
  webglState.reason = null;
  if (typeof rt?.exports?.rlx_webgl_plan !== 'function') return false; // environment(rt) says why
  if (!hasWebGL2Float(true)) return false;
  return webglRuntime(rt) !== null;
}

function contextLost(canvas) {
  try {
    return canvas.getContext('webgl2', webglExecutor.CONTEXT_ATTRIBUTES)?.isContextLost?.() === true;
  } catch {
    return true;
  }
}

/**
 * The executor module of the webgl backend and the canvas its sessions share
 * (made here, synchronously, on first use), or null when WebGL2 cannot run
 * plans here (environment(rt).webgl.reason says why).
 */
export function webglRuntime(rt) {
  if (webglState.off || !hasWebGL2Float()) return null;
  if (rt && typeof rt.exports?.rlx_webgl_plan !== 'function') return null;
  // One canvas for every session: they share its context (browsers cap live contexts).
  webglState.canvas ??= newCanvas();
  return { executor: webglExecutor, canvas: webglState.canvas };
}

function webglStatus(rt, refresh) {
  if (rt && typeof rt.exports?.rlx_webgl_plan !== 'function') return { available: false, reason: WEBGL_MISSING };
  if (webglState.off) return { available: false, reason: webglState.reason };
  if (!hasWebGL2Float(refresh)) return { available: false, reason: NO_WEBGL2 };
  return webglSoftware ? { available: true, reason: null, software: webglSoftware } : { available: true, reason: null };
}

// ---- the executor of each backend ----------------------------------------------------


/**
 * The factory of backend's executor: make(ptr) -> an object with the
 * contract of ./executor.js for a session compiled for that backend (the
 * caller keeps the session and frees it after the executor).  Throws the
 * reason when the backend cannot run here (before anything is compiled).
 */
export function executorFor(rt, backend) {
  if (backend === 'cpu') return (ptr) => new CpuExecutor(rt, ptr);
  if (backend === 'webgpu') {
    const gpu = webgpuRuntime();
    if (!gpu) throw new Error(environment(rt).webgpu.reason);
    return (ptr) => new gpu.executor.WebGpuSession(rt, ptr, gpu.device);
  }
  if (backend === 'webgl') {
    const gl = webglRuntime(rt);
    if (!gl) throw new Error(environment(rt).webgl.reason ?? `${BACKEND_LABEL.webgl} is not available here`);
    return (ptr) => gl.executor.createWebGlSession(rt, ptr, gl.canvas ? { canvas: gl.canvas } : {});
  }
  throw new Error(`no executor for backend ${backend}`);
}

/**
 * A snapshot of what runs here: { cpu, webgpu, webgl }, each { available,
 * reason }; an available GPU backend that rasterizes in software also has
 * `software`: the rasterizer's name ('SwiftShader', 'llvmpipe', ...).
 */
export function environment(rt, { refresh = false } = {}) {
  const cpu = typeof WebAssembly === 'object'
    ? { available: true, reason: null }
    : { available: false, reason: 'WebAssembly is not available here' };
  return { cpu, webgpu: webgpuStatus(rt), webgl: webglStatus(rt, refresh) };
}

// ---- candidates and selection ------------------------------------------------------

/** Why 'auto' leaves a GPU backend on a software rasterizer for the CPU. */
export function softwareReason(backend, name) {
  const what = backend === 'webgpu' ? 'adapter' : 'renderer';
  return /^an? /.test(name)
    ? `${BACKEND_LABEL[backend]} runs on ${name}; the wasm CPU path is faster`
    : `a software ${what} (${name}); the wasm CPU path is faster`;
}

/**
 * Pure: the backends that may run `model` here, best first.
 *   env: { cpu, webgpu, webgl } as environment() returns (a stub in tests);
 *     a GPU backend whose status has `software` (a rasterizer's name) ranks
 *     below the CPU for 'auto': it is skipped with softwareReason().
 *   model: { label, trainable?: { cpu, webgpu, webgl } } - trainable flags
 *     (from the model's info) count when `training` is true.
 *   request: 'auto' | 'cpu' | 'webgpu' | 'webgl' (already normalized).
 * Returns { request, candidates, skipped: [{ backend, reason }], refusal }.
 */
export function candidates(env, model, request, training) {
  const skipped = [];
  const viable = [];
  for (const b of BACKEND_ORDER) {
    const status = env?.[b] ?? { available: false, reason: `${BACKEND_LABEL[b]} status unknown` };
    let reason = null;
    if (!status.available) reason = status.reason || `${BACKEND_LABEL[b]} is not available here`;
    else if (training && model?.trainable && model.trainable[b] === false) {
      reason = `${model.label} cannot train on ${BACKEND_LABEL[b]} in this build`;
    } else if (request === 'auto' && b !== 'cpu' && status.software) {
      reason = softwareReason(b, String(status.software));
    }
    if (reason) skipped.push({ backend: b, reason });
    else viable.push(b);
  }
  if (request === 'auto') {
    // 'auto' always ends with the CPU, even when a stubbed environment says otherwise:
    // the wasm CPU executor is what runs this code.
    if (!viable.includes('cpu')) {
      viable.push('cpu');
      const k = skipped.findIndex((s) => s.backend === 'cpu');
      if (k >= 0) skipped.splice(k, 1);
    }
    return { request, candidates: viable, skipped, refusal: null };
  }
  if (viable.includes(request)) {
    return { request, candidates: [request], skipped: skipped.filter((s) => s.backend !== request), refusal: null };
  }
  const why = skipped.find((s) => s.backend === request)?.reason ?? `${BACKEND_LABEL[request]} is not available here`;
  return { request, candidates: [], skipped, refusal: `${request} was requested but cannot be used: ${why}` };
}

/**
 * Walks plan.candidates: compile(backend) returns the compiled object or
 * throws (its message is the reason; an error on the CPU is rethrown as it
 * is, being the graph's own).  Returns { backend, compiled,
 * fallbacks } where fallbacks lists every backend better than the chosen one
 * with the reason it was not used (skipped by candidates() or rejected here).
 * Throws `makeError(message)` when nothing compiles (or the request was refused).
 */
export function select(plan, compile, makeError) {
  if (plan.refusal) throw makeError(plan.refusal);
  const rejected = [];
  for (const backend of plan.candidates) {
    try {
      const compiled = compile(backend);
      const rank = plan.request === 'auto' ? BACKEND_ORDER.indexOf(backend) : -1; // an explicit request falls back from nothing
      const fallbacks = [...plan.skipped, ...rejected]
        .filter((f) => BACKEND_ORDER.indexOf(f.backend) < rank)
        .sort((a, b) => BACKEND_ORDER.indexOf(a.backend) - BACKEND_ORDER.indexOf(b.backend));
      return { backend, compiled, fallbacks };
    } catch (err) {
      // The CPU is the last resort: its error is the graph's own (a shape, a
      // missing input), so it comes back as it is.
      if (backend === 'cpu') throw err;
      rejected.push({ backend, reason: err?.message ?? String(err) });
    }
  }
  const tried = rejected.map((r) => `${r.backend}: ${r.reason}`).join('; ');
  throw makeError(plan.request === 'auto'
    ? `no backend could compile it (${tried})`
    : `${plan.request} was requested but cannot be used: ${rejected[0]?.reason ?? 'unknown reason'}`);
}
