// web_api_gpu.test.mjs - the GPU entry points of web/pkg/rlx_web.js in
// Debian's chromium (headless, SwiftShader WebGPU and WebGL2): on a page,
// mlp_forward_gpu / mlp_grads_gpu (WebGPU), mlp_forward_webgl /
// mlp_grads_webgl (WebGL2) and VisionBench's forward / train_step on both
// (mnist-mlp) give the numbers Node computes on the CPU within 1e-4 (relative), bench_webgl
// lowers the loss like bench_cpu; index.html's cross-check shows a match for
// both GPU backends with the difference in the DOM; a lost WebGL2 context is
// an Error saying so, and init_webgl() again brings the backend back; vision-bench.html trains
// on WebGL2 and on WebGPU in its Worker, showing the CPU's logits.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, newPage, missing } from './helpers.mjs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { makeTask } from '../../web/demo-task.js';

const TOL = 1e-4;
const why = missing();
let server;
let browser;

before(async () => {
  if (why) return;
  await init();
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

function close(got, want, what, tol = TOL) {
  assert.equal(got.length, want.length, `${what}: length ${got.length} != ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tol * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: page ${got[i]} != node ${want[i]}, |diff| ${d}`);
  }
}

test('index.html: the GPU cross-check shows a match on WebGPU and WebGL2; the entry points on the page equal Node\'s CPU', { skip: why ?? false, timeout: 150000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}index.html?autostart=0`);
  await page.waitForFunction(() => document.getElementById('gpu-check').dataset.done === '1', null, { timeout: 40000 });
  for (const b of ['webgpu', 'webgl']) {
    const [state, value, text] = await page.$eval(`#check-${b}`, (el) => [el.dataset.state, el.dataset.value, el.textContent]);
    assert.equal(state, 'match', `${b}: ${text}`);
    const diff = Number(value);
    assert.ok(diff >= 0 && diff <= TOL, `${b}: difference ${value}`);
    assert.match(text, /^match: max relative difference /);
  }

  const task = makeTask(2);
  const dims = task.dims;
  const mlpArgs = [Array.from(task.x), Array.from(task.t), ...dims, ...[task.w1, task.b1, task.w2, task.b2].map((a) => Array.from(a))];
  const bench = new rlx.VisionBench('mnist-mlp');
  const params = bench.init_params(5);
  const { x, labels } = bench.synthetic_batch(5, 2);
  const got = await page.evaluate(async ({ mlpArgs, params, x, labels }) => {
    const m = await import('./pkg/rlx_web.js');
    await m.default();
    const [xs, t, ...rest] = mlpArgs;
    const a = (v) => Array.from(v);
    const b = new m.VisionBench('mnist-mlp');
    const p = Float32Array.from(params);
    // WebGL2 initialises itself on first use: no init_webgl() before these.
    const glFirst = { forward: a(m.mlp_forward_webgl(xs, ...rest)), step: a(b.train_step_webgl(x, labels, p, 0.05)) };
    const ok = [await m.init_webgpu(), await m.init_webgl()];
    const out = {
      ok,
      glFirst,
      forwardGpu: a(await m.mlp_forward_gpu(xs, ...rest)),
      gradsGpu: a(await m.mlp_grads_gpu(xs, t, ...rest)),
      forwardGl: a(m.mlp_forward_webgl(xs, ...rest)),
      gradsGl: a(m.mlp_grads_webgl(xs, t, ...rest)),
      logitsGl: a(b.forward_webgl(x, p)),
      stepGl: a(b.train_step_webgl(x, labels, p, 0.05)),
      gradsVisionGl: a(b.grads_webgl(x, labels, p)),
      gradsVisionGpu: a(await b.grads_webgpu(x, labels, p)),
      benchGl: a(b.bench_webgl(3, 5, 0.05, 2)),
      logitsGpu: a(await b.forward_webgpu(x, p)),
      stepGpu: a(await b.train_step_webgpu(x, labels, p, 0.05)),
    };
    b.free();
    try {
      b.forward_webgl(x, p);
    } catch (err) {
      out.freed = err.message;
    }
    // Lose the WebGL2 context: an Error saying so; init_webgl() again gives a new one.
    const backends = await import('./runtime/backends.js');
    backends.webglRuntime().canvas.getContext('webgl2').getExtension('WEBGL_lose_context').loseContext();
    try {
      m.mlp_forward_webgl(xs, ...rest);
    } catch (err) {
      out.lost = { message: err.message, reason: err.reason };
    }
    out.reinit = await m.init_webgl();
    out.afterLoss = a(m.mlp_forward_webgl(xs, ...rest));
    return out;
  }, { mlpArgs, params: Array.from(params), x: Array.from(x), labels: Array.from(labels) });
  assert.deepEqual(got.ok, [true, true], 'WebGPU and WebGL2 initialize in chromium');
  const [xs, t, ...rest] = mlpArgs;
  const fwd = rlx.mlp_forward(xs, ...rest);
  const grads = rlx.mlp_grads(xs, t, ...rest);
  close(got.forwardGpu, fwd, 'mlp_forward_gpu');
  close(got.gradsGpu, grads, 'mlp_grads_gpu');
  close(got.forwardGl, fwd, 'mlp_forward_webgl');
  close(got.glFirst.forward, fwd, 'mlp_forward_webgl before any init_webgl()');
  close(got.gradsGl, grads, 'mlp_grads_webgl');
  const logits = bench.forward_cpu(x, params);
  const step = bench.train_step_cpu(x, labels, params, 0.05);
  close(got.logitsGl, logits, 'forward_webgl');
  close(got.logitsGpu, logits, 'forward_webgpu');
  close(got.stepGl, step, 'train_step_webgl');
  close(got.glFirst.step, step, 'train_step_webgl before any init_webgl()');
  close(got.stepGpu, step, 'train_step_webgpu');
  const visionGrads = bench.grads_cpu(x, labels, params);
  assert.equal(visionGrads.length, 1 + params.length);
  close(got.gradsVisionGl, visionGrads, 'grads_webgl');
  close(got.gradsVisionGpu, visionGrads, 'grads_webgpu');
  const cpuBench = bench.bench_cpu(3, 5, 0.05, 2);
  close(got.benchGl.slice(0, 2), cpuBench.subarray(0, 2), 'bench_webgl losses');
  assert.ok(got.benchGl[1] < got.benchGl[0], 'bench_webgl: the loss fell');
  assert.ok(got.benchGl[2] > 0, 'bench_webgl: steps/s');
  assert.match(got.freed, /VisionBench\.forward_webgl: this VisionBench \(mnist-mlp\) was freed/);
  assert.match(got.lost?.message ?? 'no error', /^mlp_forward_webgl: WebGL2 could not run it: .*context.*lost/i);
  assert.equal(got.lost.reason, 'context-lost');
  assert.equal(got.reinit, true);
  close(got.afterLoss, fwd, 'mlp_forward_webgl on a new context');
  assert.deepEqual(problems, []);
  bench.free();
  await page.close();
});

