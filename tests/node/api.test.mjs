// api.test.mjs - the browser module (web/pkg/rlx_web.wasm) through
// web/runtime/loader.js in Node: a small graph gives the right numbers, bad
// input throws a clear RlxError and never traps, double frees are harmless,
// and wasm memory stays flat over 1000 compile/run/free cycles.
// Build first: make wasm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { loadRlx, RlxError } from '../../web/runtime/loader.js';

const WASM = new URL('../../web/pkg/rlx_web.wasm', import.meta.url);
if (!existsSync(WASM)) {
  test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
}
const rlx = existsSync(WASM) ? await loadRlx(WASM) : null;
const skip = !rlx;

// x[2,3] . w[3,4] + b[4] -> relu
const X = [1, -2, 3, 0.5, 0, -1];
const W = [0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.7, 0.8, -0.9, 1.0, 1.1, -1.2];
const B = [0.05, -0.1, 0.2, -3];

function expected() {
  const y = [];
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 4; j++) {
      let acc = B[j];
      for (let k = 0; k < 3; k++) acc += X[i * 3 + k] * W[k * 4 + j];
      y.push(Math.max(acc, 0));
    }
  }
  return y;
}

function buildMlp() {
  const g = rlx.graph();
  const x = g.input('x', [2, 3]);
  const w = g.param('w', [3, 4]);
  const b = g.param('b', [4]);
  const y = g.op('relu', [g.op('add', [g.op('matmul', [x, w], [0, 0]), b])]);
  return { g, y };
}

/** Asserts fn throws an RlxError (not a wasm trap) whose message matches all patterns. */
function throwsRlx(fn, ...patterns) {
  let err;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, 'expected an error');
  assert.ok(!(err instanceof WebAssembly.RuntimeError), `wasm trapped: ${err.message}`);
  assert.ok(err instanceof RlxError, `expected RlxError, got ${err}`);
  assert.ok(err.message.length > 0, 'empty error message');
  for (const p of patterns) assert.match(err.message, p);
  return err;
}

test('matmul + add + relu gives the right numbers', { skip }, () => {
  const { g, y } = buildMlp();
  assert.deepEqual(g.shape(y), [2, 4]);
  const s = g.compile([y]);
  g.free();
  s.setParam('w', new Float32Array(W));
  s.setParam('b', new Float32Array(B));
  s.setInput('x', new Float32Array(X));
  s.run();
  assert.equal(s.outputCount, 1);
  assert.deepEqual(s.outputShape(0), [2, 4]);
  const got = s.output(0);
  expected().forEach((v, i) => assert.ok(Math.abs(got[i] - v) <= 1e-5 * (1 + Math.abs(v)), `y[${i}] ${got[i]} != ${v}`));
  assert.deepEqual(Array.from(s.getParam('b')), Array.from(new Float32Array(B)));
  assert.ok(s.stepCount >= 1);
  assert.ok(s.arenaBytes >= 0);
  assert.match(rlx.gemmPath(), /\w+/);
  s.free();
});

test('i32 ids through gather', { skip }, () => {
  const g = rlx.graph();
  const table = g.param('table', [3, 2]);
  const ids = g.input('ids', [4], 'i32');
  const s = g.compile([g.op('gather', [table, ids])]);
  g.free();
  s.setParam('table', new Float32Array([0, 1, 10, 11, 20, 21]));
  s.setInput('ids', new Int32Array([2, 0, 1, 2]));
  s.run();
  assert.deepEqual(Array.from(s.output(0)), [20, 21, 0, 1, 10, 11, 20, 21]);
  s.free();
});

test('unknown op name throws', { skip }, () => {
  const g = rlx.graph();
  const x = g.input('x', [2]);
  throwsRlx(() => g.op('no_such_op', [x]), /unknown op/, /no_such_op/);
  g.free();
});

test('shape mismatch names the node, the op and the shapes', { skip }, () => {
  const g = rlx.graph();
  const a = g.input('a', [2, 3]);
  const b = g.input('b', [5, 4]);
  throwsRlx(() => g.op('matmul', [a, b], [0, 0]), /matmul/, /node/, /2, ?3/, /5, ?4/);
  g.free();
});

test('session misuse throws clear errors', { skip }, () => {
  const { g, y } = buildMlp();
  const s = g.compile([y]);
  g.free();
  throwsRlx(() => s.run()); // before setting inputs
  throwsRlx(() => s.setInput('x', new Float32Array(5))); // wrong length (6 expected)
  throwsRlx(() => s.setInput('nope', new Float32Array(6)), /nope/);
  throwsRlx(() => s.setParam('nope', new Float32Array(6)), /nope/);
  throwsRlx(() => s.outputShape(7));
  s.setInput('x', new Float32Array(X));
  s.run(); // still usable after the errors
  assert.equal(s.output(0).length, 8);
  s.free();
});

test('freeing twice is harmless; use after free throws', { skip }, () => {
  const { g, y } = buildMlp();
  const s = g.compile([y]);
  g.free();
  g.free();
  s.free();
  s.free();
  throwsRlx(() => s.run(), /freed/);
  throwsRlx(() => g.input('z', [1]), /freed/);
  rlx.exports.rlx_graph_free(0); // NULL is harmless in C too
  rlx.exports.rlx_session_free(0);
});

test('raw exports given NULL handles return errors, not traps', { skip }, () => {
  const e = rlx.exports;
  assert.ok(e.rlx_graph_status(0) < 0);
  assert.ok(e.rlx_input(0, 0, 0, 0, 0) < 0);
  assert.ok(e.rlx_compile(0, 0, 0, 0, 0, 0, 0) < 0);
  assert.ok(e.rlx_session_run(0) < 0);
  assert.ok(e.rlx_session_set_input(0, 0, 0, 0) < 0);
  assert.equal(e.rlx_session_output(0, 0), 0);
  assert.equal(e.rlx_op_from_name(0), rlx.opCount);
  assert.ok(rlx.lastError().length > 0);
});

test('wasm memory stays flat over 1000 compile/run/free cycles', { skip }, () => {
  const x = new Float32Array(X);
  const w = new Float32Array(W);
  let size = 0;
  for (let i = 0; i < 1000; i++) {
    const { g, y } = buildMlp();
    const s = g.compile([y]);
    g.free();
    s.setParam('w', w);
    s.setInput('x', x);
    s.run();
    s.output(0);
    s.free();
    if (i === 99) size = rlx.memory.buffer.byteLength;
  }
  assert.equal(rlx.memory.buffer.byteLength, size, 'memory grew between cycle 100 and 1000');
});
