// webgpu_chromium.mjs - `make bench-gpu-chromium`: WebGPU model speed in ONE
// headless Chromium page (WebGPU on SwiftShader here), ours next to
// TensorFlow.js's webgpu backend: the workloads of bench/webgpu_workloads.mjs
// (the same code bench/webgpu_models.mjs runs under Dawn in Node), imported
// by the page:
//   rlx-webgpu   Graph.compileTrain (SGD, device 'webgpu') replayed by
//                web/runtime/webgpu.js, params resident, the loss read back
//                every step; the W4 forward reads its logits back every call.
//   tfjs-webgpu  tfjs-core + tfjs-backend-webgpu 4.22 (node_modules, bundled
//                from bench/webgpu_tfjs_entry.mjs with esbuild at start),
//                optimizer.minimize + await loss.data() per step.
// Workloads: mnist-mlp and mnist-cnn training at --batch (16), cifar-cnn at
// --cifar-batch (4), and the W4 transformer forward.  Both start from the same
// params and batch; their first losses (W4: the logits) must agree, or the
// script exits 1.  Iterations are interleaved, medians reported; prints
// samples/s and the ratio; writes build/bench/webgpu_chromium.json.
//
//   node bench/webgpu_chromium.mjs [--batch=16] [--cifar-batch=4]
//        [--models=mnist-mlp,mnist-cnn,cifar-cnn] [--w4=1] [--budget-ms=5000]
//        [--profile] [--wasm=web/pkg/rlx_web.wasm] [--out=build/bench/webgpu_chromium.json]
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build } from 'esbuild';
import { workloadList, reportLines } from './webgpu_workloads.mjs';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const KNOWN = ['batch', 'cifar-batch', 'models', 'w4', 'budget-ms', 'profile', 'wasm', 'out'];
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([\w-]+)(?:=(.*))?$/.exec(a);
  if (!m || !KNOWN.includes(m[1])) throw new Error(`webgpu_chromium: unknown argument ${a} (known: ${KNOWN.map((k) => `--${k}`).join(' ')})`);
  return [m[1], m[2] ?? '1'];
}));
const B = Number(args.batch ?? 16), CIFAR_B = Number(args['cifar-batch'] ?? 4);
const BUDGET_MS = Number(args['budget-ms'] ?? 5000);
const MODELS = (args.models ?? 'mnist-mlp,mnist-cnn,cifar-cnn').split(',').filter(Boolean);
const WITH_W4 = (args.w4 ?? '1') !== '0';
const OUT = args.out ?? 'build/bench/webgpu_chromium.json';
const WASM = path.resolve(args.wasm ?? path.join(REPO, 'web/pkg/rlx_web.wasm'));
const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader'];
for (const [name, v] of [['--batch', B], ['--cifar-batch', CIFAR_B], ['--budget-ms', BUDGET_MS]]) {
  if (!(Number.isInteger(v) && v >= 1)) throw new Error(`webgpu_chromium: ${name} must be an integer >= 1`);
}
for (const need of [CHROMIUM, WASM, path.join(REPO, 'node_modules/@tensorflow/tfjs-backend-webgpu')]) {
  if (!fs.existsSync(need)) throw new Error(`webgpu_chromium: missing ${need} (make setup / make wasm)`);
}
// cifar-cnn at its own (smaller) batch: a step of it is ~10x mnist-cnn's.
const WORKLOADS = [
  ...workloadList(MODELS.filter((m) => m !== 'cifar-cnn'), [B], false),
  ...workloadList(MODELS.filter((m) => m === 'cifar-cnn'), [CIFAR_B], false),
  ...workloadList([], [], WITH_W4),
];

// ---- the page: ours and tfjs on their own devices of the same adapter ----------------
const PAGE = String.raw`<!doctype html>
<meta charset="utf-8"><title>webgpu bench</title><link rel="icon" href="data:,">
<script type="module">
import init, * as rlx from '/web/pkg/rlx_web.js';
import { runtime } from '/web/runtime/instance.js'; // the live instance's loader.js binding (Graph / Session)
import { tf } from '/tfjs-webgpu.js';
import { webGpuWorkloads } from '/bench/webgpu_workloads.mjs';
let bench = null;

window.setup = async (profile) => {
  if (!navigator.gpu) throw new Error('navigator.gpu is missing (WebGPU flags)');
  await init('/rlx_web.wasm');
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('WebGPU: no adapter');
  const L = adapter.limits;
  const device = await adapter.requestDevice({
    requiredFeatures: adapter.features.has('timestamp-query') ? ['timestamp-query'] : [],
    requiredLimits: Object.fromEntries(['maxStorageBufferBindingSize', 'maxBufferSize', 'maxStorageBuffersPerShaderStage',
      'maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX'].map((k) => [k, L[k]])),
  });
  if (!(await tf.setBackend('webgpu'))) throw new Error('tfjs: the webgpu backend failed to initialize');
  await tf.ready();
  bench = webGpuWorkloads({ rlx, rt: runtime(), device, tf, contenders: ['rlx-webgpu', 'tfjs-webgpu'],
    profile, log: (l) => console.log(l) });
  const i = adapter.info ?? {};
  return { adapter: [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' '),
    tfjs: tf.version_core, userAgent: navigator.userAgent };
};
window.measure = (w, budgetMs) => bench.measureWorkload(w, budgetMs);
window.ready = true;
</script>`;

