// train_gpu.test.mjs - training parity in Debian's chromium (headless,
// SwiftShader; flags in helpers.mjs): for mnist-mlp, mnist-cnn, cifar-cnn,
// resnet (rlx_vision_build) and the MLP (tests/c/wasm_gpu_cases.c's),
// SGD steps on WebGPU (page: WEBGPU_TRAIN_IN_CHROMIUM of
// tests/common/gpu_compare.mjs, Dawn in Node takes the others) and on
// WebGL2 (page, and a Worker on an OffscreenCanvas) follow a CPU session of the same graph, params and batch
// (train_runner.mjs through web/runtime/loader.js, Graph.compileTrain):
//  - every step |gpu loss - cpu loss| <= TRAIN_TOL * (1 + |cpu loss|), and the
//    params after the last step within the same tolerance (TRAIN_TOL = 2e-3,
//    tests/common/gpu_compare.mjs says why);
//  - the loss falls (last step below the first, on both devices);
//  - the WebGPU training graphs have 0 host steps and 0 sync points
//    (rlx_session_host_summary).
// Batch 2, lr 0.05 (vision models) / 0.01 (MLP), one fixed batch.
//
// Steps: RLX_TRAIN_STEPS (default 20) for every model on both devices, but
// on SwiftShader (a CPU driver) RLX_TRAIN_STEPS_SLOW (default 5) for
// cifar-cnn and resnet, as tests/node/webgpu_ops.test.mjs does under Dawn: a
// step of resnet takes ~4 s on WebGPU and ~1-2 s on WebGL2 there, of
// cifar-cnn ~0.5 s; the rest take milliseconds.  Every step's loss and the
// params after the last step are still compared, and the loss still falls.
// RLX_TRAIN_PROFILE=1 adds one profiled step per test: the slowest kernels.
// Build first: make web/pkg/rlx_web.wasm.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, newPage, missing, REPO } from './helpers.mjs';
import { TRAIN_TOL, WEBGPU_TRAIN_IN_CHROMIUM } from '../common/gpu_compare.mjs';

const STEPS = Number(process.env.RLX_TRAIN_STEPS ?? 20);
const STEPS_SLOW = Number(process.env.RLX_TRAIN_STEPS_SLOW ?? 5);
const SLOW_ON_SWIFTSHADER = new Set(['cifar-cnn', 'resnet']);
const PROFILE = process.env.RLX_TRAIN_PROFILE === '1';
const BATCH = 2;
const MODELS = ['mlp', 'mnist-mlp', 'mnist-cnn', 'cifar-cnn', 'resnet'];

const why = missing();
let server;
let browser;
let page;
let problems;
let gpu = { webgpu: null, webgl: '' };

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(['--root', REPO]), launch()]);
  ({ page, problems } = await newPage(browser));
  await page.goto(`${server.url}tests/browser/gpu_parity_page.html`);
  await page.waitForFunction(() => window.rlxParityReady === true, null, { timeout: 15000 });
  gpu = await page.evaluate(() => window.rlxParity.describeGpu());
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

