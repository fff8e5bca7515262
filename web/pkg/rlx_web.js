// rlx_web.js - the browser entry point of RLX: an ES module for a page, a
// Worker or Node 20 over rlx_web.wasm (loaded from next to this file).
//
//   import init, * as rlx from './pkg/rlx_web.js';
//   await init();                                   // idempotent
//   const y = rlx.mlp_forward(x, 4, 8, 2, w1, b1, w2, b2);
//   const bench = new rlx.VisionBench('mnist-cnn');
//   const params = bench.init_params(42);
//   const { x: xs, labels } = bench.synthetic_batch(1, 8);
//   const [loss, ...next] = bench.train_step_cpu(xs, labels, params, 0.01);
//
// This is the spec's snake_case surface, kept as the low-level /
// compatibility layer; the documented way in is the SDK (../rlx.js, from
// ../rlx.ts), whose models run through the same VisionBench code below.
// Every entry point runs synchronously on the CPU executor in wasm; the C
// side caches one compiled session per shape, so repeated calls do not
// recompile.  GPU variants (mlp_forward_gpu / mlp_grads_gpu and
// VisionBench.*_webgpu: Promises, after `await init_webgpu()`;
// mlp_*_webgl and VisionBench.*_webgl: synchronous, WebGL2 initialising
// itself on first use) give the same results within 1e-4 and cache their compiled
// graphs the same way; when the GPU cannot do the work (not initialized, no
// adapter, a lost device or context, a limit) they throw an RlxError saying
// why, so the caller can fall back to the CPU variant.  Arguments are checked here before anything reaches wasm: a bad
// one throws an RlxError (an Error) whose message names the function, the
// argument and what was expected; errors found by the library carry its
// rlx_last_error() text.  A trap inside wasm (which the library is written
// never to do) is reported on console.error, the instance is discarded, and
// the next `await init()` loads a fresh one.
//
// Describing a model in code: WebGraph (../runtime/webgraph.js) builds a
// graph op by op and compiles it (compile_forward / compile_backward) for
// 'cpu', 'webgpu', 'webgl' or 'auto'; backend_candidates / select_backend
// (../runtime/backends.js) say which backend runs a model or graph here and
// why the others do not.  GPU backends count only once their executor can
// run here: `await init_webgpu()` obtains the WebGPU device; WebGL2 needs no
// call.  Every compiled graph runs through an executor with the one
// contract of ../runtime/executor.js (CPU, WebGPU and WebGL2 alike).
//
//   const g = new rlx.WebGraph();
//   const x = g.input('x', [4, 3]), w = g.param('w', [3, 2]);
//   const loss = g.reduce_mean(g.relu(g.matmul(x, w)));
//   const step = g.compile_backward(loss, [w], 'auto');   // outputs [loss, dw]
//   step.feed('x', xs); step.feed('w', w0); step.run(); step.output(1);
//
// The low-level Graph / Session API of ../runtime/loader.js is re-exported;
// runtime() gives the loaded module for it: `runtime().graph()`.
import { loadRlx, Rlx, RlxError, optionsArg, FATAL_STATUS as FATAL } from '../runtime/loader.js';
import { simdOption } from '../runtime/simd.js';
import { WebGraph as GraphBase, CompiledGraph, selectCompiled } from '../runtime/webgraph.js';
import * as backends from '../runtime/backends.js';
import { initTried, SessionCache, splitFlat, concatF32, compileMlp, requireBackend } from '../runtime/gpu_entry.js';
import { STATUS } from '../runtime/constants.js';

export { loadRlx, Rlx, RlxError, Graph, Session } from '../runtime/loader.js';
export { CompiledGraph } from '../runtime/webgraph.js';

const MAX_BATCH = 65536;
const MAX_TRANSFORMER_PARAMS = 1 << 26; // 256 MB of f32 weights: beyond that a tab runs out of memory

let current = null;  // { rt, dead, source } of the live instance
let loading = null;  // the pending init() promise
let lastSource;       // undefined: rlx_web.wasm next to this file, or its relaxed-SIMD build
let lastSimd;         // the simd option of the last init() that gave one

// ---- loading and the fatal-error hook -------------------------------------

/**
 * Loads rlx_web.wasm (default: next to this file, or its relaxed-SIMD build
 * where the engine has relaxed SIMD: ../runtime/simd.js; or a URL, path,
 * bytes or a WebAssembly.Module, also as `{ module_or_path }`; `{ simd:
 * 'simd128' }` forces the plain build) and installs the fatal-error hook.
 * Calling it again returns the same module, unless the previous instance hit
 * a fatal error: then a fresh one is loaded.
 */
