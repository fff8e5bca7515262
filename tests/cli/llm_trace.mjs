// llm_trace.mjs - the teacher-forced comparison with llama.cpp that
// llm_ref.mjs and llm_lora_ref.mjs share: after a prompt and after each of
// llama.cpp's greedy tokens (a generate[] case of tests/llama_ref/expected),
// build/rlx next-tokens gives our best token, the runner-up and their
// margin; ours must be llama.cpp's wherever llama.cpp's top-2 margin
// exceeds what rounding can flip, and our margins must follow llama.cpp's
// (median difference bounded).
//
// The bounds per weight type come from how llama.cpp computes: f32 exactly;
// f16 and bf16 weights with the activations rounded to f16 / bf16; quantized
// weights with the activations quantized to 8 bits (we keep f32
// activations), which moves a margin by about 0.2-0.4 logits on these
// models (the same shift as quantizing the weights to q8_0).
import { execFileSync } from 'node:child_process';

// [margin a flip is allowed below, largest median margin difference]
export const BOUNDS = {
  f32: [0.1, 0.03], f16: [0.1, 0.05], bf16: [0.5, 0.15], quantized: [2.0, 0.6],
  // rlx export-gguf's transformer: small weights, so margins of 0.01-0.3 logits.
  'transformer-f32': [0.002, 0.0005], 'transformer-q8_0': [0.03, 0.01],
};
export const MIN_COMPARED = 0.6; // of the steps, at least this share must be decided by the margin

// The bounds of a fixture by its name ("qwen2-q8_0": its weight type).
export const boundsFor = (name) => BOUNDS[name] ?? BOUNDS[name.split('-').pop()] ?? BOUNDS.quantized;

export const runRlx = (rlx, args) =>
  execFileSync(rlx, args, { encoding: 'utf8', maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'pipe'] });
export const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// Our [best, second, margin] after g's prompt and each of its tokens but the last.
export function nextTokens(rlx, model, g, extra = []) {
  return runRlx(rlx, ['next-tokens', '--model', model, '--ids', g.prompt_ids.join(','),
    '--follow', g.ids.slice(0, -1).join(','), ...extra]).trim().split('\n').map((l) => l.split(' ').map(Number));
}

// Every generate[] case of ref against ours (extra: more next-tokens
// arguments); fail(message) for each disagreement.  Returns the counts:
// steps, compared (llama.cpp's margin above flipBelow), flips (llama.cpp's
// margins where ours chose otherwise below it) and the median margin
// difference (checked against medianMax here).
export function teacherForced(rlx, model, ref, [flipBelow, medianMax], fail, extra = []) {
  let steps = 0, compared = 0;
  const flips = [], diffs = [];
  for (const g of ref.generate) {
    const out = nextTokens(rlx, model, g, extra);
    if (out.length !== g.ids.length) fail(`next-tokens gave ${out.length} steps for ${g.ids.length}`);
    out.forEach(([best, second, margin], i) => {
      steps++;
      if (g.gap[i] === null) return;
      if (g.gap[i] > flipBelow) {
        compared++;
        if (best !== g.ids[i]) fail(`prompt ${JSON.stringify(g.prompt)} step ${i}: ${best} != llama.cpp ${g.ids[i]} (its margin ${g.gap[i]})`);
      } else if (best !== g.ids[i]) flips.push(g.gap[i]);
      if (best === g.ids[i] && second === g.second[i]) diffs.push(Math.abs(margin - g.gap[i]));
    });
  }
  const med = diffs.length ? median(diffs) : Infinity;
  if (compared < MIN_COMPARED * steps) fail(`only ${compared} of ${steps} steps had a margin above ${flipBelow}`);
  if (!(med <= medianMax)) fail(`median margin difference ${med.toFixed(4)} > ${medianMax}`);
  return { steps, compared, flips, med };
}
