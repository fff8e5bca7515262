// js_surface_fuzz_worker.mjs - the body of js_surface_fuzz.test.mjs, run in
// a Worker so that the test can stop it when one call hangs.  It calls every
// exported function, class and public method of web/pkg/rlx_web.js, of
// WebGraph and CompiledGraph, of the internal binding under them
// (web/runtime/loader.js: loadRlx, Rlx, Graph, Session) and of the SDK
// web/rlx.js with argument lists mixing plausible values and hostile ones,
// and sorts each outcome: returned, RlxError, the caller's own
// exception passed through unchanged (a hostile proxy's), or a failure
// (another exception type, a trap, a call slower than the bound, or a module
// that no longer computes a small MLP forward and matmul as before).
// Messages to the parent: { kind: 'call', i, label } before every call and
// { kind: 'done', ... } at the end.
import { parentPort, workerData } from 'node:worker_threads';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { loadRlx, Rlx, Graph, Session } from '../../web/runtime/loader.js';
import Sdk from '../../web/rlx.js';
import { prng } from '../common/prng.mjs';

const { seed, iters, callMs } = workerData;
const REFRESH = 150;   // calls between fresh targets
const MAX_FAILURES = 40;


/** Thrown by the hostile proxies: the caller's own exception, which may pass through as it is. */
class CallerError extends Error {}
const SENTINEL = new CallerError('fuzz: thrown by a hostile proxy or getter');
const boom = () => { throw SENTINEL; };
const trapAll = { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom, getPrototypeOf: boom, apply: boom, construct: boom };

// [label, make()] pairs: made fresh for every call.
const HOSTILE = [
  ['undefined', () => undefined], ['null', () => null], ['Object.create(null)', () => Object.create(null)],
  ['NaN', () => NaN], ['-1', () => -1], ['2**31', () => 2 ** 31], ['2**32', () => 2 ** 32], ['Infinity', () => Infinity],
  ['-0', () => -0], ['1.5', () => 1.5], ['true', () => true], ["''", () => ''], ['huge string', () => HUGE],
  ["'toString'", () => 'toString'], ["'__proto__'", () => '__proto__'], ["'constructor'", () => 'constructor'],
  ['Symbol', () => Symbol('s')], ['10n', () => 10n], ['[]', () => []], ['[null]', () => [null]], ['[NaN]', () => [NaN]],
  ['[Object.create(null)]', () => [Object.create(null)]], ['{}', () => ({})], ['a function', () => () => 1],
  ['{length: 2**32}', () => ({ length: 2 ** 32 })], ['sparse Array(2**32-1)', () => new Array(2 ** 32 - 1)],
  ['sparse Array(2**28)', () => new Array(2 ** 28)],
  ['null-proto {length: 2**32}', () => Object.assign(Object.create(null), { length: 2 ** 32 })],
  ['Float32Array(0)', () => new Float32Array(0)], ['BigInt64Array(2)', () => new BigInt64Array(2)],
  ['DataView', () => new DataView(new ArrayBuffer(8))], ['ArrayBuffer(8)', () => new ArrayBuffer(8)],
  ['throwing proxy', () => new Proxy({}, trapAll)], ['throwing array proxy', () => new Proxy([1, 2], trapAll)],
  ['throwing function proxy', () => new Proxy(() => 1, trapAll)], ['{valueOf: throws}', () => ({ valueOf: boom, toString: boom })],
  ['{toString: 1}', () => ({ toString: 1, valueOf: 1 })], ['Map', () => new Map([['x', 1]])], ['Promise', () => Promise.resolve(1)],
  ['{kind: "toString"}', () => ({ kind: 'toString', device: 'constructor', mask: 'toString', backend: '__proto__' })],
  ['{getter throws}', () => Object.defineProperty({}, 'backend', { get: boom, enumerable: true })],
];
const HUGE = 'x'.repeat(1 << 22);

