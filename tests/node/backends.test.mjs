// backends.test.mjs - backend selection of web/pkg/rlx_web.js
// (web/runtime/backends.js) with stubbed environments in Node:
// backend_candidates is pure and model-aware (best first, an explicit
// request gives one candidate or a refusal with the reason, 'auto' ends
// with 'cpu'); backend_environment reports each backend's reason (no
// navigator.gpu, no adapter, WebGPU not initialized, no WebGL2, turned off;
// WebGL2 needs no init call);
// select_backend compiles each candidate, falls back with the reason of
// every backend it did not use, and never runs an explicit request
// elsewhere.  Real GPUs: tests/node/webgraph_webgpu.test.mjs (Dawn) and
// tests/browser/describe.test.mjs (Chromium).
// Build first: make wasm
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import * as backends from '../../web/runtime/backends.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const rt = ready ? await init() : null;
const skip = !ready;

const ok = { available: true, reason: null };
const no = (reason) => ({ available: false, reason });
const ENV_ALL = { cpu: ok, webgpu: ok, webgl: ok };
const ENV_NO_GPU = { cpu: ok, webgpu: no('WebGPU is not available here (no navigator.gpu)'), webgl: ok };
const ENV_CPU = { cpu: ok, webgpu: no('stub: no webgpu'), webgl: no('stub: no webgl2') };

function deepFreeze(o) {
  for (const v of Object.values(o)) if (v && typeof v === 'object') deepFreeze(v);
  return Object.freeze(o);
}

function throwsClear(fn, ...patterns) {
  let err;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, `expected an error matching ${patterns.join(' ')}`);
  assert.ok(err instanceof rlx.RlxError, `not an RlxError: ${err}`);
  for (const p of patterns) assert.match(err.message, p);
  return err;
}

/** Runs fn with globalThis[name] replaced (or removed when value is undefined). */
async function withGlobal(name, value, fn) {
  const saved = Object.getOwnPropertyDescriptor(globalThis, name);
  if (value === undefined) delete globalThis[name];
  else Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  try {
    return await fn();
  } finally {
    if (saved) Object.defineProperty(globalThis, name, saved);
    else delete globalThis[name];
  }
}

after(async () => {
  if (!ready) return;
  await rlx.init_webgpu(false);
  await rlx.init_webgl(false);
});

test('backend_candidates: best first by environment; explicit requests give one candidate or a refusal', { skip }, () => {
  const all = rlx.backend_candidates('mnist-mlp', 'auto', { env: deepFreeze(structuredClone(ENV_ALL)) });
  assert.deepEqual(all, { request: 'auto', candidates: ['webgpu', 'webgl', 'cpu'], skipped: [], refusal: null });

  const noGpu = rlx.backend_candidates('mnist-mlp', undefined, { env: deepFreeze(structuredClone(ENV_NO_GPU)) });
  assert.deepEqual(noGpu.candidates, ['webgl', 'cpu'], "'auto' is the default");
  assert.deepEqual(noGpu.skipped, [{ backend: 'webgpu', reason: 'WebGPU is not available here (no navigator.gpu)' }]);

  const cpuOnly = rlx.backend_candidates('mnist-mlp', 'auto', { env: ENV_CPU });
  assert.deepEqual(cpuOnly.candidates, ['cpu']);
  assert.deepEqual(cpuOnly.skipped.map((s) => s.reason), ['stub: no webgpu', 'stub: no webgl2']);

  for (const [request, env, want] of [['webgl', ENV_ALL, 'webgl'], ['WebGL2', ENV_NO_GPU, 'webgl'], ['gpu', ENV_ALL, 'webgpu'],
    [' CPU ', ENV_CPU, 'cpu'], ['wasm', ENV_ALL, 'cpu']]) {
    const r = rlx.backend_candidates('mnist-cnn', request, { env });
    assert.deepEqual(r.candidates, [want], `${request}`);
    assert.equal(r.refusal, null);
    assert.equal(r.request, want);
  }
  const refused = rlx.backend_candidates('mnist-cnn', 'webgpu', { env: ENV_CPU });
  assert.deepEqual(refused.candidates, []);
  assert.equal(refused.refusal, 'webgpu was requested but cannot be used: stub: no webgpu');
  assert.equal(rlx.backend_candidates('resnet', 'gl', { env: ENV_CPU }).refusal, 'webgl was requested but cannot be used: stub: no webgl2');

  // 'auto' ends with the CPU even when a stub says it is not there.
  const noCpu = rlx.backend_candidates('mnist-mlp', 'auto', { env: { ...ENV_CPU, cpu: no('stub') } });
  assert.deepEqual(noCpu.candidates, ['cpu']);
  // Pure: the same answer every time, the environment untouched.
  const env = deepFreeze(structuredClone(ENV_NO_GPU));
  assert.deepEqual(rlx.backend_candidates('mnist-mlp', 'auto', { env }), rlx.backend_candidates('mnist-mlp', 'auto', { env }));

  throwsClear(() => rlx.backend_candidates('mnist-mlp', 'cuda'), /backend_candidates: request must be 'auto', 'cpu', 'webgpu' or 'webgl'/, /cuda/);
  throwsClear(() => rlx.backend_candidates('mnist-mlp', 3), /request must be/);
  throwsClear(() => rlx.backend_candidates(42), /model_or_graph must be a vision model slug/);
  throwsClear(() => rlx.backend_candidates('no-such-model'), /no-such-model/, /mnist-cnn/);
});

