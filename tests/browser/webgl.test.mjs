// webgl.test.mjs - the WebGL2 executor (web/runtime/webgl.js) in Debian's
// chromium (headless, SwiftShader; playwright-core, flags in helpers.mjs):
// every op case of build/wasm-tests/webgl_cases.wasm whose ops have WebGL2
// lowerings, the even-numbered ones drawn on the page's <canvas> and the odd
// ones in a Worker (OffscreenCanvas, textures at most 7 texels wide so every
// tensor spans rows with padding; an op's cases fall on both sides), each
// compared with the CPU run of the same case in
// the same wasm module: |gpu - cpu| <= tol (1 + |cpu|), tol = 1e-4 or the
// case's larger tolerance (webgl_runner.mjs says why).  Cases whose ops have
// no lowering yet are counted as skipped.  Also: a 100003-value tensor,
// MAX_TEXTURE_SIZE, a lost context, missing EXT_color_buffer_float and bad
// calls give clear errors; a graph compiled for 'webgl' through
// web/runtime/loader.js runs as on the CPU.  The page's op cases and the
// Worker's run at the same time in two browsers (two GPU processes, so
// SwiftShader draws on two cores), started in before(); each test awaits
// and checks its own run (their time limits allow for sharing the cores).
// Build first: make wasm build/wasm-tests/webgl_cases.wasm.  RLX_CASES=substring
// runs only the cases whose name contains it, each on both sides.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startServer, launch, newPage, CHROMIUM, REPO } from './helpers.mjs';

const WASM = `${REPO}build/wasm-tests/webgl_cases.wasm`;
const FILTER = process.env.RLX_CASES ?? '';
const why = !existsSync(CHROMIUM) ? `no chromium at ${CHROMIUM}`
  : !existsSync(WASM) ? 'missing build/wasm-tests/webgl_cases.wasm: run `make build/wasm-tests/webgl_cases.wasm`' : null;

let server;
let browser;
let page;
let problems;
let workerBrowser; // the second browser: its page starts the Worker
let workerPage;
let workerProblems;
let pageRun; // { r, ms } or { error }: the op cases on the page's <canvas>
let workerRun; // the same in the Worker

before(async () => {
  if (why) return;
  [server, browser, workerBrowser] = await Promise.all([startServer(['--root', REPO]), launch(), launch()]);
  ({ page, problems } = await newPage(browser));
  ({ page: workerPage, problems: workerProblems } = await newPage(workerBrowser));
  await Promise.all([page, workerPage].map(async (p) => {
    await p.goto(`${server.url}tests/browser/webgl_page.html`);
    await p.waitForFunction(() => window.rlxWebglReady === true, null, { timeout: 15000 });
  }));
  const timed = (run) => {
    const t0 = Date.now();
    return run.then((r) => ({ r, ms: Date.now() - t0 }), (error) => ({ error }));
  };
  // Without a filter each side takes half of the cases (every other one).
  const [pagePart, workerPart] = FILTER ? [[0, 1], [0, 1]] : [[0, 2], [1, 2]];
  pageRun = timed(page.evaluate(([filter, part]) => window.rlxWebgl.runCases({ filter, part }), [FILTER, pagePart]));
  workerRun = timed(workerPage.evaluate(([filter, part]) => window.rlxWebgl.inWorker({ filter, part, maxWidth: 7 }), [FILTER, workerPart]));
});

after(async () => {
  await browser?.close();
  await workerBrowser?.close();
  await server?.stop();
});

/** Asserts every case ran within tolerance; returns counts for the log. */
/** The value and milliseconds of a run started in before(), or its error thrown. */
async function outcome(run) {
  const { r, ms, error } = await run;
  if (error) throw error;
  return { r, ms };
}

function check(results, where) {
  assert.ok(results.length > 0, `${where}: no case ran${FILTER ? ` (RLX_CASES=${FILTER})` : ''}`);
  const failures = [];
  let ran = 0, pending = 0, fused = 0, worst = { maxErr: 0, name: '-' };
  for (const r of results) {
    if (r.skipped) {
      if (r.skipped === 'fused') fused++; else pending++;
    } else if (r.error) {
      failures.push(`${r.name}: ${r.error}`);
    } else if (!(r.maxErr <= r.tol)) {
      failures.push(`${r.name}: max error ${r.maxErr.toExponential(3)} > ${r.tol} at ${r.at}: gpu ${r.got} cpu ${r.want}`);
    } else {
      ran++;
      if (r.maxErr > worst.maxErr) worst = r;
    }
  }
  assert.deepEqual(failures, [], `${where}: ${failures.length} case(s) failed:\n${failures.join('\n')}`);
  return { ran, pending, fused, worst: `${worst.maxErr.toExponential(2)} (${worst.name})` };
}

