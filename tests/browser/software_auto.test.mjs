// software_auto.test.mjs - 'auto' in Debian's chromium (headless, flags in
// helpers.mjs), whose WebGPU adapter and WebGL2 renderer are SwiftShader (a
// CPU rasterizer): backend_environment() marks both `software:
// 'SwiftShader'`, and 'auto' resolves to the wasm CPU path with the reason
// for each in its fallbacks - backend_candidates, select_backend,
// WebGraph.compile_forward, the SDK's model.resolve('auto') and
// trainStep, on the page and in a module Worker; an explicit 'webgpu' or
// 'webgl' still runs there.  (How much slower a software GPU is, the pages
// measure in their run: web/software-gpu.js.)
// Fake adapters and contexts: tests/node/backends_software.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startServer, launch, newPage, missing, REPO } from './helpers.mjs';

const why = missing() ?? (existsSync(`${REPO}web/rlx.js`) ? null : 'missing web/rlx.js: run `make sdk`');
const WEBGPU = 'a software adapter (SwiftShader); the wasm CPU path is faster';
const WEBGL = 'a software renderer (SwiftShader); the wasm CPU path is faster';
const FALLBACKS = [{ backend: 'webgpu', reason: WEBGPU }, { backend: 'webgl', reason: WEBGL }];
let server;
let browser;

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(['--root', REPO]), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

// Runs in the page and in the Worker: what 'auto' and explicit requests resolve to.
async function probe() {
  const m = await import('/web/pkg/rlx_web.js');
  const { default: Rlx } = await import('/web/rlx.js');
  await m.default();
  const gpu = await m.init_webgpu();
  const gl = await m.init_webgl();
  const env = m.backend_environment();
  const cands = m.backend_candidates('mnist-mlp', 'auto');
  const pick = (request) => {
    const sel = m.select_backend('mnist-mlp', request, { batch: 2 });
    sel.compiled.free();
    return { backend: sel.backend, fallbacks: sel.fallbacks };
  };
  const g = new m.WebGraph();
  const x = g.input('x', [4]);
  const y = g.relu(x);
  const compiled = {};
  for (const b of ['auto', 'webgpu', 'webgl']) {
    const c = g.compile_forward(y, b);
    c.feed('x', [-2, -1, 1, 2]);
    await c.run();
    compiled[b] = { backend: c.backend, fallbacks: c.fallbacks, out: Array.from(c.output(0)) };
    c.free();
  }
  g.free();
  const rlx = await Rlx.init();
  const model = rlx.vision('mnist-mlp');
  const params = model.initParams(1);
  const { x: xs, labels } = model.syntheticBatch(1, 2);
  const step = await model.trainStep(xs, labels, params, 0.01);
  const sdk = { resolved: model.resolve('auto'), stepBackend: step.backend, explicit: (await model.trainStep(xs, labels, params, 0.01, { backend: 'webgpu' })).backend };
  rlx.dispose();
  return { gpu, gl, env, cands, auto: pick('auto'), webgpu: pick('webgpu'), webgl: pick('webgl'), compiled, sdk };
}

function check(r, where) {
  assert.equal(r.gpu, true, `${where}: init_webgpu`);
  assert.equal(r.gl, true, `${where}: init_webgl`);
  assert.deepEqual(r.env.webgpu, { available: true, reason: null, software: 'SwiftShader' }, `${where}: webgpu status`);
  assert.deepEqual(r.env.webgl, { available: true, reason: null, software: 'SwiftShader' }, `${where}: webgl status`);
  assert.deepEqual(r.cands, { request: 'auto', candidates: ['cpu'], skipped: FALLBACKS, refusal: null }, `${where}: candidates`);
  assert.deepEqual(r.auto, { backend: 'cpu', fallbacks: FALLBACKS }, `${where}: select_backend auto`);
  assert.deepEqual(r.webgpu, { backend: 'webgpu', fallbacks: [] }, `${where}: an explicit webgpu runs there`);
  assert.deepEqual(r.webgl, { backend: 'webgl', fallbacks: [] }, `${where}: an explicit webgl runs there`);
  for (const b of ['auto', 'webgpu', 'webgl']) assert.deepEqual(r.compiled[b].out, [0, 0, 1, 2], `${where}: ${b} output`);
  assert.deepEqual(r.compiled.auto.fallbacks, FALLBACKS);
  assert.deepEqual([r.compiled.auto.backend, r.compiled.webgpu.backend, r.compiled.webgl.backend], ['cpu', 'webgpu', 'webgl']);
  assert.deepEqual(r.sdk.resolved, { backend: 'cpu', fallbacks: FALLBACKS }, `${where}: SDK resolve('auto')`);
  assert.equal(r.sdk.stepBackend, 'cpu');
  assert.equal(r.sdk.explicit, 'webgpu');
}

test("SwiftShader WebGPU and WebGL2 are software: 'auto' resolves to the CPU with both reasons; explicit requests run there",
  { skip: why ?? false, timeout: 120000 }, async (t) => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}tests/browser/gpu_parity_page.html`);
    await page.waitForFunction(() => window.rlxParityReady === true, null, { timeout: 15000 });
    const gpu = await page.evaluate(() => window.rlxParity.describeGpu());
    t.diagnostic(`webgpu adapter: ${gpu.webgpu}; webgl renderer: ${gpu.webgl}`);
    check(await page.evaluate(probe), 'page');

    const inWorker = await page.evaluate(async (src) => {
      const url = URL.createObjectURL(new Blob([`const probe = ${src};
        probe().then((r) => postMessage({ r }), (e) => postMessage({ error: String(e?.stack ?? e) }));`], { type: 'text/javascript' }));
      const w = new Worker(url, { type: 'module' });
      return new Promise((resolve) => { w.onmessage = (e) => { w.terminate(); resolve(e.data); }; });
    }, probe.toString().replace(/import\('\//g, `import('${server.url}`));
    assert.equal(inWorker.error, undefined, inWorker.error);
    check(inWorker.r, 'worker');
    assert.deepEqual(problems, []);
    await page.close();
  });
