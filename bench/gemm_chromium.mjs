// gemm_chromium.mjs - `make bench-gemm-chromium` (part of `make bench`): f32
// GEMM C = A . B, square sizes 256, 512, 1024, in ONE headless Chromium page
// per thread count (Debian's /usr/bin/chromium through playwright-core): ours
// through the SDK (web/rlx.js: Rlx.init({ threads }), a graph with one
// matmul compiled for 'cpu'; the build the page picks: relaxed SIMD where
// Chromium has it, the threaded rlx_web_threads*.wasm above 1 thread) next to
// TensorFlow.js's wasm backend (tfjs-core + tfjs-backend-wasm 4.22 from
// node_modules, setThreadsCount(n) before setBackend('wasm'); its threaded
// SIMD binary on this cross-origin isolated page).  tfjs sets its thread
// count once per page, so each count gets a fresh browser context and page,
// and ours is loaded there with the same count (tfjs caps its pool at
// navigator.hardwareConcurrency / 2, 1 on a 2-core machine: the page's
// hardwareConcurrency is set to 2 x the count through CDP's
// Emulation.setHardwareConcurrencyOverride); the bench stops when either
// side runs another count than asked (tfjs's getThreadsCount(), ours'
// threads / threadsWhy).  The page is bench/gemm_page.html.
//
// A call on either side takes A and B from JavaScript Float32Arrays and
// gives C back as one (ours: feed, run, output(0); tfjs: tensor2d, matMul,
// await data(), dispose).  Correctness first: each size's C from both sides
// must agree (max |ours - tfjs| / max |C| below 1e-4), else the bench exits
// 1 without ratios.  Timing: a warm-up of each side (WARM_MS of calls), then
// --rounds rounds, the sides' order alternating, each turn 30 ms of untimed
// calls then --calls timed ones; GFLOP/s = 2 n^3 / the median call.  Printed:
// a table (size, threads, ours, tfjs, ours/tfjs, and each side's 2/1 thread
// ratio) after the machine's CPU, core count and load average; JSON to --out.
//
//   node bench/gemm_chromium.mjs [--threads=1,2] [--sizes=256,512,1024] [--rounds=7] [--calls=3]
//                                [--out=build/bench/gemm_chromium.json]
// Needs: make wasm sdk (web/pkg/rlx_web*.wasm, web/rlx.js), npm ci (playwright-core,
// @tensorflow/*), Debian's chromium (or RLX_CHROMIUM).  The page is served from
// 127.0.0.1 and every other request is aborted.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveIsolated } from './isolated_server.mjs';
import { benchArgs, median } from './bench_args.mjs';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const args = benchArgs('gemm_chromium');
const list = (s) => s.split(',').map(Number);
const THREADS = list(args.threads ?? '1,2');
const SIZES = list(args.sizes ?? '256,512,1024');
const ROUNDS = Number(args.rounds ?? 7), CALLS = Number(args.calls ?? 3);
const OUT = args.out ?? 'build/bench/gemm_chromium.json';
const TOL = 1e-4, WARM_MS = 300, TURN_WARM_MS = 30;
const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
if (!THREADS.every((t) => Number.isInteger(t) && t >= 1 && t <= 64)) throw new Error('gemm_chromium: --threads takes counts from 1 to 64');
if (!SIZES.every((n) => Number.isInteger(n) && n >= 1 && n <= 4096)) throw new Error('gemm_chromium: --sizes takes sizes from 1 to 4096');
if (!(Number.isInteger(ROUNDS) && ROUNDS >= 1 && Number.isInteger(CALLS) && CALLS >= 1)) throw new Error('gemm_chromium: --rounds and --calls are integers >= 1');
for (const f of [CHROMIUM, 'web/rlx.js', 'web/pkg/rlx_web_threads.wasm', 'node_modules/@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm']) {
  if (!fs.existsSync(path.resolve(REPO, f))) throw new Error(`gemm_chromium: missing ${f} (make wasm sdk; npm ci)`);
}

const gflops = (n, ms) => (2 * n ** 3) / (ms * 1e6);
const load = () => os.loadavg().map((v) => v.toFixed(2)).join(' ');

const t0 = Date.now();
const loadBefore = os.loadavg();
// The page, web/ and tfjs's dist folders on 127.0.0.1, cross-origin isolated.
const server = await serveIsolated({ pages: { '/gemm.html': 'bench/gemm_page.html' },
  dirs: ['web/', 'node_modules/@tensorflow/tfjs-core/dist/', 'node_modules/@tensorflow/tfjs-backend-wasm/dist/'] });
