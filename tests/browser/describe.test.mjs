// describe.test.mjs - "Describe a model in code" on web/index.html in
// Debian's chromium (headless, playwright-core) served by tools/serve.py:
// the Run button executes web/describe-model.js (784 -> 128 relu -> 10,
// compile_backward, Adam in JS): on 'cpu' the first loss is ln(10) +- 0.05,
// the loss falls over 100 steps, the graph has 13 nodes with output sizes
// [1, 100352, 128, 1280, 10], and every loss equals the same snippet run in
// Node; on 'auto' the same checks hold on whatever backend it resolved to
// (the CPU here: WebGPU and WebGL2 run on SwiftShader, which 'auto' ranks
// below the wasm CPU path), and every better backend it did not use comes
// with a reason; on an explicit 'webgl' it trains through WebGL2 with the
// CPU's losses.  The page shows the snippet's source.  Also the backend
// probes in a page and a Worker (real WebGPU / WebGL2 here, and a Worker
// without navigator.gpu).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, launch, newPage, valueOf, missing, REPO } from './helpers.mjs';

const why = missing();
const LN10 = Math.log(10);
let server;
let browser;
let nodeLosses = null; // the snippet run in Node on the CPU

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(), launch()]);
  const { run } = await import('../../web/describe-model.js');
  nodeLosses = (await run({ backend: 'cpu', log: () => {} })).losses;
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Clicks Run with a backend; resolves to what the page shows. */
async function runSnippet(page, backend) {
  await page.selectOption('#describe-backend', backend);
  await page.click('#describe-run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('describe-status').dataset.value),
    null, { timeout: 240000 });
  const status = await valueOf(page, '#describe-status');
  assert.equal(status, 'done', await page.textContent('#describe-error'));
  const data = await page.$eval('#describe-log', (el) => ({ ...el.dataset, text: el.textContent }));
  return {
    used: await valueOf(page, '#describe-used'),
    loss0: Number(await valueOf(page, '#describe-loss0')),
    loss: Number(await valueOf(page, '#describe-loss')),
    losses: JSON.parse(data.losses),
    sizes: JSON.parse(data.sizes),
    nodes: Number(data.nodes),
    fallbacks: JSON.parse(data.fallbacks),
    log: data.text,
  };
}

function checkTraining(r, what) {
  assert.equal(r.losses.length, 100, `${what}: steps`);
  assert.ok(Math.abs(r.losses[0] - LN10) <= 0.05, `${what}: first loss ${r.losses[0]} is not ln(10) = ${LN10} +- 0.05`);
  assert.equal(r.loss0, r.losses[0]);
  assert.equal(r.loss, r.losses[99]);
  const tail = r.losses.slice(-10).reduce((a, b) => a + b, 0) / 10;
  assert.ok(tail < 0.7 * r.losses[0], `${what}: the loss did not fall: mean of the last 10 steps ${tail} vs first ${r.losses[0]}`);
  assert.equal(r.nodes, 13, `${what}: nodes`);
  assert.deepEqual(r.sizes, [1, 100352, 128, 1280, 10], `${what}: output sizes`);
  assert.match(r.log, /inference: \d+ of 64 fresh images right/);
}

test('index.html shows the snippet source and runs it on the CPU: ln(10), falling loss, the numbers of Node',
  { skip: why ?? false, timeout: 90000 }, async () => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}index.html?autostart=0`);
    await page.waitForFunction(() => document.getElementById('describe-source').textContent.startsWith('//'), null, { timeout: 10000 });
    const source = await page.textContent('#describe-source');
    assert.equal(source, readFileSync(`${REPO}web/describe-model.js`, 'utf8'));
    assert.match(source, /compile_backward\(loss, \[w1, b1, w2, b2\], backend\)/);

    const r = await runSnippet(page, 'cpu');
    checkTraining(r, 'cpu');
    assert.equal(r.used, 'cpu');
    assert.deepEqual(r.fallbacks, [], 'an explicit request falls back from nothing');
    r.losses.forEach((l, i) => assert.ok(Math.abs(l - nodeLosses[i]) <= 1e-5 * (1 + Math.abs(nodeLosses[i])),
      `step ${i + 1}: page ${l} != node ${nodeLosses[i]}`));
    assert.deepEqual(problems, []);
    await page.close();
  });

test('the snippet on "auto": trains on the backend it resolved to, and says why not the better ones',
  { skip: why ?? false, timeout: 300000 }, async (t) => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}index.html?autostart=0`);
    const r = await runSnippet(page, 'auto');
    t.diagnostic(`auto ran on ${r.used}; ${r.fallbacks.map((f) => `not ${f.backend}: ${f.reason}`).join('; ') || 'no fallbacks'}`);
    assert.ok(['webgpu', 'webgl', 'cpu'].includes(r.used), `resolved to ${r.used}`);
    checkTraining(r, `auto (${r.used})`);
    const order = ['webgpu', 'webgl', 'cpu'];
    assert.deepEqual(r.fallbacks.map((f) => f.backend), order.slice(0, order.indexOf(r.used)),
      'every better backend is listed as a fallback, in order');
    for (const f of r.fallbacks) assert.ok(typeof f.reason === 'string' && f.reason.length > 10, `${f.backend}: no reason`);
    for (const f of r.fallbacks) assert.ok(r.log.includes(`not ${f.backend}: ${f.reason}`), 'the page shows each reason');
    assert.deepEqual(problems, []);
    await page.close();
  });

