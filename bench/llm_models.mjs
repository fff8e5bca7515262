// llm_models.mjs - the language-model benches' models (bench/llm.mjs,
// bench/llm_webgpu.mjs): the SmolLM-135M-shaped llama (576 wide, 12
// layers, 9 heads of 64 with 3 KV heads, feed-forward 1536, context 2048,
// tied output, vocabulary 8192; q4_k 512 wide with 8/2 heads, as its rows
// must be multiples of 256) or, quick, a 256-wide 4-layer one, written by
// build/make_test_lm with seeded weights and a tokenizer trained on a
// seeded corpus of syllable words, both kept in build/bench/ and rewritten
// only when the writer is newer.
//
//   const file = benchModel('q8_0', { quick, label: 'llm bench' });   // the GGUF file's path
//   syllableWords(seed, n)                                            // the corpus's words (prompts too)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../', import.meta.url));
export const BENCH_DIR = path.join(REPO, 'build/bench');
export const MODEL_WRITER = path.join(REPO, 'build/make_test_lm');

const SMOL = { 'n-embd': 576, 'n-layer': 12, 'n-head': 9, 'n-head-kv': 3, 'n-ff': 1536, 'n-vocab': 8192, 'n-ctx': 2048 };
const QUICK_SHAPE = { 'n-embd': 256, 'n-layer': 4, 'n-head': 4, 'n-head-kv': 2, 'n-ff': 768, 'n-vocab': 2048, 'n-ctx': 512 };

/** make_test_lm's shape options for weight type `type`. */
export function benchShape(type, quick) {
  if (quick) return QUICK_SHAPE;
  return type === 'q4_k' ? { ...SMOL, 'n-embd': 512, 'n-head': 8, 'n-head-kv': 2, 'head-dim': 64 } : SMOL;
}

/** Seeded syllable words (an LCG, so the same on every machine). */
export function syllableWords(seed, n) {
  let s = seed >>> 0;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
  const syl = [];
  for (const c of 'bcdfghjklmnprstvwz') for (const v of 'aeiou') syl.push(c + v);
  return Array.from({ length: n }, () => {
    let w = '';
    for (let j = 1 + Math.floor(rnd() * 4); j > 0; j--) w += syl[Math.floor(rnd() * syl.length)];
    return w;
  });
}

const fresh = (file, ...deps) => fs.existsSync(file) && deps.every((d) => fs.statSync(d).mtimeMs <= fs.statSync(file).mtimeMs);

/** The bench model of weight type `type` in build/bench/ (written first when missing or older than the writer). */
export function benchModel(type, { quick = false, label = 'llm bench' } = {}) {
  if (!fs.existsSync(MODEL_WRITER)) throw new Error(`${label}: missing ${MODEL_WRITER} (make build/make_test_lm)`);
  fs.mkdirSync(BENCH_DIR, { recursive: true });
  const nWords = quick ? 2500 : 9000;
  const corpus = path.join(BENCH_DIR, `llm_corpus_${nWords}.txt`);
  if (!fs.existsSync(corpus)) {
    const w = syllableWords(12345, nWords), lines = [];
    for (let r = 0; r < 3; r++) for (let i = 0; i < w.length; i += 12) lines.push(w.slice(i, i + 12).join(' ') + '.');
    fs.writeFileSync(corpus, lines.join('\n') + '\n');
  }
  const shape = benchShape(type, quick);
  const file = path.join(BENCH_DIR, `llm-${Object.values(shape).join('-')}-${type}.gguf`);
  if (!fresh(file, MODEL_WRITER, corpus)) {
    const t = Date.now();
    const opts = Object.entries(shape).flatMap(([k, v]) => [`--${k}`, String(v)]);
    execFileSync(MODEL_WRITER, ['--arch', 'llama', '--type', type, '--tied', '--corpus', corpus, ...opts, '--out', file],
      { stdio: ['ignore', 'ignore', 'inherit'] });
    console.log(`${label}: wrote ${path.relative(REPO, file)} (${(fs.statSync(file).size / 2 ** 20).toFixed(1)} MiB) in ` +
      `${((Date.now() - t) / 1000).toFixed(0)} s`);
  }
  return file;
}
