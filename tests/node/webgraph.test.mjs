// webgraph.test.mjs - describing models in code from JS (WebGraph and
// CompiledGraph of web/pkg/rlx_web.js, web/runtime/webgraph.js) on the CPU
// in Node: every convenience builder maps to the op table's attributes with
// its documented defaults and gives the right values (small references in
// float64, |a - b| <= 1e-5 (1 + |b|)); op() reaches every op by name;
// compile_backward's gradients match central finite differences and its
// d_output seed is preset; the classifier of the worked examples has 13
// nodes, outputs [1, 100352, 128, 1280, 10] and a first loss of ln(10); bad
// graphs and bad calls throw RlxErrors whose messages name the node, the op
// and the shapes (or the argument), never a wasm trap.
// Build first: make wasm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const rt = ready ? await init() : null;
const skip = !ready;
const TOL = 1e-5;

function close(got, want, what, tol = TOL) {
  assert.equal(got.length, want.length, `${what}: length ${got.length} != ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tol * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: ${got[i]} != ${want[i]}, |diff| ${d}`);
  }
}

function throwsClear(fn, ...patterns) {
  let err;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, `expected an error matching ${patterns.join(' ')}`);
  assert.ok(!(err instanceof WebAssembly.RuntimeError), `wasm trapped: ${err.message}`);
  assert.ok(err instanceof rlx.RlxError, `not an RlxError: ${err}`);
  for (const p of patterns) assert.match(err.message, p);
  return err;
}

/** Deterministic values in [-1, 1). */
function values(n, seed = 1) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s >>> 8) / 8388608 - 1;
  });
}

/** Builds with fn(g) -> output node(s) over inputs fed from `feeds` ({ name: [shape, data] }), runs on the CPU. */
function evaluate(build, feeds = {}) {
  const g = new rlx.WebGraph();
  try {
    const ids = {};
    for (const [name, [shape, data, dtype]] of Object.entries(feeds)) ids[name] = g.input(name, shape, dtype);
    const out = build(g, ids);
    const outs = Array.isArray(out) ? out : [out];
    const c = g.compile_forward(outs, 'cpu');
    try {
      for (const [name, [, data]] of Object.entries(feeds)) c.feed(name, data);
      assert.equal(c.run(), undefined, 'run() is synchronous on the CPU');
      return outs.map((_, i) => ({ shape: c.output_shape(i), data: c.output(i) }));
    } finally {
      c.free();
    }
  } finally {
    g.free();
  }
}

const one = (build, feeds) => evaluate(build, feeds)[0];

// ---- builders ------------------------------------------------------------------------

