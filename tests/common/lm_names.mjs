// lm_names.mjs - the seeded test language models (build/lm, make
// lm-fixtures) that the GPU tests load: one per architecture and weight
// type. The WebGPU logits checks split them in two halves of six, each with
// every architecture and every type: Dawn in Node takes one
// (tests/node/llm_webgpu.test.mjs), Chromium the other
// (tests/browser/llm_gpu.test.mjs), on the same shaders.
export const ARCHS = ['llama', 'qwen2', 'qwen3'];
export const TYPES = ['q8_0', 'q4_0', 'q4_k', 'f16'];
export const LM_NAMES = ARCHS.flatMap((a) => TYPES.map((t) => `${a}-${t}`));

/** Half k (0 or 1) of LM_NAMES: architecture i with type j where i + j has k's parity. */
export function lmHalf(k) {
  return ARCHS.flatMap((a, i) => TYPES.filter((t, j) => (i + j) % 2 === k).map((t) => `${a}-${t}`));
}

/**
 * The fine-tuning cases on the GPUs ([model, optimizer]): every
 * architecture in f32 and q8_0, with AdamW and SGD between them.  Dawn
 * takes the even ones (tests/node/llm_finetune_webgpu.test.mjs), Chromium
 * the odd ones on WebGPU and all of them on WebGL2
 * (tests/browser/llm_finetune_gpu.test.mjs).
 */
export const FT_GPU_CASES = [
  ['llama-f32', 'adamw'], ['llama-q8_0', 'sgd'], ['qwen2-q8_0', 'adamw'],
  ['qwen2-f32', 'sgd'], ['qwen3-q8_0', 'sgd'], ['qwen3-f32', 'adamw'],
];
