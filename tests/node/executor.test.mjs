// executor.test.mjs - the one JS executor contract (web/runtime/executor.js)
// in Node, on the CPU executor (web/runtime/cpu.js): checkExecutor finds
// nothing missing on it nor on a CompiledGraph's executor; run(feeds)
// resolves to the outputs and runSync gives the same; readParam (Promise)
// and readParamSync; profile rows { index, op, node, key, ms }; the one
// int32 rule (int32Values) and clear errors for bad names and lengths;
// free is idempotent.  The GPU executors meet the same contract in
// tests/node/webgpu_ops.test.mjs (Dawn) and tests/browser/webgl.test.mjs.
// Build first: make wasm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { checkExecutor, int32Values, EXECUTOR_MEMBERS } from '../../web/runtime/executor.js';
import { CpuExecutor } from '../../web/runtime/cpu.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const rt = ready ? await init() : null;
const skip = !ready;

test('int32Values: the one float -> int rule (truncation; NaN and out of range -> -1)', () => {
  const ints = new Int32Array([1, 2]);
  assert.equal(int32Values(ints), ints, 'an Int32Array as it is');
  assert.deepEqual(Array.from(int32Values([1.9, -1.9, NaN, 3e9, -3e9, 2147483647])), [1, -1, -1, -1, -1, -1]);
  assert.deepEqual(Array.from(int32Values(new Float32Array([7, 0.5]))), [7, 0]);
});

test('the CPU executor meets the contract: run(feeds), runSync, readParam, profile, free', { skip }, async () => {
  const g = rt.graph();
  const x = g.input('x', [2, 3]);
  const ids = g.input('ids', [2], 'i32');
  const w = g.param('w', [3, 2]);
  const y = g.op('matmul', [x, w], [0, 0]);
  const s = g.compile([y, g.op('gather', [w, ids])]);
  g.free();
  const ex = new CpuExecutor(rt, s.ptr, { owns: true });
  assert.deepEqual(checkExecutor(ex), []);
  assert.equal(ex.backend, 'cpu');
  assert.deepEqual(ex.inputs, [{ name: 'x', count: 6, dtype: 'f32' }, { name: 'ids', count: 2, dtype: 'i32' }]);
  assert.deepEqual(ex.params, [{ name: 'w', count: 6 }]);
  assert.equal(ex.outputCount, 2);
  assert.equal(await ex.prepare(), ex);
  const wv = Float32Array.from([1, 2, 3, 4, 5, 6]);
  ex.setParam('w', wv);
  const xv = Float32Array.from([1, 0, 0, 0, 1, 1]);
  const outs = await ex.run({ x: xv, ids: [2.7, 0] }); // floats to an i32 input: truncated
  assert.deepEqual(Array.from(outs[0]), [1, 2, 8, 10]);
  assert.deepEqual(Array.from(outs[1]), [5, 6, 1, 2]);
  assert.deepEqual(ex.runSync(new Map([['ids', new Int32Array([1, 1])]]))[1], Float32Array.from([3, 4, 3, 4]));
  assert.deepEqual(ex.output(1), Float32Array.from([3, 4, 3, 4]));
  assert.deepEqual(await ex.readParam('w'), wv);
  assert.deepEqual(ex.readParamSync('w'), wv);
  const rows = await ex.profile();
  assert.ok(rows.length >= 1);
  for (const r of rows) {
    for (const k of ['index', 'op', 'node', 'key', 'ms']) assert.ok(k in r, `profile row lacks ${k}`);
    assert.ok(r.ms >= 0);
  }
  assert.throws(() => ex.setInput('nope', [1]), /CPU session: no input named 'nope' \(inputs: x, ids\)/);
  assert.throws(() => ex.setInput('x', [1, 2]), (err) => err.detail === "set_input: 'x' holds 6 values, got 2");
  assert.throws(() => ex.feed('q', [1]), /no input or param named 'q'/);
  await assert.rejects(ex.run({ w: [1] }), /set_param: 'w' holds 6 values, got 1/);
  await assert.rejects(ex.readParam('nope'), /no param named 'nope'/);
  assert.throws(() => ex.output(5), /output 5 does not exist/);
  ex.free();
  ex.free();
  assert.throws(() => ex.runSync(), /already freed/);
  await assert.rejects(ex.run(), /already freed/);
});

test('CompiledGraph delegates to its executor: the contract on every compiled graph, run_async everywhere', { skip }, async () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [4]);
  const p = g.param('p', [4]);
  const loss = g.reduce_sum(g.mul(g.mul(x, p), p));
  const c = g.compile_backward(loss, [p], 'cpu');
  g.free();
  assert.deepEqual(checkExecutor(c.executor), []);
  assert.equal(c.executor.backend, c.backend);
  c.feed('p', [1, 2, 3, 4]);
  const [l, dp] = await c.run_async({ x: [1, 1, 1, 1] });
  assert.equal(l[0], 30);
  assert.deepEqual(Array.from(dp), [2, 4, 6, 8]);
  assert.equal(c.run(), undefined, 'the spec form stays synchronous on the CPU');
  assert.deepEqual(c.output(1), dp);
  assert.ok((await c.profile()).length >= 1);
  await assert.rejects(c.run_async({ x: [1] }), /CompiledGraph\.feed: set_input: 'x' holds 4 values, got 1/);
  c.free();
  await assert.rejects(c.run_async(), /was freed/);
  assert.ok(EXECUTOR_MEMBERS.includes('readParam'));
});