test('elementwise and unary builders broadcast and give the right values', { skip }, () => {
  const a = values(6, 1), b = values(3, 2);
  const feeds = { a: [[2, 3], a], b: [[3], b] };
  const bi = (i) => b[i % 3];
  const binary = {
    add: (x, y) => x + y, sub: (x, y) => x - y, mul: (x, y) => x * y, div: (x, y) => x / y,
    max: Math.max, min: Math.min, eq: (x, y) => +(x === y), ne: (x, y) => +(x !== y), lt: (x, y) => +(x < y),
    le: (x, y) => +(x <= y), gt: (x, y) => +(x > y), ge: (x, y) => +(x >= y),
  };
  for (const [name, f] of Object.entries(binary)) {
    const r = one((g, i) => g[name](i.a, i.b), feeds);
    assert.deepEqual(r.shape, [2, 3], name);
    close(r.data, Array.from(a, (x, k) => f(x, bi(k))), name);
  }
  const pos = Float32Array.from(a, (x) => Math.abs(x) + 0.1);
  const gelu = (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  const unary = {
    neg: [a, (x) => -x], abs: [a, Math.abs], exp: [a, Math.exp], log: [pos, Math.log], sqrt: [pos, Math.sqrt],
    rsqrt: [pos, (x) => 1 / Math.sqrt(x)], tanh: [a, Math.tanh], sigmoid: [a, (x) => 1 / (1 + Math.exp(-x))],
    relu: [a, (x) => Math.max(x, 0)], gelu: [a, gelu], silu: [a, (x) => x / (1 + Math.exp(-x))],
  };
  for (const [name, [data, f]] of Object.entries(unary)) {
    close(one((g, i) => g[name](i.u), { u: [[2, 3], data] }).data, Array.from(data, f), name);
  }
  close(one((g, i) => g.pow(i.p, g.scalar(2)), { p: [[2, 3], pos] }).data, Array.from(pos, (x) => x * x), 'pow');
  const cond = Float32Array.of(1, 0, 1, 0, 0, 1);
  close(one((g, i) => g.where(i.c, i.a, i.b), { c: [[2, 3], cond], ...feeds }).data,
    Array.from(a, (x, k) => (cond[k] ? x : bi(k))), 'where');
  close(one((g) => g.add(g.constant([1, 2, 3, 4], [2, 2]), g.scalar(0.5))).data, [1.5, 2.5, 3.5, 4.5], 'constant + scalar');
  close(one((g) => g.constant(new Float32Array([7, 8]))).data, [7, 8], 'constant of [values.length]');
});

test('matmul, layout, reductions, softmax and losses use the documented attributes and defaults', { skip }, () => {
  const a = values(6, 3), b = values(12, 4);
  const mm = (x, y, M, K, N, ta, tb) => Array.from({ length: M * N }, (_, k) => {
    const r = Math.floor(k / N), c = k % N;
    let s = 0;
    for (let t = 0; t < K; t++) s += (ta ? x[t * M + r] : x[r * K + t]) * (tb ? y[c * K + t] : y[t * N + c]);
    return s;
  });
  close(one((g, i) => g.matmul(i.a, i.b), { a: [[2, 3], a], b: [[3, 4], b] }).data, mm(a, b, 2, 3, 4), 'matmul');
  close(one((g, i) => g.matmul(i.a, i.b, { transA: true }), { a: [[3, 2], a], b: [[3, 4], b] }).data, mm(a, b, 2, 3, 4, true), 'transA');
  close(one((g, i) => g.matmul(i.a, i.b, { transB: true }), { a: [[2, 3], a], b: [[4, 3], b] }).data, mm(a, b, 2, 3, 4, false, true), 'transB');
  close(one((g, i) => g.matmul(i.a, i.b, { trans_a: 1, trans_b: 1 }), { a: [[3, 2], a], b: [[4, 3], b] }).data,
    mm(a, b, 2, 3, 4, true, true), 'trans_a / trans_b');

  const x = values(24, 5); // [2, 3, 4]
  const at = (i, j, k) => x[i * 12 + j * 4 + k];
  const feeds = { x: [[2, 3, 4], x] };
  assert.deepEqual(one((g, i) => g.reshape(i.x, [4, -1]), feeds).shape, [4, 6]);
  const pm = one((g, i) => g.permute(i.x, [2, 0, 1]), feeds);
  assert.deepEqual(pm.shape, [4, 2, 3]);
  close(pm.data, Array.from({ length: 24 }, (_, n) => at(Math.floor(n / 3) % 2, n % 3, Math.floor(n / 6))), 'permute');
  const tr = one((g, i) => g.transpose(i.x), feeds); // the last two by default
  assert.deepEqual(tr.shape, [2, 4, 3]);
  close(tr.data, Array.from({ length: 24 }, (_, n) => at(Math.floor(n / 12), n % 3, Math.floor(n / 3) % 4)), 'transpose');
  assert.deepEqual(one((g, i) => g.transpose(i.x, 0, -1), feeds).shape, [4, 3, 2]);
  const nr = one((g, i) => g.narrow(i.x, 2, 1, 2), feeds);
  assert.deepEqual(nr.shape, [2, 3, 2]);
  close(nr.data, Array.from({ length: 12 }, (_, n) => at(Math.floor(n / 6), Math.floor(n / 2) % 3, 1 + (n % 2))), 'narrow');
  assert.deepEqual(one((g, i) => g.concat([i.x, i.x]), feeds).shape, [4, 3, 4], 'concat on axis 0 by default');
  assert.deepEqual(one((g, i) => g.concat([i.x, i.x, i.x], -1), feeds).shape, [2, 3, 12]);
  const ex = one((g, i) => g.expand(i.r, [3, 2]), { r: [[1, 2], [5, 6]] });
  close(ex.data, [5, 6, 5, 6, 5, 6], 'expand');
  const ga = one((g, i) => g.gather(i.t, i.ids), { t: [[3, 2], [1, 2, 3, 4, 5, 6]], ids: [[2], new Int32Array([2, 0]), 'i32'] });
  close(ga.data, [5, 6, 1, 2], 'gather with i32 ids');

  // Reductions: axes as a number, an Array, negative, all (default); keepdim.
  const sum = (f) => Array.from({ length: 24 }, (_, n) => n).reduce((acc, n) => {
    const key = f(Math.floor(n / 12), Math.floor(n / 4) % 3, n % 4);
    acc[key] = (acc[key] ?? 0) + x[n];
    return acc;
  }, []);
  close(one((g, i) => g.reduce_sum(i.x, 1), feeds).data, sum((i, j, k) => i * 4 + k), 'reduce_sum axis 1');
  close(one((g, i) => g.reduce_sum(i.x, [0, -1]), feeds).data, sum((i, j) => j), 'reduce_sum axes [0, -1]');
  const all = one((g, i) => g.reduce_mean(i.x), feeds);
  assert.deepEqual(all.shape, []);
  close(all.data, [x.reduce((s, v) => s + v, 0) / 24], 'reduce_mean of all axes');
  assert.deepEqual(one((g, i) => g.reduce_max(i.x, -1, true), feeds).shape, [2, 3, 1], 'keepdim');
  close(one((g, i) => g.reduce_max(i.x, 2), feeds).data,
    Array.from({ length: 6 }, (_, r) => Math.max(...x.subarray(r * 4, r * 4 + 4))), 'reduce_max');

  const softmaxRows = (data, n) => Array.from(data, (_, k) => {
    const r = Math.floor(k / n), row = Array.from(data.subarray(r * n, r * n + n));
    const m = Math.max(...row), z = row.reduce((s, v) => s + Math.exp(v - m), 0);
    return Math.exp(data[k] - m) / z;
  });
  const sm = softmaxRows(x, 4);
  close(one((g, i) => g.softmax(i.x), feeds).data, sm, 'softmax on the last axis by default');
  close(one((g, i) => g.log_softmax(i.x), feeds).data, sm.map(Math.log), 'log_softmax');
  const s0 = one((g, i) => g.softmax(i.x, 0), feeds).data;
  close(Array.from({ length: 12 }, (_, k) => s0[k] + s0[k + 12]), new Array(12).fill(1), 'softmax over axis 0');
  const logits = values(8, 6); // [2, 4]
  const ce = one((g, i) => g.softmax_cross_entropy(i.l, i.y), { l: [[2, 4], logits], y: [[2], new Int32Array([3, 1]), 'i32'] });
  const p = softmaxRows(logits, 4);
  close(ce.data, [-Math.log(p[3]), -Math.log(p[5])], 'softmax_cross_entropy');
});

test('norms, rope, attention, conv and pooling builders', { skip }, () => {
  const x = values(8, 7), w = values(4, 8), bias = values(4, 9);
  const feeds = { x: [[2, 4], x], w: [[4], w], b: [[4], bias] };
  const rms = Array.from(x, (v, k) => {
    const r = Math.floor(k / 4), row = x.subarray(r * 4, r * 4 + 4);
    return (v / Math.sqrt(row.reduce((s, u) => s + u * u, 0) / 4 + 1e-6)) * w[k % 4];
  });
  close(one((g, i) => g.rms_norm(i.x, i.w), feeds).data, rms, 'rms_norm (eps 1e-6 by default)');
  const ln = Array.from(x, (v, k) => {
    const r = Math.floor(k / 4), row = Array.from(x.subarray(r * 4, r * 4 + 4));
    const mean = row.reduce((s, u) => s + u, 0) / 4, vr = row.reduce((s, u) => s + (u - mean) ** 2, 0) / 4;
    return ((v - mean) / Math.sqrt(vr + 1e-5)) * w[k % 4] + bias[k % 4];
  });
  close(one((g, i) => g.layer_norm(i.x, i.w, i.b), feeds).data, ln, 'layer_norm (eps 1e-5 by default)');
  // rope at position 0 is the identity; attention shapes.
  const q = values(1 * 2 * 3 * 4, 10);
  close(one((g, i) => g.narrow(g.rope(i.q), 2, 0, 1), { q: [[1, 2, 3, 4], q] }).data,
    [...q.subarray(0, 4), ...q.subarray(12, 16)], 'rope leaves position 0 unchanged');
  // Position 1, D = 4: NeoX rotates (x0, x2) by 1 rad and (x1, x3) by 0.01; pairs (x0, x1) by 1 and (x2, x3) by 0.01.
  const rot = (a, b, t) => [a * Math.cos(t) - b * Math.sin(t), a * Math.sin(t) + b * Math.cos(t)];
  const r1 = { q: [[1, 1, 2, 4], q.subarray(0, 8)] }, [a, b, c, d] = q.subarray(4, 8);
  const [n0, n2] = rot(a, c, 1), [n1, n3] = rot(b, d, 0.01), [p0, p1] = rot(a, b, 1), [p2, p3] = rot(c, d, 0.01);
  close(one((g, i) => g.narrow(g.rope(i.q), 2, 1, 1), r1).data, [n0, n1, n2, n3], "rope layout 'neox' (the default)");
  close(one((g, i) => g.narrow(g.rope(i.q, { layout: 'pairs' }), 2, 1, 1), r1).data, [p0, p1, p2, p3], "rope layout 'pairs'");
  throwsClear(() => one((g, i) => g.rope(i.q, { layout: 'gptj' }), r1), /WebGraph.rope.*layout must be 'neox' or 'pairs', got/);
  const att = evaluate((g, i) => [g.attention(i.q, i.q, i.q, { mask: 'causal' }), g.attention(i.q, i.q, i.q)], { q: [[1, 2, 3, 4], q] });
  assert.deepEqual(att[0].shape, [1, 2, 3, 4]);
  close(att[0].data.subarray(0, 4), q.subarray(0, 4), 'causal: the first query sees only itself');
  assert.deepEqual(one((g, i) => g.attention(i.q, i.q, i.q, { mask: 'padding', maskTensor: g.constant([1, 1, 0], [1, 3]) }),
    { q: [[1, 2, 3, 4], q] }).shape, [1, 2, 3, 4]);

  const img = values(1 * 2 * 5 * 5, 11), ker = values(3 * 2 * 3 * 3, 12);
  const cf = { img: [[1, 2, 5, 5], img], k: [[3, 2, 3, 3], ker] };
  assert.deepEqual(one((g, i) => g.conv2d(i.img, i.k), cf).shape, [1, 3, 3, 3], 'conv2d: stride 1, no padding by default');
  assert.deepEqual(one((g, i) => g.conv2d(i.img, i.k, { stride: 2, padding: 1 }), cf).shape, [1, 3, 3, 3]);
  assert.deepEqual(one((g, i) => g.conv2d(i.img, i.k, { stride: [1, 2], padding: [1, 0] }), cf).shape, [1, 3, 5, 2]);
  const c1 = one((g, i) => g.conv2d(i.img, i.k, { padding: 1 }), cf);
  let ref = 0; // output (o=1, y=2, x=0): window rows 1..3, cols -1..1
  for (let c = 0; c < 2; c++) for (let ky = 0; ky < 3; ky++) for (let kx = 0; kx < 3; kx++) {
    const yy = 2 + ky - 1, xx = kx - 1;
    if (xx >= 0) ref += img[c * 25 + yy * 5 + xx] * ker[((1 * 2 + c) * 3 + ky) * 3 + kx];
  }
  close([c1.data[1 * 25 + 2 * 5 + 0]], [ref], 'conv2d with padding');
  assert.deepEqual(one((g, i) => g.conv2d(i.img, i.k2, { groups: 2 }), { img: cf.img, k2: [[2, 1, 3, 3], ker.subarray(0, 18)] }).shape, [1, 2, 3, 3]);
  const mp = one((g, i) => g.max_pool2d(i.img, { kernel: 2 }), cf);
  assert.deepEqual(mp.shape, [1, 2, 2, 2], 'stride defaults to the kernel');
  close([mp.data[0]], [Math.max(img[0], img[1], img[5], img[6])], 'max_pool2d');
  const ap = one((g, i) => g.avg_pool2d(i.img, { kernel: [3, 3], stride: 1, padding: 1 }), cf);
  assert.deepEqual(ap.shape, [1, 2, 5, 5]);
  close([ap.data[0]], [(img[0] + img[1] + img[5] + img[6]) / 9], 'avg_pool2d counts padding as zeros');
  const gp = one((g, i) => g.global_avg_pool(i.img), cf);
  close(gp.data, [0, 1].map((c) => img.subarray(c * 25, c * 25 + 25).reduce((s, v) => s + v, 0) / 25), 'global_avg_pool');
});

test('op() reaches every op of the table by name, with attributes as in rlx_ops.def', { skip }, () => {
  const x = values(6, 13);
  const feeds = { x: [[2, 3], x] };
  // The generic form equals the convenience one.
  close(one((g, i) => g.op('softmax', [i.x], { ints: [0] }), feeds).data, one((g, i) => g.softmax(i.x, 0), feeds).data, 'softmax');
  close(one((g, i) => g.op('reduce_sum', [i.x], { ints: [0b10, 1] }), feeds).data, one((g, i) => g.reduce_sum(i.x, 1, true), feeds).data, 'reduce_sum mask');
  close(one((g, i) => g.op('rms_norm', [i.x, g.constant([1, 1, 1])], { floats: [1e-6] }), feeds).data,
    one((g, i) => g.rms_norm(i.x, g.constant([1, 1, 1])), feeds).data, 'rms_norm eps');
  close(one((g, i) => g.op('relu', [i.x]), feeds).data, one((g, i) => g.relu(i.x), feeds).data, 'relu');
  // By name, from the module's attribute table (include/rlx_attrs.def).
  close(one((g, i) => g.op('softmax', [i.x], { axis: 0 }), feeds).data, one((g, i) => g.softmax(i.x, 0), feeds).data, 'softmax by name');
  close(one((g, i) => g.op('reduce_sum', [i.x], { axes: 0b10, keepdim: true }), feeds).data,
    one((g, i) => g.reduce_sum(i.x, 1, true), feeds).data, 'reduce_sum by name');
  close(one((g, i) => g.op('matmul', [i.x, i.x], { trans_b: true }), feeds).data,
    one((g, i) => g.matmul(i.x, i.x, { transB: true }), feeds).data, 'matmul: a flag left out is false');
  close(one((g, i) => g.op('narrow', [i.x], { axis: 1, start: 1, length: 2 }), feeds).data,
    [x[1], x[2], x[4], x[5]], 'narrow by name');
  close(one((g, i) => g.op('reshape', [i.x], { shape: [3, 2] }), feeds).data, x, 'reshape: an ints list');
  close(one((g, i) => g.op('rms_norm', [i.x, g.constant([1, 1, 1])], { eps: 1e-6 }), feeds).data,
    one((g, i) => g.rms_norm(i.x, g.constant([1, 1, 1])), feeds).data, 'rms_norm by name');
  {
    const g = new rlx.WebGraph();
    assert.deepEqual(g.opAttrs('conv2d').map((a) => a.name),
      ['stride_h', 'stride_w', 'pad_h', 'pad_w', 'dilation_h', 'dilation_w', 'groups']);
    assert.deepEqual(g.opAttrs('conv2d_grad_input').slice(-2), [{ name: 'in_h', type: 'int', slot: 7 }, { name: 'in_w', type: 'int', slot: 8 }]);
    assert.deepEqual(g.opAttrs('rope'), [{ name: 'pos_offset', type: 'int', slot: 0 }, { name: 'inverse', type: 'bool', slot: 1 },
      { name: 'mode', type: 'enum', slot: 2 }, { name: 'theta', type: 'float', slot: 0 }]);
    assert.deepEqual(g.opAttrs('relu'), []);
    const xi = g.input('x', [2, 3]);
    throwsClear(() => g.op('softmax', [xi], { axes: 1 }), /has no attribute "axes" \(its attributes: axis\)/);
    throwsClear(() => g.op('relu', [xi], { axis: 1 }), /has no attribute "axis" \(it takes none\)/);
    throwsClear(() => g.op('narrow', [xi], { axis: 1, start: 0 }), /attribute length \(int\) is missing/);
    throwsClear(() => g.op('matmul', [xi, xi], { trans_a: 'yes' }), /attribute trans_a must be true or false/);
    throwsClear(() => g.op('rms_norm', [xi, xi], { eps: 'small' }), /attribute eps must be a number/);
    g.free();
  }
  // Every op name resolves: a wrong arity is reported by the library naming the op.
  const names = rt.opNames();
  assert.ok(names.length > 60);
  for (const name of names) {
    if (['input', 'param', 'constant'].includes(name)) continue;
    const g = new rlx.WebGraph();
    throwsClear(() => g.op(name, []), new RegExp(name));
    g.free();
  }
  const g = new rlx.WebGraph();
  throwsClear(() => g.op('no_such_op', []), /unknown op "no_such_op"/, /known: .*matmul/);
  throwsClear(() => g.op('relu', 'x'), /inputs must be an Array of node ids/);
  throwsClear(() => g.op('relu', [0], [1]), /attributes must be an object \(\{ name: value, \.\.\. \} or \{ ints, floats \}\)/);
  throwsClear(() => g.op('relu', [0], { ints: [1.5] }), /ints\[0\] must be an integer/);
  throwsClear(() => g.op('relu', [0], { floats: ['a'] }), /floats\[0\] must be a number/);
  g.free();
});

// ---- compile, run, gradients ---------------------------------------------------------------

/** loss = mean((relu(x W1 + b1) W2 + b2 - t)^2) in float64. */
function mlpLoss(x, t, p, rows, inD, hid, out) {
  let loss = 0;
  for (let r = 0; r < rows; r++) {
    const h = Array.from({ length: hid }, (_, j) => {
      let s = p.b1[j];
      for (let k = 0; k < inD; k++) s += x[r * inD + k] * p.w1[k * hid + j];
      return Math.max(s, 0);
    });
    for (let o = 0; o < out; o++) {
      let y = p.b2[o];
      for (let j = 0; j < hid; j++) y += h[j] * p.w2[j * out + o];
      loss += (y - t[r * out + o]) ** 2;
    }
  }
  return loss / (rows * out);
}

test('compile_backward: [loss, grads] match finite differences; d_output is preset and can be fed', { skip }, () => {
  const [rows, inD, hid, out] = [3, 4, 5, 2];
  const g = new rlx.WebGraph();
  const x = g.input('x', [rows, inD]);
  const t = g.input('t', [rows, out]);
  const w1 = g.param('w1', [inD, hid]), b1 = g.param('b1', [hid]);
  const w2 = g.param('w2', [hid, out]), b2 = g.param('b2', [out]);
  const y = g.add(g.matmul(g.relu(g.add(g.matmul(x, w1), b1)), w2), b2);
  const d = g.sub(y, t);
  const loss = g.reduce_mean(g.mul(d, d));
  assert.deepEqual(g.params(), [w1, b1, w2, b2]);
  const step = g.compile_backward(loss); // params default to all
  g.free(); // the compiled graph outlives the graph
  assert.equal(step.backend, 'cpu');
  assert.equal(step.kind, 'backward');
  assert.deepEqual(step.output_sizes(), [1, inD * hid, hid, hid * out, out]);
  assert.deepEqual(step.param_names(), ['w1', 'b1', 'w2', 'b2']);
  assert.ok(step.input_names().includes('d_output'));
  const xs = values(rows * inD, 21), ts = values(rows * out, 22);
  const p = { w1: values(inD * hid, 23), b1: values(hid, 24), w2: values(hid * out, 25), b2: values(out, 26) };
  step.feed('x', xs);
  step.feed('t', Array.from(ts)); // plain arrays work too
  for (const [name, v] of Object.entries(p)) step.feed(name, v);
  step.run();
  const l = step.output(0)[0];
  close([l], [mlpLoss(xs, ts, p, rows, inD, hid, out)], 'loss', 1e-5);
  const h = 1e-3;
  Object.keys(p).forEach((name, k) => {
    const grad = step.output(1 + k);
    const want = Array.from(p[name], (_, i) => {
      const plus = { ...p, [name]: Float64Array.from(p[name]) }, minus = { ...p, [name]: Float64Array.from(p[name]) };
      plus[name][i] += h;
      minus[name][i] -= h;
      return (mlpLoss(xs, ts, plus, rows, inD, hid, out) - mlpLoss(xs, ts, minus, rows, inD, hid, out)) / (2 * h);
    });
    close(grad, want, `d loss / d ${name}`, 2e-3);
  });
  // The seed scales the gradients; the loss output stays the loss.
  const g1 = step.output(1);
  step.feed('d_output', [2]);
  step.run();
  close(step.output(1), Array.from(g1, (v) => 2 * v), 'd_output = 2 doubles the gradients');
  close(step.read_param('w1'), p.w1, 'read_param gives what was fed');
  step.free();
  step.free(); // harmless
  throwsClear(() => step.run(), /CompiledGraph\.run: this compiled graph was freed/);
});

test('the classifier of the worked examples: 13 nodes, sizes [1, 100352, 128, 1280, 10], first loss ln(10)', { skip }, () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [64, 784]);
  const labels = g.input('labels', [64], 'i32');
  const w1 = g.param('w1', [784, 128]), b1 = g.param('b1', [128]);
  const w2 = g.param('w2', [128, 10]), b2 = g.param('b2', [10]);
  const logits = g.add(g.matmul(g.relu(g.add(g.matmul(x, w1), b1)), w2), b2);
  const loss = g.reduce_mean(g.softmax_cross_entropy(logits, labels));
  assert.equal(g.node_count, 13);
  assert.deepEqual(g.shape(logits), [64, 10]);
  assert.deepEqual(g.shape(loss), []);
  const step = g.compile_backward(loss, [w1, b1, w2, b2], 'auto');
  assert.equal(step.backend, 'cpu', 'Node has no GPU backend');
  assert.deepEqual(step.fallbacks.map((f) => f.backend), ['webgpu', 'webgl']);
  assert.deepEqual(step.output_sizes(), [1, 100352, 128, 1280, 10]);
  step.feed('x', values(64 * 784, 31));
  step.feed('labels', Int32Array.from({ length: 64 }, (_, i) => i % 10));
  step.feed('w1', values(784 * 128, 32)); // w2, b1, b2 stay zero
  step.run();
  close(step.output(0), [Math.log(10)], 'first loss');
  step.free();
  // x . w with every weight 0.5 gives the halved row sums.
  const xs = values(64 * 784, 33);
  const fwd = g.compile_forward([g.matmul(x, w1)]);
  fwd.feed('x', xs);
  fwd.feed('w1', new Float32Array(784 * 128).fill(0.5));
  fwd.run();
  const y = fwd.output(0);
  for (const r of [0, 17, 63]) {
    const half = xs.subarray(r * 784, r * 784 + 784).reduce((s, v) => s + v, 0) / 2;
    close([y[r * 128], y[r * 128 + 127]], [half, half], `row ${r}`, 1e-4);
  }
  fwd.free();
  g.free();
});