function checkRun(t, r, { device, model, steps, where }) {
  const label = `${device} ${where}: ${model}`;
  assert.equal(r.losses.length, steps, `${label}: steps run`);
  r.losses.forEach(([cpu, g], step) => {
    assert.ok(Number.isFinite(cpu) && Number.isFinite(g), `${label}: step ${step}: loss cpu ${cpu}, gpu ${g}`);
    assert.ok(Math.abs(g - cpu) <= TRAIN_TOL * (1 + Math.abs(cpu)),
      `${label}: step ${step}: gpu loss ${g} vs cpu ${cpu} (tol ${TRAIN_TOL}); curve ${JSON.stringify(r.losses)}`);
  });
  assert.ok(r.paramErr <= TRAIN_TOL, `${label}: params after ${steps} steps differ from the CPU's by ${r.paramErr}`);
  if (steps >= 2) {
    const [first, last] = [r.losses[0], r.losses.at(-1)];
    assert.ok(last[0] < first[0] && last[1] < first[1], `${label}: the loss did not fall: ${JSON.stringify(r.losses)}`);
  }
  if (device === 'webgpu') {
    const [total, host, sync] = r.host;
    assert.ok(total > 0, `${label}: the training plan has no steps`);
    assert.equal(host, 0, `${label}: host steps in the WebGPU training plan`);
    assert.equal(sync, 0, `${label}: sync points in the WebGPU training plan`);
  }
  const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  const later = r.gpuMs.length > 1 ? r.gpuMs.slice(1) : r.gpuMs;
  t.diagnostic(`${label}: loss ${r.losses[0][0].toFixed(4)} -> ${r.losses.at(-1)[0].toFixed(4)} (cpu), ` +
    `${r.losses.at(-1)[1].toFixed(4)} (gpu) in ${steps} steps; max param error ${r.paramErr.toExponential(1)}; ` +
    `${r.kernels} ${device === 'webgpu' ? 'dispatches' : 'passes'}${r.host ? ` (host summary ${r.host.join('/')})` : ''}; ` +
    `step ${mean(later).toFixed(0)} ms (cpu ${mean(r.cpuMs).toFixed(1)} ms), session setup ${r.setupMs.toFixed(0)} ms (${r.programs} ${device === 'webgpu' ? 'pipelines, cached per device' : 'programs'})`);
  for (const k of r.slowest?.kernels.slice(0, 5) ?? []) {
    t.diagnostic(`  ${(100 * k.share).toFixed(0)}% ${k.ms.toFixed(0)} ms in ${k.count}x ${k.kernel}` +
      `${k.worst.gemm ? ` (worst ${JSON.stringify(k.worst.gemm)}: ${k.worst.gflops.toFixed(3)} GFLOP/s)` : ''}`);
  }
}

/** STEPS, or STEPS_SLOW for the convolution-heavy models when `device` is SwiftShader. */
function stepsFor(t, model, device) {
  const swiftshader = /swiftshader/i.test(device === 'webgpu' ? gpu.webgpu ?? '' : gpu.webgl);
  if (!swiftshader || !SLOW_ON_SWIFTSHADER.has(model) || STEPS <= STEPS_SLOW) return STEPS;
  t.diagnostic(`${model}: ${STEPS_SLOW} of ${STEPS} steps (SwiftShader runs its convolutions at CPU speed)`);
  return STEPS_SLOW;
}

const options = (t, model, device) => ({
  model, device, steps: stepsFor(t, model, device), batch: BATCH, lr: model === 'mlp' ? 0.01 : 0.05, profile: PROFILE,
});

for (const device of ['webgpu', 'webgl']) {
  for (const model of device === 'webgpu' ? MODELS.filter((m) => WEBGPU_TRAIN_IN_CHROMIUM.includes(m)) : MODELS) {
    test(`${device} on the page: ${model} follows the CPU loss`, { skip: why ?? false, timeout: 600000 }, async (t) => {
      const opts = options(t, model, device);
      const r = await page.evaluate((o) => window.rlxParity.train(o), opts);
      checkRun(t, r, { device, model, steps: opts.steps, where: 'page' });
      assert.deepEqual(problems, []);
    });
  }
}

for (const model of MODELS) {
  test(`webgl in a Worker (OffscreenCanvas): ${model} follows the CPU loss`, { skip: why ?? false, timeout: 600000 }, async (t) => {
    const opts = options(t, model, 'webgl');
    const r = await page.evaluate((o) => window.rlxParity.trainInWorker(o), opts);
    assert.equal(r.isWorker, true, 'ran in a Worker');
    assert.equal(r.offscreen, true, 'drew on an OffscreenCanvas');
    checkRun(t, r, { device: 'webgl', model, steps: opts.steps, where: 'worker' });
    assert.deepEqual(problems, []);
  });
}
