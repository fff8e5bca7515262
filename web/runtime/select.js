// select.js - which backend runs what: the backend names and aliases
// (parse_backend), what the environment offers (preferred_backend,
// backend_environment), bringing up the GPU backends (init_webgpu,
// init_webgl), and the model-aware choice (backend_candidates,
// select_backend) over the rules of ./backends.js, for a vision model or a
// WebGraph.
import { optionsArg } from './loader.js';
import { WebGraph as GraphBase, selectCompiled } from './webgraph.js';
import * as backends from './backends.js';
import { initTried } from './gpu_entry.js';
import { init, loaded } from './instance.js';
import { WebGraph, vision_model_info } from './vision.js';
import { fail, describe, str } from './args.js';

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
  return backends.environment(loaded(), { refresh });
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

