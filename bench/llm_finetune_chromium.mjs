// llm_finetune_chromium.mjs - LoRA fine-tuning speed of the wasm module in
// headless Chromium (web/runtime/llm.js, loadGguf(..., { train: true }):
// the relaxed-SIMD training build where Chromium has relaxed SIMD, as a
// page loads it) next to ours native (build/bench/llm_finetune_native, one
// thread, as the module runs) in the same run, on bench/llm_finetune.mjs's workload: the SmolLM-135M-shaped
// llama (bench/llm_models.mjs), rank 8 on attn_q and attn_v, windows of 128
// tokens, 4 windows a step, the bench corpus in file order.  Both first
// losses (the base model's: B starts at zero) must agree within 1e-4
// relative, or the bench exits 1 without a ratio.  Tokens/s: windows x 128
// over the median step after the first (which compiles the plan).  Each
// count of --threads (default 1,2) runs the same steps in the page, which
// is served cross-origin isolated (COOP + COEP), so more than 1 thread loads
// the threaded training build (rlx_llm_train_threads*.wasm, helper Workers
// on a shared memory); every count's losses must equal the first count's
// bitwise (the builds compute the same), else the bench exits 1; the rate
// of each is printed with its ratio to the first count's.
//
//   node bench/llm_finetune_chromium.mjs [--type=q8_0|q4_0] [--steps=4] [--threads=1,2]
//   RLX_BENCH_QUICK=1 node bench/llm_finetune_chromium.mjs   a small model, 3 steps
// Needs: chromium, web/pkg/rlx_llm_train*.wasm, build/bench/llm_finetune_native,
// build/make_test_lm.  The page is served from 127.0.0.1; nothing else is reached.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { BENCH_DIR, benchModel } from './llm_models.mjs';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const NATIVE = path.join(REPO, 'build/bench/llm_finetune_native');
const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v = ''] = a.replace(/^--/, '').split('=');
  return [k, v];
}));
const QUICK = process.env.RLX_BENCH_QUICK === '1';
const TYPE = args.type ?? 'q8_0';
const STEPS = Number(args.steps ?? (QUICK ? 3 : 4));
const SHAPE = { seq: 128, batch: 4, rank: 8, alpha: 16, targets: 'attn_q,attn_v' };
const TOL = 1e-4;
const THREADS = (args.threads ?? '1,2').split(',').map(Number);
if (!(Number.isInteger(STEPS) && STEPS >= 2)) throw new Error('--steps must be an integer >= 2 (the first step compiles)');
if (!THREADS.every((t) => Number.isInteger(t) && t >= 1 && t <= 64)) throw new Error('--threads takes counts from 1 to 64, e.g. 1,2');
for (const need of [NATIVE, CHROMIUM]) if (!fs.existsSync(need)) throw new Error(`llm_finetune_chromium: missing ${need}`);

