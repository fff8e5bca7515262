// llm_webgpu.js - a GGUF model's steps on WebGPU, for loadGguf's backend
// 'webgpu' (./llm.js).  The model is loaded by the WebGPU build of the
// language-model module (web/pkg/rlx_llm_gpu.wasm: src/web_llm_gpu/), which
// compiles each step (64, 16, 4 or 1 tokens) for WebGPU with its params
// bound to the model's weights and KV cache; ./webgpu.js runs the step
// plans.  The plans share one set of GPU buffers for the weights (uploaded
// once, in their GGUF types: the kernels decode the blocks in place) and
// the KV cache (written in place by attention_kv), through WebGpuSession's
// sharedParams.  A step is one command buffer: ids and pos written, every
// dispatch, the logits copied out and read back (for the last step of an
// eval only: the steps before it are submitted one after the other).  Sampling stays in C: the
// logits go back to the module (rlx_llm_set_logits) and the generator
// samples them as it does the CPU's.
//
//   const { device, software } = await webGpuDevice(fn, options.gpu);
//   const steps = new LlmWebGpu(mod, handle, device, info);
//   const logits = await steps.eval(ids);   // at the model's position; advances it
//   steps.free();                           // before the model
import { RlxError } from './loader.js';
import { WebGpuSession, WebGpuUnavailableError } from './webgpu.js';
import { softwareAdapter } from './backends.js';

const STATUS = { INVALID_ARG: -1, UNSUPPORTED: -6 };

/** An RlxError for a WebGPU that cannot run the model here; reason 'unavailable' (or the executor's). */
export function webGpuUnavailable(fn, why, reason = 'unavailable') {
  const err = new RlxError(STATUS.UNSUPPORTED, `${fn}: WebGPU cannot run the model here: ${why}`, 'unsupported');
  err.reason = reason;
  return err;
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
export class LlmWebGpu {
  /** mod: the LlmModule of rlx_llm_gpu.wasm; handle: the model; info: the model's info (nCtx, nVocab). */
  constructor(mod, handle, device, info) {
    this.mod = mod;
    this.handle = handle;
    this.device = device;
    this.nCtx = info.nCtx;
    this.nVocab = info.nVocab;
    this.sizes = [];
    for (let k = 0; mod.call('rlx_llm_step_tokens', k) > 0; k++) this.sizes.push(mod.call('rlx_llm_step_tokens', k));
    this.steps = this.sizes.map(() => null); // Promise<WebGpuSession> per step size, made on first use
    this.sessions = [];                      // the WebGpuSessions made
    this.pointers = [];                      // the C sessions, freed with the model
    this.shared = new Map();                 // param name -> GPUBuffer: weights and caches, one set
    this.lost = null;
    device.lost?.then((info2) => { this.lost = info2; });
  }

  /** The session of step k (compiled and prepared on first use). */
  step(fn, k) {
    if (!this.steps[k]) {
      const m = this.mod;
      const ptr = m.call('rlx_llm_webgpu_step', this.handle, k) >>> 0;
      if (!ptr) m.check(STATUS.UNSUPPORTED, `${fn}: compiling the ${this.sizes[k]}-token step for WebGPU: `);
      this.pointers.push(ptr);
      this.steps[k] = (async () => {
        try {
          const s = new WebGpuSession(m.e, ptr, this.device, { sharedParams: this.shared });
          this.sessions.push(s);
          return await s.prepare();
        } catch (err) {
          throw this.gpuError(fn, err);
        }
      })();
      this.steps[k].catch(() => { this.steps[k] = null; });
    }
    return this.steps[k];
  }

  /** Compiles and prepares the decoding step now (uploads the weights): load time, not the first token's. */
  async warm(fn) {
    await this.step(fn, this.sizes.length - 1);
  }

  gpuError(fn, err) {
    if (err instanceof RlxError) return err;
    const reason = err instanceof WebGpuUnavailableError ? err.reason : this.lost ? 'device-lost' : 'gpu-error';
    const wrapped = webGpuUnavailable(fn, err?.message ?? String(err), reason);
    wrapped.cause = err;
    return wrapped;
  }

  /**
   * Evaluates ids at the model's position in steps of the compiled sizes
   * (largest first), hands the last logits to the module (which advances
   * the position) and returns them (a Float32Array of nVocab).
   */
  async eval(fn, ids) {
    const m = this.mod;
    const pos0 = m.call('rlx_llm_position', this.handle);
    const n = ids.length;
    if (n > this.nCtx - pos0) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${n} tokens at position ${pos0} do not fit the context of ${this.nCtx} tokens`,
        'invalid argument');
    }
    let done = 0;
    let logits = null;
    while (done < n) {
      const k = this.sizes.findIndex((size) => size <= n - done);
      const size = this.sizes[k];
      const s = await this.step(fn, k);
      const last = done + size === n; // only the last step's logits are read back
      try {
        const out = await s.run({ ids: Int32Array.from(ids.slice(done, done + size)), pos: Int32Array.of(pos0 + done) },
          { read: last });
        if (last) [logits] = out;
      } catch (err) {
        throw this.gpuError(fn, err);
      }
      done += size;
    }
    m.scoped((t) => {
      const p = t.alloc(4 * this.nVocab);
      new Float32Array(m.memory.buffer, p, this.nVocab).set(logits.subarray(0, this.nVocab));
      m.check(m.call('rlx_llm_set_logits', this.handle, p, n), `${fn}: `);
    });
    return logits;
  }

  /**
   * Frees the GPU sessions, the shared buffers and the C sessions (before
   * the model; never while a step runs: GgufModel waits for its eval or
   * generation to end).
   */
  free() {
    for (const s of this.sessions) s.free();
    this.sessions = [];
    this.steps = this.sizes.map(() => null);
    for (const b of this.shared.values()) b.destroy();
    this.shared.clear();
    if (!this.mod.dead) for (const p of this.pointers) this.mod.call('rlx_llm_session_free', p);
    this.pointers = [];
  }
}