export default function init(source) {
  if (current && !current.dead) return Promise.resolve(current.rt);
  if (loading) return loading;
  if (source && typeof source === 'object' && ('module_or_path' in source || 'simd' in source)) {
    if (source.simd !== undefined) {
      try {
        lastSimd = simdOption('init', source.simd, 'simd');
      } catch (err) {
        return Promise.reject(err);
      }
    }
    source = source.module_or_path;
  }
  if (source !== undefined && source !== null) lastSource = source;
  const src = lastSource;
  loading = (async () => {
    try {
      const raw = await loadRlx(src, { simd: lastSimd });
      const state = { rt: null, dead: false };
      state.rt = new Rlx({ exports: guardExports(raw.exports, state) }, raw.simd);
      current = state;
      return state.rt;
    } finally {
      loading = null;
    }
  })();
  return loading;
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
      if (state.dead) throw deadError();
      try {
        return value(...args);
      } catch (err) {
        const trapped = err instanceof WebAssembly.RuntimeError || err?.name === 'WasiExit' ||
          (err instanceof RangeError && /call stack/i.test(err.message)); // wasm stack overflow
        if (!trapped) throw err;
        state.dead = true;
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
function live() {
  if (!current) throw new RlxError(STATUS.STATE, 'rlx_web: not initialized: call `await init()` first');
  if (current.dead) throw deadError();
  return current.rt;
}

/** The low-level runtime of ../runtime/loader.js (Graph / Session API) after init(). */
export function runtime() {
  return live();
}

// ---- argument checks --------------------------------------------------------

function fail(fn, message) {
  return new RlxError(STATUS.INVALID_ARG, `${fn}: ${message}`);
}

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an Array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object') return `a ${v.constructor?.name ?? 'object'}`;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

/** A Float32Array or an Array of numbers, with an exact length when given. */
function floats(fn, name, v, len, why) {
  if (v instanceof Float32Array) {
    // fine as it is
  } else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (typeof v[i] !== 'number') throw fail(fn, `${name}[${i}] is ${describe(v[i])}, not a number`);
    }
  } else {
    throw fail(fn, `${name} must be a Float32Array or an Array of numbers, got ${describe(v)}`);
  }
  if (v.length === 0) throw fail(fn, `${name} is empty`);
  if (len !== undefined && v.length !== len) {
    throw fail(fn, `${name} has ${v.length} values, expected ${len}${why ? ` (${why})` : ''}`);
  }
  return v;
}

/** An integer in [min, max]. */
function int(fn, name, v, min = 1, max = 0x7fffffff) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    const range = max === 0x7fffffff ? `>= ${min}` : `in [${min}, ${max}]`;
    throw fail(fn, `${name} must be an integer ${range}, got ${describe(v)}`);
  }
  return v;
}

function finite(fn, name, v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw fail(fn, `${name} must be a finite number, got ${describe(v)}`);
  return v;
}

/** A 64-bit seed as [lo, hi] 32-bit halves: a safe integer >= 0 or a BigInt in [0, 2^64). */
function seed(fn, v) {
  if (typeof v === 'bigint') {
    if (v < 0n || v >= 1n << 64n) throw fail(fn, `seed must be in [0, 2^64), got ${v}`);
    return [Number(v & 0xffffffffn) >>> 0, Number(v >> 32n) >>> 0];
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw fail(fn, `seed must be an integer in [0, 2^53) or a BigInt, got ${describe(v)}`);
  }
  return [v % 0x100000000 >>> 0, Math.floor(v / 0x100000000) >>> 0];
}

/** Integer class ids in [0, classes) from an Int32Array, a Float32Array or an Array. */
function labelList(fn, v, batch, classes) {
  if (!(v instanceof Int32Array || v instanceof Float32Array || Array.isArray(v))) {
    throw fail(fn, `labels must be an Int32Array, a Float32Array or an Array of integers, got ${describe(v)}`);
  }
  if (v.length !== batch) throw fail(fn, `labels has ${v.length} values, expected ${batch} (one per sample)`);
  for (let i = 0; i < v.length; i++) {
    const l = v[i];
    if (typeof l !== 'number' || !Number.isInteger(l) || l < 0 || l >= classes) {
      throw fail(fn, `labels[${i}] is ${describe(l)}; labels must be integers in [0, ${classes})`);
    }
  }
  return v instanceof Int32Array ? v : Int32Array.from(v);
}

/** rows = length / per_row, which must divide exactly. */
function rowsOf(fn, name, v, perRow, what) {
  if (v.length % perRow !== 0) {
    throw fail(fn, `${name} has ${v.length} values, not a multiple of ${what} (${perRow})`);
  }
  return v.length / perRow;
}

function str(fn, name, v) {
  if (typeof v !== 'string') throw fail(fn, `${name} must be a string, got ${describe(v)}`);
  return v;
}

// ---- backends ---------------------------------------------------------------

/** Label of the backend the synchronous entry points use. */
export function backend() {
  return 'cpu';
}

/** Backend name, case-insensitive: cpu | webgpu (gpu, wgpu) | webgl (opengl, gl) | anything else "auto". */
export function parse_backend(name) {
  switch (str('parse_backend', 'name', name).trim().toLowerCase()) {
    case 'cpu': return 'cpu';
    case 'webgpu': case 'gpu': case 'wgpu': return 'webgpu';
    case 'webgl': case 'webgl2': case 'opengl': case 'gl': return 'webgl';
    default: return 'auto';
  }
}