const PLAUSIBLE = [
  ['0', () => 0], ['1', () => 1], ['2', () => 2], ['3', () => 3], ['42', () => 42], ['0.01', () => 0.01],
  ["'x'", () => 'x'], ["'w'", () => 'w'], ["'a'", () => 'a'], ["'y'", () => 'y'], ["'cpu'", () => 'cpu'], ["'auto'", () => 'auto'],
  ["'webgl'", () => 'webgl'], ["'webgpu'", () => 'webgpu'], ["'mnist-mlp'", () => 'mnist-mlp'], ["'relu'", () => 'relu'],
  ["'matmul'", () => 'matmul'], ["'i32'", () => 'i32'], ['[2, 2]', () => [2, 2]], ['[0]', () => [0]], ['[0, 1]', () => [0, 1]],
  ['[1, 2, 3, 4]', () => [1, 2, 3, 4]], ['Float32Array(4)', () => new Float32Array([0.5, -1, 2, 0.25])],
  ['Int32Array(2)', () => Int32Array.of(0, 1)], ['{}', () => ({})], ['{ kernel: 2 }', () => ({ kernel: 2 })],
  ['{ steps: 2 }', () => ({ steps: 2, batch: 2 })], ['{ backend: "cpu" }', () => ({ backend: 'cpu' })],
  ['{ x: Float32Array(4) }', () => ({ x: new Float32Array(4) })], ['{ vocab: 8, ... }', () => ({ vocab: 8, dim: 4, nLayers: 1, nHeads: 2, ffn: 8 })],
  ['a function', () => () => 1], ['{ transA: true }', () => ({ transA: true, trans_b: 1 })],
  ['{ kernel: 2, stride: 1 }', () => ({ kernel: 2, stride: 1, padding: 0 })], ['{ mask: "causal" }', () => ({ mask: 'causal', scale: 0.5 })],
  ['{ kind: "adam" }', () => ({ kind: 'adam', lr: 0.1 })], ['{ skipFusion: true }', () => ({ skipFusion: true, device: 'cpu' })],
  ['{ training: false }', () => ({ training: false, batch: 1, outputs: [0] })], ['{ repeat: 2 }', () => ({ repeat: 2 })],
  ['mnist x', () => new Float32Array(784).fill(0.5)], ['labels [1]', () => Int32Array.of(1)], ['[3, 1, 4]', () => [3, 1, 4]],
  ['mnist-mlp params', () => MLP_PARAMS], ['{ x: [1, 2, 3, 4] }', () => ({ x: [1, 2, 3, 4], w: new Float32Array(4) })],
];
const MLP_PARAMS = Float32Array.from({ length: 101770 }, (_, i) => ((i * 7919) % 1000) / 1e5 - 0.005);

// ---- the reference: a small MLP forward and a matmul, computed before any fuzzing --------

const MLP = [Float32Array.of(1, 2, -1, 0.5), 2, 3, 2, Float32Array.of(0.1, -0.2, 0.3, 0.4, 0.5, -0.6),
  Float32Array.of(0.01, 0.02, 0.03), Float32Array.of(0.7, -0.8, 0.9, 1.0, -1.1, 1.2), Float32Array.of(0.1, -0.1)];
const A = Float32Array.of(1, 2, 3, 4), B = Float32Array.of(0.5, -1, 2, 0.25);

function makeReference() {
  const g = new rlx.WebGraph();
  const a = g.input('a', [2, 2]), b = g.input('b', [2, 2]);
  const c = g.compile_forward(g.matmul(a, b), 'cpu');
  g.free();
  const compute = () => {
    c.feed('a', A);
    c.feed('b', B);
    c.run();
    return [...rlx.mlp_forward(...MLP), ...c.output(0)];
  };
  return { compute, want: compute(), free: () => c.free() };
}

// ---- valid argument lists: a call mutates one or two of their positions ------------------

