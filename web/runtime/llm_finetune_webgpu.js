// llm_finetune_webgpu.js - LoRA fine-tuning steps on WebGPU
// (./llm_finetune_gpu.js says what a step does): the fine-tuning object of
// the WebGPU training module (web/pkg/rlx_llm_train_gpu.wasm) compiles its
// step and loss for WebGPU (rlx_llm_finetune_webgpu) and ./webgpu.js runs
// them with every dispatch on the device (0 host steps: forward, backward
// and the optimizer).  All the sessions share one set of GPU buffers by
// param name (WebGpuSession's sharedParams): the model's weights (uploaded
// once, in their GGUF types), the pairs and the optimizer state, so a loss
// or a step of another batch size sees the last step's pairs.  A step
// reads back the loss only; the pairs come back on demand.
//
//   const { device } = await webGpuDevice(fn, options.gpu);   // ./llm_webgpu.js
//   const gpu = new LlmFinetuneWebGpu(mod, ft, device, seq);    // ft: rlx_llm_finetune_new's
//   const loss = await gpu.step(ids, targets, mask);            // whole windows of seq ids
//   const pairs = await gpu.readPairs();                        // [{ name, a, b }]
//   await gpu.syncToHost(); gpu.free();                         // before the object
import { RlxError } from './loader.js';
import { WebGpuSession, WebGpuUnavailableError } from './webgpu.js';
import { webGpuUnavailable } from './llm_webgpu.js';
import { LlmFinetuneGpu } from './llm_finetune_gpu.js';

export class LlmFinetuneWebGpu extends LlmFinetuneGpu {
  /** mod: the LlmModule of rlx_llm_train_gpu.wasm; ft: its fine-tuning object; device: a GPUDevice; seq: tokens per window. */
  constructor(mod, ft, device, seq) {
    super(mod, ft, seq);
    this.device = device;
    this.shared = new Map(); // param name -> GPUBuffer: weights, pairs, optimizer state; one set
    this.lost = null;
    device.lost?.then((info) => { this.lost = info; });
  }

  compile(n, kind) {
    return this.mod.call('rlx_llm_finetune_webgpu', this.ft, n, kind);
  }

  async prepare(ptr, train, made) {
    const s = new WebGpuSession(this.mod.e, ptr, this.device, { sharedParams: this.shared });
    made(s);
    return s.prepare();
  }

  async adopt() {} // one set of buffers: nothing to copy

  gpuError(err) {
    if (err instanceof RlxError) return err;
    const reason = err instanceof WebGpuUnavailableError ? err.reason : this.lost ? 'device-lost' : 'gpu-error';
    const wrapped = webGpuUnavailable('finetune', err?.message ?? String(err), reason);
    wrapped.cause = err;
    return wrapped;
  }

  freeShared() {
    for (const b of this.shared.values()) b.destroy();
    this.shared.clear();
  }
}
