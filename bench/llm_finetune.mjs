// llm_finetune.mjs - `make bench-finetune` (part of `make bench`): LoRA
// fine-tuning speed of a GGUF language model, training tokens per second,
// on the SmolLM-135M-shaped llama of bench/llm_models.mjs (q8_0 and q4_0),
// rank 8 on attn_q,attn_v, seq 128, batch 4, AdamW, the first 4 windows of
// the bench corpus in file order:
//   ours native  build/bench/llm_finetune_native (bench/llm_finetune_native.c,
//                one thread): a warm-up step, then timed steps
//   peft         bench/peft_lora.py: PyTorch + peft on the same weights
//                (dequantized to f32, or cast to bf16) and the same windows,
//                when torch, transformers and peft import (the GPU machine;
//                on CUDA there), else said and skipped
// Check: every side's first-step loss (B = 0: the base model's loss on the
// windows) must agree with ours native within LOSS_TOL (f32) or
// LOSS_TOL_BF16 (bf16), else the bench exits 1 without ratios.  Also printed:
// peak memory next to file + adapters.
//
//   node bench/llm_finetune.mjs [--types=q8_0,q4_0] [--steps=5] [--python=python3] [--out=build/bench/finetune.json]
//   RLX_BENCH_QUICK=1 ...   the 256-wide 4-layer model, 2 steps
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchModel, BENCH_DIR } from './llm_models.mjs';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const NATIVE = path.join(REPO, 'build/bench/llm_finetune_native');
const LOSS_TOL = 1e-3, LOSS_TOL_BF16 = 3e-2; // relative
const SHAPE = { seq: 128, batch: 4, rank: 8, targets: 'attn_q,attn_v' };

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const quick = process.env.RLX_BENCH_QUICK === '1';
const types = (args.types ?? 'q8_0,q4_0').split(',');
const steps = Number(args.steps ?? (quick ? 2 : 5));
const python = args.python ?? (fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');
const out = args.out ?? path.join(BENCH_DIR, 'finetune.json');
if (!fs.existsSync(NATIVE)) throw new Error(`missing ${NATIVE}: make ${path.relative(REPO, NATIVE)}`);

const shapeArgs = ['--seq', SHAPE.seq, '--batch', SHAPE.batch, '--rank', SHAPE.rank, '--targets', SHAPE.targets].map(String);
const json = (text) => JSON.parse(text.trim().split('\n').at(-1));
const MiB = (b) => (b / 2 ** 20).toFixed(1);

function peftAvailable() {
  try {
    execFileSync(python, ['-c', 'import torch, transformers, peft'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const corpus = path.join(BENCH_DIR, `llm_corpus_${quick ? 2500 : 9000}.txt`);
const rows = [];
const havePeft = peftAvailable();
if (!havePeft) console.log(`peft: skipped (${python} cannot import torch, transformers and peft; the GPU machine's Python can)`);
for (const type of types) {
  const file = benchModel(type, { quick, label: 'finetune bench' });
  const ids = path.join(BENCH_DIR, `finetune-${type}.ids`);
  const native = json(execFileSync(NATIVE, [file, corpus, ...shapeArgs, '--steps', String(steps), '--dump-ids', ids], { encoding: 'utf8' }));
  const row = { type, file: path.relative(REPO, file), native, peft: {} };
  console.log(`${type}: ours native ${native.tokens_per_s.toFixed(0)} tokens/s, first loss ${native.loss}, peak RSS ${MiB(native.peak_rss_bytes)} MiB ` +
    `(file ${MiB(native.file_bytes)} + adapters ${MiB(native.adapter_bytes)} MiB)`);
  if (havePeft) {
    for (const dtype of ['f32', 'bf16']) {
      const r = json(execFileSync(python, [path.join(REPO, 'bench/peft_lora.py'), '--gguf', file, '--ids', ids, ...shapeArgs,
        '--steps', String(Math.max(steps, 10)), '--dtype', dtype], { encoding: 'utf8' }));
      const tol = dtype === 'f32' ? LOSS_TOL : LOSS_TOL_BF16;
      const rel = Math.abs(r.loss - native.loss) / Math.abs(native.loss);
      if (!(rel <= tol)) {
        console.error(`${type}: peft ${dtype}'s first loss ${r.loss} differs from ours ${native.loss} by ${rel.toExponential(2)} ` +
          `(tolerance ${tol}): not the same computation, no ratios`);
        process.exit(1);
      }
      row.peft[dtype] = r;
      console.log(`${type}: peft ${dtype} on ${r.device} ${r.tokens_per_s.toFixed(0)} tokens/s, first loss ${r.loss} ` +
        `(ours within ${rel.toExponential(1)}), ours native / peft ${(native.tokens_per_s / r.tokens_per_s).toFixed(2)}x`);
    }
  }
  rows.push(row);
}
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify({ shape: SHAPE, steps, quick, rows }, null, 2) + '\n');
console.log(`wrote ${path.relative(REPO, out)}`);