test('backend_candidates is model-aware: a model that cannot train on a backend skips it (for training only)', { skip }, () => {
  const info = rlx.vision_model_info('mnist-cnn');
  const noGl = { ...info, webgl_train: false };
  const r = rlx.backend_candidates(noGl, 'auto', { env: ENV_ALL });
  assert.deepEqual(r.candidates, ['webgpu', 'cpu']);
  assert.deepEqual(r.skipped, [{ backend: 'webgl', reason: 'mnist-cnn cannot train on WebGL2 in this build' }]);
  assert.deepEqual(rlx.backend_candidates(noGl, 'auto', { env: ENV_NO_GPU }).candidates, ['cpu'],
    'auto does not hand a conv model to WebGL on a browser without WebGPU');
  assert.deepEqual(rlx.backend_candidates(noGl, 'auto', { env: ENV_ALL, training: false }).candidates, ['webgpu', 'webgl', 'cpu'],
    'forward only: the training flags do not apply');
  assert.match(rlx.backend_candidates(noGl, 'webgl', { env: ENV_ALL }).refusal, /mnist-cnn cannot train on WebGL2/);
  const noGpu = { ...info, webgpu_train: false };
  assert.deepEqual(rlx.backend_candidates(noGpu, 'auto', { env: ENV_ALL }).candidates, ['webgl', 'cpu']);
  // The library's own flags for a slug, a VisionBench and a WebGraph (no flags).
  for (const slug of rlx.list_vision_models()) {
    const i = rlx.vision_model_info(slug);
    const want = ['webgpu', 'webgl', 'cpu'].filter((b) => i[`${b === 'webgpu' ? 'webgpu' : b === 'webgl' ? 'webgl' : 'cpu'}_train`]);
    assert.deepEqual(rlx.backend_candidates(slug, 'auto', { env: ENV_ALL }).candidates, want.includes('cpu') ? want : [...want, 'cpu']);
    assert.deepEqual(rlx.backend_candidates(new rlx.VisionBench(slug), 'auto', { env: ENV_ALL }).candidates,
      rlx.backend_candidates(slug, 'auto', { env: ENV_ALL }).candidates);
  }
  const g = new rlx.WebGraph();
  assert.deepEqual(rlx.backend_candidates(g, 'auto', { env: ENV_NO_GPU }).candidates, ['webgl', 'cpu']);
  g.free();
});

test('backend_environment in Node: reasons for each GPU backend, stubs of navigator.gpu and OffscreenCanvas', { skip }, async () => {
  const env = rlx.backend_environment();
  assert.deepEqual(env.cpu, ok);
  assert.deepEqual(env.webgpu, no('WebGPU is not available here (no navigator.gpu)'));
  assert.equal(env.webgl.available, false);
  assert.match(env.webgl.reason, /WebGL2|executor/);

  // navigator.gpu offered but not initialized; a GPU without an adapter; one whose adapter request throws.
  await withGlobal('navigator', { gpu: { requestAdapter: async () => null } }, async () => {
    assert.match(rlx.backend_environment().webgpu.reason, /offered here but not initialized: call `await init_webgpu\(\)`/);
    assert.equal(await rlx.init_webgpu(), false);
    assert.deepEqual(rlx.backend_environment().webgpu, no('WebGPU: no GPU adapter is available'));
  });
  assert.equal(await rlx.init_webgpu({ requestAdapter: async () => { throw new Error('adapter exploded'); } }), false);
  assert.match(rlx.backend_environment().webgpu.reason, /WebGPU could not be initialized: adapter exploded/);
  assert.equal(await rlx.init_webgpu(false), false);
  assert.deepEqual(rlx.backend_environment().webgpu, no('WebGPU was turned off (init_webgpu(false))'));
  assert.equal(rlx.preferred_backend(), 'cpu');

  // A WebGL2 context with float render targets (stub): the executor then decides.
  // WebGL2 initialises itself (a context is made synchronously): available
  // with no init_webgl() call; init_webgl() only checks it or turns it off.
  const stubGl = { getExtension: (name) => (name === 'EXT_color_buffer_float' ? {} : null) };
  class StubCanvas { getContext(kind) { return kind === 'webgl2' ? stubGl : null; } }
  await withGlobal('OffscreenCanvas', StubCanvas, async () => {
    assert.equal(backends.hasWebGL2Float(true), true);
    const gl = rlx.backend_environment({ refresh: true }).webgl;
    if (typeof rt.exports.rlx_webgl_plan !== 'function') {
      assert.match(gl.reason, /not in this build/);
    } else {
      assert.deepEqual(gl, ok, 'available before any init_webgl()');
      assert.ok(backends.webglRuntime(rt)?.canvas instanceof StubCanvas, 'the shared canvas is made on first use');
      assert.equal(await rlx.init_webgl(), true, 'init_webgl() checks it');
      assert.deepEqual(rlx.backend_environment().webgl, ok);
      // Compiling for it: the stub context cannot run plans, so 'auto' falls back to the CPU with a reason.
      const g = new rlx.WebGraph();
      const x = g.input('x', [3]);
      const c = g.compile_forward(g.relu(x), 'auto');
      assert.equal(c.backend, 'cpu');
      assert.deepEqual(c.fallbacks.map((f) => f.backend), ['webgpu', 'webgl']);
      assert.equal(c.fallbacks[0].reason, 'WebGPU was turned off (init_webgpu(false))');
      assert.ok(c.fallbacks[1].reason.length > 10);
      c.free();
      g.free();
      assert.equal(await rlx.init_webgl(false), false);
      assert.deepEqual(rlx.backend_environment().webgl, no('WebGL2 was turned off (init_webgl(false))'));
      assert.equal(await rlx.init_webgl(), true);
      await rlx.init_webgl(false);
    }
  });
  assert.equal(backends.hasWebGL2Float(true), false, 'no OffscreenCanvas, no document: no WebGL2');
  // A wasm module without the plan exports (an older or trimmed build).
  const bare = { exports: {} };
  assert.deepEqual(backends.environment(bare).webgpu, no('this rlx_web.wasm has no WebGPU plan exports'));
  assert.match(backends.environment(bare).webgl.reason, /not in this build yet/);
  assert.equal(await backends.initWebGpu(bare, true), false);
  assert.equal(await backends.initWebGl(bare, true), false);
});