test('the snippet on an explicit "webgl": WebGL2 render passes, synchronous runs, the CPU numbers within 1e-3',
  { skip: why ?? false, timeout: 300000 }, async () => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}index.html?autostart=0`);
    const r = await runSnippet(page, 'webgl');
    assert.equal(r.used, 'webgl');
    assert.deepEqual(r.fallbacks, []);
    checkTraining(r, 'webgl');
    r.losses.forEach((l, i) => assert.ok(Math.abs(l - nodeLosses[i]) <= 1e-3 * (1 + Math.abs(nodeLosses[i])),
      `step ${i + 1}: webgl ${l} != cpu ${nodeLosses[i]}`));
    assert.deepEqual(problems, []);
    await page.close();
  });

test('backend probes in Chromium: WebGPU and WebGL2 are real here; a Worker without navigator.gpu says why',
  { skip: why ?? false, timeout: 30000 }, async () => {
    const { page, problems } = await newPage(browser);
    // The page's own GPU cross-check (gpu-check.js) calls init_webgpu() on
    // load, which would race the "before" reading below: it is left out.
    await page.route('**/gpu-check.js', (route) => route.fulfill({ contentType: 'text/javascript', body: '' }));
    await page.goto(`${server.url}index.html?autostart=0`);
    const inPage = await page.evaluate(async () => {
      const m = await import('./pkg/rlx_web.js');
      await m.default();
      const before = m.backend_environment();
      const gpu = await m.init_webgpu();
      const gl = await m.init_webgl();
      return { before, gpu, gl, after: m.backend_environment(), cands: m.backend_candidates('mnist-mlp', 'auto'),
        explicit: m.backend_candidates('mnist-mlp', 'webgpu').candidates,
        refused: m.backend_candidates('mnist-mlp', 'webgpu', { env: { ...m.backend_environment(), webgpu: { available: false, reason: 'stub' } } }) };
    });
    assert.equal(inPage.before.webgpu.available, false);
    assert.match(inPage.before.webgpu.reason, /init_webgpu/, 'before init_webgpu() the page is told to call it');
    assert.equal(inPage.gpu, true, `init_webgpu: ${inPage.after.webgpu.reason}`);
    assert.deepEqual(inPage.after.webgpu, { available: true, reason: null, software: 'SwiftShader' });
    assert.equal(inPage.gl, inPage.after.webgl.available);
    assert.deepEqual(inPage.before.webgl, inPage.after.webgl, 'WebGL2 needs no init_webgl(): it initialises itself');
    assert.deepEqual(inPage.cands.candidates, ['cpu'], 'SwiftShader WebGPU and WebGL2 rank below the CPU for auto');
    assert.deepEqual(inPage.cands.skipped.map((s) => s.backend), ['webgpu', 'webgl']);
    assert.deepEqual(inPage.explicit, ['webgpu'], 'an explicit webgpu still gets WebGPU');
    assert.deepEqual(inPage.refused.candidates, []);
    assert.match(inPage.refused.refusal, /webgpu was requested but cannot be used: stub/);

    const inWorker = await page.evaluate(async () => {
      const src = `Object.defineProperty(WorkerNavigator.prototype, 'gpu', { get: () => undefined });
        const m = await import(${JSON.stringify(new URL('./pkg/rlx_web.js', location.href).href)});
        await m.default();
        const gpu = await m.init_webgpu();
        const gl = await m.init_webgl();
        postMessage({ gpu, gl, env: m.backend_environment(), cands: m.backend_candidates('mnist-cnn') });`;
      const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
      const w = new Worker(url, { type: 'module' });
      return new Promise((resolve, reject) => {
        w.onmessage = (e) => resolve(e.data);
        w.onerror = (e) => reject(new Error(e.message));
      });
    });
    assert.equal(inWorker.gpu, false);
    assert.deepEqual(inWorker.env.webgpu, { available: false, reason: 'WebGPU is not available here (no navigator.gpu)' });
    assert.equal(inWorker.gl, inWorker.env.webgl.available, inWorker.env.webgl.reason ?? '');
    assert.equal(inWorker.cands.candidates.at(-1), 'cpu');
    assert.ok(!inWorker.cands.candidates.includes('webgpu'));
    assert.deepEqual(problems, []);
    await page.close();
  });
