// op_facts.test.mjs - the op table's facts reach JS from the module: the
// exports rlx_op_min_inputs / rlx_op_max_inputs (src/web/exports_ops.c)
// give every op's arity (-1 past the table), and WebGraph's simple-op
// methods (web/runtime/webgraph.js) check their input count against them,
// not against a copy: a runtime whose table said add takes 1 input makes
// g.add(x, y) fail, and one that said 1 to 3 lets g.add(x) reach the
// library's own check (which poisons that graph, as any builder error does).
// Build first: make wasm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const rt = ready ? await init() : null;

const opId = (name) => rt.scoped((t) => rt.exports.rlx_op_from_name(t.str(name)));

test('the module exports every op\'s arity', { skip: !ready }, () => {
  const e = rt.exports;
  const n = e.rlx_op_count();
  for (let i = 0; i < n; i++) {
    const lo = e.rlx_op_min_inputs(i), hi = e.rlx_op_max_inputs(i);
    assert.ok(lo >= 0 && lo <= hi, `op ${i}: [${lo}, ${hi}]`);
  }
  assert.deepEqual([e.rlx_op_min_inputs(opId('add')), e.rlx_op_max_inputs(opId('add'))], [2, 2]);
  assert.deepEqual([e.rlx_op_min_inputs(opId('relu')), e.rlx_op_max_inputs(opId('relu'))], [1, 1]);
  assert.deepEqual([e.rlx_op_min_inputs(opId('where')), e.rlx_op_max_inputs(opId('where'))], [3, 3]);
  assert.equal(e.rlx_op_min_inputs(n), -1);
  assert.equal(e.rlx_op_max_inputs(-1), -1);
});

test('WebGraph simple ops check the module\'s arity', { skip: !ready }, () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [2]);
  assert.throws(() => g.add(x), /WebGraph\.add: takes 2 node ids, got 1 arguments/);
  assert.throws(() => g.relu(x, x), /WebGraph\.relu: takes 1 node id, got 2 arguments/);
  // The same graph over a runtime whose table differs for add.
  const add = opId('add');
  const patched = (lo, hi) => Object.create(g._rt, { exports: { value: { ...g._rt.exports,
    rlx_op_min_inputs: (op) => (op === add ? lo : rt.exports.rlx_op_min_inputs(op)),
    rlx_op_max_inputs: (op) => (op === add ? hi : rt.exports.rlx_op_max_inputs(op)) } } });
  const real = g._rt;
  try {
    g._rt = patched(1, 1);
    assert.throws(() => g.add(x, x), /WebGraph\.add: takes 1 node id, got 2 arguments/);
    g._rt = patched(1, 3);
    // Past the JS check, the library's builder still wants two inputs.
    assert.throws(() => g.add(x), (err) => !/takes/.test(err.message));
  } finally {
    g._rt = real;
  }
  const h = new rlx.WebGraph();
  const y = h.input('y', [2]);
  assert.equal(typeof h.add(y, y), 'number');
});

test('the module exports every op\'s named attributes, and WebGraph places them by its table', { skip: !ready }, () => {
  const e = rt.exports;
  const n = e.rlx_op_count();
  for (let i = 0; i < n; i++) {
    const count = e.rlx_op_attr_count(i);
    assert.ok(count >= 0, `op ${i}`);
    for (let k = 0; k < count; k++) {
      assert.match(rt.cstring(e.rlx_op_attr_name(i, k)), /^[a-z_][a-z_0-9]*$/);
      assert.match(rt.cstring(e.rlx_op_attr_type(i, k)), /^(int|bool|axes|enum|ints|float)$/);
      assert.ok(e.rlx_op_attr_slot(i, k) >= 0);
    }
    assert.equal(e.rlx_op_attr_slot(i, count), -1);
  }
  assert.equal(e.rlx_op_attr_count(n), -1);
  assert.equal(e.rlx_op_attr_name(opId('relu'), 0), 0);
  // The same call over a runtime whose table swaps narrow's start and length slots.
  const narrow = opId('narrow');
  const g = new rlx.WebGraph();
  const x = g.input('x', [2, 3]);
  const real = g._rt;
  try {
    g._rt = Object.create(real, { exports: { value: { ...real.exports,
      rlx_op_attr_slot: (op, k) => (op === narrow && k > 0 ? 3 - k : real.exports.rlx_op_attr_slot(op, k)) } } });
    // start 0, length 1 land as start 1, length 0: the library refuses the range.
    assert.throws(() => g.op('narrow', [x], { axis: 1, start: 0, length: 1 }), /range start 1 length 0/);
  } finally {
    g._rt = real;
  }
  const h = new rlx.WebGraph();
  const y = h.input('y', [2, 3]);
  assert.deepEqual(h.shape(h.op('narrow', [y], { axis: 1, start: 0, length: 1 })), [2, 1]);
});

test('WebGraph has a method for every op the module marks elementwise, and none for the others', { skip: !ready }, () => {
  const e = rt.exports;
  const g = new rlx.WebGraph();
  const x = g.input('x', [3]);
  const names = rt.opNames();
  let elementwise = 0;
  names.forEach((name, op) => {
    const flag = e.rlx_op_is_elementwise(op);
    assert.ok(flag === 0 || flag === 1, name);
    if (flag === 1) {
      elementwise++;
      assert.equal(typeof g[name], 'function', `${name} has a method`);
      const id = g[name](...Array(e.rlx_op_min_inputs(op)).fill(x));
      assert.deepEqual(g.shape(id), [3], name);
    }
  });
  assert.ok(elementwise >= 25, `${elementwise} elementwise ops`);
  for (const name of ['gelu_grad', 'scatter_add', 'fused_matmul']) assert.equal(g[name], undefined, name);
  assert.equal(e.rlx_op_is_elementwise(opId('matmul')), 0);
  assert.equal(e.rlx_op_is_elementwise(-1), -1);
});
