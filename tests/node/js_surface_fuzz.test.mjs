// js_surface_fuzz.test.mjs - a seeded, bounded fuzzer over the public JS
// surface: every exported function, class and public method of
// web/pkg/rlx_web.js, WebGraph, CompiledGraph, the internal binding under
// them (web/runtime/loader.js: loadRlx, Rlx, Graph, Session) and the SDK
// web/rlx.js (`make sdk`), called with argument lists that mix plausible
// values with hostile ones (null, undefined, Object.create(null), NaN, -1,
// 2^31, array-likes claiming 2^32 entries, huge strings, wrong types,
// proxies that throw).  The calls run in a Worker
// (./js_surface_fuzz_worker.mjs) watched from here, so a call that never
// returns is reported by name.  The test fails on any exception that is not
// an RlxError (a proxy's own exception may pass through unchanged: it is the
// caller's), any trap, any call over the time bound, and any call after
// which the module no longer computes a small MLP forward and a matmul
// exactly as before.  RLX_FUZZ_SEED and RLX_FUZZ_ITERS override the seed and
// the count; a failure prints the seed and the calls.
// Build first: make wasm sdk
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

const SEED = Number(process.env.RLX_FUZZ_SEED ?? 0xf022) >>> 0;
const ITERS = Number(process.env.RLX_FUZZ_ITERS ?? 10000);
const CALL_MS = 5000;   // one call (or its Promise); far above any legitimate call here
const SILENT_MS = 20000; // no progress from the worker for this long: a hang

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url)) && existsSync(new URL('../../web/rlx.js', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm and web/rlx.js present', () => assert.fail('run `make wasm sdk`'));

test(`fuzz the JS surface: ${ITERS} hostile calls (seed ${SEED})`, { skip: !ready }, async () => {
  const worker = new Worker(new URL('./js_surface_fuzz_worker.mjs', import.meta.url),
    { workerData: { seed: SEED, iters: ITERS, callMs: CALL_MS } });
  let last = null;
  let timer;
  const result = await new Promise((resolve) => {
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => resolve({ kind: 'silent' }), SILENT_MS);
    };
    arm();
    worker.on('message', (m) => {
      if (m.kind === 'call') {
        last = m;
        arm();
      } else {
        resolve(m);
      }
    });
    worker.on('error', (err) => resolve({ kind: 'crash', error: String(err?.stack ?? err) }));
    worker.on('exit', (code) => resolve({ kind: 'crash', error: `worker exited with ${code}` }));
  });
  clearTimeout(timer);
  await worker.terminate();
  const where = `seed ${SEED} (RLX_FUZZ_SEED=${SEED} RLX_FUZZ_ITERS=${ITERS})`;
  if (result.kind === 'silent') assert.fail(`${where}: call ${last?.i} hung (no return in ${SILENT_MS / 1000} s): ${last?.label}`);
  if (result.kind === 'crash') assert.fail(`${where}: the fuzzer crashed after call ${last?.i} (${last?.label}): ${result.error}`);
  const c = result.counts;
  console.log(`JS surface fuzz: ${where}: ${c.calls} calls to ${result.targets} targets in ${result.seconds.toFixed(1)} s: ` +
    `${c.returned} returned, ${c.rlxError} RlxErrors, ${c.propagated} caller exceptions passed through, ` +
    `${c.escape} escapes, ${c.trap} traps, ${c.hang} hangs, ${c.wrong} wrong results after`);
  if (result.failures.length) {
    const lines = result.failures.map((f) => `  #${f.i} ${f.kind}: ${f.label}\n      ${f.detail}`);
    assert.fail(`${where}: ${result.failures.length} failures:\n${lines.join('\n')}`);
  }
  assert.ok(c.rlxError > c.calls / 4, 'most hostile calls end as RlxErrors');
});