// ---- a static server: the page, tfjs, web/ and the bench modules ------------------
const TFJS = (await build({
  entryPoints: [path.join(REPO, 'bench/webgpu_tfjs_entry.mjs')], bundle: true, write: false, format: 'esm',
  platform: 'browser', minify: true, logLevel: 'error',
})).outputFiles[0].text;
const BENCH_FILES = ['bench/webgpu_workloads.mjs', 'bench/tfjs_models.mjs', 'bench/w4_graph.mjs'].map((f) => path.join(REPO, f));
const MIME = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (rel === '/bench.html') return res.writeHead(200, { 'Content-Type': 'text/html' }).end(PAGE);
  if (rel === '/tfjs-webgpu.js') return res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(TFJS);
  if (rel === '/rlx_web.wasm') {
    return res.writeHead(200, { 'Content-Type': 'application/wasm', 'Cache-Control': 'no-store' }).end(fs.readFileSync(WASM));
  }
  const file = path.join(REPO, rel);
  if (!file.startsWith(path.join(REPO, 'web/')) && !BENCH_FILES.includes(file)) return res.writeHead(403).end();
  fs.readFile(file, (err, data) => {
    if (err) return res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-store' })
      .end(data);
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));

const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
const results = [], problems = [], pageErrors = [];
let env;
try {
  const page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
    else if (m.type() === 'log') console.log(m.text());
  });
  await page.goto(`http://127.0.0.1:${server.address().port}/bench.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 }).catch(() => {
    throw new Error(`webgpu_chromium: the page did not load: ${pageErrors.join('; ')}`);
  });
  const info = await page.evaluate((p) => window.setup(p), args.profile !== undefined);
  env = { chromium: browser.version(), adapter: info.adapter, tfjs: info.tfjs, cpu: os.cpus()[0]?.model,
    cores: os.cpus().length, date: new Date().toISOString(), budget_ms: BUDGET_MS, batch: B, cifar_batch: CIFAR_B };
  console.log(`WebGPU model speed in headless Chromium ${env.chromium} on ${env.adapter} (tfjs ${env.tfjs}); ` +
    `load ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  for (const w of WORKLOADS) {
    const t0 = Date.now();
    const m = await page.evaluate(([ww, ms]) => window.measure(ww, ms), [w, BUDGET_MS]);
    results.push(...m.rows);
    problems.push(...m.problems);
    process.stderr.write(`${m.line} (${m.rows[0].n} rounds, ${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
  }
} finally {
  await browser.close();
  server.close();
}

console.log(['median ms per training step (W4: per forward), samples/s (W4: forwards/s); ' +
  'tfjs/rlx = tfjs time / ours = our samples/s / theirs (> 1: ours faster)', ...reportLines(WORKLOADS, results, problems)].join('\n'));
if (pageErrors.length) console.log(`page errors: ${pageErrors.join('; ')}`);
for (const p of problems) console.error(`webgpu_chromium: MISMATCH ${p}`);
fs.mkdirSync(path.dirname(path.resolve(OUT)), { recursive: true });
// ratio = our samples/s / tfjs's (= tfjs time / ours), per workload.
const summary = WORKLOADS.map((w) => {
  const [ours, theirs] = ['rlx-webgpu', 'tfjs-webgpu'].map((b) => results.find((r) => r.backend === b && r.workload === w.name));
  return { workload: w.name, batch: w.B, ours_samples_per_s: ours?.samples_per_s ?? null,
    tfjs_samples_per_s: theirs?.samples_per_s ?? null, ratio: ours && theirs ? ours.samples_per_s / theirs.samples_per_s : null };
});
fs.writeFileSync(OUT, JSON.stringify({ env, summary, results, problems }, null, 1));
console.log(`wrote ${OUT}`);
if (problems.length) process.exitCode = 1;
