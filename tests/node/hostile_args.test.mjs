// hostile_args.test.mjs - regressions for the JS surface's handling of bad
// arguments (each once escaped as a TypeError or RangeError, hung, trapped
// or did harm): options that are null or not objects, array-likes claiming
// 2^32 entries, bad and double frees, raw pointers handed to constructors,
// names like 'constructor', a WebGL2 bench that grew wasm memory before
// finding out that WebGL2 cannot run here, and SDK options.  Every one must
// be an RlxError naming the function and the argument, quickly, with the
// module still working after.
// Build first: make wasm sdk
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
// The internal binding WebGraph is built on (not exported by rlx_web.js); init() gives its live Rlx.
import { Graph, Session, Rlx } from '../../web/runtime/loader.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url)) && existsSync(new URL('../../web/rlx.js', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm and web/rlx.js present', () => assert.fail('run `make wasm sdk`'));
const rt = ready ? await init() : null;
const Sdk = ready ? (await import('../../web/rlx.js')).default : null;
const skip = !ready;

/** fn() throws an RlxError (not a fatal one) matching every pattern. */
function rejects(fn, ...patterns) {
  let err;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, `expected an error matching ${patterns.join(' ')}`);
  assert.ok(err instanceof rlx.RlxError, `not an RlxError: ${err?.constructor?.name}: ${err?.message}`);
  assert.notEqual(err.status, -100, `the module trapped: ${err.message}`);
  for (const p of patterns) assert.match(err.message, p);
  return err;
}

async function rejectsAsync(promise, ...patterns) {
  let err;
  try { await promise; } catch (e) { err = e; }
  assert.ok(err instanceof rlx.RlxError, `not an RlxError: ${err?.constructor?.name}: ${err?.message}`);
  for (const p of patterns) assert.match(err.message, p);
}

/** The module still computes: a 2x2 matmul on the CPU. */
function stillWorks() {
  const g = new rlx.WebGraph();
  const a = g.input('a', [2, 2]);
  const c = g.compile_forward(g.matmul(a, a), 'cpu');
  c.feed('a', [1, 2, 3, 4]);
  c.run();
  assert.deepEqual(Array.from(c.output(0)), [7, 10, 15, 22]);
  c.free();
  g.free();
}

function graph() {
  const g = new rlx.WebGraph();
  const x = g.input('x', [1, 1, 4, 4]);
  const w = g.param('w', [1, 1, 2, 2]);
  return { g, x, w };
}

test('options that are null or not objects: an RlxError naming the function and the options', { skip }, () => {
  const { g, x, w } = graph();
  const m = g.input('m', [2, 2]);
  const loss = g.reduce_mean(g.matmul(m, m));
  rejects(() => rlx.backend_environment(null), /^backend_environment: options must be an object or undefined, got null/);
  rejects(() => rlx.backend_candidates('mnist-mlp', 'auto', null), /^backend_candidates: options must be an object/);
  rejects(() => rlx.select_backend('mnist-mlp', 'cpu', null), /^select_backend: options must be an object/);
  rejects(() => rlx.backend_environment(5), /options must be an object or undefined, got number 5/);
  rejects(() => g.matmul(m, m, null), /^WebGraph.matmul: options must be an object/);
  rejects(() => g.conv2d(x, w, null), /^WebGraph.conv2d: options must be an object/);
  rejects(() => g.max_pool2d(x, null), /^WebGraph.max_pool2d: options must be an object/);
  rejects(() => g.avg_pool2d(x, null), /^WebGraph.avg_pool2d: options must be an object/);
  rejects(() => g.rope(m, null), /^WebGraph.rope: options must be an object/);
  rejects(() => g.attention(x, x, x, null), /^WebGraph.attention: options must be an object/);
  rejects(() => g.matmul(m, m, [true]), /^WebGraph.matmul: options must be an object or undefined, got an Array/);
  rejects(() => g.compile_forward(m, 'cpu', null), /^WebGraph.compile_forward: options must be an object/);
  rejects(() => g.compile_backward(loss, [w], 'cpu', null), /^WebGraph.compile_backward: options must be an object/);
  rejects(() => g.compile_train(loss, [w], {}, 'cpu', null), /^WebGraph.compile_train: options must be an object/);
  rejects(() => g.input('y', [3, 3], Object.create(null)), /^WebGraph.input: dtype of 'y' must be 'f32' or 'i32'/);
  // A prototype-less options object is an object: it is read, not refused.
  const opts = Object.assign(Object.create(null), { transB: true });
  assert.deepEqual(g.shape(g.matmul(m, m, opts)), [2, 2]);
  g.free();
  stillWorks();
});

test("names of Object.prototype members are not backends, dtypes, masks or optimizers", { skip }, () => {
  const { g } = graph();
  const m = g.input('m', [1, 1, 2, 2]);
  for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    rejects(() => g.compile_forward(m, name), /backend must be 'cpu', 'webgpu', 'webgl' or 'auto'/);
    rejects(() => g.input(`i_${name}`, [1], name), /dtype/);
    rejects(() => g.attention(m, m, m, { mask: name }), /mask must be one of/);
    rejects(() => g.compile_train(g.reduce_mean(m), [g.param(`p_${name}`, [1])], { kind: name }), /optimizer.kind must be one of/);
    rejects(() => rt.graph().compile([0], { device: name }), /^Graph.compile: unknown device/);
  }
  g.free();
});