const F4 = () => Float32Array.of(0.5, -1, 2, 0.25);
const X784 = () => new Float32Array(784).fill(0.25);
const MLP_T = () => Float32Array.of(1, 0, 0, 1);
const TF = () => [[1, 2], 8, 4, 1, 2, 2, 8, 0];

/** Valid arguments of a target by its label; c: the node ids and blocks of makeTargets. */
const TEMPLATES = {
  'WebGraph.input': () => ['z', [3, 3], 'f32'], 'WebGraph.param': () => ['p', [2]], 'WebGraph.constant': () => [[1, 2, 3, 4], [2, 2]],
  'WebGraph.scalar': () => [1.5], 'WebGraph.find': () => ['x'], 'WebGraph.shape': (c) => [c.x],
  'WebGraph.op': (c) => ['matmul', [c.x, c.w], { trans_b: true }], 'WebGraph.opAttrs': () => ['softmax'],
  'WebGraph.matmul': (c) => [c.x, c.w, { transA: false }], 'WebGraph.reshape': (c) => [c.x, [4]],
  'WebGraph.expand': (c) => [c.x, [2, 2]], 'WebGraph.permute': (c) => [c.x, [1, 0]], 'WebGraph.transpose': (c) => [c.x, 0, 1],
  'WebGraph.narrow': (c) => [c.x, 0, 0, 1], 'WebGraph.concat': (c) => [[c.x, c.w], 0], 'WebGraph.gather': (c) => [c.x, c.ids],
  'WebGraph.reduce_sum': (c) => [c.x, [0], true], 'WebGraph.reduce_mean': (c) => [c.x, 1], 'WebGraph.reduce_max': (c) => [c.x],
  'WebGraph.softmax': (c) => [c.x, -1], 'WebGraph.log_softmax': (c) => [c.x, 0],
  'WebGraph.softmax_cross_entropy': (c) => [c.x, c.ids], 'WebGraph.rms_norm': (c) => [c.x, c.v, 1e-6],
  'WebGraph.layer_norm': (c) => [c.x, c.v, c.v, 1e-5], 'WebGraph.rope': (c) => [c.q, { theta: 100, posOffset: 1 }],
  'WebGraph.attention': (c) => [c.q, c.q, c.q, { mask: 'causal' }], 'WebGraph.conv2d': (c) => [c.img, c.k, { stride: 1, padding: 1 }],
  'WebGraph.max_pool2d': (c) => [c.img, { kernel: 2 }], 'WebGraph.avg_pool2d': (c) => [c.img, { kernel: [2, 2], stride: 1 }],
  'WebGraph.add_vision': () => ['mnist-mlp', 1], 'WebGraph.compile_forward': (c) => [c.y, 'cpu', { skipFusion: true }],
  'WebGraph.compile_backward': (c) => [c.l, [c.w], 'cpu', {}], 'WebGraph.compile_train': (c) => [c.l, [c.w], { kind: 'adam', lr: 0.1 }, 'cpu', {}],
  'WebGraph.add': (c) => [c.x, c.w], 'WebGraph.where': (c) => [c.x, c.x, c.w], 'WebGraph.relu': (c) => [c.x],
  'CompiledGraph.feed': () => ['x', F4()], 'CompiledGraph.read_param': () => ['w'], 'CompiledGraph.output': () => [0],
  'CompiledGraph.output_shape': () => [0], 'CompiledGraph.run_async': () => [{ x: F4(), w: F4() }],
  'CompiledGraph.profile': () => [{ repeat: 2 }], 'CompiledGraph.set_lr': () => [0.1],
  'Graph.input': () => ['z', [2], 'f32'], 'Graph.param': () => ['p', [2]], 'Graph.constant': () => [[2, 2], F4()],
  'Graph.scalar': () => [2], 'Graph.op': (c) => ['matmul', [c.gx, c.gw], [0, 1], []], 'Graph.shape': (c) => [c.gx],
  'Graph.node': () => [0], 'Graph.compile': (c) => [[c.gx], { device: 'cpu' }],
  'Graph.compileTrain': (c) => [c.gl, [c.gw], { kind: 'sgd', lr: 0.1 }, { device: 'cpu' }],
  'Session.setParam': () => ['w', F4()], 'Session.setInput': () => ['x', F4()], 'Session.getParam': () => ['w'],
  'Session.output': () => [0], 'Session.outputShape': () => [0], 'Session.setLr': () => [0.1],
  'Rlx.alloc': () => [16], 'Rlx.free': (c) => [c.rt.alloc(8)], 'Rlx.f32In': () => [[1, 2]], 'Rlx.i32In': () => [[1, 2]],
  'Rlx.readF32': (c) => [c.blk, 4], 'Rlx.readI32': (c) => [c.blk, 2], 'Rlx.writeF32': (c) => [c.blk, [1, 2]],
  'Rlx.writeI32': (c) => [c.blk, [3]], 'Rlx.strIn': () => ['abc'], 'Rlx.cstring': (c) => [c.blk], 'Rlx.scoped': () => [(t) => t.str('x')],
  'Rlx.statusName': () => [-1], 'Rlx.check': () => [0],
  'VisionBench.forward_cpu': () => [X784(), MLP_PARAMS], 'VisionBench.train_step_cpu': () => [X784(), [1], MLP_PARAMS, 0.01],
  'VisionBench.grads_cpu': () => [X784(), Int32Array.of(2), MLP_PARAMS], 'VisionBench.bench_cpu': () => [1, 1, 0.01, 1],
  'VisionBench.init_params': () => [1], 'VisionBench.synthetic_batch': () => [1, 2],
  'VisionBench.forward_webgl': () => [X784(), MLP_PARAMS], 'VisionBench.train_step_webgl': () => [X784(), [1], MLP_PARAMS, 0.01],
  'VisionBench.bench_webgl': () => [1, 1, 0.01, 46341], 'VisionBench.bench_webgpu': () => [1, 1, 0.01, 2],
  mlp_forward: () => MLP, mlp_forward_gpu: () => MLP, mlp_forward_webgl: () => MLP,
  mlp_loss: () => [MLP[0], MLP_T(), ...MLP.slice(1)], mlp_grads: () => [MLP[0], MLP_T(), ...MLP.slice(1)],
  mlp_grads_webgl: () => [MLP[0], MLP_T(), ...MLP.slice(1)], mlp_train_step: () => [MLP[0], MLP_T(), ...MLP.slice(1), 0.1],
  transformer_next_logits: TF, transformer_logits: TF, vision_model_info: () => ['mnist-mlp'], parse_backend: () => ['gl'],
  backend_environment: () => [{ refresh: false }], backend_candidates: () => ['mnist-mlp', 'auto', { training: true }],
  select_backend: () => ['mnist-mlp', 'cpu', { training: false }], 'new VisionBench': () => ['mnist-mlp'],
  'VisionModel.forward': () => [X784(), MLP_PARAMS, { backend: 'cpu' }],
  'VisionModel.trainStep': () => [X784(), [1], MLP_PARAMS, 0.01, { backend: 'cpu' }],
  'VisionModel.grads': () => [X784(), [1], MLP_PARAMS, { backend: 'auto' }], 'VisionModel.bench': () => [{ steps: 2, backend: 'cpu' }],
  'VisionModel.resolve': () => ['cpu', { training: false, batch: 2 }], 'VisionModel.forwardCpu': () => [X784(), MLP_PARAMS],
  'VisionModel.trainStepCpu': () => [X784(), [1], MLP_PARAMS, 0.01], 'VisionModel.benchCpu': () => [1, 1, 0.01, 1],
  'VisionModel.initParams': () => [3], 'VisionModel.syntheticBatch': () => [1, 2],
  'Transformer.nextLogits': () => [[1, 2]], 'Transformer.logits': () => [[3]],
  'sdk.vision': () => ['mnist-mlp'], 'sdk.transformer': () => [{ vocab: 8, dim: 4, nLayers: 1, nHeads: 2, ffn: 8 }],
  'Sdk.init': () => [{ webgpu: false }],
};

