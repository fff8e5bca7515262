// lm_names.mjs - the seeded test language models (build/lm, make
// lm-fixtures) that the GPU tests load: one per architecture and weight
// type. The WebGPU logits checks take two halves of six, each with every
// architecture and every type: Dawn in Node runs one
// (tests/node/llm_webgpu.test.mjs), Chromium three of the other, one per
// architecture with three types (tests/browser/llm_gpu.test.mjs: the
// browser's share is the architectures in a real page; the types' shaders
// are Dawn's, the same in both).  WebGL2's, in Chromium only, takes half 0
// (every architecture and every type; each type's shaders are checked on
// WebGL2 by the op cases of tests/c/cases_llm.c too).
export const ARCHS = ['llama', 'qwen2', 'qwen3'];
export const TYPES = ['q8_0', 'q4_0', 'q4_k', 'f16'];
export const LM_NAMES = ARCHS.flatMap((a) => TYPES.map((t) => `${a}-${t}`));

/** Half k (0 or 1) of LM_NAMES: architecture i with type j where i + j has k's parity. */
export function lmHalf(k) {
  return ARCHS.flatMap((a, i) => TYPES.filter((t, j) => (i + j) % 2 === k).map((t) => `${a}-${t}`));
}

/** One model per architecture from half k, the architectures' types all different. */
export function lmHalfPerArch(k) {
  const used = new Set();
  return ARCHS.map((a, i) => {
    const mine = TYPES.filter((t, j) => (i + j) % 2 === k);
    const t = mine.find((x) => !used.has(x)) ?? mine[0];
    used.add(t);
    return `${a}-${t}`;
  });
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
