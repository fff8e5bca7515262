// llm_finetune_webgl.js - LoRA fine-tuning steps on WebGL2
// (./llm_finetune_gpu.js says what a step does): the fine-tuning object of
// the WebGL2 training module (web/pkg/rlx_llm_train_webgl.wasm) compiles its
// step and loss for WebGL2 with textures at most the context's
// MAX_TEXTURE_SIZE wide (rlx_llm_finetune_webgl) and ./webgl.js draws them
// (forward, backward and the optimizer as render passes).  All the
// sessions share one set of param textures by name (WebGlSession's
// sharedTextures: the model's weights as words textures, the pairs and the
// optimizer state, which a step's copy passes update in place), so a loss or
// a step of another batch size sees the last step's pairs.  A step reads
// back the loss only.
//
//   const { gl } = webGlContext(fn);                               // ./llm_webgl.js
//   const gpu = new LlmFinetuneWebGl(mod, ft, gl, seq);
//   const loss = await gpu.step(ids, targets, mask);
//   const pairs = await gpu.readPairs(); gpu.free();               // before the object
import { RlxError } from './loader.js';
import { createWebGlSession, WebGlUnavailableError } from './webgl.js';
import { webGlUnavailable } from './llm_webgl.js';
import { LlmFinetuneGpu } from './llm_finetune_gpu.js';

export class LlmFinetuneWebGl extends LlmFinetuneGpu {
  /** mod: the LlmModule of rlx_llm_train_webgl.wasm; ft: its fine-tuning object; gl: a WebGL2 context; seq: tokens per window. */
  constructor(mod, ft, gl, seq) {
    super(mod, ft, seq);
    this.gl = gl;
    this.maxTextureSize = gl.getParameter(gl.MAX_TEXTURE_SIZE);
    this.shared = new Map(); // param name -> { texture, width, height, format }: weights, pairs, optimizer state
  }

  compile(n, kind) {
    return this.mod.call('rlx_llm_finetune_webgl', this.ft, n, kind, this.maxTextureSize);
  }

  async prepare(ptr, train, made) {
    const s = createWebGlSession(this.mod.e, ptr, { gl: this.gl, sharedTextures: this.shared });
    made(s);
    return s;
  }

  async adopt() {} // one set of textures: nothing to copy

  gpuError(err) {
    if (err instanceof RlxError) return err;
    const reason = err instanceof WebGlUnavailableError ? err.reason : this.gl.isContextLost() ? 'context-lost' : 'gpu-error';
    const wrapped = webGlUnavailable('finetune', err?.message ?? String(err), reason);
    wrapped.cause = err;
    return wrapped;
  }

  freeShared() {
    const { gl } = this;
    if (!gl.isContextLost()) for (const e of this.shared.values()) gl.deleteTexture(e.texture);
    this.shared.clear();
  }
}
