// webgraph_webgpu.test.mjs - WebGraph and select_backend on a real WebGPU
// device in Node (Dawn, npm `webgpu`; SwiftShader on CPU machines): after
// init_webgpu(gpu) the webgpu backend is available; a graph whose ops have
// WebGPU kernels compiles for 'webgpu' and for 'auto' (which picks it on a
// hardware adapter; on SwiftShader 'auto' takes the CPU and says why, and
// select_backend with the adapter counted as hardware picks WebGPU), run()
// returns a Promise and the outputs, gradients and params read back equal
// the CPU's within 1e-4 (1 + |cpu|); a graph with an op WebGPU refuses (the
// fused ops, by design) is refused with the library's reason on an explicit
// request and falls back to the CPU on 'auto'; the classifier of the worked
// examples and the vision models either run on WebGPU with the CPU's
// numbers or fall back with the reason (whichever the lowerings in this
// build allow), reported as diagnostics.
// Build first: make wasm sdk.  The Vulkan environment Dawn needs is added by
// re-running this file (as tests/node/webgpu_ops.test.mjs does).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dawnEnv, loadDawnGpu, rerunTestFileWithDawn } from '../../tools/dawn_node.mjs';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
const needsEnv = Object.keys(dawnEnv()).length > 0 && !process.env.RLX_DAWN_REEXEC;
const TOL = 1e-4;
const RUN_ON_GPU = ['mnist-mlp', 'mnist-cnn']; // vision models whose training step is run, when they compile for WebGPU

function close(got, want, what, tol = TOL) {
  assert.equal(got.length, want.length, `${what}: length ${got.length} != ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tol * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: webgpu ${got[i]} != cpu ${want[i]}, |diff| ${d}`);
  }
}

function values(n, seed = 1) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s >>> 8) / 8388608 - 1;
  });
}