test('array-likes claiming 2^32 entries fail at once, before anything is copied', { skip }, () => {
  const huge = { length: 2 ** 32 };
  const sparse = new Array(2 ** 32 - 1);
  const g = rt.graph();
  const x = g.input('x', [2]);
  const s = g.compile([g.op('relu', [x], [], [])]);
  // Each array-like counts the entries read from it: a refusal reads none.
  for (const target of [huge, sparse, Object.assign(Object.create(null), { length: 2 ** 32 })]) {
    let reads = 0;
    const bad = new Proxy(target, {
      get(t, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(t, key, receiver);
      },
    });
    rejects(() => g.constant([2], bad), /^Graph.constant: data /);
    rejects(() => s.setInput('x', bad), /^Session.setInput: data /);
    rejects(() => rt.f32In(bad), /^Rlx.f32In: values /);
    rejects(() => rt.i32In(bad), /^Rlx.i32In: values /);
    rejects(() => new rlx.WebGraph().constant(bad), /^WebGraph.constant: values /);
    assert.equal(reads, 0, 'entries were read before the refusal');
  }
  const w = g.param('w', [2]);
  const s2 = g.compile([g.op('mul', [x, w], [], [])]);
  rejects(() => s2.setParam('w', huge), /^Session.setParam: data must be a Float32Array/);
  rejects(() => s2.setParam('w', sparse), /^Session.setParam: data has 4294967295 values; at most/);
  rejects(() => g.op('relu', sparse), /^Graph.op: inputs has 4294967295 entries/);
  rejects(() => new rlx.WebGraph().op('relu', sparse), /inputs has 4294967295 entries/);
  rejects(() => new rlx.WebGraph().concat(sparse), /^WebGraph.concat: xs has 4294967295 entries/);
  // A constant whose data does not fill its dims is refused here (the library would read past it).
  rejects(() => g.constant([1000000], [1]), /^Graph.constant: 1 values do not fill dims \[1000000\]/);
  s.free();
  s2.free();
  g.free();
  stillWorks();
});

test('Rlx.free: a bad pointer or a double free is an RlxError, never a trap; the memory helpers check bounds', { skip }, () => {
  rejects(() => rt.free(0x7fffffff), /^Rlx.free: number 2147483647 is not a live block from Rlx.alloc/);
  const p = rt.alloc(16);
  rt.free(p);
  rejects(() => rt.free(p), /^Rlx.free: .* \(a bad pointer, or one freed already\)/);
  rejects(() => rt.free(p + 4), /not a live block/);
  rejects(() => rt.free(Object.create(null)), /^Rlx.free: a object is not a live block/);
  rt.free(0); // free(NULL) stays harmless
  rejects(() => rt.alloc(2 ** 32), /^Rlx.alloc: bytes must be an integer in \[0, 2147483647\]/);
  rejects(() => rt.alloc(-1), /^Rlx.alloc: bytes/);
  rejects(() => rt.readF32(2, 1), /^Rlx.readF32: ptr must be a 4-byte aligned address/);
  rejects(() => rt.readF32(rt.memory.buffer.byteLength - 4, 2), /^Rlx.readF32: 2 values at \d+ run past the end of wasm memory/);
  rejects(() => rt.writeI32(4, { length: 2 ** 32 }), /^Rlx.writeI32: values must be/);
  // Writes go only into live blocks from alloc(): address 0 + 400 KB would overwrite the module's data.
  rejects(() => rt.writeI32(0, new Int32Array(100000)), /^Rlx.writeI32: 100000 values at 0 are not inside a live block from Rlx.alloc/);
  const q = rt.alloc(16);
  rt.writeF32(q, [1, 2, 3, 4]);
  rt.writeF32(q + 8, [5]);
  assert.deepEqual(Array.from(rt.readF32(q, 4)), [1, 2, 5, 4]);
  rejects(() => rt.writeF32(q + 8, [1, 2, 3]), /^Rlx.writeF32: 3 values at \d+ are not inside a live block/);
  rt.free(q);
  rejects(() => rt.writeF32(q, [1]), /not inside a live block/);
  rejects(() => rt.strIn(Object.create(null)), /^Rlx.strIn: str must be a string/);
  rejects(() => rt.statusName(Symbol('s')), /^Rlx.statusName: status must be an integer/);
  rejects(() => rt.scoped(null), /^Rlx.scoped: fn must be a function/);
  assert.equal(rt.scoped((t) => t.str('ok') > 0), true);
  stillWorks();
});

