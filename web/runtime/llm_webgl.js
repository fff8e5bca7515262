// llm_webgl.js - a GGUF model's steps on WebGL2, for loadGguf's backend
// 'webgl' (./llm.js).  The model is loaded by the WebGL2 build of the
// language-model module (web/pkg/rlx_llm_webgl.wasm: src/web_llm_gpu/),
// which compiles each step (64, 16, 4 or 1 tokens) for WebGL2 with textures
// up to the context's MAX_TEXTURE_SIZE wide and its params bound to the
// model's weights and KV cache; ./webgl.js draws the step plans
// (./llm_gpu_steps.js: the steps, eval and the logits handed back to the
// module, shared with WebGPU).  Every step draws with one WebGL2 context
// and one set of textures for the weights (words textures: the file's bytes,
// uploaded once; the shaders decode the GGUF blocks in place) and the KV
// cache (f32 textures that attention_kv writes in place, so every step
// size must draw into the same ones), through WebGlSession's
// sharedTextures.  A step draws its passes, and only the last step of an
// eval reads its logits back (readPixels).  Works on a page and in a
// dedicated Worker (OffscreenCanvas).
//
//   const { gl, software, maxTextureSize } = webGlContext(fn);
//   const steps = new LlmWebGl(mod, handle, gl, info);
//   const logits = await steps.eval(fn, ids);   // at the model's position; advances it
//   steps.gpuBytes();                            // { weights, cache, steps, total }: texture bytes
//   steps.free();                                // before the model; gives the context back
import { RlxError } from './loader.js';
import { createWebGlSession, WebGlUnavailableError, CONTEXT_ATTRIBUTES } from './webgl.js';
import { softwareWebGl } from './backends.js';
import { LlmGpuSteps, gpuUnavailable } from './llm_gpu_steps.js';

/** An RlxError for a WebGL2 that cannot run the model here; reason 'unavailable' (or the executor's). */
export function webGlUnavailable(fn, why, reason = 'unavailable') {
  return gpuUnavailable('WebGL2', fn, why, reason);
}

/**
 * A WebGL2 context of its own for a model's steps (an OffscreenCanvas,
 * else a <canvas>): { gl, software, maxTextureSize } (software: the
 * rasterizer's name for a software renderer such as SwiftShader, else
 * null; with acceptSoftware false such a context is given back: gl null).
 * Throws webGlUnavailable() without WebGL2 or float render targets
 * (EXT_color_buffer_float).
 */
export function webGlContext(fn, acceptSoftware = true) {
  const canvas = typeof OffscreenCanvas === 'function' ? new OffscreenCanvas(1, 1) : globalThis.document?.createElement('canvas');
  if (!canvas) throw webGlUnavailable(fn, 'WebGL2 is not available here (no OffscreenCanvas or document)');
  let gl = null;
  try {
    gl = canvas.getContext('webgl2', CONTEXT_ATTRIBUTES);
  } catch (err) {
    throw webGlUnavailable(fn, `getContext("webgl2") failed: ${err?.message ?? err}`);
  }
  if (!gl) throw webGlUnavailable(fn, 'WebGL2 is not available here (getContext("webgl2") gave null)');
  const giveBack = () => gl.getExtension('WEBGL_lose_context')?.loseContext();
  if (!gl.getExtension('EXT_color_buffer_float')) {
    giveBack();
    throw webGlUnavailable(fn, 'EXT_color_buffer_float is not supported here, so WebGL2 cannot render into float textures');
  }
  const software = softwareWebGl(gl);
  if (software && !acceptSoftware) {
    giveBack();
    return { gl: null, software, maxTextureSize: 0 };
  }
  return { gl, software, maxTextureSize: gl.getParameter(gl.MAX_TEXTURE_SIZE) };
}

const TEXEL_BYTES = { R32F: 4, RGBA32F: 16, RGBA32I: 16 };

function textureBytes(t) {
  return t.width * t.height * (t.layers > 1 ? 16 * t.layers : t.words ? 16 : t.packed || t.v4 ? 16 : 4);
}

/** The step plans of one model on one WebGL2 context (see the top of this file). */
export class LlmWebGl extends LlmGpuSteps {
  /** mod: the LlmModule of rlx_llm_webgl.wasm; handle: the model; gl: its context (the steps' own); info: nCtx, nVocab. */
  constructor(mod, handle, gl, info) {
    super(mod, handle, info);
    this.gl = gl;
    this.maxTextureSize = gl.getParameter(gl.MAX_TEXTURE_SIZE);
    this.shared = new Map(); // param name -> { texture, width, height, format }: weights and caches, one set
  }

  compile(k) {
    return this.mod.call('rlx_llm_webgl_step', this.handle, k, this.maxTextureSize);
  }

  session(fn, ptr) {
    return createWebGlSession(this.mod.e, ptr, { gl: this.gl, sharedTextures: this.shared });
  }

  gpuError(fn, err) {
    if (err instanceof RlxError) return err;
    const reason = err instanceof WebGlUnavailableError ? err.reason : this.gl.isContextLost() ? 'context-lost' : 'gpu-error';
    const wrapped = webGlUnavailable(fn, err?.message ?? String(err), reason);
    wrapped.cause = err;
    return wrapped;
  }

  /**
   * GPU memory of the textures made so far, in bytes: weights (words
   * textures and the f32 norm weights and biases), cache (the KV cache
   * textures), steps (per step size made: its own textures, the
   * activations, scores and logits) and their total.
   */
  gpuBytes() {
    let weights = 0, cache = 0;
    for (const [name, e] of this.shared) {
      const bytes = e.width * e.height * TEXEL_BYTES[e.format];
      if (name.startsWith('cache.')) cache += bytes; else weights += bytes;
    }
    const steps = {};
    for (const s of this.sessions) {
      if (!s.plan) continue;
      const own = s.plan.textures.reduce((sum, t, i) => sum + (s.shared.has(i) ? 0 : textureBytes(t)), 0);
      steps[s.plan.inputs.find((x) => x.name === 'ids').count] = own;
    }
    const total = weights + cache + Object.values(steps).reduce((a, b) => a + b, 0);
    return { weights, cache, steps, total };
  }

  freeShared() {
    const { gl } = this;
    if (!gl.isContextLost()) for (const e of this.shared.values()) gl.deleteTexture(e.texture);
    this.shared.clear();
    gl.getExtension('WEBGL_lose_context')?.loseContext(); // browsers cap live contexts
  }
}