test('select_backend compiles each candidate: falls back with reasons, never runs an explicit request elsewhere', { skip }, () => {
  // A stub that claims every GPU is there: compiling for them fails (no device,
  // no executor here), and 'auto' says why it ended on the CPU.
  for (const slug of rlx.list_vision_models()) {
    const info = rlx.vision_model_info(slug);
    const sel = rlx.select_backend(slug, 'auto', { env: ENV_ALL, batch: 2 });
    assert.equal(sel.backend, 'cpu');
    assert.deepEqual(sel.candidates, ['webgpu', 'webgl', 'cpu']);
    assert.deepEqual(sel.fallbacks.map((f) => f.backend), ['webgpu', 'webgl']);
    for (const f of sel.fallbacks) assert.ok(f.reason.length > 10, f.reason);
    assert.deepEqual(sel.compiled.output_sizes(), [1, ...info.param_sizes], `${slug}: [loss, grads]`);
    assert.equal(sel.compiled.backend, 'cpu');
    assert.equal(sel.compiled.kind, 'backward');
    assert.deepEqual(sel.compiled.fallbacks, sel.fallbacks);
    sel.compiled.free();
    const fwd = rlx.select_backend(slug, 'cpu', { training: false, batch: 3 });
    assert.deepEqual(fwd.compiled.output_sizes(), [30]);
    assert.deepEqual(fwd.fallbacks, []);
    fwd.compiled.free();
  }
  throwsClear(() => rlx.select_backend('mnist-mlp', 'webgpu', { env: ENV_ALL }),
    /select_backend: webgpu was requested but cannot be used: /);
  throwsClear(() => rlx.select_backend('mnist-mlp', 'webgl'), /select_backend: webgl was requested but cannot be used: /);
  const err = throwsClear(() => rlx.select_backend('mnist-mlp', 'webgpu'), /no navigator\.gpu|turned off/);
  assert.equal(err.statusName, 'unsupported');

  // A WebGraph: forward (outputs) or backward (loss, params).
  const g = new rlx.WebGraph();
  const x = g.input('x', [2, 3]);
  const w = g.param('w', [3, 2]);
  const y = g.matmul(x, w);
  const f = rlx.select_backend(g, 'auto', { outputs: y });
  assert.equal(f.backend, 'cpu');
  assert.deepEqual(f.compiled.output_sizes(), [4]);
  f.compiled.free();
  const b = rlx.select_backend(g, 'auto', { loss: g.reduce_sum(y), params: [w] });
  assert.deepEqual(b.compiled.output_sizes(), [1, 6]);
  b.compiled.free();
  throwsClear(() => rlx.select_backend(g, 'auto'), /give options.outputs \(forward\) or options.loss/);
  // The graph's own errors come back as they are, not as "cannot be used".
  const bad = g.input('bad', [5]);
  throwsClear(() => rlx.select_backend(g, 'auto', { loss: bad, params: [w] }), /gradient|reach|w/);
  g.free();
});