/** What the environment offers, best first: "webgpu" | "webgl" | "cpu" | "none". */
export function preferred_backend() {
  if (typeof navigator === 'object' && navigator?.gpu) return 'webgpu';
  if (backends.hasWebGL2Float()) return 'webgl';
  if (typeof WebAssembly === 'object') return 'cpu';
  return 'none';
}

/**
 * Obtains the WebGPU device of the webgpu backend (navigator.gpu, or the GPU
 * object / GPUDevice given, e.g. npm `webgpu`'s create([]) in Node).
 * Resolves to true when WebGPU can run plans here, else false (the reason is
 * in backend_environment().webgpu.reason); false turns WebGPU off.
 */
export async function init_webgpu(source) {
  const rt = await init();
  initTried.webgpu = true;
  return backends.initWebGpu(rt, source);
}

/**
 * Optional: the webgl backend initialises itself on first use (a WebGL2
 * context is made synchronously).  Checks up front whether it can run plans
 * here: resolves to true when it can, else false (see
 * backend_environment().webgl.reason); a lost context is replaced by a new
 * one; false turns WebGL2 off (true back on).
 */
export async function init_webgl(enable = true) {
  const rt = await init();
  initTried.webgl = true;
  return backends.initWebGl(rt, enable);
}

/**
 * What runs here now: { cpu, webgpu, webgl }, each { available, reason }
 * (reason says why not; an available GPU backend on a software rasterizer
 * also has software: its name).  { refresh: true } probes WebGL2 again.
 */
export function backend_environment(options = undefined) {
  const { refresh = false } = optionsArg('backend_environment', options);
  return backends.environment(current && !current.dead ? current.rt : null, { refresh });
}

/** A vision model (slug, info, VisionBench, SDK model) or a WebGraph, described for the backend rules. */
function targetOf(fn, target) {
  if (target instanceof GraphBase) return { graph: target, label: 'this graph', trainable: null };
  const slug = typeof target === 'string' ? target : target?.slug;
  if (typeof slug !== 'string') {
    throw fail(fn, `model_or_graph must be a vision model slug, a VisionModelInfo, a VisionBench or a WebGraph, got ${describe(target)}`);
  }
  const info = vision_model_info(slug);
  // A VisionModelInfo given as the target carries the flags to apply.
  const flags = typeof target === 'object' && typeof target.webgl_train === 'boolean' ? target : info;
  return { info, label: info.slug, trainable: { cpu: flags.cpu_train, webgpu: flags.webgpu_train, webgl: flags.webgl_train } };
}

function requestOf(fn, request) {
  const r = backends.normalizeRequest(request);
  if (!r) throw fail(fn, `request must be 'auto', 'cpu', 'webgpu' or 'webgl' (or an alias), got ${describe(request)}`);
  return r;
}

/**
 * Pure and model-aware: every backend that may run model_or_graph here,
 * best first (webgpu, webgl, cpu), with the reason for each one skipped.  An
 * explicit request gives exactly one candidate or a refusal with the
 * reason; 'auto' always ends with 'cpu' and leaves out a GPU backend that
 * rasterizes in software (backend_environment()[b].software: SwiftShader,
 * llvmpipe, a fallback adapter, ...), the wasm CPU path being faster there;
 * an explicit request still gets it.  options.training (default true)
 * applies the model's trainable-on flags; options.env replaces the
 * environment (a { cpu, webgpu, webgl } snapshot, as backend_environment()).
 */
export function backend_candidates(model_or_graph, request = 'auto', options = undefined) {
  const fn = 'backend_candidates';
  options = optionsArg(fn, options);
  const r = requestOf(fn, request);
  const target = targetOf(fn, model_or_graph);
  const env = options.env ?? backend_environment();
  return backends.candidates(env, target, r, options.training ?? true);
}

/**
 * Compiles model_or_graph on each candidate of backend_candidates in turn and
 * keeps the first that compiles without host execution: { backend, compiled,
 * fallbacks: [{ backend, reason }], candidates }.  The caller frees compiled.
 * A vision model (slug): its training graph (forward + backward) for
 * options.batch (default 1), or the forward one with { training: false }.
 * A WebGraph: options.outputs (compile_forward) or options.loss and
 * options.params (compile_backward).  An explicit request that cannot be met
 * throws with the reason; it never runs elsewhere.
 */