for (const backend of ['webgl', 'webgpu']) {
  test(`vision-bench.html trains on ${backend} in its Worker: the logits are the CPU's, the loss falls`, { skip: why ?? false, timeout: 60000 }, async () => {
    const { page, problems } = await newPage(browser);
    const batch = 2;
    await page.goto(`${server.url}vision-bench.html?model=mnist-mlp&backend=${backend}&batch=${batch}&steps=3&autorun=1`);
    await page.waitForFunction(() => ['finished', 'error'].includes(document.getElementById('progress-text').dataset.state),
      null, { timeout: 50000 });
    assert.equal(await page.textContent('#error'), '');
    assert.deepEqual(problems, []);
    assert.equal(await page.$eval('#backend', (el) => el.value), backend);
    assert.equal(await page.$eval('#table tbody tr', (tr) => tr.children[2].textContent), backend);
    const bench = new rlx.VisionBench('mnist-mlp');
    const logits = bench.forward_cpu(bench.synthetic_batch(42, batch).x, bench.init_params(42));
    const shown = (await page.$eval('#logits', (el) => el.dataset.value)).split(',').map(Number);
    close(shown, logits.subarray(0, 10), `${backend} logits of sample 0`);
    const last = Number(await page.$eval('#r-loss', (el) => el.dataset.value));
    const first = Number(await page.$eval('#r-loss', (el) => el.dataset.first));
    assert.ok(last < first, `${backend}: the loss did not fall: ${first} -> ${last}`);
    bench.free();
    await page.close();
  });
}