test('raw pointers are not handles: Session, CompiledGraph and Rlx refuse what they did not make', { skip }, () => {
  rejects(() => new Session(rt, 12345), /^Session: not a live session/);
  rejects(() => new Session(null, 0), /^Session: not a live session/);
  rejects(() => new rlx.CompiledGraph(rt, 12345, 'cpu', 'forward', {}), /^CompiledGraph: not a live compiled session/);
  rejects(() => new Graph({ exports: {} }), /^Graph: needs a loaded Rlx/);
  rejects(() => new Rlx(null), /^Rlx: needs an instance of rlx_web.wasm/);
  const g = rt.graph();
  const s = g.compile([g.input('x', [1])]);
  const ptr = s.ptr;
  s.free();
  rejects(() => new Session(rt, ptr), /^Session: not a live session/); // freed: no longer a handle
  g.free();
  stillWorks();
});

test('CompiledGraph: hostile names, feeds and profile options are clean rejections', { skip }, async () => {
  const g = new rlx.WebGraph();
  const x = g.input('x', [2]);
  const w = g.param('w', [2]);
  const c = g.compile_forward(g.mul(x, w), 'cpu');
  rejects(() => c.read_param(Object.create(null)), /^CompiledGraph.read_param: name must be a string/);
  await rejectsAsync(c.run_async('x'.repeat(1 << 22)), /^CompiledGraph.run_async: feeds must be an object or undefined, got string/);
  await rejectsAsync(c.profile(null), /^CompiledGraph.profile: options must be an object/);
  await rejectsAsync(c.profile({ repeat: 2 ** 31 }), /^CompiledGraph.profile: repeat must be an integer in \[1, 100000\]/);
  const outs = await c.run_async({ x: [1, 2], w: [3, 4] });
  assert.deepEqual(Array.from(outs[0]), [3, 8]);
  c.free();
  g.free();
});

test('RlxError made with hostile values still constructs', { skip }, () => {
  const e = new rlx.RlxError(Object.create(null), Object.create(null), Symbol('s'));
  assert.equal(e.message, 'rlx status ?');
  assert.equal(new rlx.RlxError(-1, 'boom').message, 'boom');
  // without a statusName the default is looked up by status: only a number is a key
  const huge = Object.assign(Object.create(null), { length: 2 ** 32 });
  for (const status of [huge, new Array(2 ** 32 - 1), Symbol('s'), { toString() { throw new Error('no'); } }]) {
    const d = new rlx.RlxError(status);
    assert.equal(d.message, 'rlx status ?');
    assert.equal(d.statusName, '');
  }
  assert.equal(new rlx.RlxError(-1).statusName, 'invalid argument');
  assert.equal(new rlx.RlxError(-1).message, 'invalid argument');
});

test('bench_webgl / bench_webgpu: nothing is allocated before the backend is known to run here', { skip }, () => {
  const bench = new rlx.VisionBench('cifar-cnn');
  const before = rt.memory.buffer.byteLength;
  for (const run of [() => bench.bench_webgl(1, 1, 0.01, 46341), () => bench.bench_webgl(1, 1, 0.01, 65536)]) {
    rejects(run, /^VisionBench.bench_webgl: WebGL2 (cannot run here|is not)/);
  }
  assert.ok(rt.memory.buffer.byteLength - before < (16 << 20),
    `wasm memory grew from ${before >> 20} MiB to ${rt.memory.buffer.byteLength >> 20} MiB`);
  bench.free();
});

test('SDK: options that are null or not objects, and its internals, are not reachable as TypeErrors', { skip }, async () => {
  await rejectsAsync(Sdk.init(null), /^Rlx.init: options must be an object or undefined, got null/);
  const sdk = await Sdk.init({ webgpu: false });
  const model = sdk.vision('mnist-mlp');
  const params = model.initParams(1);
  const { x, labels } = model.syntheticBatch(1, 1);
  await rejectsAsync(model.forward(x, params, null), /^mnist-mlp: forward: options must be an object/);
  await rejectsAsync(model.grads(x, labels, params, 7), /^mnist-mlp: grads: options must be an object/);
  await rejectsAsync(model.trainStep(x, labels, params, 0.1, null), /^mnist-mlp: trainStep: options must be an object/);
  await rejectsAsync(model.bench(null), /^mnist-mlp: bench: options must be an object/);
  await rejectsAsync(model.bench({ steps: 1, onProgress: 5 }), /onProgress must be a function/);
  await rejectsAsync(model.forward(Object.create(null), params), /x must hold batch \* 784 values, got object/);
  rejects(() => model.resolve('auto', null), /^mnist-mlp: resolve: options must be an object/);
  rejects(() => model.resolve(Object.create(null)), /backend must be 'auto'/);
  rejects(() => sdk.transformer(Symbol('c')), /^transformer: config must be an object, got symbol/);
  assert.throws(() => sdk.transformer({ vocab: 8, dim: Object.create(null), nLayers: 1, nHeads: 2, ffn: 8 }).nextLogits([1]),
    (e) => e instanceof rlx.RlxError);
  for (const internal of ['own', 'live', 'call', 'batchOf', 'args']) {
    assert.equal(internal in sdk || internal in model, false, `${internal} is reachable from outside`);
  }
  const { loss } = await model.trainStep(x, labels, params, 0.1, { backend: 'cpu' });
  assert.ok(Number.isFinite(loss));
  sdk.dispose();
});