// ---- targets: everything the fuzzer calls ------------------------------------------------

function methodsOf(obj, label) {
  const out = [];
  const seen = new Set();
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const name of Object.getOwnPropertyNames(p)) {
      if (name === 'constructor' || name.startsWith('_') || seen.has(name)) continue;
      seen.add(name);
      const d = Object.getOwnPropertyDescriptor(p, name);
      if (d.get) out.push({ label: `${label}.${name} (getter)`, call: () => d.get.call(obj), getter: true });
      else if (typeof d.value === 'function') out.push({ label: `${label}.${name}`, call: (args) => d.value.apply(obj, args) });
    }
  }
  return out;
}

const isClass = (f) => /^class\b/.test(Function.prototype.toString.call(f));

async function makeTargets() {
  const rt = await init();
  const targets = [];
  // In name order, as the module namespace lists its own.
  const exported = Object.entries({ ...rlx, loadRlx, Rlx, Graph, Session }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, v] of exported) {
    if (typeof v !== 'function') continue;
    const label = name === 'default' ? 'init' : name;
    // free() drops the instance by design (the targets and the reference with it): a fresh one is loaded after it.
    const resets = name === 'free';
    targets.push(isClass(v) ? { label: `new ${label}`, call: (args) => new v(...args) } : { label, resets, call: (args) => v(...args) });
  }
  targets.push({ label: 'new Sdk (private)', call: (args) => new Sdk(...args) });
  targets.push({ label: 'Sdk.init', call: (args) => Sdk.init(...args) });

  const g = rt.graph();
  const gx = g.input('x', [2, 2]);
  const gw = g.param('w', [2, 2]);
  const s = g.compile([g.op('matmul', [gx, gw], [0, 0])]);
  const gl = g.op('reduce_mean', [g.op('matmul', [gx, gw], [0, 0])], [3, 0]);
  const wg = new rlx.WebGraph();
  const x = wg.input('x', [2, 2]);
  const w = wg.param('w', [2, 2]);
  const y = wg.relu(wg.matmul(x, w));
  const cg = wg.compile_forward(y, 'cpu');
  const ctx = { rt, gx, gw, gl, x, w, y, l: wg.reduce_mean(y), ids: wg.input('ids', [2], 'i32'), v: wg.param('v', [2]),
    q: wg.input('q', [1, 1, 2, 2]), img: wg.input('img', [1, 1, 4, 4]), k: wg.param('k', [1, 1, 3, 3]), blk: rt.alloc(64) };
  const vb = new rlx.VisionBench('mnist-mlp');
  const sdk = await Sdk.init({ webgpu: false });
  const vm = sdk.vision('mnist-mlp');
  const tf = sdk.transformer({ vocab: 8, dim: 4, nLayers: 1, nHeads: 2, ffn: 8 });
  for (const [obj, label] of [[rt, 'Rlx'], [g, 'Graph'], [s, 'Session'], [wg, 'WebGraph'], [cg, 'CompiledGraph'],
    [vb, 'VisionBench'], [sdk, 'sdk'], [vm, 'VisionModel'], [tf, 'Transformer']]) {
    targets.push(...methodsOf(obj, label));
  }
  for (const t of targets) if (TEMPLATES[t.label]) t.template = () => TEMPLATES[t.label](ctx);
  const free = () => { s.free(); g.free(); cg.free(); wg.free(); vb.free(); sdk.dispose(); };
  return { targets, free };
}