if (!ready) {
  test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
} else if (needsEnv) {
  test('WebGraph on WebGPU (re-run with the Dawn environment)', { timeout: 600_000 }, (t) => {
    const r = rerunTestFileWithDawn(t, import.meta.url);
    assert.equal(r.status, 0, `webgpu WebGraph tests failed:\n${r.out.slice(-8000)}`);
  });
} else {
  const { default: init, ...rlx } = await import('../../web/pkg/rlx_web.js');
  await init();
  let gpu;
  try {
    gpu = await loadDawnGpu();
  } catch (err) {
    gpu = err;
  }
  const usable = !(gpu instanceof Error) && await rlx.init_webgpu(gpu);
  // On a CPU machine Dawn runs on SwiftShader: 'auto' ranks it below the CPU.
  const software = usable ? (rlx.backend_environment().webgpu.software ?? null) : null;
  const SOFT_REASON = `a software adapter (${software}); the wasm CPU path is faster`;
  /** This environment with the adapter counted as hardware: how 'auto' ranks WebGPU on a real GPU. */
  const HW_ENV = () => {
    const env = rlx.backend_environment();
    return { ...env, webgpu: { available: env.webgpu.available, reason: env.webgpu.reason } };
  };
  test('init_webgpu: Dawn gives a device, the webgpu backend is available', (t) => {
    assert.ok(!(gpu instanceof Error), gpu?.message);
    assert.equal(usable, true, rlx.backend_environment().webgpu.reason ?? '');
    const env = rlx.backend_environment().webgpu;
    t.diagnostic(`adapter: ${software ? `software (${software})` : 'hardware'}`);
    assert.deepEqual(env, software ? { available: true, reason: null, software } : { available: true, reason: null });
    const first = rlx.backend_candidates('mnist-mlp').candidates[0];
    assert.equal(first, software ? 'cpu' : 'webgpu');
    assert.equal(rlx.backend_candidates('mnist-mlp', 'auto', { env: HW_ENV() }).candidates[0], 'webgpu');
  });

  /** y = relu(x * p + q), loss = mean(y): elementwise ops and a reduction. */
  function small() {
    const g = new rlx.WebGraph();
    const x = g.input('x', [4, 6]);
    const p = g.param('p', [6]);
    const q = g.param('q', [4, 1]);
    const y = g.relu(g.add(g.mul(x, p), q));
    return { g, x, p, q, y, loss: g.reduce_mean(y) };
  }
  const xs = values(24, 3), ps = values(6, 4), qs = values(4, 5);

  test('a graph with WebGPU kernels runs on WebGPU: forward, backward, params, Promises; equal to the CPU', { skip: !usable }, async () => {
    const { g, y, loss, p, q } = small();
    const onCpu = g.compile_forward([y, loss], 'cpu');
    const onGpu = g.compile_forward([y, loss], 'webgpu');
    const auto = g.compile_forward([y, loss], 'auto');
    assert.equal(onGpu.backend, 'webgpu');
    if (software) {
      assert.equal(auto.backend, 'cpu', 'a software adapter ranks below the CPU');
      assert.deepEqual(auto.fallbacks[0], { backend: 'webgpu', reason: SOFT_REASON });
      const hw = rlx.select_backend(g, 'auto', { env: HW_ENV(), outputs: [y, loss] });
      assert.equal(hw.backend, 'webgpu', `auto on a hardware adapter: ${JSON.stringify(hw.fallbacks)}`);
      assert.deepEqual(hw.fallbacks, []);
      hw.compiled.free();
    } else {
      assert.equal(auto.backend, 'webgpu', `auto: ${JSON.stringify(auto.fallbacks)}`);
      assert.deepEqual(auto.fallbacks, [], 'WebGPU is the best: nothing fell back');
    }
    assert.throws(() => onGpu.output(0), /has not run yet/);
    for (const c of [onCpu, onGpu, auto]) {
      c.feed('x', xs);
      c.feed('p', ps);
      c.feed('q', qs);
    }
    onCpu.run();
    const pending = onGpu.run();
    assert.ok(pending instanceof Promise, 'run() is a Promise on webgpu');
    await pending;
    await auto.run();
    close(onGpu.output(0), onCpu.output(0), 'y');
    close(onGpu.output(1), onCpu.output(1), 'loss');
    close(auto.output(0), onCpu.output(0), 'y (auto)');
    assert.deepEqual(onGpu.output_sizes(), [24, 1]);
    assert.deepEqual(onGpu.output_shape(0), [4, 6]);
    // Feeding after the first run goes to the GPU.
    const ps2 = values(6, 9);
    onCpu.feed('p', ps2);
    onGpu.feed('p', ps2);
    onCpu.run();
    await onGpu.run();
    close(onGpu.output(0), onCpu.output(0), 'y after feeding p again');
    const readBack = onGpu.read_param('p');
    assert.ok(readBack instanceof Promise);
    close(await readBack, ps2, 'read_param');

    const bCpu = g.compile_backward(loss, [p, q], 'cpu');
    const bGpu = g.compile_backward(loss, [p, q], 'webgpu');
    for (const c of [bCpu, bGpu]) {
      c.feed('x', xs);
      c.feed('p', ps);
      c.feed('q', qs);
    }
    bCpu.run();
    await bGpu.run();
    for (let i = 0; i < 3; i++) close(bGpu.output(i), bCpu.output(i), `backward output ${i}`);
    for (const c of [onCpu, onGpu, auto, bCpu, bGpu]) c.free();
    onGpu.free(); // harmless
    g.free();
  });

  test('an op WebGPU refuses: an explicit request is refused with the reason, auto falls back to the CPU', { skip: !usable }, () => {
    const g = new rlx.WebGraph();
    const a = g.input('a', [2, 3]);
    const b = g.param('b', [3, 2]);
    const y = g.op('fused_matmul', [a, b], { ints: [0, 0, 1, 0, 0] }); // relu(a b), refused by WebGPU by design
    assert.throws(() => g.compile_forward(y, 'webgpu'), (err) => {
      assert.equal(err.statusName, 'unsupported');
      assert.match(err.message, /WebGraph\.compile_forward: webgpu was requested but cannot be used: .*fused_matmul/);
      return true;
    });
    const c = rlx.select_backend(g, 'auto', { env: HW_ENV(), outputs: y }); // counted as hardware: WebGPU is tried
    assert.equal(c.backend, 'cpu');
    assert.equal(c.fallbacks[0].backend, 'webgpu');
    assert.match(c.fallbacks[0].reason, /fused_matmul/);
    c.compiled.free();
    const d = g.compile_forward(y, 'auto');
    assert.equal(d.backend, 'cpu');
    assert.equal(d.fallbacks[0].backend, 'webgpu');
    assert.match(d.fallbacks[0].reason, software ? /software adapter/ : /fused_matmul/);
    d.free();
    g.free();
  });

  test('the classifier and the vision models: WebGPU with the CPU numbers, or a fallback with the reason', { skip: !usable, timeout: 300_000 }, async (t) => {
    const g = new rlx.WebGraph();
    const x = g.input('x', [8, 784]);
    const labels = g.input('labels', [8], 'i32');
    const w1 = g.param('w1', [784, 128]), b1 = g.param('b1', [128]);
    const w2 = g.param('w2', [128, 10]), b2 = g.param('b2', [10]);
    const logits = g.add(g.matmul(g.relu(g.add(g.matmul(x, w1), b1)), w2), b2);
    const loss = g.reduce_mean(g.softmax_cross_entropy(logits, labels));
    const auto = rlx.select_backend(g, 'auto', { env: HW_ENV(), loss, params: [w1, b1, w2, b2] }).compiled;
    const cpu = g.compile_backward(loss, [w1, b1, w2, b2], 'cpu');
    t.diagnostic(`classifier on auto: ${auto.backend}${auto.fallbacks.map((f) => `; not ${f.backend}: ${f.reason}`).join('')}`);
    for (const c of [auto, cpu]) {
      c.feed('x', values(8 * 784, 11));
      c.feed('labels', Int32Array.from({ length: 8 }, (_, i) => i));
      c.feed('w1', values(784 * 128, 12).map((v) => v * 0.05));
      c.feed('w2', values(128 * 10, 13).map((v) => v * 0.05));
    }
    cpu.run();
    let t0 = performance.now();
    await auto.run();
    t.diagnostic(`classifier: first ${auto.backend} run ${(performance.now() - t0).toFixed(0)} ms`);
    t0 = performance.now();
    await auto.run();
    t.diagnostic(`classifier: second ${auto.backend} run ${(performance.now() - t0).toFixed(0)} ms`);
    if (auto.backend === 'webgpu') {
      for (let i = 0; i < 5; i++) close(auto.output(i), cpu.output(i), `classifier output ${i}`, 1e-3);
    } else {
      assert.equal(auto.fallbacks[0]?.backend, 'webgpu');
      assert.ok(auto.fallbacks[0].reason.length > 10);
      close(auto.output(0), cpu.output(0), 'classifier loss', 1e-6);
    }
    auto.free();
    cpu.free();
    g.free();

    for (const slug of rlx.list_vision_models()) {
      const sel = rlx.select_backend(slug, 'auto', { batch: 2, env: HW_ENV() }); // what a hardware adapter would run
      t.diagnostic(`${slug} training on auto: ${sel.backend}${sel.fallbacks.map((f) => `; not ${f.backend}: ${f.reason}`).join('')}`);
      if (sel.backend !== 'webgpu' || !RUN_ON_GPU.includes(slug)) { // the bigger ones: selection only (SwiftShader is slow)
        if (sel.backend !== 'webgpu') assert.equal(sel.fallbacks[0].backend, 'webgpu');
        sel.compiled.free();
        continue;
      }
      const bench = new rlx.VisionBench(slug);
      const info = bench.info();
      const flat = bench.init_params(3);
      const batch = bench.synthetic_batch(3, 2);
      let at = 0;
      info.param_names.forEach((name, k) => { sel.compiled.feed(name, flat.subarray(at, at + info.param_sizes[k])); at += info.param_sizes[k]; });
      sel.compiled.feed('x', batch.x);
      sel.compiled.feed('labels', batch.labels);
      await sel.compiled.run();
      close(sel.compiled.output(0), [bench.train_step_cpu(batch.x, batch.labels, flat, 0.01)[0]], `${slug} loss`, 1e-3);
      sel.compiled.free();
    }
  });
}