test('add_vision builds the vision models as graphs; compile_backward trains them', { skip }, () => {
  for (const slug of rlx.list_vision_models()) {
    const info = rlx.vision_model_info(slug);
    const g = new rlx.WebGraph();
    const m = g.add_vision(slug, 2);
    assert.deepEqual(g.shape(m.logits), [2, 10]);
    assert.deepEqual(m.params.map((id) => g.shape(id).reduce((a, b) => a * b, 1)), info.param_sizes);
    assert.equal(g.find('x'), m.x);
    assert.equal(g.find('nope'), -1);
    const step = g.compile_backward(m.loss, m.params);
    assert.deepEqual(step.output_sizes(), [1, ...info.param_sizes]);
    const bench = new rlx.VisionBench(slug);
    const flat = bench.init_params(5);
    const batch = bench.synthetic_batch(5, 2);
    let at = 0;
    info.param_names.forEach((name, k) => { step.feed(name, flat.subarray(at, at + info.param_sizes[k])); at += info.param_sizes[k]; });
    step.feed('x', batch.x);
    step.feed('labels', batch.labels);
    step.run();
    const [want] = bench.train_step_cpu(batch.x, batch.labels, flat, 0.01);
    close(step.output(0), [want], `${slug}: the loss equals VisionBench's`);
    step.free();
    g.free();
  }
});