// ---- one call, classified ------------------------------------------------------------------

function classify(err) {
  if (err === SENTINEL) return 'propagated';
  if (err instanceof rlx.RlxError) return err.status === -100 ? 'trap' : 'rlxError';
  if (err instanceof WebAssembly.RuntimeError) return 'trap';
  return 'escape';
}

const TIMEOUT = Symbol('timeout');
function within(promise, ms) {
  let timer;
  return Promise.race([promise, new Promise((resolve) => { timer = setTimeout(() => resolve(TIMEOUT), ms); })])
    .finally(() => clearTimeout(timer));
}

async function run() {
  const r = prng(seed);
  const counts = { calls: 0, returned: 0, rlxError: 0, propagated: 0, escape: 0, trap: 0, hang: 0, wrong: 0 };
  const failures = [];
  await init();
  let reference = makeReference();
  let targets = await makeTargets();
  const t0 = performance.now();
  const fail = (kind, i, label, detail) => {
    counts[kind]++;
    if (failures.length < MAX_FAILURES) failures.push({ kind, i, label, detail });
  };
  for (let i = 0; i < iters; i++) {
    if (i > 0 && i % REFRESH === 0) {
      try { targets.free(); } catch { /* a fuzzed call may have left them half freed */ }
      targets = await makeTargets();
    }
    const t = r.pick(targets.targets);
    let picks;
    if (t.template && r.int(4) !== 0) {
      // A valid call with one or two positions (one past the end included) made hostile; 1 in 8 left valid.
      picks = t.template().map((v) => ['ok', () => v]);
      const changes = r.int(8) === 0 ? 0 : 1 + r.int(2);
      for (let k = 0; k < changes; k++) picks[r.int(picks.length + 1)] = r.pick(HOSTILE);
      picks = Array.from({ length: picks.length }, (_, k) => picks[k] ?? ['undefined', () => undefined]);
    } else {
      const n = t.getter ? 0 : 1 + r.int(5);
      picks = Array.from({ length: n }, () => (r.int(2) === 0 ? r.pick(HOSTILE) : r.pick(PLAUSIBLE)));
      if (n && !picks.some((p) => HOSTILE.includes(p))) picks[r.int(n)] = r.pick(HOSTILE);
    }
    const label = `${t.label}(${picks.map((p) => p[0]).join(', ')})`;
    parentPort.postMessage({ kind: 'call', i, label });
    counts.calls++;
    const c0 = performance.now();
    let outcome;
    let detail = '';
    try {
      let value = t.call(picks.map((p) => p[1]()));
      if (value && typeof value.then === 'function') {
        value = await within(value, callMs);
        if (value === TIMEOUT) outcome = 'hang';
      }
      outcome ??= 'returned';
    } catch (err) {
      outcome = classify(err);
      detail = `${err?.constructor?.name}: ${String(err?.message).slice(0, 300)}`;
    }
    const ms = performance.now() - c0;
    if (outcome === 'hang' || ms > callMs) fail('hang', i, label, `${ms.toFixed(0)} ms`);
    else if (outcome === 'escape' || outcome === 'trap') fail(outcome, i, label, detail);
    else counts[outcome]++;
    if (t.resets) {
      await init();
      reference = makeReference();
      targets = await makeTargets();
      continue;
    }
    let got;
    try {
      got = reference.compute();
    } catch (err) {
      got = err;
    }
    const same = Array.isArray(got) && got.length === reference.want.length && got.every((v, k) => Object.is(v, reference.want[k]));
    if (!same) {
      fail('wrong', i, label, `after this call the reference gives ${got instanceof Error ? got.message : got}`);
      for (let k = 0; ; k++) { // a fresh instance once the damaged one has died
        try {
          await init();
          reference = makeReference();
          targets = await makeTargets();
          break;
        } catch (err) {
          if (k >= 2) throw err;
        }
      }
    }
  }
  try { targets.free(); reference.free(); } catch { /* ignore */ }
  const seconds = (performance.now() - t0) / 1000;
  parentPort.postMessage({ kind: 'done', counts, failures, seconds, targets: targets.targets.length });
}

run().catch((err) => parentPort.postMessage({ kind: 'crash', error: String(err?.stack ?? err) }));