const file = benchModel(TYPE, { quick: QUICK, label: 'llm_finetune_chromium bench' });
const corpus = path.join(BENCH_DIR, `llm_corpus_${QUICK ? 2500 : 9000}.txt`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

// ours native, the same windows, on one thread as the wasm module runs
const nativeOut = execFileSync(NATIVE, [file, corpus, '--seq', String(SHAPE.seq), '--batch', String(SHAPE.batch),
  '--rank', String(SHAPE.rank), '--targets', SHAPE.targets, '--steps', String(STEPS)],
{ encoding: 'utf8', env: { ...process.env, RLX_THREADS: '1' } });
const native = JSON.parse(nativeOut.trim().split('\n').at(-1));

// a read-only server of the repository on 127.0.0.1 (the page and the files it fetches), cross-origin isolated
const ISOLATED = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (rel === '/') return res.writeHead(200, { ...ISOLATED, 'Content-Type': 'text/html' }).end('<!doctype html><meta charset="utf-8">');
  const full = path.join(REPO, path.normalize(rel));
  if (!full.startsWith(REPO) || !fs.existsSync(full) || !fs.statSync(full).isFile()) return res.writeHead(404).end();
  res.writeHead(200, { ...ISOLATED, 'Content-Type': TYPES[path.extname(full)] ?? 'application/octet-stream' });
  fs.createReadStream(full).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
let runs;
try {
  const page = await browser.newPage();
  await page.route((url) => !url.href.startsWith(base), (route) => route.abort());
  await page.goto(base);
  runs = await page.evaluate(async ({ model, text, shape, steps, counts }) => {
    const { loadGguf } = await import('/web/runtime/llm.js');
    const data = await (await fetch(text)).text();
    const out = [];
    for (const threads of counts) {
      const m = await loadGguf(model, { train: true, threads });
      const at = [];
      const t0 = performance.now();
      const r = await m.finetune(data, { ...shape, steps, shuffle: false, validFraction: 0,
        onProgress: () => at.push(performance.now()) });
      const info = { simd: m.info.simd, backend: m.info.backend, threads: m.info.threads, threadsWhy: m.info.threadsWhy,
        memoryBytes: m.mod.memory.buffer.byteLength };
      m.free();
      out.push({ ...info, losses: r.losses, stepMs: at.map((t, i) => t - (i ? at[i - 1] : t0)) });
    }
    return out;
  }, { model: `/${path.relative(REPO, file)}`, text: `/${path.relative(REPO, corpus)}`, shape: SHAPE, steps: STEPS, counts: THREADS });
} finally {
  await browser.close();
  server.close();
}

const tokens = SHAPE.seq * SHAPE.batch;
const rateOf = (run) => tokens / (median(run.stepMs.slice(1)) / 1000);
const wasm = runs[0], rate = rateOf(wasm);
const err = Math.abs(wasm.losses[0] - native.loss) / Math.abs(native.loss);
console.log(`llm_finetune_chromium: ${path.basename(file)}, rank ${SHAPE.rank} on ${SHAPE.targets}, ${SHAPE.batch} x ${SHAPE.seq} tokens a step, ${STEPS} steps`);
console.log(`  first loss: ${wasm.losses[0]} in Chromium (${wasm.simd}), ${native.loss} native (relative difference ${err.toExponential(2)})`);
if (!(err <= TOL)) {
  console.error(`llm_finetune_chromium: the first losses differ by ${err} (more than ${TOL}): no ratio`);
  process.exit(1);
}
console.log(`  Chromium wasm (${wasm.simd}, ${wasm.threads} thread(s)): ${rate.toFixed(1)} training tokens/s (median of steps 2..${STEPS}: ` +
  `${median(wasm.stepMs.slice(1)).toFixed(0)} ms); ours native (1 thread) ${native.tokens_per_s.toFixed(1)} tokens/s; ` +
  `wasm / native ${(rate / native.tokens_per_s).toFixed(2)}x`);
for (const run of runs.slice(1)) {
  if (run.losses.some((l, i) => l !== wasm.losses[i])) {
    console.error(`llm_finetune_chromium: the losses on ${run.threads} thread(s) (${run.losses}) differ from ${wasm.threads}'s (${wasm.losses})`);
    process.exit(1);
  }
  console.log(`  Chromium wasm on ${run.threads} thread(s) (${run.threadsWhy}): ${rateOf(run).toFixed(1)} training tokens/s, ` +
    `${(rateOf(run) / rate).toFixed(2)}x ${wasm.threads} thread(s)'s, the same losses`);
}
// memory: the wasm memory (it never shrinks: the run's peak) against the
// file and, natively, the peak RSS beyond the file (adapters, optimizer
// state, activations and their gradients)
const MiB = (b) => (b / 2 ** 20).toFixed(1);
const beyond = native.peak_rss_bytes - native.file_bytes;
console.log(`  memory: wasm ${MiB(wasm.memoryBytes)} MiB; the file ${MiB(native.file_bytes)} MiB, native peak RSS ` +
  `${MiB(native.peak_rss_bytes)} MiB (${MiB(beyond)} beyond the file); wasm / (file + 1.5 x that + 16 MiB) ` +
  `${(wasm.memoryBytes / (native.file_bytes + 1.5 * beyond + 16 * 2 ** 20)).toFixed(2)}`);
