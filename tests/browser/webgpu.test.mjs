// webgpu.test.mjs - the WebGPU executor (web/runtime/webgpu.js) in Debian's
// chromium (headless, SwiftShader WebGPU; flags in helpers.mjs), on a page
// and in a dedicated Worker: a graph compiled for 'webgpu' through
// web/runtime/loader.js (web/pkg/rlx_web.wasm) runs as on the CPU (max
// |gpu - cpu| / (1 + |cpu|) <= 1e-4), params read back unchanged.  The op
// cases themselves run in Node (tests/node/webgpu_ops.test.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, newPage, missing, REPO } from './helpers.mjs';

const why = missing();
let server;
let browser;
let page;
let problems;

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(['--root', REPO]), launch()]);
  ({ page, problems } = await newPage(browser));
  await page.goto(`${server.url}tests/browser/webgpu_page.html`);
  await page.waitForFunction(() => window.rlxWebgpuReady === true, null, { timeout: 15000 });
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test('webgpu executor on a page', { skip: why ?? false, timeout: 120000 }, async () => {
  const r = await page.evaluate(() => window.rlxWebgpu.runChecks());
  assert.ok(r.worst <= 1e-4, `max error ${r.worst}`);
  assert.ok(r.paramOk, 'param read back differs');
  assert.deepEqual(problems, []);
});

test('webgpu executor in a Worker', { skip: why ?? false, timeout: 120000 }, async () => {
  const r = await page.evaluate(() => window.rlxWebgpu.inWorker());
  assert.ok(r.isWorker);
  assert.ok(r.worst <= 1e-4, `max error ${r.worst}`);
  assert.ok(r.paramOk, 'param read back differs');
  assert.deepEqual(problems, []);
});