const { origin } = server;
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
const setups = {}, rows = [];
let failed = null;
try {
  console.log(`gemm_chromium: f32 C = A . B, sizes ${SIZES.join(', ')}, threads ${THREADS.join(', ')}; ${ROUNDS} rounds of ${CALLS} calls ` +
    `a side, alternating; chromium ${browser.version()}; ${os.cpus().length} cores (${os.cpus()[0]?.model}); load ${load()}`);
  for (const threads of THREADS) {
    // A fresh context and page per count: tfjs takes its thread count once per page.
    const context = await browser.newContext();
    await context.route('**/*', (route) => (route.request().url().startsWith(origin) ? route.continue() : route.abort()));
    const page = await context.newPage();
    // tfjs caps its pool at navigator.hardwareConcurrency / 2 (2 logical
    // cores a physical one, it assumes): 1 on a 2-core machine.  The page
    // claims 2 x threads logical cores so that tfjs may run the count asked
    // (ours is given its count and does not read it).
    const cdp = await context.newCDPSession(page);
    await cdp.send('Emulation.setHardwareConcurrencyOverride', { hardwareConcurrency: 2 * threads });
    const problems = [];
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    await page.goto(`${origin}/gemm.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 }).catch(() => {
      throw new Error(`gemm_chromium: the page did not load: ${problems.join('; ')}`);
    });
    const s = await page.evaluate((t) => window.setup(t), threads);
    setups[threads] = s;
    console.log(`\n${threads} thread(s): crossOriginIsolated ${s.crossOriginIsolated}; ours ${s.ours.version} ${s.ours.simd} build, ` +
      `${s.ours.threads} thread(s) (${s.ours.threadsWhy}), gemm ${s.ours.gemmPath}; tfjs ${s.tfjs.version} ${s.tfjs.backend}, ` +
      `getThreadsCount() ${s.tfjs.threads}, SIMD ${s.tfjs.simd}, multithread ${s.tfjs.multithread}`);
    if (s.tfjs.threads !== threads) throw new Error(`gemm_chromium: tfjs runs ${s.tfjs.threads} threads, not ${threads}`);
    if (s.ours.threads !== threads) throw new Error(`gemm_chromium: ours runs ${s.ours.threads} threads, not ${threads} (${s.ours.threadsWhy})`);
    for (const n of SIZES) {
      const check = await page.evaluate((k) => window.prepare(k), n);
      const rel = check.maxAbsDiff / check.maxAbs;
      console.log(`  ${n}: max |ours - tfjs| ${check.maxAbsDiff.toExponential(2)}, max |C| ${check.maxAbs.toFixed(2)}, ` +
        `relative ${rel.toExponential(2)} (below ${TOL}: ${rel < TOL ? 'ok' : 'FAIL'}); ours on ${check.backend}`);
      if (!(rel < TOL)) {
        failed = `size ${n} on ${threads} thread(s): the results differ by ${rel} relative to max |C|`;
        break;
      }
      const ms = { ours: [], tfjs: [] };
      for (const side of ['ours', 'tfjs']) await page.evaluate(([w, m]) => window.turn(w, m, 0), [side, WARM_MS]);
      for (let r = 0; r < ROUNDS; r++) {
        for (const side of r % 2 ? ['tfjs', 'ours'] : ['ours', 'tfjs']) {
          ms[side].push(...await page.evaluate(([w, m, c]) => window.turn(w, m, c), [side, TURN_WARM_MS, CALLS]));
        }
      }
      const row = { n, threads, check: { ...check, relative: rel } };
      for (const side of ['ours', 'tfjs']) row[side] = { medianMs: median(ms[side]), gflops: gflops(n, median(ms[side])), ms: ms[side] };
      rows.push(row);
      console.log(`  ${n}: ours ${row.ours.gflops.toFixed(2)} GFLOP/s (${row.ours.medianMs.toFixed(2)} ms), ` +
        `tfjs ${row.tfjs.gflops.toFixed(2)} GFLOP/s (${row.tfjs.medianMs.toFixed(2)} ms); load ${load()}`);
    }
    if (problems.length) console.log(`  page problems: ${problems.join('; ')}`);
    await context.close();
    if (failed) break;
  }
} finally {
  await browser.close();
  server.close();
}

const result = { date: new Date().toISOString(), cpu: os.cpus()[0]?.model, cores: os.cpus().length, loadBefore, loadAfter: os.loadavg(),
  rounds: ROUNDS, calls: CALLS, tolerance: TOL, setups, failed, rows };
if (failed) {
  console.error(`\ngemm_chromium: FAILED: ${failed} (more than ${TOL}): no ratios`);
  process.exitCode = 1;
} else {
  const at = (n, t) => rows.find((r) => r.n === n && r.threads === t);
  const [one, two] = [THREADS[0], THREADS[1]];
  const scale = (row, side) => {
    const base = two !== undefined && row.threads === two ? at(row.n, one) : null;
    return base ? row[side].gflops / base[side].gflops : null;
  };
  const x = (v) => (v == null ? '-' : `${v.toFixed(2)}x`);
  const ratioHead = two !== undefined ? `${two}/${one} thr` : 'n/a';
  console.log(`\n${'size'.padStart(5)} ${'threads'.padStart(7)} ${'ours GFLOP/s'.padStart(13)} ${'tfjs GFLOP/s'.padStart(13)} ` +
    `${'ours/tfjs'.padStart(9)} ${`ours ${ratioHead}`.padStart(13)} ${`tfjs ${ratioHead}`.padStart(13)}`);
  for (const row of [...rows].sort((a, b) => a.n - b.n || a.threads - b.threads)) {
    row.oursOverTfjs = row.ours.gflops / row.tfjs.gflops;
    row.oursThreadRatio = scale(row, 'ours');
    row.tfjsThreadRatio = scale(row, 'tfjs');
    console.log(`${String(row.n).padStart(5)} ${String(row.threads).padStart(7)} ${row.ours.gflops.toFixed(2).padStart(13)} ` +
      `${row.tfjs.gflops.toFixed(2).padStart(13)} ${x(row.oursOverTfjs).padStart(9)} ${x(row.oursThreadRatio).padStart(13)} ` +
      `${x(row.tfjsThreadRatio).padStart(13)}`);
  }
  console.log(`load average before ${loadBefore.map((v) => v.toFixed(2)).join(' ')}, after ${load()}`);
}
fs.mkdirSync(path.dirname(path.resolve(REPO, OUT)), { recursive: true });
fs.writeFileSync(path.resolve(REPO, OUT), JSON.stringify(result, null, 1));
console.log(`wrote ${OUT} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
