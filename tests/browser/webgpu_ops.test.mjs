// webgpu_ops.test.mjs - every op case of build/wasm-tests/opcases.wasm
// (tests/c/wasm_gpu_cases.c) on Chromium's WebGPU (headless, SwiftShader;
// flags in helpers.mjs), on a page (gpu_parity_page.html,
// webgpu_ops_runner.mjs): each case's WebGPU session runs through
// web/runtime/webgpu.js and must match the CPU run of the same case within
// the op's tolerance, |gpu - cpu| <= tol * (1 + |cpu|) with the table and
// the comparison of tests/common/gpu_compare.mjs, the same as the Node/Dawn
// run (tests/node/webgpu_ops.test.mjs).  Fused ops must refuse (GPU plans
// are compiled without fusion); an op still listed in
// src/webgpu/lower_pending_*.c may refuse and is counted as skipped, and
// once no such file remains any skip fails.  Counts are printed.  The cases
// run in two browsers at once (two GPU processes, so SwiftShader computes
// on two cores), in chunks of CHUNK cases dealt out in turn.
// Build first: make build/wasm-tests/opcases.wasm web/pkg/rlx_web.wasm.
// RLX_CASES=substring runs only the cases whose name contains it.
// RLX_CASE_STRIDE=k (make test passes the one tests/node/webgpu_ops.test.mjs
// ran under Dawn): every case but each k-th, which Dawn checked on the same
// shaders, so make test checks each case once; unset or 1: every case.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startServer, launch, newPage, CHROMIUM, REPO } from './helpers.mjs';
import { pendingOps, pendingFiles } from '../common/webgpu_pending.mjs';

const WASM = `${REPO}build/wasm-tests/opcases.wasm`;
const FILTER = process.env.RLX_CASES ?? '';
const DAWN_STRIDE = FILTER ? 1 : Math.max(1, Math.floor(Number(process.env.RLX_CASE_STRIDE)) || 1);
const why = !existsSync(CHROMIUM) ? `no chromium at ${CHROMIUM}`
  : !existsSync(WASM) ? 'missing build/wasm-tests/opcases.wasm: run `make build/wasm-tests/opcases.wasm`' : null;

const CHUNK = 50;
let server;
let browsers = [];
let tabs = []; // { page, problems } per browser

before(async () => {
  if (why) return;
  [server, ...browsers] = await Promise.all([startServer(['--root', REPO]), launch(), launch()]);
  tabs = await Promise.all(browsers.map(async (browser) => {
    const tab = await newPage(browser);
    await tab.page.goto(`${server.url}tests/browser/gpu_parity_page.html`);
    await tab.page.waitForFunction(() => window.rlxParityReady === true, null, { timeout: 15000 });
    return tab;
  }));
});

after(async () => {
  await Promise.all(browsers.map((b) => b.close()));
  await server?.stop();
});

/** Every case (or those matching FILTER), CHUNK at a time, the chunks dealt out to the tabs in turn; results in case order. */
async function runAllCases(pending) {
  const run = (page, from, to) => page.evaluate((opts) => window.rlxParity.runOpCases(opts), { filter: FILTER, pending, from, to, skipEvery: DAWN_STRIDE });
  const { count } = await run(tabs[0].page, 0, 0);
  const chunks = [];
  for (let from = 0; from < count; from += CHUNK) chunks.push(from);
  const done = new Map();
  await Promise.all(tabs.map(async ({ page }, k) => {
    for (let c = k; c < chunks.length; c += tabs.length) done.set(chunks[c], (await run(page, chunks[c], chunks[c] + CHUNK)).results);
  }));
  return { count, results: chunks.flatMap((from) => done.get(from)) };
}

test('every op case on Chromium WebGPU (but those Dawn checked) matches the CPU', { skip: why ?? false, timeout: 600000 }, async (t) => {
  const t0 = Date.now();
  const gpus = await Promise.all(tabs.map(({ page }) => page.evaluate(() => window.rlxParity.describeGpu())));
  for (const gpu of gpus) assert.ok(gpu.webgpu, 'navigator.gpu gave no adapter');
  const gpu = gpus[0];
  const pending = [...pendingOps()];
  const { count, results } = await runAllCases(pending);
  assert.ok(results.length > 0, `no case ran${FILTER ? ` (RLX_CASES=${FILTER})` : ''}`);
  if (!FILTER) assert.equal(results.length, count - (DAWN_STRIDE > 1 ? Math.ceil(count / DAWN_STRIDE) : 0), 'every case of opcases.wasm ran (but Dawn\'s share)');
  const tally = { pass: 0, fused: 0, pending: 0, fail: 0 };
  const failures = [];
  const skippedByFamily = {};
  let worst = { maxErr: 0, name: '-' };
  for (const r of results) {
    tally[r.outcome]++;
    if (r.outcome === 'fail') failures.push(`${r.name}: ${r.message}`);
    if (r.outcome === 'pending') skippedByFamily[r.message] = (skippedByFamily[r.message] ?? 0) + 1;
    if (r.outcome === 'pass' && r.maxErr > worst.maxErr) worst = r;
  }
  const line = `chromium webgpu (${gpu.webgpu}): ${tally.pass} passed, ${tally.pending} skipped (pending lowerings: ` +
    `${Object.entries(skippedByFamily).map(([f, n]) => `${f} x${n}`).join(', ') || 'none'}), ${tally.fused} fused cases refused by design, ` +
    `${tally.fail} failed of ${results.length}${DAWN_STRIDE > 1 ? ` (every ${DAWN_STRIDE}th of ${count} ran under Dawn)` : ''}; worst error ${worst.maxErr.toExponential(2)} (${worst.name}); ${((Date.now() - t0) / 1000).toFixed(1)} s`;
  console.log(line);
  t.diagnostic(line);
  const slowest = results.filter((r) => r.ms !== undefined).sort((a, b) => b.ms - a.ms).slice(0, 5);
  t.diagnostic(`slowest cases: ${slowest.map((r) => `${r.name} ${r.ms.toFixed(0)} ms`).join(', ')}`);
  assert.deepEqual(failures, [], `${failures.length} case(s) failed:\n${failures.join('\n')}`);
  if (pendingFiles().length === 0) assert.equal(tally.pending, 0, 'no pending lowering files remain, yet cases were skipped');
  for (const { problems } of tabs) assert.deepEqual(problems, []);
});