// ---- errors -------------------------------------------------------------------------------

test('bad graphs throw the library message naming the node, the op and the shapes', { skip }, () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [2, 3]);
  const w = g.param('w', [4, 5]);
  const err = throwsClear(() => g.matmul(x, w), /node \d+ \(matmul\)/, /\[2, 3\]/, /\[4, 5\]/);
  assert.equal(err.statusName, 'shape error');
  throwsClear(() => g.relu(x), /WebGraph\.relu: the graph has an error from an earlier builder \(build a new graph\)/, /matmul/);
  g.free();
  throwsClear(() => g.relu(x), /the graph was freed/);
  g.free(); // harmless

  const h = new rlx.WebGraph();
  const a = h.input('a', [2, 3]);
  throwsClear(() => h.add(a, h.input('b', [4])), /node \d+ \(add\)/, /\[2, 3\]/, /\[4\]/);
  const k = new rlx.WebGraph();
  const ka = k.input('a', [2, 3]);
  throwsClear(() => k.reshape(ka, [4, 2]), /reshape/, /\[2, 3\]/);
  const dup = new rlx.WebGraph();
  dup.input('a', [2]);
  throwsClear(() => dup.param('a', [3]), /'a'/);
  dup.free();
  h.free();
  k.free();
});

test('bad arguments throw clear errors before reaching wasm', { skip }, () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [2, 3]);
  throwsClear(() => g.input('', [2]), /name must be a non-empty string/);
  throwsClear(() => g.input('y', [2, 1.5]), /shape\[1\] must be an integer/);
  throwsClear(() => g.input('y', 'abc'), /shape must be an Array of integers/);
  throwsClear(() => g.input('y', [2], 'f64'), /dtype of 'y' must be 'f32' or 'i32'/);
  throwsClear(() => g.param('p', [1, 1, 1, 1, 1, 1, 1, 1, 1]), /at most 8/);
  throwsClear(() => g.constant([1, 2, 3], [2, 2]), /3 values do not fill shape \[2, 2\] \(4 elements\)/);
  throwsClear(() => g.constant('abc'), /values must be a Float32Array/);
  throwsClear(() => g.scalar('1'), /value must be a number/);
  throwsClear(() => g.relu('x'), /inputs\[0\] must be a node id/, /string/);
  throwsClear(() => g.relu(-1), /must be a node id/);
  throwsClear(() => g.add(x), /WebGraph\.add: takes 2 node ids, got 1 arguments/);
  throwsClear(() => g.relu(999), /999|node/);
  const h = new rlx.WebGraph();
  const y = h.input('y', [2, 3]);
  throwsClear(() => h.reduce_sum(y, 2), /WebGraph\.reduce_sum: axis 2 is outside a rank-2 tensor/);
  throwsClear(() => h.reduce_sum(y, []), /axes is empty/);
  throwsClear(() => h.permute(y, [0]), /perm \[0\] needs 2 entries/);
  throwsClear(() => h.transpose(y, 0, 5), /axis 5 is outside/);
  throwsClear(() => h.max_pool2d(y, {}), /kernel is required/);
  throwsClear(() => h.conv2d(y, y, { stride: [1, 2, 3] }), /stride must be an integer or a pair/);
  throwsClear(() => h.attention(y, y, y, { mask: 'diagonal' }), /mask must be one of none, causal, sliding, padding, bias/);
  throwsClear(() => h.attention(y, y, y, { mask: 'padding' }), /mask 'padding' needs maskTensor/);
  throwsClear(() => h.add_vision('nope'), /nope/, /mnist-cnn/);
  throwsClear(() => h.compile_forward([]), /outputs is empty/);
  throwsClear(() => h.compile_forward(y, 'cuda'), /backend must be 'cpu', 'webgpu', 'webgl' or 'auto', got string cuda/);
  throwsClear(() => h.compile_backward(h.reduce_sum(y)), /no params to differentiate for/);
  const p = h.param('p', [3]);
  h.param('unused', [3]);
  throwsClear(() => h.compile_backward(h.reduce_sum(h.mul(y, p))), /unused|gradient/);
  const c = h.compile_forward(h.mul(y, p));
  throwsClear(() => c.feed('nope', [1]), /no input or param named 'nope' \(inputs: y\b.*; params: p\b/);
  throwsClear(() => c.feed('y', [1, 2]), /CompiledGraph\.feed: set_input: 'y' holds 6 values, got 2/);
  throwsClear(() => c.feed('p', 'abc'), /'p' must be a Float32Array, an Int32Array or an Array of numbers/);
  throwsClear(() => c.feed('p', [1, 'a', 3]), /'p'\[1\] is string/);
  throwsClear(() => c.run(), /CompiledGraph\.run: /, /y/);
  throwsClear(() => c.output(0), /CompiledGraph\.output: .*not run/);
  throwsClear(() => c.output(3), /output 3 does not exist \(1 outputs\)/);
  throwsClear(() => c.read_param('q'), /no param named 'q'/);
  c.free();
  g.free();
  h.free();
});

