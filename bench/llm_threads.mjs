// llm_threads.mjs - `make bench-llm-threads` (part of `make bench`): the
// language-model module on 1 and 2 threads (or --threads=...) in Node:
// web/runtime/llm.js over the one-thread build (rlx_llm.wasm) for 1 thread
// and the threaded build (rlx_llm_threads.wasm, helper Workers on a shared
// memory) for more, on bench-llm's SmolLM-135M-shaped q8_0 llama
// (bench/llm_models.mjs), a 128-token prompt and 32 greedy tokens.  Rounds
// interleave the thread counts; the medians of prompt tokens/s and
// generation tokens/s are printed with the ratio to one thread, and one JSON
// line per count.  Every count's greedy ids must equal one thread's (the
// builds are bitwise the same), else the bench exits 1.
//
//   node bench/llm_threads.mjs [--threads=1,2] [--rounds=5] [--type=q8_0] [--simd=simd128|relaxed] [--prompt=128] [--tokens=32]
//   RLX_BENCH_QUICK=1 node bench/llm_threads.mjs   a 256-wide 4-layer model, 2 rounds
// Needs: make build/make_test_lm web/pkg/rlx_llm.wasm web/pkg/rlx_llm_threads.wasm (and their
// relaxed builds for --simd=relaxed, which Node 20 runs with --experimental-wasm-relaxed-simd).
import { availableParallelism } from 'node:os';
import { loadGguf } from '../web/runtime/llm.js';
import { benchModel, syllableWords } from './llm_models.mjs';
import { benchArgs, median } from './bench_args.mjs';

const args = benchArgs('llm_threads');
const quick = !!process.env.RLX_BENCH_QUICK;
const counts = (args.threads ?? '1,2').split(',').map(Number);
const rounds = Number(args.rounds ?? (quick ? 2 : 5));
const type = args.type ?? 'q8_0';
const simd = args.simd ?? 'simd128';
const promptLen = Number(args.prompt ?? 128), tokens = Number(args.tokens ?? 32);
if (!counts.every((t) => Number.isInteger(t) && t >= 1) || !(rounds >= 1) || !(promptLen >= 1) || !(tokens >= 1)) {
  throw new Error('llm_threads: --threads takes counts >= 1; --rounds, --prompt and --tokens numbers >= 1');
}

const file = benchModel(type, { quick, label: 'llm threads' });
const models = {};
for (const t of counts) models[t] = await loadGguf(file, { simd, threads: t, nCtx: promptLen + tokens + 8 });
// The prompt: the tokenizer's ids of the corpus's words, cut to promptLen.
const prompt = models[counts[0]].tokenize(syllableWords(777, 4 * promptLen).join(' '), { addBos: true }).slice(0, promptLen);
if (prompt.length < promptLen) throw new Error(`llm threads: the prompt has ${prompt.length} tokens, not ${promptLen}`);

const runs = Object.fromEntries(counts.map((t) => [t, []]));
for (let r = 0; r < rounds; r++) {
  for (let k = 0; k < counts.length; k++) {
    const t = counts[(k + r) % counts.length]; // the order rotates
    const res = await models[t].generate(prompt, { maxTokens: tokens, temperature: 0 });
    runs[t].push({ prompt: res.stats.promptTokensPerSecond, generate: res.stats.generateTokensPerSecond, ids: res.ids });
  }
}
const ref = runs[counts[0]][0].ids.join(',');
let bad = false;
const cores = availableParallelism();
console.log(`llm threads: ${file.replace(/^.*\//, '')}, ${promptLen}-token prompt, ${tokens} tokens, ${rounds} rounds, ` +
  `${simd}, Node ${process.versions.node}, ${cores} logical cores`);
console.log('threads | build | prompt tokens/s | generation tokens/s | prompt / 1 | generation / 1');
const base = {};
for (const t of counts) {
  const p = median(runs[t].map((x) => x.prompt)), g = median(runs[t].map((x) => x.generate));
  if (t === counts[0]) Object.assign(base, { p, g });
  const same = runs[t].every((x) => x.ids.join(',') === ref);
  bad ||= !same;
  const info = models[t].info;
  console.log(`${t} | ${info.threads > 1 ? 'rlx_llm_threads' : 'rlx_llm'} (${info.threads} running) | ${p.toFixed(1)} | ${g.toFixed(1)} | ` +
    `${(p / base.p).toFixed(2)}x | ${(g / base.g).toFixed(2)}x${same ? '' : ' | GREEDY IDS DIFFER'}`);
  console.log(JSON.stringify({ kind: 'llm-wasm-threads', threads: t, running: info.threads, why: info.threadsWhy, simd,
    promptTokens: promptLen, tokens, promptTokensPerSecond: p, generateTokensPerSecond: g, sameIds: same }));
}
for (const m of Object.values(models)) m.free();
if (bad) {
  console.error('llm threads: a thread count gave other greedy ids than the first');
  process.exit(1);
}