export function select_backend(model_or_graph, request = 'auto', options = undefined) {
  const fn = 'select_backend';
  options = optionsArg(fn, options);
  const r = requestOf(fn, request);
  const target = targetOf(fn, model_or_graph);
  const training = options.training ?? true;
  const env = options.env ?? backend_environment();
  const plan = backends.candidates(env, target, r, training && !target.graph);
  let graph = target.graph;
  let outs;
  let kind;
  if (graph) {
    if (options.loss !== undefined) {
      outs = graph._grad(fn, options.loss, options.params);
      kind = 'backward';
    } else if (options.outputs !== undefined) {
      outs = graph._outputs(fn, options.outputs);
      kind = 'forward';
    } else {
      throw fail(fn, 'for a WebGraph give options.outputs (forward) or options.loss and options.params (backward)');
    }
  } else {
    graph = new WebGraph();
    const batch = options.batch ?? 1;
    const m = graph.add_vision(target.info.slug, batch);
    kind = training ? 'backward' : 'forward';
    outs = training ? graph._grad(fn, m.loss, m.params) : [m.logits];
  }
  try {
    const compiled = selectCompiled(fn, graph, plan, outs, kind);
    return { backend: compiled.backend, compiled, fallbacks: compiled.fallbacks, candidates: plan.candidates };
  } finally {
    if (!target.graph) graph.free();
  }
}

/**
 * A graph under construction (see ../runtime/webgraph.js): builders return
 * node ids; compile_forward / compile_backward compile it for a backend.
 */
export class WebGraph extends GraphBase {
  constructor() {
    super(live());
  }

  _visionParamNames(slug) {
    return vision_model_info(slug).param_names;
  }
}

// ---- the MLP ------------------------------------------------------------------

/** Checks x, dims and weights; returns [rows, w1, b1, w2, b2] (copies in wasm via t). */
function mlpArgs(fn, x, inDim, hid, out, w1, b1, w2, b2) {
  int(fn, 'in', inDim);
  int(fn, 'hid', hid);
  int(fn, 'out', out);
  floats(fn, 'x', x);
  const rows = rowsOf(fn, 'x', x, inDim, 'in');
  floats(fn, 'w1', w1, inDim * hid, 'in * hid');
  floats(fn, 'b1', b1, hid, 'hid');
  floats(fn, 'w2', w2, hid * out, 'hid * out');
  floats(fn, 'b2', b2, out, 'out');
  return rows;
}

/** withT: the call takes targets t [rows, out] (all but forward). */
function callMlp(fn, withT, x, t, inDim, hid, out, w1, b1, w2, b2, outLen, call) {
  const rt = live();
  const rows = mlpArgs(fn, x, inDim, hid, out, w1, b1, w2, b2);
  if (withT) floats(fn, 't', t, rows * out, `rows * out = ${rows} * ${out}`);
  return rt.scoped((m) => {
    const dst = m.bytes(4 * outLen(rows));
    const head = [rows, inDim, hid, out, m.f32(w1), m.f32(b1), m.f32(w2), m.f32(b2), m.f32(x)];
    if (withT) head.push(m.f32(t));
    rt.check(call(rt.exports, head, dst));
    return rt.readF32(dst, outLen(rows));
  });
}

/** y = relu(x W1 + b1) W2 + b2 for every row of x (rows = x.length / in). */
export function mlp_forward(x, inDim, hid, out, w1, b1, w2, b2) {
  return callMlp('mlp_forward', false, x, null, inDim, hid, out, w1, b1, w2, b2, (rows) => rows * out,
    (e, a, dst) => e.rlx_mlp_forward(...a, dst));
}

/** Sum over rows and outputs of (y - t)^2. */
export function mlp_loss(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return callMlp('mlp_loss', true, x, t, inDim, hid, out, w1, b1, w2, b2, () => 1,
    (e, a, dst) => e.rlx_mlp_loss(...a, dst))[0];
}

/** [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return callMlp('mlp_grads', true, x, t, inDim, hid, out, w1, b1, w2, b2,
    () => 1 + inDim * hid + hid + hid * out + out, (e, a, dst) => e.rlx_mlp_grads(...a, dst));
}

/** One SGD step (p -= lr g): the updated [w1..., b1..., w2..., b2...]. */
export function mlp_train_step(x, t, inDim, hid, out, w1, b1, w2, b2, lr) {
  finite('mlp_train_step', 'lr', lr);
  return callMlp('mlp_train_step', true, x, t, inDim, hid, out, w1, b1, w2, b2,
    () => inDim * hid + hid + hid * out + out, (e, a, dst) => e.rlx_mlp_train_step(...a, lr, dst));
}

// ---- the MLP on the GPU ----------------------------------------------------------
// The same graph as the CPU entry points, built with WebGraph and compiled
// once per (kind, rows, dims, backend); every call feeds the weights and x.

const mlpSessions = new SessionCache();