test('compile_forward accepts one node or an Array; compiled graphs outlive and ignore later graph changes', { skip }, () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [3]);
  const c1 = g.compile_forward(g.relu(x));
  const c2 = g.compile_forward([g.neg(x), g.abs(x)], 'CPU');
  g.exp(x); // extending the graph does not touch the compiled ones
  g.free();
  c1.feed('x', [-1, 0, 2]);
  c1.run();
  close(c1.output(0), [0, 0, 2], 'relu');
  assert.equal(c2.output_count, 2);
  c2.feed('x', new Float32Array([-1, 0, 2]));
  c2.run();
  close(c2.output(0), [1, 0, -2], 'neg');
  close(c2.output(1), [1, 0, 2], 'abs');
  assert.deepEqual(c2.output_shape(1), [3]);
  assert.equal(c2.requested, 'cpu');
  c1.free();
  c2.free();
});

test('wasm memory stays flat over 300 build / compile / run / free rounds', { skip }, () => {
  const round = () => {
    const g = new rlx.WebGraph();
    const x = g.input('x', [8, 16]);
    const w = g.param('w', [16, 4]);
    const loss = g.reduce_mean(g.relu(g.matmul(x, w)));
    const c = g.compile_backward(loss, [w]);
    c.feed('x', values(128, 41));
    c.feed('w', values(64, 42));
    c.run();
    c.output(1);
    try { g.matmul(x, x); } catch { /* an error path too */ }
    c.free();
    g.free();
  };
  for (let i = 0; i < 20; i++) round();
  const before = rt.memory.buffer.byteLength;
  for (let i = 0; i < 300; i++) round();
  assert.equal(rt.memory.buffer.byteLength, before, 'wasm memory grew');
});
