// lora_cases.mjs - the LoRA cases compared with llama.cpp: a test model of
// build/lm with seeded adapters made for it by `rlx make-lora` (the same
// bytes wherever they are made: splitmix64 values, IEEE arithmetic), each
// applied with a scale.  Every case adapts attention and feed-forward
// weights; the two-adapter cases cover all seven targets, f32 and f16.
// The finetuned cases' adapters are trained by `rlx finetune` on
// tests/llm/corpus.txt (seeded; float sums of another order on another
// CPU move them by rounding only, which the comparison's bounds absorb):
// the files our fine-tuning writes load in llama.cpp and mean the same.
// The merged cases fold their adapters into a copy of the model with `rlx
// export-lora --type MERGE` (auto: llama-export-lora's f16 weights; same:
// q8_0 again), and both runtimes run that file without adapters: the files
// export-lora writes load in llama.cpp and mean what the adapters do.
// tests/llama_ref/reference.mjs --lora-case NAME writes llama.cpp's greedy
// traces (expected_lora/NAME.json, which records its case), and
// tests/cli/llm_lora_ref.mjs compares ours; a case changed here without
// `make llama-ref` fails there as stale.
//
//   node tests/llama_ref/lora_cases.mjs    prints the case names
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// scale * alpha / rank = 1 in each: products moved as much as training would.
const ATTN_FFN = { targets: 'attn_q,attn_v,ffn_down', rank: 4, alpha: 8, scale: 0.5 };
const REST = { targets: 'attn_k,attn_output,ffn_gate,ffn_up', rank: 2, alpha: 4, scale: 0.5 };

export const LORA_CASES = [
  ...['llama', 'qwen2', 'qwen3'].flatMap((arch, i) => [
    { name: `${arch}-f32`, model: `${arch}-f32`, adapters: [{ ...ATTN_FFN, seed: i + 1, type: 'f32' }] },
    { name: `${arch}-q8_0`, model: `${arch}-q8_0`, adapters: [{ ...ATTN_FFN, seed: i + 4, type: 'f16' }] },
  ]),
  { name: 'qwen2-f32-two', model: 'qwen2-f32',
    adapters: [{ ...ATTN_FFN, seed: 4, type: 'f32' }, { ...REST, seed: 5, type: 'f32', scale: 0.75 }] },
  { name: 'llama-q8_0-two', model: 'llama-q8_0',
    adapters: [{ ...ATTN_FFN, seed: 6, type: 'f16' }, { ...REST, seed: 7, type: 'f16', scale: 0.75 }] },
  ...['llama-f32', 'qwen3-q8_0'].map((model, i) => ({ name: `${model}-finetuned`, model,
    adapters: [{ ...ATTN_FFN, seed: 8 + i, scale: 1, finetune: { seq: 32, batch: 4, steps: 30, lr: 3e-3 } }] })),
  { name: 'llama-q8_0-merged', model: 'llama-q8_0', merge: 'auto',
    adapters: [{ ...ATTN_FFN, seed: 10, type: 'f16' }, { ...REST, seed: 11, type: 'f32', scale: 0.75 }] },
  { name: 'qwen3-q8_0-merged-same', model: 'qwen3-q8_0', merge: 'same',
    adapters: [{ ...ATTN_FFN, seed: 12, type: 'f32' }] },
];

const corpus = path.join(path.dirname(fileURLToPath(import.meta.url)), '../llm/corpus.txt');

// The command line that writes adapter a of a case to file.
const adapterCommand = (model, a, file) => (a.finetune
  ? ['finetune', '--model', model, '--data', corpus, '--out', file, '--targets', a.targets, '--rank', String(a.rank),
    '--alpha', String(a.alpha), '--seed', String(a.seed),
    ...Object.entries(a.finetune).flatMap(([k, v]) => [`--${k}`, String(v)])]
  : ['make-lora', '--model', model, '--out', file, '--targets', a.targets, '--rank', String(a.rank),
    '--alpha', String(a.alpha), '--seed', String(a.seed), '--type', a.type]);

// Writes the case's adapters into dir with rlx make-lora or rlx finetune;
// returns the --lora arguments that apply them (for rlx and reference.mjs
// alike).
export function loraArgs(rlx, fixtures, c, dir) {
  return c.adapters.flatMap((a, i) => {
    const file = path.join(dir, `${c.name}.${i}.gguf`);
    execFileSync(rlx, adapterCommand(path.join(fixtures, `${c.model}.gguf`), a, file),
      { stdio: ['ignore', 'ignore', 'pipe'] });
    return ['--lora', `${file}:${a.scale}`];
  });
}

// The model a case runs and the --lora arguments it runs with: the case's
// model and its adapters, or for a merged case the file rlx export-lora
// writes into dir and none; adapters: the --lora arguments either way.
export function caseModel(rlx, fixtures, c, dir) {
  const model = path.join(fixtures, `${c.model}.gguf`), adapters = loraArgs(rlx, fixtures, c, dir);
  if (!c.merge) return { model, lora: adapters, adapters };
  const merged = path.join(dir, `${c.name}.merged.gguf`);
  execFileSync(rlx, ['export-lora', '--model', model, ...adapters, '--out', merged, '--type', c.merge],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  return { model: merged, lora: [], adapters };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(LORA_CASES.map((c) => c.name).join('\n'));
