// web_api.test.mjs - the whole surface of web/pkg/rlx_web.js in Node:
// model entry points equal the native library's outputs (build/tests/
// models_native.json, written by tests/c/dump_models.c) within
// |a - b| <= 1e-5 (1 + |b|); properties that need no reference (causality,
// determinism, cross-entropy of the forward logits, caching); every bad
// argument throws an Error with a clear message and never traps; wasm memory
// stays flat over 1,000 rounds of calls; init() is idempotent; the module
// also runs in a worker thread.
// Build first: make wasm build/tests/models_native.json
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import init, * as rlx from '../../web/pkg/rlx_web.js';

const WASM = new URL('../../web/pkg/rlx_web.wasm', import.meta.url);
const NATIVE = new URL('../../build/tests/models_native.json', import.meta.url);
const REL_TOL = 1e-5;
const ready = existsSync(WASM);
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const native = existsSync(NATIVE) ? JSON.parse(readFileSync(NATIVE, 'utf8')) : null;
if (!native) test('native reference present', () => assert.fail('missing build/tests/models_native.json: make build/tests/models_native.json'));
const rt = ready ? await init() : null;
const skip = !ready;
const skipNative = !ready || !native;

function close(got, want, what, tol = REL_TOL) {
  assert.equal(got.length, want.length, `${what}: length ${got.length} != ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tol * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: ${got[i]} != ${want[i]} (native), |diff| ${d}`);
  }
}

const every = (arr, stride) => Array.from(arr).filter((_, i) => i % stride === 0);

/** Asserts fn throws an Error (never a wasm trap) whose message matches every pattern. */
function throwsClear(fn, ...patterns) {
  let err;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, `expected an error matching ${patterns.join(' ')}`);
  assert.ok(!(err instanceof WebAssembly.RuntimeError), `wasm trapped: ${err.message}`);
  assert.ok(err instanceof Error, `not an Error: ${err}`);
  assert.ok(err instanceof rlx.RlxError, `not an RlxError: ${err}`);
  assert.ok(err.message.length > 10, `message too short: "${err.message}"`);
  for (const p of patterns) assert.match(err.message, p);
  return err;
}

const mlpArgs = (c) => [c.in, c.hid, c.out, c.w1, c.b1, c.w2, c.b2];

// ---- loading, backends --------------------------------------------------------

test('init() is idempotent and start()/runtime() work after it', { skip }, async () => {
  assert.equal(await init(), rt);
  assert.equal(await init(WASM), rt, 'a second init with a source still returns the live runtime');
  rlx.start();
  assert.equal(rlx.runtime(), rt);
  assert.match(rt.version(), /\d+\.\d+/);
});

/** Run in a fresh module graph (a worker thread): the instance is shared by every importer of the runtime here. */
async function beforeInit(fresh) {
  throwsClear(() => fresh.mlp_forward([1], 1, 1, 1, [1], [1], [1], [1]), /init\(\)/);
  throwsClear(() => fresh.list_vision_models(), /init\(\)/);
  throwsClear(() => new fresh.VisionBench('mnist-cnn'), /init\(\)/);
  throwsClear(() => fresh.start(), /init\(\)/);
  assert.equal(fresh.backend(), 'cpu'); // these need no wasm
  assert.equal(fresh.parse_backend('GPU'), 'webgpu');
  const [a, b] = await Promise.all([fresh.default(), fresh.default()]);
  assert.equal(a, b, 'concurrent init() calls share one instance');
  assert.equal(fresh.list_vision_models().length, 4);
}

