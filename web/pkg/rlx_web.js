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
// compatibility layer: a thin shim over the runtime modules, where the work
// is done with the backend as a parameter (../runtime/instance.js: init and
// the fatal-error hook; ../runtime/select.js: backends; ../runtime/models.js:
// the MLP and the transformer; ../runtime/vision.js: the vision models).
// The documented way in is the SDK (../rlx.js, from ../rlx.ts), over the
// same runtime modules.
//
// Every entry point runs synchronously on the CPU executor in wasm; the C
// side caches one compiled session per shape, so repeated calls do not
// recompile.  GPU variants (mlp_forward_gpu / mlp_grads_gpu and
// VisionBench.*_webgpu: Promises, after `await init_webgpu()`;
// mlp_*_webgl and VisionBench.*_webgl: synchronous, WebGL2 initialising
// itself on first use) give the same results within 1e-4 and cache their compiled
// graphs the same way; when the GPU cannot do the work (not initialized, no
// adapter, a lost device or context, a limit) they throw an RlxError saying
// why, so the caller can fall back to the CPU variant.  Arguments are
// checked (../runtime/args.js) before anything reaches wasm: a bad one
// throws an RlxError (an Error) whose message names the function, the
// argument and what was expected; errors found by the library carry its
// rlx_last_error() text.  A trap inside wasm (which the library is written
// never to do) is reported on console.error, the instance is discarded, and
// the next `await init()` loads a fresh one.
//
// Describing a model in code: WebGraph (../runtime/webgraph.js) builds a
// graph op by op and compiles it (compile_forward / compile_backward) for
// 'cpu', 'webgpu', 'webgl' or 'auto'; backend_candidates / select_backend
// (../runtime/select.js over ../runtime/backends.js) say which backend runs a model or graph here and
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
// WebGraph is the one graph API.  ../runtime/loader.js's Graph / Session,
// the thin binding of the C exports that WebGraph is built on, is internal
// and not exported; runtime() gives the loaded module's version(), simd,
// threads, threadsWhy and gemmPath().  init({ threads }) takes the threaded
// build where it can run (../runtime/threads.js); free() drops the instance
// and stops its Workers.
import { init } from '../runtime/instance.js';
import { VisionBench as Bench } from '../runtime/vision.js';
import { mlpForward, mlpGrads } from '../runtime/models.js';

export { RlxError } from '../runtime/loader.js';
export { CompiledGraph } from '../runtime/webgraph.js';
export { start, runtime, free } from '../runtime/instance.js';
export {
  backend, parse_backend, preferred_backend, init_webgpu, init_webgl, backend_environment,
  backend_candidates, select_backend,
} from '../runtime/select.js';
export { list_vision_models, vision_model_info, WebGraph } from '../runtime/vision.js';
export { mlp_loss, mlp_train_step, transformer_next_logits, transformer_logits, clear_cache } from '../runtime/models.js';
export default init;

/** y = relu(x W1 + b1) W2 + b2 for every row of x (rows = x.length / in). */
export function mlp_forward(x, inDim, hid, out, w1, b1, w2, b2) {
  return mlpForward('cpu', x, inDim, hid, out, w1, b1, w2, b2);
}

/** [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGrads('cpu', x, t, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_forward on WebGPU (after `await init_webgpu()` resolved true): the same values within 1e-4. */
export async function mlp_forward_gpu(x, inDim, hid, out, w1, b1, w2, b2) {
  return mlpForward('webgpu', x, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_grads on WebGPU: [loss, dw1..., db1..., dw2..., db2...]. */
export async function mlp_grads_gpu(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGrads('webgpu', x, t, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_forward on WebGL2 (initialised on first use), synchronous. */
export function mlp_forward_webgl(x, inDim, hid, out, w1, b1, w2, b2) {
  return mlpForward('webgl', x, inDim, hid, out, w1, b1, w2, b2);
}

/** mlp_grads on WebGL2, synchronous: [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads_webgl(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return mlpGrads('webgl', x, t, inDim, hid, out, w1, b1, w2, b2);
}

/**
 * ../runtime/vision.js's VisionBench with the backend in the method name:
 * forward_cpu / forward_webgpu (a Promise) / forward_webgl, and the same for
 * train_step_*, grads_* and bench_*.
 */
export class VisionBench extends Bench {
  forward_cpu(x, params) { return this.forward('cpu', x, params); }
  train_step_cpu(x, labels, params, lr) { return this.train_step('cpu', x, labels, params, lr); }
  grads_cpu(x, labels, params) { return this.grads('cpu', x, labels, params); }
  bench_cpu(steps, seed, lr, batch = 1) { return this.bench('cpu', steps, seed, lr, batch); }
  async forward_webgpu(x, params) { return this.forward('webgpu', x, params); }
  async train_step_webgpu(x, labels, params, lr) { return this.train_step('webgpu', x, labels, params, lr); }
  async grads_webgpu(x, labels, params) { return this.grads('webgpu', x, labels, params); }
  async bench_webgpu(steps, seed, lr, batch = 1) { return this.bench('webgpu', steps, seed, lr, batch); }
  forward_webgl(x, params) { return this.forward('webgl', x, params); }
  train_step_webgl(x, labels, params, lr) { return this.train_step('webgl', x, labels, params, lr); }
  grads_webgl(x, labels, params) { return this.grads('webgl', x, labels, params); }
  bench_webgl(steps, seed, lr, batch = 1) { return this.bench('webgl', steps, seed, lr, batch); }
}