function mlpGpu(fn, backend, kind, x, t, inDim, hid, out, w1, b1, w2, b2) {
  const rt = live();
  const rows = mlpArgs(fn, x, inDim, hid, out, w1, b1, w2, b2);
  if (kind === 'grads') floats(fn, 't', t, rows * out, `rows * out = ${rows} * ${out}`);
  const key = `${backend}/${kind}/${rows}/${inDim}/${hid}/${out}`;
  const build = () => {
    const g = new WebGraph();
    try {
      return compileMlp(g, kind, rows, inDim, hid, out, backend);
    } finally {
      g.free();
    }
  };
  const feed = (c) => {
    c.feed('w1', w1);
    c.feed('b1', b1);
    c.feed('w2', w2);
    c.feed('b2', b2);
    c.feed('x', x);
    if (kind === 'grads') c.feed('t', t);
  };
  const read = (c) => (kind === 'forward' ? c.output(0) : concatF32([0, 1, 2, 3, 4].map((i) => c.output(i))));
  if (backend === 'webgl') return mlpSessions.useSync(fn, rt, backend, key, build, (c) => { feed(c); c.run(); return read(c); });
  return mlpSessions.use(fn, rt, backend, key, build, async (c) => { feed(c); await c.run(); return read(c); });
}

/** mlp_forward on WebGPU (after `await init_webgpu()` resolved true): the same values within 1e-4. */
export async function mlp_forward_gpu(x, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGpu('mlp_forward_gpu', 'webgpu', 'forward', x, null, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_grads on WebGPU: [loss, dw1..., db1..., dw2..., db2...]. */
export async function mlp_grads_gpu(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGpu('mlp_grads_gpu', 'webgpu', 'grads', x, t, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_forward on WebGL2 (initialised on first use), synchronous. */
export function mlp_forward_webgl(x, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGpu('mlp_forward_webgl', 'webgl', 'forward', x, null, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_grads on WebGL2, synchronous: [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads_webgl(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGpu('mlp_grads_webgl', 'webgl', 'grads', x, t, inDim, hid, out, w1, b1, w2, b2);
}

// ---- the transformer -------------------------------------------------------------

function transformerCall(fn, tokens, vocab, dim, nLayers, nHeads, headDim, ffn, seedValue, allPositions) {
  const rt = live();
  int(fn, 'vocab', vocab);
  int(fn, 'dim', dim);
  int(fn, 'n_layers', nLayers, 0);
  int(fn, 'n_heads', nHeads);
  int(fn, 'head_dim', headDim);
  int(fn, 'ffn', ffn);
  const [lo, hi] = seed(fn, seedValue);
  if (dim !== nHeads * headDim) {
    throw fail(fn, `dim (${dim}) must equal n_heads * head_dim (${nHeads} * ${headDim} = ${nHeads * headDim})`);
  }
  if (headDim % 2 !== 0) throw fail(fn, `head_dim must be even for RoPE, got ${headDim}`);
  const params = 2 * vocab * dim + dim + nLayers * (2 * dim + 4 * dim * dim + 3 * dim * ffn);
  if (params > MAX_TRANSFORMER_PARAMS) {
    throw fail(fn, `the model would have ${params} parameters; the browser build allows at most ${MAX_TRANSFORMER_PARAMS}`);
  }
  if (!(tokens instanceof Float32Array || Array.isArray(tokens))) {
    throw fail(fn, `tokens must be a Float32Array or an Array of numbers, got ${describe(tokens)}`);
  }
  if (tokens.length === 0) throw fail(fn, 'tokens is empty: give at least one token id');
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocab) {
      throw fail(fn, `tokens[${i}] is ${describe(id)}; token ids must be integers in [0, vocab = ${vocab})`);
    }
  }
  const n = tokens.length;
  const len = allPositions ? n * vocab : vocab;
  return rt.scoped((m) => {
    const dst = m.bytes(4 * len);
    rt.check(rt.exports.rlx_transformer_logits(vocab, dim, nLayers, nHeads, headDim, ffn, lo, hi, 0, 0,
      m.f32(tokens), n, allPositions ? 1 : 0, dst));
    return rt.readF32(dst, len);
  });
}

/**
 * Next-token logits (vocab values) of a decoder-only transformer with
 * weights synthesized from seed; tokens are ids (numbers) in [0, vocab).
 */
export function transformer_next_logits(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue) {
  return transformerCall('transformer_next_logits', tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue, false);
}

/** Logits of every position: tokens.length * vocab values, row-major. */
export function transformer_logits(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue) {
  return transformerCall('transformer_logits', tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue, true);
}

// ---- vision models -------------------------------------------------------------------

/** Canonical slugs of the vision models. */
export function list_vision_models() {
  const rt = live();
  const n = rt.exports.rlx_vision_count();
  return Array.from({ length: n }, (_, i) => rt.cstring(rt.exports.rlx_vision_slug(i)));
}

let infoLayout = null; // [sizeof, offsets...] of rlx_vision_info, read once from wasm
const infoCache = new Map();

/** Metadata of a model by slug or alias. */
export function vision_model_info(slug) {
  const rt = live();
  str('vision_model_info', 'slug', slug);
  const cached = infoCache.get(slug);
  if (cached && cached.rt === rt) return structuredClone(cached.info);
  const e = rt.exports;
  if (!infoLayout) {
    infoLayout = rt.scoped((m) => {
      const n = e.rlx_vision_info_layout(0);
      const p = m.bytes(4 * n);
      e.rlx_vision_info_layout(p);
      return rt.readI32(p, n);
    });
  }
  const [size, oSlug, oTitle, oRank, oDims, oClasses, oNParams, oNames, oSizes, oRanks, oPDims, oInputLen,
    oFlatLen, oCpu, oWebgpu, oWebgl] = infoLayout;
  const info = rt.scoped((m) => {
    const p = m.bytes(size);
    rt.check(e.rlx_vision_info_get(m.str(slug), p));
    const i32 = (off) => rt.readI32(p + off, 1)[0];
    const u32 = (off) => i32(off) >>> 0;
    const nParams = i32(oNParams);
    const rank = i32(oRank);
    const paramRanks = rt.readI32(p + oRanks, nParams);
    return {
      slug: rt.cstring(u32(oSlug)),
      title: rt.cstring(u32(oTitle)),
      input_dims: Array.from(rt.readI32(p + oDims, rank)),
      num_classes: i32(oClasses),
      param_names: Array.from({ length: nParams }, (_, k) => rt.cstring(u32(oNames + 4 * k))),
      param_sizes: Array.from({ length: nParams }, (_, k) => u32(oSizes + 4 * k)),
      param_shapes: Array.from({ length: nParams }, (_, k) => Array.from(rt.readI32(p + oPDims + 16 * k, paramRanks[k]))),
      input_len: u32(oInputLen),
      param_flat_len: u32(oFlatLen),
      cpu_train: i32(oCpu) !== 0,
      webgpu_train: i32(oWebgpu) !== 0,
      webgl_train: i32(oWebgl) !== 0,
    };
  });
  infoCache.set(slug, { rt, info });
  return structuredClone(info);
}

/**
 * Forward, backward and SGD of one vision model on the CPU (synchronous),
 * WebGPU (Promises; after `await init_webgpu()`) or WebGL2 (synchronous;
 * it initialises itself on first use).  The GPU variants keep one compiled graph per
 * (batch, backend): a forward one and a training step (SGD inside the plan).
 */
export class VisionBench {
  /** Throws on an unknown slug (the message lists the known ones). */
  constructor(slug) {
    this._info = vision_model_info(slug);
    this._slug = this._info.slug;
    this._freed = false;
    this._sessions = new SessionCache();
  }

  _live(fn) {
    if (this._freed) throw new RlxError(STATUS.STATE, `VisionBench.${fn}: this VisionBench (${this._slug}) was freed`);
    return live();
  }

  get slug() { return this._slug; }

  /** A copy of the model's metadata. */
  info() {
    this._live('info');
    return structuredClone(this._info);
  }

  /** He-style uniform init from seed, biases zero: param_flat_len values. */
  init_params(seedValue) {
    const rt = this._live('init_params');
    const [lo, hi] = seed('VisionBench.init_params', seedValue);
    const len = this._info.param_flat_len;
    return rt.scoped((m) => {
      const p = m.bytes(4 * len);
      rt.check(rt.exports.rlx_vision_init_params(m.str(this._slug), lo, hi, p, len));
      return rt.readF32(p, len);
    });
  }

  /** Inputs uniform in [-1, 1) and labels in [0, num_classes) from seed. */
  synthetic_batch(seedValue, batch = 1) {
    const fn = 'VisionBench.synthetic_batch';
    const rt = this._live('synthetic_batch');
    const [lo, hi] = seed(fn, seedValue);
    int(fn, 'batch', batch, 1, MAX_BATCH);
    const xLen = batch * this._info.input_len;
    return rt.scoped((m) => {
      const x = m.bytes(4 * xLen);
      const labels = m.bytes(4 * batch);
      rt.check(rt.exports.rlx_vision_synthetic_batch(m.str(this._slug), lo, hi, batch, x, xLen, labels, batch));
      return { x: rt.readF32(x, xLen), labels: rt.readI32(labels, batch) };
    });
  }

  _batchOf(fn, x) {
    floats(fn, 'x', x);
    const batch = rowsOf(fn, 'x', x, this._info.input_len, `the input length of ${this._slug}`);
    return int(fn, 'batch (x.length / input_len)', batch, 1, MAX_BATCH);
  }

  /** Logits [batch, num_classes] for x [batch, ...input_dims]. */
  forward_cpu(x, params) {
    const fn = 'VisionBench.forward_cpu';
    const rt = this._live('forward_cpu');
    const batch = this._batchOf(fn, x);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    const len = batch * this._info.num_classes;
    return rt.scoped((m) => {
      const out = m.bytes(4 * len);
      rt.check(rt.exports.rlx_vision_forward(m.str(this._slug), batch, m.f32(x), m.f32(params), out));
      return rt.readF32(out, len);
    });
  }

  /** One SGD step: [loss (before the step), updated params...]. */
  train_step_cpu(x, labels, params, lr) {
    const fn = 'VisionBench.train_step_cpu';
    const rt = this._live('train_step_cpu');
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    const len = this._info.param_flat_len;
    floats(fn, 'params', params, len, `param_flat_len of ${this._slug}`);
    finite(fn, 'lr', lr);
    return rt.scoped((m) => {
      const out = m.bytes(4 * (1 + len)); // loss, then the params updated in place
      rt.writeF32(out + 4, params);
      rt.check(rt.exports.rlx_vision_train_step(m.str(this._slug), batch, m.f32(x), m.i32(ids), out + 4, lr, out));
      return rt.readF32(out, 1 + len);
    });
  }

  /**
   * Gradients of the mean softmax cross-entropy at params (no update):
   * [loss, dL/dparams... in the flat order of init_params]: 1 + param_flat_len values.
   */
  grads_cpu(x, labels, params) {
    const fn = 'VisionBench.grads_cpu';
    const rt = this._live('grads_cpu');
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    const len = this._info.param_flat_len;
    floats(fn, 'params', params, len, `param_flat_len of ${this._slug}`);
    return rt.scoped((m) => {
      const out = m.bytes(4 * (1 + len)); // loss, then the gradients
      rt.check(rt.exports.rlx_vision_grads(m.str(this._slug), batch, m.f32(x), m.i32(ids), m.f32(params), out + 4, out));
      return rt.readF32(out, 1 + len);
    });
  }

  /**
   * `steps` SGD steps on one synthetic batch (params and batch from seed),
   * all inside wasm: [initial_loss, final_loss, steps_per_sec], where the
   * losses are those of the first and the last step (each before its update).
   */
  bench_cpu(steps, seedValue, lr, batch = 1) {
    const fn = 'VisionBench.bench_cpu';
    const rt = this._live('bench_cpu');
    int(fn, 'steps', steps, 1, 1e9);
    const [lo, hi] = seed(fn, seedValue);
    finite(fn, 'lr', lr);
    int(fn, 'batch', batch, 1, MAX_BATCH);
    const e = rt.exports;
    const info = this._info;
    return rt.scoped((m) => {
      const slug = m.str(this._slug);
      const xLen = batch * info.input_len;
      const x = m.bytes(4 * xLen);
      const labels = m.bytes(4 * batch);
      const params = m.bytes(4 * info.param_flat_len);
      const loss = m.bytes(4);
      rt.check(e.rlx_vision_init_params(slug, lo, hi, params, info.param_flat_len));
      rt.check(e.rlx_vision_synthetic_batch(slug, lo, hi, batch, x, xLen, labels, batch));
      let first = NaN;
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) {
        rt.check(e.rlx_vision_train_step(slug, batch, x, labels, params, lr, loss));
        if (i === 0) first = rt.readF32(loss, 1)[0];
      }
      const seconds = Math.max((performance.now() - t0) / 1000, 1e-9);
      return Float32Array.of(first, rt.readF32(loss, 1)[0], steps / seconds);
    });
  }

  // ---- on the GPU ------------------------------------------------------------------

  /** The cached forward or training graph of this model for (batch, backend), compiled on first use. */
  _gpu(fn, backend, kind, batch, work) {
    const rt = live();
    const build = () => {
      const g = new WebGraph();
      try {
        const m = g.add_vision(this._slug, batch);
        if (kind === 'forward') return g.compile_forward(m.logits, backend);
        if (kind === 'grads') return g.compile_backward(m.loss, m.params, backend);
        return g.compile_train(m.loss, m.params, { kind: 'sgd', lr: 0.01 }, backend);
      } finally {
        g.free();
      }
    };
    const key = `${kind}/${batch}/${backend}`;
    return backend === 'webgl' ? this._sessions.useSync(fn, rt, backend, key, build, work)
      : this._sessions.use(fn, rt, backend, key, build, work);
  }

  _feedParams(c, params) {
    const parts = splitFlat(params, this._info.param_sizes);
    this._info.param_names.forEach((name, k) => c.feed(name, parts[k]));
  }

  _forwardGpu(fn, backend, x, params) {
    this._live(fn.slice('VisionBench.'.length));
    const batch = this._batchOf(fn, x);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    const feed = (c) => {
      this._feedParams(c, params);
      c.feed('x', x);
    };
    if (backend === 'webgl') return this._gpu(fn, backend, 'forward', batch, (c) => { feed(c); c.run(); return c.output(0); });
    return this._gpu(fn, backend, 'forward', batch, async (c) => { feed(c); await c.run(); return c.output(0); });
  }

  _trainGpu(fn, backend, x, labels, params, lr) {
    this._live(fn.slice('VisionBench.'.length));
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    finite(fn, 'lr', lr);
    const names = this._info.param_names;
    const feed = (c) => {
      this._feedParams(c, params);
      c.set_lr(lr);
      c.feed('x', x);
      c.feed('labels', ids);
    };
    if (backend === 'webgl') {
      return this._gpu(fn, backend, 'train', batch, (c) => {
        feed(c);
        c.run();
        return concatF32([c.output(0)[0], ...names.map((n) => c.read_param(n))]);
      });
    }
    return this._gpu(fn, backend, 'train', batch, async (c) => {
      feed(c);
      await c.run();
      const loss = c.output(0)[0];
      return concatF32([loss, ...await Promise.all(names.map((n) => c.read_param(n)))]);
    });
  }

  _gradsGpu(fn, backend, x, labels, params) {
    this._live(fn.slice('VisionBench.'.length));
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    const n = this._info.param_names.length;
    const feed = (c) => {
      this._feedParams(c, params);
      c.feed('x', x);
      c.feed('labels', ids);
    };
    // outputs: [loss, dL/dp for every param in order]
    const gather = (c) => concatF32(Array.from({ length: n + 1 }, (_, k) => c.output(k)));
    if (backend === 'webgl') return this._gpu(fn, backend, 'grads', batch, (c) => { feed(c); c.run(); return gather(c); });
    return this._gpu(fn, backend, 'grads', batch, async (c) => { feed(c); await c.run(); return gather(c); });
  }

  /**
   * bench_cpu on a GPU: params and batch set once, then `steps` training
   * steps with everything on the device.  Nothing is allocated before the
   * backend is known to run here and the graph for this batch compiled (the
   * executor checks the device's limits): params and batch are made in feed().
   */
  _benchGpu(fn, backend, steps, seedValue, lr, batch) {
    const rt = this._live(fn.slice('VisionBench.'.length));
    int(fn, 'steps', steps, 1, 1e9);
    seed(fn, seedValue);
    finite(fn, 'lr', lr);
    int(fn, 'batch', batch, 1, MAX_BATCH);
    requireBackend(fn, rt, backend);
    const feed = (c) => {
      const params = this.init_params(seedValue);
      const { x, labels } = this.synthetic_batch(seedValue, batch);
      this._feedParams(c, params);
      c.set_lr(lr);
      c.feed('x', x);
      c.feed('labels', labels);
    };
    const result = (first, last, t0) => Float32Array.of(first, last, steps / Math.max((performance.now() - t0) / 1000, 1e-9));
    if (backend === 'webgl') {
      return this._gpu(fn, backend, 'train', batch, (c) => {
        feed(c);
        let first = NaN;
        const t0 = performance.now();
        for (let i = 0; i < steps; i++) {
          c.run();
          if (i === 0) first = c.output(0)[0];
        }
        return result(first, c.output(0)[0], t0);
      });
    }
    return this._gpu(fn, backend, 'train', batch, async (c) => {
      feed(c);
      await c.prepare(); // pipelines and buffers before the clock starts
      let first = NaN;
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) {
        await c.run();
        if (i === 0) first = c.output(0)[0];
      }
      return result(first, c.output(0)[0], t0);
    });
  }

  /** forward_cpu on WebGPU: Promise of the logits [batch, num_classes]. */
  async forward_webgpu(x, params) {
    return this._forwardGpu('VisionBench.forward_webgpu', 'webgpu', x, params);
  }

  /** train_step_cpu on WebGPU (SGD on the device): Promise of [loss (before the step), updated params...]. */
  async train_step_webgpu(x, labels, params, lr) {
    return this._trainGpu('VisionBench.train_step_webgpu', 'webgpu', x, labels, params, lr);
  }

  /** bench_cpu on WebGPU, params resident on the device: Promise of [initial_loss, final_loss, steps_per_sec]. */
  async bench_webgpu(steps, seedValue, lr, batch = 1) {
    return this._benchGpu('VisionBench.bench_webgpu', 'webgpu', steps, seedValue, lr, batch);
  }

  /** grads_cpu on WebGPU: Promise of [loss, gradients...]. */
  async grads_webgpu(x, labels, params) {
    return this._gradsGpu('VisionBench.grads_webgpu', 'webgpu', x, labels, params);
  }

  /** grads_cpu on WebGL2 (synchronous): [loss, gradients...]. */
  grads_webgl(x, labels, params) {
    return this._gradsGpu('VisionBench.grads_webgl', 'webgl', x, labels, params);
  }

  /** forward_cpu on WebGL2 (synchronous): logits [batch, num_classes]. */
  forward_webgl(x, params) {
    return this._forwardGpu('VisionBench.forward_webgl', 'webgl', x, params);
  }

  /** train_step_cpu on WebGL2 (SGD on the device): [loss (before the step), updated params...]. */
  train_step_webgl(x, labels, params, lr) {
    return this._trainGpu('VisionBench.train_step_webgl', 'webgl', x, labels, params, lr);
  }

  /** bench_cpu on WebGL2, params resident on the device: [initial_loss, final_loss, steps_per_sec]. */
  bench_webgl(steps, seedValue, lr, batch = 1) {
    return this._benchGpu('VisionBench.bench_webgl', 'webgl', steps, seedValue, lr, batch);
  }

  /** Frees the GPU graphs and marks the handle unusable (the CPU sessions stay cached in C). */
  free() {
    this._sessions.clear();
    this._freed = true;
  }
}

/** Drops every compiled session cached by the model entry points. */
export function clear_cache() {
  live().exports.rlx_models_clear_cache();
  mlpSessions.clear();
}
