// llm_webgpu.js - a GGUF model's steps on WebGPU, for loadGguf's backend
// 'webgpu' (./llm.js).  The model is loaded by the WebGPU build of the
// language-model module (web/pkg/rlx_llm_gpu.wasm: src/web_llm_gpu/), which
// compiles each step (64, 16, 4 or 1 tokens) for WebGPU with its params
// bound to the model's weights and KV cache; ./webgpu.js runs the step
// plans (./llm_gpu_steps.js: the steps, eval and the logits handed back to
// the module, shared with WebGL2).  The plans share one set of GPU buffers
// for the weights (uploaded once, in their GGUF types: the kernels decode
// the blocks in place) and the KV cache (written in place by attention_kv),
// through WebGpuSession's sharedParams.  A step is one command buffer: ids
// and pos written, every dispatch, the logits copied out and read back (for
// the last step of an eval only: the steps before it are submitted one
// after the other).
//
//   const { device, software } = await webGpuDevice(fn, options.gpu);
//   const steps = new LlmWebGpu(mod, handle, device, info);
//   const logits = await steps.eval(ids);   // at the model's position; advances it
//   const dec = steps.greedy(fn, id, pos, n); // greedy tokens decoded on the GPU (./llm_gpu_greedy.js)
//   steps.free();                           // before the model
import { RlxError } from './loader.js';
import { WebGpuSession, WebGpuUnavailableError } from './webgpu.js';
import { softwareAdapter } from './backends.js';
import { LlmGpuSteps, gpuUnavailable } from './llm_gpu_steps.js';
import { GreedyDecoder, greedyKernel } from './llm_gpu_greedy.js';

/** An RlxError for a WebGPU that cannot run the model here; reason 'unavailable' (or the executor's). */
export function webGpuUnavailable(fn, why, reason = 'unavailable') {
  return gpuUnavailable('WebGPU', fn, why, reason);
}

function isDevice(x) {
  return !!x && typeof x === 'object' && typeof x.createBuffer === 'function';
}

/**
 * The device a model's steps run on: source a GPUDevice (used as it is), a
 * GPU (navigator.gpu-like, e.g. npm `webgpu`'s create([]) in Node) or
 * undefined (navigator.gpu).  Resolves to { device, software } (software:
 * the rasterizer's name for a software adapter such as SwiftShader, else
 * null; with acceptSoftware false such an adapter gets no device: device
 * null); throws webGpuUnavailable() when there is none.  The device gets the
 * adapter's largest buffer limits (a model's weights are large buffers).
 */
export async function webGpuDevice(fn, source, acceptSoftware = true) {
  if (isDevice(source)) {
    const software = softwareAdapter(source);
    return { device: software && !acceptSoftware ? null : source, software };
  }
  const gpu = source ?? globalThis.navigator?.gpu;
  if (!gpu || typeof gpu.requestAdapter !== 'function') throw webGpuUnavailable(fn, 'WebGPU is not available here (no navigator.gpu)');
  let adapter;
  try {
    adapter = await gpu.requestAdapter();
  } catch (err) {
    throw webGpuUnavailable(fn, `requestAdapter failed: ${err?.message ?? err}`);
  }
  if (!adapter) throw webGpuUnavailable(fn, 'no GPU adapter is available');
  let software = softwareAdapter(adapter);
  if (!software && !adapter.info && typeof adapter.requestAdapterInfo === 'function') {
    software = softwareAdapter(await adapter.requestAdapterInfo().catch(() => null));
  }
  if (software && !acceptSoftware) return { device: null, software };
  const requiredLimits = {};
  for (const name of ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxStorageBuffersPerShaderStage']) {
    if (adapter.limits?.[name] !== undefined) requiredLimits[name] = adapter.limits[name];
  }
  try {
    return { device: await adapter.requestDevice({ requiredLimits }), software };
  } catch (err) {
    throw webGpuUnavailable(fn, `requestDevice failed: ${err?.message ?? err}`);
  }
}

/** The step plans of one model on one device (see the top of this file). */
export class LlmWebGpu extends LlmGpuSteps {
  /**
   * mod: the LlmModule of rlx_llm_gpu.wasm; handle: the model; info: the
   * model's info (nCtx, nVocab); fuse: the fused step graphs (the norms in
   * the products, the rotations in attention_kv: a third fewer dispatches,
   * for a hardware GPU) or the plain ones (a software adapter such as
   * SwiftShader, where the fused kernels' extra arithmetic costs more than
   * the dispatches it saves: 0.9 against 1.3 tokens/s on bench/llm_webgpu.mjs's
   * quick model).
   */
  constructor(mod, handle, device, info, fuse = true) {
    super(mod, handle, info);
    this.device = device;
    this.shared = new Map(); // param name -> GPUBuffer: weights and caches, one set
    this.external = new Map(); // the streamed weights and caches (llm_gpu_stream.js), kept across free()
    this.lost = null;
    this.argmax = null; // the greedy kernel (./llm_gpu_greedy.js), made on first use
    this.fuse = fuse; // which step graphs compile() makes (src/models/llm_graph.c)
    device.lost?.then((info2) => { this.lost = info2; });
  }

  /** Greedy tokens decoded on the GPU after firstId at position pos, at most limit of them: a GreedyDecoder. */
  greedy(fn, firstId, pos, limit) {
    return new GreedyDecoder(this, fn, firstId, pos, limit);
  }

  greedyKernel(session) {
    this.argmax ??= greedyKernel(this, session);
    return this.argmax;
  }

  compile(k) {
    return this.mod.call('rlx_llm_webgpu_step', this.handle, k, this.fuse ? 1 : 0);
  }

  session(fn, ptr) {
    return new WebGpuSession(this.mod.e, ptr, this.device, { sharedParams: this.shared });
  }

  gpuError(fn, err) {
    if (err instanceof RlxError) return err;
    const reason = err instanceof WebGpuUnavailableError ? err.reason : this.lost ? 'device-lost' : 'gpu-error';
    const wrapped = webGpuUnavailable(fn, err?.message ?? String(err), reason);
    wrapped.cause = err;
    return wrapped;
  }

  /** Takes the buffers a streamed model's file was written to (Map param name -> GPUBuffer): the steps' weights and caches. */
  adopt(buffers) {
    this.external = buffers;
    for (const [name, b] of buffers) this.shared.set(name, b);
  }

  freeShared() {
    this.argmax?.destroy();
    this.argmax = null;
    for (const [name, b] of this.shared) if (this.external.get(name) !== b) b.destroy();
    this.shared = new Map(this.external); // steps compiled again find the streamed weights (there is no other copy)
  }

  /** Destroys the streamed buffers too (the model's release, after free()). */
  dispose() {
    for (const b of this.external.values()) b.destroy();
    this.external = new Map();
    this.shared = new Map();
  }
}
