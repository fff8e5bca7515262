// web_api_webgpu.test.mjs - the GPU entry points of web/pkg/rlx_web.js in
// Node on a real WebGPU device (Dawn, npm `webgpu`; SwiftShader on CPU
// machines): mlp_forward_gpu / mlp_grads_gpu and VisionBench.forward_webgpu
// / train_step_webgpu / bench_webgpu give the CPU variants' numbers within
// 1e-4 (relative), overlapping calls on one cached graph do not mix their
// data, bad arguments get the CPU variants' messages, and every way the GPU
// can be missing (init_webgpu not called, WebGL2 absent in Node, a limit the
// plan exceeds, a lost device) is an Error saying why.  Also: the
// webgpu_train / webgl_train flags of vision_model_info agree with what the
// library compiles (a training step with no host steps on that device).
// Build first: make wasm sdk.  The Vulkan environment Dawn needs is added by
// re-running this file (as tests/node/webgraph_webgpu.test.mjs does).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dawnEnv, loadDawnGpu, rerunTestFileWithDawn } from '../../tools/dawn_node.mjs';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
const needsEnv = Object.keys(dawnEnv()).length > 0 && !process.env.RLX_DAWN_REEXEC;
const TOL = 1e-4;

function close(got, want, what, tol = TOL) {
  assert.equal(got.length, want.length, `${what}: length ${got.length} != ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= tol * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: webgpu ${got[i]} != cpu ${want[i]}, |diff| ${d}`);
  }
}

function values(n, seed = 1, scale = 1) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return scale * ((s >>> 8) / 8388608 - 1);
  });
}

/** An MLP problem: [x, t, in, hid, out, w1, b1, w2, b2]. */
function mlpCase(rows, i, h, o, seed) {
  return [values(rows * i, seed), values(rows * o, seed + 1), i, h, o, values(i * h, seed + 2, 0.5),
    values(h, seed + 3, 0.1), values(h * o, seed + 4, 0.5), values(o, seed + 5, 0.1)];
}

/** The message of what fn() throws or rejects with. */
async function messageOf(fn) {
  try {
    await fn();
  } catch (err) {
    return err.message;
  }
  return assert.fail('it did not fail');
}