test('before init() every entry point throws a clear error', { skip }, async () => {
  const moduleUrl = new URL('../../web/pkg/rlx_web.js', import.meta.url).href;
  const code = `import assert from 'node:assert/strict';
    import { parentPort } from 'node:worker_threads';
    import * as rlx from ${JSON.stringify(moduleUrl)};
    ${throwsClear}
    ${beforeInit}
    beforeInit(rlx).then(() => parentPort.postMessage(null), (err) => parentPort.postMessage(String(err?.message ?? err)));`;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`));
  const failure = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(failure, null);
});

test('backend, parse_backend, preferred_backend', { skip }, () => {
  assert.equal(rlx.backend(), 'cpu');
  const cases = {
    cpu: 'cpu', CPU: 'cpu', ' Cpu ': 'cpu', webgpu: 'webgpu', WebGPU: 'webgpu', gpu: 'webgpu', WGPU: 'webgpu',
    webgl: 'webgl', WebGL2: 'webgl', opengl: 'webgl', GL: 'webgl', auto: 'auto', '': 'auto', cuda: 'auto', 'web gpu': 'auto',
  };
  for (const [name, want] of Object.entries(cases)) assert.equal(rlx.parse_backend(name), want, `parse_backend(${JSON.stringify(name)})`);
  throwsClear(() => rlx.parse_backend(42), /parse_backend/, /string/);
  throwsClear(() => rlx.parse_backend(undefined), /string/);
  assert.equal(rlx.preferred_backend(), 'cpu', 'Node offers neither navigator.gpu nor WebGL2');
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  try {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu: {} }, configurable: true });
    assert.equal(rlx.preferred_backend(), 'webgpu');
  } finally {
    if (saved) Object.defineProperty(globalThis, 'navigator', saved);
    else delete globalThis.navigator;
  }
});

// ---- the MLP -------------------------------------------------------------------------

test('MLP forward, loss, grads and train step equal the native library', { skip: skipNative }, () => {
  for (const c of native.mlp) {
    const tag = `mlp rows ${c.rows} in ${c.in} hid ${c.hid} out ${c.out}`;
    close(rlx.mlp_forward(c.x, ...mlpArgs(c)), c.y, `${tag} forward`);
    close([rlx.mlp_loss(c.x, c.t, ...mlpArgs(c))], [c.loss], `${tag} loss`);
    close(rlx.mlp_grads(c.x, c.t, ...mlpArgs(c)), c.grads, `${tag} grads`);
    close(rlx.mlp_train_step(c.x, c.t, ...mlpArgs(c), c.lr), c.params, `${tag} train step`);
    // Float32Array and plain arrays give identical results.
    const f32 = (a) => Float32Array.from(a);
    const y32 = rlx.mlp_forward(f32(c.x), c.in, c.hid, c.out, f32(c.w1), f32(c.b1), f32(c.w2), f32(c.b2));
    assert.deepEqual(Array.from(y32), Array.from(rlx.mlp_forward(c.x, ...mlpArgs(c))));
  }
});

test('MLP results have the documented shapes and types, and SGD lowers the loss', { skip: skipNative }, () => {
  const c = native.mlp[0];
  const np = c.in * c.hid + c.hid + c.hid * c.out + c.out;
  const y = rlx.mlp_forward(c.x, ...mlpArgs(c));
  assert.ok(y instanceof Float32Array);
  assert.equal(y.length, c.rows * c.out);
  assert.equal(typeof rlx.mlp_loss(c.x, c.t, ...mlpArgs(c)), 'number');
  assert.equal(rlx.mlp_grads(c.x, c.t, ...mlpArgs(c)).length, 1 + np);
  const next = rlx.mlp_train_step(c.x, c.t, ...mlpArgs(c), 0.01);
  assert.equal(next.length, np);
  const a = c.in * c.hid;
  const split = [next.subarray(0, a), next.subarray(a, a + c.hid), next.subarray(a + c.hid, a + c.hid + c.hid * c.out),
    next.subarray(a + c.hid + c.hid * c.out)];
  assert.ok(rlx.mlp_loss(c.x, c.t, c.in, c.hid, c.out, ...split) < rlx.mlp_loss(c.x, c.t, ...mlpArgs(c)));
  // Several rows equal the rows run one at a time.
  for (let r = 0; r < c.rows; r++) {
    const row = rlx.mlp_forward(c.x.slice(r * c.in, (r + 1) * c.in), ...mlpArgs(c));
    close(row, y.subarray(r * c.out, (r + 1) * c.out), `row ${r}`);
  }
});

test('MLP bad arguments throw clear errors', { skip: skipNative }, () => {
  const c = native.mlp[0];
  const [i, h, o, w1, b1, w2, b2] = mlpArgs(c);
  throwsClear(() => rlx.mlp_forward('x', i, h, o, w1, b1, w2, b2), /mlp_forward/, /x must be a Float32Array or an Array of numbers/, /string/);
  throwsClear(() => rlx.mlp_forward(new Float64Array(12), i, h, o, w1, b1, w2, b2), /x must be/, /Float64Array/);
  throwsClear(() => rlx.mlp_forward(new Int32Array(12), i, h, o, w1, b1, w2, b2), /x must be/, /Int32Array/);
  throwsClear(() => rlx.mlp_forward(undefined, i, h, o, w1, b1, w2, b2), /x must be/, /undefined/);
  throwsClear(() => rlx.mlp_forward({ length: 12 }, i, h, o, w1, b1, w2, b2), /x must be/);
  throwsClear(() => rlx.mlp_forward([1, 2, 'a', 4], i, h, o, w1, b1, w2, b2), /x\[2\] is string/);
  throwsClear(() => rlx.mlp_forward([], i, h, o, w1, b1, w2, b2), /x is empty/);
  throwsClear(() => rlx.mlp_forward(c.x.slice(0, 5), i, h, o, w1, b1, w2, b2), /x has 5 values, not a multiple of in \(4\)/);
  throwsClear(() => rlx.mlp_forward(c.x, i, h, o, w1.slice(1), b1, w2, b2), /w1 has 19 values, expected 20/, /in \* hid/);
  throwsClear(() => rlx.mlp_forward(c.x, i, h, o, w1, [], w2, b2), /b1 is empty/);
  throwsClear(() => rlx.mlp_forward(c.x, i, h, o, w1, b1, w2, [0, 0, 0]), /b2 has 3 values, expected 2/);
  throwsClear(() => rlx.mlp_forward(c.x, 0, h, o, w1, b1, w2, b2), /in must be an integer >= 1/);
  throwsClear(() => rlx.mlp_forward(c.x, 1.5, h, o, w1, b1, w2, b2), /in must be an integer/);
  throwsClear(() => rlx.mlp_forward(c.x, i, NaN, o, w1, b1, w2, b2), /hid must be an integer/, /NaN/);
  throwsClear(() => rlx.mlp_forward(c.x, i, h, '2', w1, b1, w2, b2), /out must be an integer/);
  throwsClear(() => rlx.mlp_forward(c.x, i, h, -2, w1, b1, w2, b2), /out must be an integer/);
  throwsClear(() => rlx.mlp_loss(c.x, c.t.slice(1), i, h, o, w1, b1, w2, b2), /mlp_loss/, /t has 5 values, expected 6/);
  throwsClear(() => rlx.mlp_grads(c.x, null, i, h, o, w1, b1, w2, b2), /mlp_grads/, /t must be/, /null/);
  for (const lr of [NaN, Infinity, -Infinity, '0.1', undefined, null]) {
    throwsClear(() => rlx.mlp_train_step(c.x, c.t, i, h, o, w1, b1, w2, b2, lr), /mlp_train_step/, /lr must be a finite number/);
  }
  // Still usable after all of that.
  close(rlx.mlp_forward(c.x, ...mlpArgs(c)), c.y, 'forward after errors');
});

test('repeated MLP calls reuse the cached compiled sessions', { skip: skipNative }, () => {
  const c = native.mlp[1];
  const e = rt.exports;
  rlx.clear_cache();
  assert.equal(e.rlx_models_cache_size(), 0);
  rlx.mlp_grads(c.x, c.t, ...mlpArgs(c));
  assert.equal(e.rlx_models_cache_size(), 1);
  for (let k = 0; k < 50; k++) rlx.mlp_grads(c.x, c.t, ...mlpArgs(c));
  assert.equal(e.rlx_models_cache_size(), 1, 'the same shapes compiled again');
  rlx.mlp_forward(c.x, ...mlpArgs(c));
  assert.equal(e.rlx_models_cache_size(), 2, 'forward has its own session');
  rlx.mlp_forward(c.x.concat(c.x), ...mlpArgs(c));
  assert.equal(e.rlx_models_cache_size(), 3, 'another row count is another session');
  const bench = new rlx.VisionBench('mnist-cnn');
  const p = bench.init_params(1);
  const { x } = bench.synthetic_batch(1, 2);
  for (let k = 0; k < 5; k++) bench.forward_cpu(x, p);
  assert.equal(e.rlx_models_cache_size(), 4, 'vision forward: one session for (model, batch)');
});

// ---- the transformer -----------------------------------------------------------------------

const tcfg = (c) => [c.vocab, c.dim, c.n_layers, c.n_heads, c.head_dim, c.ffn, c.seed];

test('transformer logits equal the native library', { skip: skipNative }, () => {
  for (const c of native.transformer) {
    const tag = `transformer vocab ${c.vocab} dim ${c.dim} layers ${c.n_layers}`;
    const next = rlx.transformer_next_logits(c.tokens, ...tcfg(c));
    assert.ok(next instanceof Float32Array);
    close(next, c.next_logits, `${tag} next`);
    close(rlx.transformer_logits(new Float32Array(c.tokens), ...tcfg(c)), c.logits, `${tag} all positions`);
  }
});

test('transformer: deterministic, next = last row, causal', { skip }, () => {
  const cfg = [32, 32, 2, 4, 8, 64, 7];
  const tokens = [3, 1, 4, 1, 5];
  const a = rlx.transformer_next_logits(tokens, ...cfg);
  assert.deepEqual(Array.from(rlx.transformer_next_logits(tokens, ...cfg)), Array.from(a), 'not bit-identical');
  const all = rlx.transformer_logits(tokens, ...cfg);
  assert.equal(all.length, 5 * 32);
  close(all.subarray(4 * 32), a, 'last row');
  const changed = rlx.transformer_logits([3, 1, 4, 1, 9], ...cfg);
  close(changed.subarray(0, 4 * 32), all.subarray(0, 4 * 32), 'earlier positions after changing the last token', 1e-4);
  let maxDiff = 0;
  for (let i = 4 * 32; i < 5 * 32; i++) maxDiff = Math.max(maxDiff, Math.abs(changed[i] - all[i]));
  assert.ok(maxDiff > 1e-3, `the last row did not change (${maxDiff})`);
  const other = rlx.transformer_next_logits(tokens, 32, 32, 2, 4, 8, 64, 8);
  assert.notDeepEqual(Array.from(other), Array.from(a), 'the seed changes nothing');
  // A BigInt seed is the same seed.
  assert.deepEqual(Array.from(rlx.transformer_next_logits(tokens, 32, 32, 2, 4, 8, 64, 7n)), Array.from(a));
});

test('transformer bad arguments throw clear errors', { skip }, () => {
  const cfg = [32, 32, 2, 4, 8, 64, 7];
  const f = rlx.transformer_next_logits;
  throwsClear(() => f([], ...cfg), /transformer_next_logits/, /tokens is empty/);
  throwsClear(() => f([3, NaN], ...cfg), /tokens\[1\] is number NaN/, /integers in \[0, vocab = 32\)/);
  throwsClear(() => f([1.5], ...cfg), /tokens\[0\]/, /integers/);
  throwsClear(() => f([32], ...cfg), /tokens\[0\] is number 32/);
  throwsClear(() => f([-1], ...cfg), /tokens\[0\]/);
  throwsClear(() => f(['3'], ...cfg), /tokens\[0\] is string/);
  throwsClear(() => f(new Int32Array([1, 2]), ...cfg), /tokens must be a Float32Array or an Array of numbers/);
  throwsClear(() => f('abc', ...cfg), /tokens must be/);
  throwsClear(() => f([1], 32, 30, 2, 4, 8, 64, 7), /dim \(30\) must equal n_heads \* head_dim \(4 \* 8 = 32\)/);
  throwsClear(() => f([1], 32, 28, 2, 4, 7, 64, 7), /head_dim must be even/);
  throwsClear(() => f([1], 0, 32, 2, 4, 8, 64, 7), /vocab must be an integer >= 1/);
  throwsClear(() => f([1], 32, 32, -1, 4, 8, 64, 7), /n_layers must be an integer >= 0/);
  throwsClear(() => f([1], 32, 32, 2, 4, 8, 0, 7), /ffn must be an integer >= 1/);
  throwsClear(() => f([1], 32, 32, 2, 4, 8, 64, -1), /seed must be/);
  throwsClear(() => f([1], 32, 32, 2, 4, 8, 64, 1.5), /seed must be/);
  throwsClear(() => f([1], 32, 32, 2, 4, 8, 64, NaN), /seed must be/);
  throwsClear(() => f([1], 32, 32, 2, 4, 8, 64, 1n << 64n), /seed must be in \[0, 2\^64\)/);
  throwsClear(() => f([1], 32, 32, 2, 4, 8, 64), /seed must be/, /undefined/);
  throwsClear(() => f([1], 1 << 20, 4096, 2, 32, 128, 64, 7), /parameters/, /at most/);
  // A zero-layer model is allowed (embed, final norm, head).
  assert.equal(f([1, 2], 32, 32, 0, 4, 8, 64, 7).length, 32);
});

// ---- vision -------------------------------------------------------------------------------

const KNOWN = { 'mnist-cnn': 5258, 'mnist-mlp': 101770, 'cifar-cnn': 113738, resnet: 77578 };

test('list_vision_models and vision_model_info', { skip }, () => {
  assert.deepEqual(rlx.list_vision_models(), Object.keys(KNOWN));
  for (const slug of Object.keys(KNOWN)) {
    const info = rlx.vision_model_info(slug);
    assert.equal(info.slug, slug);
    assert.ok(info.title.length > 0);
    assert.equal(info.num_classes, 10);
    assert.equal(info.param_flat_len, KNOWN[slug]);
    assert.equal(info.param_sizes.reduce((a, b) => a + b, 0), info.param_flat_len);
    assert.equal(info.param_names.length, info.param_sizes.length);
    info.param_shapes.forEach((s, k) => assert.equal(s.reduce((a, b) => a * b, 1), info.param_sizes[k], `${slug} ${info.param_names[k]}`));
    assert.equal(info.input_dims.reduce((a, b) => a * b, 1), info.input_len);
    for (const k of ['cpu_train', 'webgpu_train', 'webgl_train']) assert.equal(typeof info[k], 'boolean');
    assert.equal(info.cpu_train, true);
  }
  assert.deepEqual(rlx.vision_model_info('mnist-mlp').input_dims, [784]);
  assert.deepEqual(rlx.vision_model_info('cifar-cnn').input_dims, [3, 32, 32]);
  assert.deepEqual(rlx.vision_model_info('mnist-cnn').param_names, ['conv1_w', 'conv1_b', 'conv2_w', 'conv2_b', 'fc_w', 'fc_b']);
  for (const [alias, slug] of [['mnist_cnn', 'mnist-cnn'], ['mnist_mlp', 'mnist-mlp'], ['cifar_cnn', 'cifar-cnn'], ['resnet-cifar', 'resnet']]) {
    assert.equal(rlx.vision_model_info(alias).slug, slug);
    assert.equal(new rlx.VisionBench(alias).slug, slug);
  }
  const info = rlx.vision_model_info('resnet');
  info.param_names.push('mutated');
  assert.notEqual(rlx.vision_model_info('resnet').param_names.at(-1), 'mutated', 'info is shared, not copied');
});

test('vision init, batch, forward and train step equal the native library', { skip: skipNative }, () => {
  for (const c of native.vision) {
    const bench = new rlx.VisionBench(c.slug);
    const params = bench.init_params(c.seed);
    assert.ok(params instanceof Float32Array);
    assert.equal(params.length, c.param_flat_len);
    close(every(params, c.stride), c.init_sample, `${c.slug} init_params`, 1e-7);
    const batch = bench.synthetic_batch(c.seed, c.batch);
    assert.ok(batch.x instanceof Float32Array && batch.labels instanceof Int32Array);
    close(every(batch.x, c.stride), c.x_sample, `${c.slug} synthetic x`, 1e-7);
    assert.deepEqual(Array.from(batch.labels), c.labels);
    const logits = bench.forward_cpu(batch.x, params);
    close(logits, c.logits, `${c.slug} forward`);
    const out = bench.train_step_cpu(batch.x, batch.labels, params, c.lr);
    assert.equal(out.length, 1 + c.param_flat_len);
    close([out[0]], [c.loss], `${c.slug} loss`);
    close(every(out.subarray(1), c.stride), c.updated_sample, `${c.slug} updated params`);
    // The loss is the mean cross-entropy of the forward logits.
    let ce = 0;
    for (let b = 0; b < c.batch; b++) {
      const row = Array.from(logits.subarray(10 * b, 10 * b + 10));
      const m = Math.max(...row);
      const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
      ce += lse - row[batch.labels[b]];
    }
    close([out[0]], [ce / c.batch], `${c.slug} loss vs cross-entropy of the logits`, 1e-5);
    bench.free();
  }
});

test('VisionBench: arrays accepted, bench_cpu lowers the loss, free', { skip }, () => {
  const bench = new rlx.VisionBench('mnist-cnn');
  const info = bench.info();
  assert.equal(info.slug, 'mnist-cnn');
  info.input_dims[0] = 99;
  assert.equal(bench.info().input_dims[0], 1, 'info() returns a copy');
  const params = bench.init_params(3);
  const { x, labels } = bench.synthetic_batch(3, 2);
  assert.equal(x.length, 2 * 784);
  for (const v of x) assert.ok(v >= -1 && v < 1);
  const a = bench.train_step_cpu(x, labels, params, 0.05);
  const b = bench.train_step_cpu(Array.from(x), Array.from(labels), Array.from(params), 0.05);
  const c = bench.train_step_cpu(x, Float32Array.from(labels), params, 0.05);
  assert.deepEqual(Array.from(b), Array.from(a));
  assert.deepEqual(Array.from(c), Array.from(a));
  assert.equal(bench.synthetic_batch(3).x.length, 784, 'batch defaults to 1');
  const [first, last, rate] = bench.bench_cpu(8, 5, 0.05, 4);
  assert.ok(Number.isFinite(first) && Number.isFinite(last), `${first} ${last}`);
  assert.ok(last < first, `bench_cpu: final loss ${last} not below initial ${first}`);
  assert.ok(rate > 0);
  assert.ok(bench.bench_cpu(1, 5, 0.05) instanceof Float32Array);
  // Several steps through train_step_cpu lower the loss too.
  let p = params;
  let loss0;
  let loss;
  for (let s = 0; s < 6; s++) {
    const out = bench.train_step_cpu(x, labels, p, 0.05);
    loss0 ??= out[0];
    loss = out[0];
    p = out.subarray(1);
  }
  assert.ok(loss < loss0, `${loss} !< ${loss0}`);
  bench.free();
  bench.free();
  throwsClear(() => bench.init_params(1), /freed/);
  throwsClear(() => bench.forward_cpu(x, params), /freed/);
});

test('vision bad arguments throw clear errors', { skip }, () => {
  throwsClear(() => rlx.vision_model_info('nope'), /unknown model 'nope'/, /mnist-cnn/, /resnet/);
  throwsClear(() => new rlx.VisionBench('vgg16'), /vgg16/, /mnist-cnn/);
  throwsClear(() => new rlx.VisionBench(3), /slug must be a string/);
  throwsClear(() => rlx.vision_model_info(undefined), /slug must be a string/);
  const bench = new rlx.VisionBench('mnist-cnn');
  const params = bench.init_params(1);
  const { x, labels } = bench.synthetic_batch(1, 2);
  throwsClear(() => bench.init_params(-1), /init_params/, /seed/);
  throwsClear(() => bench.init_params('1'), /seed/);
  throwsClear(() => bench.synthetic_batch(1, 0), /batch must be an integer in \[1, 65536\]/);
  throwsClear(() => bench.synthetic_batch(1, 2.5), /batch/);
  throwsClear(() => bench.forward_cpu(x.subarray(0, 783), params), /forward_cpu/, /x has 783 values, not a multiple of the input length of mnist-cnn \(784\)/);
  throwsClear(() => bench.forward_cpu(x, params.subarray(1)), /params has 5257 values, expected 5258/);
  throwsClear(() => bench.forward_cpu(x, 'params'), /params must be a Float32Array/);
  throwsClear(() => bench.forward_cpu(new Float64Array(784), params), /x must be/, /Float64Array/);
  throwsClear(() => bench.train_step_cpu(x, [1], params, 0.1), /labels has 1 values, expected 2/);
  throwsClear(() => bench.train_step_cpu(x, [1, 10], params, 0.1), /labels\[1\] is number 10; labels must be integers in \[0, 10\)/);
  throwsClear(() => bench.train_step_cpu(x, [1, -1], params, 0.1), /labels\[1\]/);
  throwsClear(() => bench.train_step_cpu(x, [1, 0.5], params, 0.1), /labels\[1\]/);
  throwsClear(() => bench.train_step_cpu(x, [1, NaN], params, 0.1), /labels\[1\] is number NaN/);
  throwsClear(() => bench.train_step_cpu(x, 'ab', params, 0.1), /labels must be an Int32Array/);
  throwsClear(() => bench.train_step_cpu(x, labels, params, NaN), /lr must be a finite number/);
  throwsClear(() => bench.train_step_cpu(x, labels, params), /lr must be a finite number/);
  throwsClear(() => bench.bench_cpu(0, 1, 0.1), /steps must be an integer/);
  throwsClear(() => bench.bench_cpu(2, 1, Infinity), /lr must be a finite number/);
  throwsClear(() => bench.bench_cpu(2, 1, 0.1, 0), /batch/);
  // Still usable.
  assert.equal(bench.forward_cpu(x, params).length, 20);
});

// ---- memory, workers ---------------------------------------------------------------------------

test('wasm memory stays flat over 1,000 rounds of every entry point (and errors)', { skip: skipNative }, () => {
  const c = native.mlp[0];
  const bench = new rlx.VisionBench('mnist-cnn');
  const params = bench.init_params(1);
  const { x, labels } = bench.synthetic_batch(1, 1);
  let size = 0;
  for (let i = 0; i < 1000; i++) {
    rlx.mlp_forward(c.x, ...mlpArgs(c));
    rlx.mlp_loss(c.x, c.t, ...mlpArgs(c));
    rlx.mlp_grads(c.x, c.t, ...mlpArgs(c));
    rlx.mlp_train_step(c.x, c.t, ...mlpArgs(c), 0.01);
    rlx.transformer_next_logits([1, 2, 3], 16, 8, 1, 2, 4, 16, i % 3);
    rlx.list_vision_models();
    rlx.vision_model_info('mnist-cnn');
    bench.forward_cpu(x, params);
    bench.train_step_cpu(x, labels, params, 0.01);
    if (i % 10 === 0) bench.synthetic_batch(i, 1);
    try { rlx.vision_model_info(`unknown-${i}`); } catch { /* expected */ }
    try { bench.train_step_cpu(x, labels, params, NaN); } catch { /* expected */ }
    if (i === 99) size = rt.memory.buffer.byteLength;
  }
  assert.equal(rt.memory.buffer.byteLength, size, 'memory grew between round 100 and 1000');
  bench.free();
});

test('rlx_web.js runs in a worker thread', { skip }, async () => {
  const moduleUrl = new URL('../../web/pkg/rlx_web.js', import.meta.url).href;
  const code = `import init, * as rlx from ${JSON.stringify(moduleUrl)};
    import { parentPort } from 'node:worker_threads';
    await init();
    const b = new rlx.VisionBench('mnist-mlp');
    const p = b.init_params(1);
    parentPort.postMessage({ models: rlx.list_vision_models(), logits: Array.from(b.forward_cpu(b.synthetic_batch(1).x, p)) });`;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`));
  const msg = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(msg.models.length, 4);
  const b = new rlx.VisionBench('mnist-mlp');
  assert.deepEqual(msg.logits, Array.from(b.forward_cpu(b.synthetic_batch(1).x, b.init_params(1))));
});

test('WebGraph is the one graph API: loader.js\'s Graph / Session / Rlx / loadRlx are not exported', { skip }, () => {
  for (const name of ['Graph', 'Session', 'Rlx', 'loadRlx']) assert.equal(name in rlx, false, `rlx_web.js exports ${name}`);
  const g = new rlx.WebGraph();
  assert.equal(g._rt, rlx.runtime(), 'WebGraph builds on the shared instance');
  const s = g.compile_forward(g.relu(g.input('x', [2])), 'cpu');
  g.free();
  s.feed('x', [-1, 2]);
  s.run();
  assert.deepEqual(Array.from(s.output(0)), [0, 2]);
  s.free();
});