test('op cases on the main thread (<canvas>) match the CPU', { skip: why ?? false, timeout: 600000 }, async (t) => {
  const { r: results, ms } = await outcome(pageRun);
  const c = check(results, 'page');
  t.diagnostic(`page: ${c.ran} cases passed, ${c.pending} skipped (no lowering yet), ${c.fused} fused (never lowered), worst error ${c.worst}, ${ms} ms`);
  assert.deepEqual(problems, []);
});

test('op cases in a Worker (OffscreenCanvas, 7-texel-wide textures) match the CPU', { skip: why ?? false, timeout: 600000 }, async (t) => {
  const { r: reply, ms } = await outcome(workerRun);
  assert.equal(reply.isWorker, true);
  const c = check(reply.results, 'worker');
  t.diagnostic(`worker: ${c.ran} cases passed, ${c.pending} skipped, ${c.fused} fused, worst error ${c.worst}, ${ms} ms`);
  assert.deepEqual(workerProblems, []);
});

test('large tensors, limits, lost contexts and bad calls give clear results', { skip: why ?? false, timeout: 60000 }, async (t) => {
  const out = await page.evaluate(() => window.rlxWebgl.runChecks());
  t.diagnostic(`renderer: ${out.renderer}; outputs read as ${out.readFormat}/FLOAT`);
  // neg only (a flat-safe shader): 4 values per texel, 25001 texels in the near-square layout
  // (src/webgl/plan_gl.c): ceil(sqrt(25001)) = 159 wide, 158 rows, the last one partly padding
  assert.deepEqual(out.big, { length: 100003, bad: 0, width: 159, height: 158 });
  assert.equal(out.otherReadBad, 0, 'the other readPixels format gave other values');
  assert.match(out.unset.message, /no input named 'nope'/);
  assert.match(out.badLength.message, /'x' holds 100003 values, got 3/);
  assert.equal(out.lost.reason, 'context-lost');
  assert.match(out.lost.message, /context was lost/);
  assert.equal(out.freedTwice, null);
  assert.match(out.afterFree.message, /already freed/);
  assert.equal(out.limits.reason, 'limits');
  assert.match(out.limits.message, /MAX_TEXTURE_SIZE/);
  assert.equal(out.noFloat.reason, 'no-float-render');
  assert.match(out.noFloat.message, /EXT_color_buffer_float/);
  assert.equal(out.isUnavailable, true);
  // Through loader.js and web/pkg/rlx_web.wasm, as an application does it.
  for (const err of out.loader.errors) assert.ok(err <= 1e-4, `loader path: error ${err}`);
  assert.deepEqual(out.loader.shapes, [[3, 5], [4, 5]]);
  assert.deepEqual(out.loader.param, Array.from(Float32Array.from([0.1, -0.2, 0.3])));
  assert.equal(out.loader.passes, 4);
  assert.equal(out.loader.deleted, true, 'free() left textures or programs behind');
  // the 4-cells-per-fragment max-pool gradient (pool_grad.frag PG_RUN4) follows the CPU
  assert.ok(out.loader.pool.defines.includes('PG_RUN4=1'), `pool_grad drew ${out.loader.pool.defines}`);
  assert.ok(out.loader.pool.nonzero > 0 && out.loader.pool.err <= 1e-6, `pool_grad: ${JSON.stringify(out.loader.pool)}`);
  // Training: Adam on w and b; params and the step count assigned after each
  // run (adam_update writes the moments in place).
  assert.deepEqual(out.train.assignments, ['b', 'rlx.step', 'w']);
  for (const r of out.train.rows) assert.ok(r.err <= 1e-4, `training step: ${JSON.stringify(r)}`);
  assert.ok(out.train.rows[4].loss < out.train.rows[0].loss, 'the loss did not fall');
});