if (!ready) {
  test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
} else if (needsEnv) {
  test('rlx_web.js GPU entry points on WebGPU (re-run with the Dawn environment)', { timeout: 600_000 }, (t) => {
    const r = rerunTestFileWithDawn(t, import.meta.url);
    assert.equal(r.status, 0, `GPU entry point tests failed:\n${r.out.slice(-8000)}`);
  });
} else {
  const { default: init, ...rlx } = await import('../../web/pkg/rlx_web.js');
  const backends = await import('../../web/runtime/backends.js');
  // The live instance's internal binding (loader.js's Rlx / Graph / Session), not exported by rlx_web.js.
  const { runtime } = await import('../../web/runtime/instance.js');
  await init();
  const mlp = mlpCase(3, 4, 5, 2, 10);

  test('before init_webgpu: a clear Error telling to call it; WebGL2 (no init call needed) absent in Node: why', async () => {
    const bench = new rlx.VisionBench('mnist-mlp');
    const p = bench.init_params(1);
    const { x, labels } = bench.synthetic_batch(1, 1);
    for (const call of [() => rlx.mlp_forward_gpu(...mlp.slice(0, 1), ...mlp.slice(2)), () => rlx.mlp_grads_gpu(...mlp),
      () => bench.forward_webgpu(x, p), () => bench.train_step_webgpu(x, labels, p, 0.1), () => bench.bench_webgpu(1, 1, 0.1)]) {
      await assert.rejects(call, (err) => {
        assert.equal(err.name, 'RlxError');
        assert.match(err.message, /^(mlp_\w+_gpu|VisionBench\.\w+_webgpu): WebGPU is not initialized: call `await init_webgpu\(\)` first/);
        return true;
      });
    }
    // WebGL2 needs no init call (it initialises itself on first use): in Node it is unavailable, and says why.
    assert.throws(() => rlx.mlp_forward_webgl(mlp[0], ...mlp.slice(2)), (err) => err.reason === 'unavailable' &&
      /^mlp_forward_webgl: WebGL2 cannot run here: WebGL2 with EXT_color_buffer_float is not available here/.test(err.message));
    assert.equal(await rlx.init_webgl(), false, 'Node has no WebGL2');
    for (const call of [() => rlx.mlp_forward_webgl(mlp[0], ...mlp.slice(2)), () => rlx.mlp_grads_webgl(...mlp), () => bench.forward_webgl(x, p), () => bench.train_step_webgl(x, labels, p, 0.1),
      () => bench.bench_webgl(1, 1, 0.1)]) {
      assert.throws(call, /: WebGL2 cannot run here: WebGL2 with EXT_color_buffer_float is not available here/);
    }
    bench.free();
  });

  test('vision_model_info: webgpu_train / webgl_train say whether the training step compiles with no host steps', () => {
    const rt = runtime();
    for (const slug of rlx.list_vision_models()) {
      const info = rlx.vision_model_info(slug);
      for (const [device, flag] of [['webgpu', 'webgpu_train'], ['webgl', 'webgl_train']]) {
        const g = rt.graph();
        let trains = false;
        try {
          const [, loss] = rt.scoped((t) => {
            const out = t.bytes(8);
            rt.check(rt.exports.rlx_vision_build(g.ptr, t.str(slug), 2, out));
            return Array.from(rt.readI32(out, 2));
          });
          const params = info.param_names.map((n) => rt.scoped((t) => rt.exports.rlx_graph_find(g.ptr, t.str(n))));
          const s = g.compileTrain(loss, params, { kind: 'sgd', lr: 0.1 }, { device });
          trains = rt.exports.rlx_session_requires_host_execution(s.ptr) === 0;
          s.free();
        } catch {
          trains = false;
        } finally {
          g.free();
        }
        assert.equal(info[flag], trains, `${slug}: ${flag} is ${info[flag]} but the ${device} training step ${trains ? 'compiles' : 'does not compile'} without host steps`);
      }
    }
  });

  test('WebGraph.compile_train on the CPU: the SGD step of train_step_cpu, set_lr, clear errors', () => {
    const bench = new rlx.VisionBench('mnist-mlp');
    const info = bench.info();
    const p = bench.init_params(4);
    const { x, labels } = bench.synthetic_batch(4, 2);
    const g = new rlx.WebGraph();
    const m = g.add_vision('mnist-mlp', 2);
    const c = g.compile_train(m.loss, m.params, { kind: 'sgd', lr: 1 }, 'cpu');
    g.free();
    assert.equal(c.kind, 'train');
    let at = 0;
    info.param_names.forEach((name, k) => { c.feed(name, p.subarray(at, at + info.param_sizes[k])); at += info.param_sizes[k]; });
    c.feed('x', x);
    c.feed('labels', labels);
    c.set_lr(0.05);
    c.run();
    const want = bench.train_step_cpu(x, labels, p, 0.05);
    const got = Float32Array.of(c.output(0)[0], ...info.param_names.flatMap((name) => Array.from(c.read_param(name))));
    close(got, want, 'compile_train step', 1e-6);
    assert.throws(() => c.set_lr(NaN), /CompiledGraph\.set_lr: lr must be a finite number/);
    c.free();
    const g2 = new rlx.WebGraph();
    const w = g2.param('w', [2]);
    const loss = g2.reduce_sum(g2.mul(w, w));
    assert.throws(() => g2.compile_train(loss, [w], { kind: 'rmsprop' }), /WebGraph\.compile_train: optimizer\.kind must be one of sgd, momentum, adam, adamw/);
    assert.throws(() => g2.compile_train(loss, [w], { lr: 'x' }), /optimizer\.lr must be a finite number/);
    const fwd = g2.compile_forward(loss);
    assert.throws(() => fwd.set_lr(0.1), /only a graph from compile_train has a learning rate/);
    fwd.free();
    g2.free();
    bench.free();
  });

  let gpu;
  try {
    gpu = await loadDawnGpu();
  } catch (err) {
    gpu = err;
  }
  const usable = !(gpu instanceof Error) && await rlx.init_webgpu(gpu);
  test('init_webgpu: Dawn gives a device', () => {
    assert.ok(!(gpu instanceof Error), gpu?.message);
    assert.equal(usable, true, rlx.backend_environment().webgpu.reason ?? '');
  });

  test('mlp_forward_gpu / mlp_grads_gpu equal the CPU; cached graphs take new weights; overlapping calls stay apart', { skip: !usable, timeout: 120_000 }, async () => {
    const [x, t, ...rest] = mlp;
    const y = rlx.mlp_forward_gpu(x, ...rest);
    assert.ok(y instanceof Promise, 'mlp_forward_gpu returns a Promise');
    close(await y, rlx.mlp_forward(x, ...rest), 'mlp_forward_gpu');
    close(await rlx.mlp_grads_gpu(x, t, ...rest), rlx.mlp_grads(x, t, ...rest), 'mlp_grads_gpu');
    // Another shape: its own cached graph.
    const [x2, , ...rest2] = mlpCase(7, 3, 9, 4, 20);
    close(await rlx.mlp_forward_gpu(x2, ...rest2), rlx.mlp_forward(x2, ...rest2), 'mlp_forward_gpu, another shape');
    // Same shapes, new weights and inputs: the cached graphs must use them.
    const other = mlpCase(3, 4, 5, 2, 40);
    close(await rlx.mlp_grads_gpu(...other), rlx.mlp_grads(...other), 'mlp_grads_gpu, new weights');
    // Arrays work like Float32Arrays.
    const asArrays = other.map((v) => (typeof v === 'number' ? v : Array.from(v)));
    close(await rlx.mlp_forward_gpu(asArrays[0], ...asArrays.slice(2)), rlx.mlp_forward(other[0], ...other.slice(2)), 'Arrays');
    // Overlapping calls on one cached graph: each gets its own answer.
    const cases = [50, 60, 70].map((s) => mlpCase(3, 4, 5, 2, s));
    const got = await Promise.all(cases.map((c) => rlx.mlp_grads_gpu(...c)));
    got.forEach((g, k) => close(g, rlx.mlp_grads(...cases[k]), `overlapping call ${k}`));
  });

  test('mlp_*_gpu: bad arguments reject with the CPU variants\' messages', { skip: !usable }, async () => {
    const [x, t, i, h, o, w1, b1, w2, b2] = mlp;
    const bad = [
      [[x, i, h, o, w1.subarray(1), b1, w2, b2], [x, t, i, h, o, w1.subarray(1), b1, w2, b2]],
      [[x.subarray(1), i, h, o, w1, b1, w2, b2], [x.subarray(1), t, i, h, o, w1, b1, w2, b2]],
      [[x, 0, h, o, w1, b1, w2, b2], [x, t, 0, h, o, w1, b1, w2, b2]],
      [['x', i, h, o, w1, b1, w2, b2], [x, [1, 'a'], i, h, o, w1, b1, w2, b2]],
      [[x, i, h, o, w1, b1, w2, new Float32Array(0)], [x, t.subarray(1), i, h, o, w1, b1, w2, b2]],
    ];
    for (const [fwd, grads] of bad) {
      const want = await messageOf(() => rlx.mlp_forward(...fwd));
      assert.equal(await messageOf(() => rlx.mlp_forward_gpu(...fwd)), want.replace(/^mlp_forward/, 'mlp_forward_gpu'));
      const wantG = await messageOf(() => rlx.mlp_grads(...grads));
      assert.equal(await messageOf(() => rlx.mlp_grads_gpu(...grads)), wantG.replace(/^mlp_grads/, 'mlp_grads_gpu'));
    }
  });

  test('VisionBench on WebGPU: forward, SGD step and bench equal the CPU (mnist-mlp, mnist-cnn)', { skip: !usable, timeout: 240_000 }, async (t) => {
    for (const [slug, batch, steps] of [['mnist-mlp', 3, 2], ['mnist-cnn', 2, 1]]) {
      const bench = new rlx.VisionBench(slug);
      const p = bench.init_params(7);
      const { x, labels } = bench.synthetic_batch(7, batch);
      let t0 = performance.now();
      const logits = bench.forward_webgpu(x, p);
      assert.ok(logits instanceof Promise);
      close(await logits, bench.forward_cpu(x, p), `${slug} forward_webgpu`);
      t.diagnostic(`${slug}: first forward_webgpu ${(performance.now() - t0).toFixed(0)} ms`);
      // SGD steps, each from the last one's params: the update happens on the device as on the CPU.
      let onGpu = p;
      let onCpu = p;
      for (let step = 0; step < steps; step++) {
        t0 = performance.now();
        const g = await bench.train_step_webgpu(x, labels, onGpu, 0.05);
        if (!step) t.diagnostic(`${slug}: first train_step_webgpu ${(performance.now() - t0).toFixed(0)} ms`);
        const c = bench.train_step_cpu(x, labels, onCpu, 0.05);
        assert.equal(g.length, 1 + bench.info().param_flat_len);
        close(g, c, `${slug} train_step_webgpu step ${step}`);
        onGpu = g.subarray(1);
        onCpu = c.subarray(1);
      }
      assert.ok(onGpu.some((v, k) => v !== p[k]), 'the params changed');
      // the gradients alone (the cluster's buckets): [loss, dL/dp...] as on the CPU
      const grads = await bench.grads_webgpu(x, labels, p);
      const cpuGrads = bench.grads_cpu(x, labels, p);
      assert.equal(grads.length, 1 + bench.info().param_flat_len);
      assert.ok(cpuGrads.subarray(1).some((v) => v !== 0), 'a zero gradient proves nothing');
      close(grads, cpuGrads, `${slug} grads_webgpu`);
      const [first, last, rate] = await bench.bench_webgpu(2, 5, 0.05, batch);
      const [cFirst, cLast] = bench.bench_cpu(2, 5, 0.05, batch);
      close([first, last], [cFirst, cLast], `${slug} bench_webgpu losses`);
      assert.ok(last < first, `${slug}: the loss did not fall on WebGPU: ${first} -> ${last}`);
      assert.ok(rate > 0 && Number.isFinite(rate));
      t.diagnostic(`${slug} batch ${batch}: bench_webgpu ${rate.toFixed(2)} steps/s (params on the device)`);
      bench.free();
      await assert.rejects(() => bench.forward_webgpu(x, p), /VisionBench\.forward_webgpu: this VisionBench \(.*\) was freed/);
    }
  });

  test('VisionBench on WebGPU: cifar-cnn and resnet forward equal the CPU', { skip: !usable, timeout: 240_000 }, async () => {
    for (const slug of ['cifar-cnn', 'resnet']) {
      const bench = new rlx.VisionBench(slug);
      const p = bench.init_params(9);
      const { x } = bench.synthetic_batch(9, 1);
      close(await bench.forward_webgpu(x, p), bench.forward_cpu(x, p), `${slug} forward_webgpu`);
      bench.free();
    }
  });

  test('VisionBench on WebGPU: bad arguments reject with the CPU variants\' messages', { skip: !usable }, async () => {
    const bench = new rlx.VisionBench('mnist-cnn');
    const p = bench.init_params(1);
    const { x, labels } = bench.synthetic_batch(1, 2);
    const cases = [
      ['forward', [x.subarray(1), p]],
      ['forward', [x, p.subarray(1)]],
      ['forward', [new Int8Array(4), p]],
      ['train_step', [x, Int32Array.of(0, 10), p, 0.1]],
      ['train_step', [x, Int32Array.of(0), p, 0.1]],
      ['train_step', [x, labels, p, NaN]],
      ['bench', [0, 1, 0.1]],
      ['bench', [1, -1, 0.1]],
    ];
    for (const [name, args] of cases) {
      const want = await messageOf(() => bench[`${name}_cpu`](...args));
      const got = await messageOf(() => bench[`${name}_webgpu`](...args));
      assert.equal(got, want.replace(`${name}_cpu`, `${name}_webgpu`));
    }
    bench.free();
  });

  test('a limit the plan exceeds and a lost device: an Error saying why; a new device works again', { skip: !usable, timeout: 120_000 }, async () => {
    const { device } = backends.webgpuRuntime();
    // A device whose limits no plan fits: the executor refuses before touching it.
    const tiny = { createBuffer() { throw new Error('not reached'); }, limits: { maxBufferSize: 16, maxStorageBufferBindingSize: 16, maxStorageBuffersPerShaderStage: 1 }, lost: new Promise(() => {}) };
    assert.equal(await rlx.init_webgpu(false), false);
    await assert.rejects(() => rlx.mlp_forward_gpu(mlp[0], ...mlp.slice(2)), /mlp_forward_gpu: WebGPU cannot run here: WebGPU was turned off/);
    assert.equal(await rlx.init_webgpu(tiny), true);
    await assert.rejects(() => rlx.mlp_forward_gpu(mlp[0], ...mlp.slice(2)), (err) => {
      assert.match(err.message, /^mlp_forward_gpu: WebGPU could not run it: WebGPU: the plan needs max\w+ = \d+, the device allows \d+/);
      assert.equal(err.reason, 'limits');
      return true;
    });
    // The real device again: the cached graphs are rebuilt for it.
    await rlx.init_webgpu(false);
    assert.equal(await rlx.init_webgpu(device), true);
    close(await rlx.mlp_forward_gpu(mlp[0], ...mlp.slice(2)), rlx.mlp_forward(mlp[0], ...mlp.slice(2)), 'after the limits');
    // Lose the device.
    device.destroy();
    await device.lost;
    await assert.rejects(() => rlx.mlp_forward_gpu(mlp[0], ...mlp.slice(2)), (err) => {
      assert.match(err.message, /^mlp_forward_gpu: WebGPU cannot run here: the WebGPU device was lost.*`await init_webgpu\(\)` again/);
      assert.equal(err.reason, 'device-lost');
      return true;
    });
    // A new device from the same GPU: works again.
    assert.equal(await rlx.init_webgpu(gpu), true);
    close(await rlx.mlp_forward_gpu(mlp[0], ...mlp.slice(2)), rlx.mlp_forward(mlp[0], ...mlp.slice(2)), 'on a new device');
  });
}
