// webgpu_ops.test.mjs - every op case (tests/c/cases_*.c) compiled for the
// CPU and for WebGPU inside build/wasm-tests/opcases.wasm
// (tests/c/wasm_gpu_cases.c); the WebGPU plan runs through
// web/runtime/webgpu.js on Dawn (npm `webgpu`; SwiftShader on CPU machines)
// and its output must match the CPU run within the op's tolerance:
// |gpu - cpu| <= tol * (1 + |cpu|), NaN only against NaN, infinities exact.
//
// Skips: a case is skipped (and counted, by family) only when its WebGPU
// compile refuses an op still listed in src/webgpu/lower_pending_{a,b,c}.c.
// Once those files are gone, any skip fails the summary test.  The fused ops
// must refuse (GPU plans are compiled without fusion).
//
// Also: the training parity test (a scalar toy, the vision models but
// gpu_compare.mjs's WEBGPU_TRAIN_IN_CHROMIUM, and the MLP, SGD, batch 4, one
// fixed batch: 20 steps on WebGPU follow the CPU loss curve; fewer for
// cifar-cnn on SwiftShader, see below), the
// host summary (0 host steps) of the training graphs incl. the
// transformer's, and the executor itself through web/runtime/loader.js
// (outputs, params, constants, pipeline cache, errors, lost device).
//
// Env: RLX_CASES=substring runs only the op cases whose name contains it;
// RLX_CASE_STRIDE=k only every k-th case (make test passes one to both runs:
// Chromium's, tests/browser/webgpu_ops.test.mjs, checks the others on the
// same shaders, so each case is checked once).
// Build first: make build/wasm-tests/opcases.wasm.  Run: make test-webgpu, or
// node --test tests/node/webgpu_ops.test.mjs (the Vulkan driver environment
// for Dawn is added when missing, by re-running this file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { WasiShim } from '../../web/runtime/wasi.js';
import { dawnEnv, dawnDevice } from '../../tools/dawn_node.mjs';
import { createWebGpuSession, webGpuCacheStats } from '../../web/runtime/webgpu.js';
import { loadRlx } from '../../web/runtime/loader.js';
import { close, toleranceOf, worstMismatch, mismatchMessage, allowedRefusal, TRAIN_TOL, WEBGPU_TRAIN_IN_CHROMIUM } from '../common/gpu_compare.mjs';
import { pendingOps, pendingFiles } from '../common/webgpu_pending.mjs';

const root = new URL('../../', import.meta.url);
const WASM = new URL('build/wasm-tests/opcases.wasm', root);
const WEB_WASM = new URL('web/pkg/rlx_web.wasm', root);
const FILTER = process.env.RLX_CASES || '';
const STRIDE = Math.max(1, Math.floor(Number(process.env.RLX_CASE_STRIDE)) || 1);

// Op-case tolerances and the comparison: tests/common/gpu_compare.mjs (shared
// with the Chromium run, tests/browser/webgpu_ops.test.mjs).
// Training: per step |gpu - cpu| <= TRAIN_TOL * (1 + |cpu|) (gpu_compare.mjs).
// On SwiftShader (a CPU Vulkan) one step of cifar-cnn or resnet takes 30-40 s (their convolutions
// and reductions run at a few GFLOP/s there), so those two run
// RLX_TRAIN_STEPS_SLOW steps (default 3) there and say so; real GPUs run
// RLX_TRAIN_STEPS (default 20) for every model.
const TRAIN_STEPS = Number(process.env.RLX_TRAIN_STEPS ?? 20);
const TRAIN_STEPS_SLOW = Number(process.env.RLX_TRAIN_STEPS_SLOW ?? 3);
const SLOW_ON_CPU_VULKAN = new Set(['cifar-cnn', 'resnet']);

// Families the training parity test needs (pending files b and c today).
const TRAIN_NEEDS = {
  'mnist-mlp': 'a (elementwise), b (matmul), c (softmax cross-entropy, reduce)',
  'mnist-cnn': 'a, b (matmul, conv2d, pools), c (softmax cross-entropy, reduce)',
  'cifar-cnn': 'a, b (matmul, conv2d, pools), c (softmax cross-entropy, reduce)',
  resnet: 'a, b (matmul, conv2d, pools), c (softmax cross-entropy, reduce)',
  mlp: 'a (elementwise), b (matmul), c (reduce_sum)',
  toy: 'a (elementwise)',
};

async function loadModule() {
  const module = await WebAssembly.compile(readFileSync(WASM));
  const wasi = new WasiShim({ stdout: () => {}, stderr: () => {} });
  const instance = await WebAssembly.instantiate(module, wasi.imports(module));
  wasi.attach(instance);
  instance.exports._initialize?.();
  const e = instance.exports;
  const cstr = (ptr) => {
    const mem = new Uint8Array(e.memory.buffer);
    let end = ptr >>> 0;
    while (mem[end] !== 0) end++;
    return new TextDecoder().decode(mem.subarray(ptr >>> 0, end));
  };
  return { e, cstr };
}

const needsEnv = Object.keys(dawnEnv()).length > 0 && !process.env.RLX_DAWN_REEXEC;

if (!existsSync(WASM)) {
  test('webgpu: build outputs present', () => {
    assert.fail('missing build/wasm-tests/opcases.wasm: run `make build/wasm-tests/opcases.wasm`');
  });
} else if (needsEnv) {
  // Dawn needs the Vulkan driver environment at process start: run this file
  // again with it and report the outcome here.
  test('webgpu ops (re-run with the Dawn environment)', { timeout: 3600_000 }, (t) => {
    const file = fileURLToPath(import.meta.url);
    const env = { ...process.env, ...dawnEnv(), RLX_DAWN_REEXEC: '1' };
    delete env.NODE_TEST_CONTEXT; // else the child talks the runner's private protocol
    const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', file], { env, encoding: 'utf8', maxBuffer: 1 << 28 });
    const out = `${r.stdout}\n${r.stderr}`;
    for (const line of out.split('\n')) {
      if (/^ℹ (tests|pass|fail|skipped|duration|webgpu summary)/.test(line)) t.diagnostic(line.replace(/^ℹ /, ''));
    }
    assert.equal(r.status, 0, `webgpu tests failed:\n${out.slice(-8000)}`);
  });
} else {
  let gpu;
  try {
    gpu = await dawnDevice();
  } catch (err) {
    gpu = err;
  }
  if (gpu instanceof Error) {
    test('webgpu: Dawn is available', () => {
      assert.fail(`${gpu.message} (install with \`npm install\`; Dawn needs a Vulkan driver, see /work/shared/notes/verified-recipes.md)`);
    });
  } else {
    const { device, adapter } = gpu;
    const info = adapter.info ?? {};
    const swiftshader = /swiftshader/i.test(`${info.vendor} ${info.architecture} ${info.device} ${info.description}`);
    const { e, cstr } = await loadModule();
    const pending = pendingOps();
    const stats = { passed: 0, refusedByDesign: 0, skipped: {} };
    const t0 = performance.now();

    const n = e.gpucase_count();
    for (let i = 0; i < n; i += FILTER ? 1 : STRIDE) {
      const name = cstr(e.gpucase_name(i));
      if (FILTER && !name.includes(FILTER)) continue;
      test(name, async (t) => {
        const h = e.gpucase_prepare(i);
        assert.ok(h, 'gpucase_prepare returned NULL');
        let gs;
        try {
          const cpuStatus = e.gpucase_cpu_status(h);
          assert.equal(cpuStatus, 0, `CPU: ${cstr(e.gpucase_cpu_message(h))}`);
          const op = cstr(e.gpucase_op(h));
          const gpuStatus = e.gpucase_gpu_status(h);
          if (gpuStatus !== 0) {
            const msg = cstr(e.gpucase_gpu_message(h));
            const refusal = allowedRefusal(gpuStatus, msg, pending);
            if (refusal?.kind === 'fused') {
              stats.refusedByDesign++;
              return; // fused ops refuse on purpose
            }
            if (refusal?.kind === 'pending') {
              stats.skipped[refusal.family] = (stats.skipped[refusal.family] ?? 0) + 1;
              t.skip(`pending family ${refusal.family}: ${refusal.op}`);
              return;
            }
            assert.fail(`WebGPU compile failed (status ${gpuStatus}): ${msg}`);
          }
          const nOut = e.gpucase_n_out(h) >>> 0;
          const want = new Float32Array(e.memory.buffer, e.gpucase_cpu_out(h), nOut).slice();
          gs = await createWebGpuSession(e, e.gpucase_gpu_session(h), device);
          await gs.run();
          const got = gs.output(0);
          assert.equal(got.length, want.length, 'output length');
          const tol = toleranceOf(op);
          const worst = worstMismatch(got, want, tol);
          if (worst) assert.fail(mismatchMessage(op, worst, tol));
          stats.passed++;
        } finally {
          gs?.free();
          e.gpucase_free(h);
        }
      });
    }

    // ---- training parity: 20 SGD steps, the GPU loss follows the CPU's ----
    const trainModels = FILTER ? [] : [6, 0, 1, 2, 3, 4];
    for (const model of trainModels) {
      const mname = cstr(e.gputrain_model_name(model));
      if (WEBGPU_TRAIN_IN_CHROMIUM.includes(mname)) continue; // Chromium's page checks it
      const steps = swiftshader && SLOW_ON_CPU_VULKAN.has(mname) ? Math.min(TRAIN_STEPS, TRAIN_STEPS_SLOW) : TRAIN_STEPS;
      test(`train parity: ${mname}`, { timeout: 1_800_000 }, async (t) => {
        const lr = model === 4 ? 0.01 : model === 6 ? 0.1 : 0.05;
        const h = e.gputrain_new(model, 4, lr);
        assert.ok(h, 'gputrain_new returned NULL');
        let gs;
        try {
          assert.equal(e.gputrain_cpu_status(h), 0, cstr(e.gputrain_message(h)));
          if (e.gputrain_gpu_status(h) !== 0) {
            const msg = cstr(e.gputrain_message(h));
            const missing = /op (\w+) has no WebGPU kernel/.exec(msg);
            if (missing && pending.has(missing[1])) {
              const fam = pending.get(missing[1]);
              stats.skipped[fam] = (stats.skipped[fam] ?? 0) + 1;
              t.skip(`needs families ${TRAIN_NEEDS[mname] ?? '?'}; pending: ${missing[1]} (${fam})`);
              return;
            }
            assert.fail(msg);
          }
          gs = await createWebGpuSession(e, e.gputrain_gpu_session(h), device);
          const losses = [];
          if (steps < TRAIN_STEPS) t.diagnostic(`${mname}: ${steps} of ${TRAIN_STEPS} steps (SwiftShader runs its convolutions at CPU speed)`);
          for (let step = 0; step < steps; step++) {
            const cpu = e.gputrain_cpu_step(h, step);
            assert.ok(Number.isFinite(cpu), `CPU step ${step}: ${cstr(e.gputrain_message(h))}`);
            for (let k = 0; k < e.gputrain_input_count(h); k++) {
              const len = e.gputrain_input_len(h, k) >>> 0, ptr = e.gputrain_input_data(h, k);
              const data = e.gputrain_input_i32(h, k) ? new Int32Array(e.memory.buffer, ptr, len).slice()
                : new Float32Array(e.memory.buffer, ptr, len).slice();
              gs.setInput(cstr(e.gputrain_input_name(h, k)), data);
            }
            await gs.run();
            const g = gs.output(0)[0];
            losses.push([cpu, g]);
            assert.ok(Math.abs(g - cpu) <= TRAIN_TOL * (1 + Math.abs(cpu)),
              `step ${step}: gpu loss ${g} vs cpu ${cpu}; so far ${JSON.stringify(losses)}`);
          }
          t.diagnostic(`${mname}: loss ${losses[0][0].toFixed(4)} -> ${losses.at(-1)[0].toFixed(4)} (cpu), ${losses.at(-1)[1].toFixed(4)} (gpu)`);
          stats.passed++;
        } finally {
          gs?.free();
          e.gputrain_free(h);
        }
      });
    }

    // ---- host summary: the training graphs run entirely on the GPU ----
    const summaryModels = FILTER ? [] : [0, 1, 2, 3, 4, 5];
    for (const model of summaryModels) {
      const mname = cstr(e.gputrain_model_name(model));
      test(`host summary: ${mname} training graph has 0 host steps`, (t) => {
        const h = e.gputrain_new(model, 4, 0.01);
        try {
          if (e.gputrain_gpu_status(h) !== 0) {
            const msg = cstr(e.gputrain_message(h));
            const missing = /op (\w+) has no WebGPU kernel/.exec(msg);
            if (missing && pending.has(missing[1])) {
              const fam = pending.get(missing[1]);
              stats.skipped[fam] = (stats.skipped[fam] ?? 0) + 1;
              t.skip(`pending: ${missing[1]} (${fam})`);
              return;
            }
            assert.fail(msg);
          }
          const s = e.gputrain_gpu_session(h);
          assert.equal(e.gputrain_host_summary(h, -1), 0, 'rlx_session_host_summary status');
          const buf = [0, 1, 2].map((k) => e.gputrain_host_summary(h, k));
          assert.ok(buf[0] > 0, 'steps_total');
          assert.equal(buf[1], 0, 'host steps');
          assert.equal(buf[2], 0, 'sync points');
          assert.equal(e.rlx_session_requires_host_execution(s), 0);
          t.diagnostic(`${mname}: ${buf[0]} steps, ${buf[1]} host steps, ${buf[2]} sync points`);
        } finally {
          e.gputrain_free(h);
        }
      });
    }

    // ---- the executor through the browser module (web/pkg/rlx_web.wasm) ----
    const executorTests = !FILTER && existsSync(WEB_WASM);
    if (executorTests) {
      const rlx = await loadRlx(WEB_WASM);
      // y0 = relu(x * w + c) with a constant c, y1 = x - w: two outputs, a
      // param, a constant, broadcasting; run twice with new inputs.
      const build = () => {
        const g = rlx.graph();
        const x = g.input('x', [3, 5]);
        const w = g.param('w', [5]);
        const c = g.constant([3, 1], [0.5, -0.5, 0.25]);
        const y0 = g.op('relu', [g.op('add', [g.op('mul', [x, w]), c])]);
        const y1 = g.op('sub', [x, w]);
        return { g, outs: [y0, y1] };
      };
      const xs = [Float32Array.from({ length: 15 }, (_, i) => Math.sin(i + 1)), Float32Array.from({ length: 15 }, (_, i) => Math.cos(3 * i))];
      const wv = Float32Array.from([0.5, -1, 2, 0.25, -0.75]);

      test('executor: loader session, two outputs, param, constant, two runs', async () => {
        const { g, outs } = build();
        const cpu = g.compile(outs);
        const gpuS = g.compile(outs, { device: 'webgpu' });
        g.free();
        const gs = await createWebGpuSession(rlx, gpuS, device);
        try {
          cpu.setParam('w', wv);
          gs.setParam('w', wv);
          for (const x of xs) {
            cpu.setInput('x', x);
            cpu.run();
            gs.setInput('x', x);
            await gs.run();
            for (const i of [0, 1]) {
              const want = cpu.output(i), got = gs.output(i);
              assert.deepEqual(gs.outputShape(i), cpu.outputShape(i));
              for (let k = 0; k < want.length; k++) assert.ok(close(got[k], want[k], 1e-6), `output ${i}[${k}]: ${got[k]} vs ${want[k]}`);
            }
          }
          assert.deepEqual(Array.from(await gs.getParam('w')), Array.from(wv));
        } finally {
          gs.free(); cpu.free(); gpuS.free();
        }
      });

      test('executor: pipelines are cached across sessions of one device', async () => {
        const { g, outs } = build();
        const a = g.compile(outs, { device: 'webgpu' }), b = g.compile(outs, { device: 'webgpu' });
        g.free();
        const s1 = await createWebGpuSession(rlx, a, device);
        const before = webGpuCacheStats(device).pipelines;
        const s2 = await createWebGpuSession(rlx, b, device);
        assert.equal(webGpuCacheStats(device).pipelines, before, 'the second session compiled new pipelines');
        s1.free(); s2.free(); a.free(); b.free();
      });

      test('executor: errors (run in C, unset input, plan of a CPU session)', async () => {
        const { g, outs } = build();
        const gpuS = g.compile(outs, { device: 'webgpu' }), cpu = g.compile(outs);
        g.free();
        gpuS.setInput('x', xs[0]);
        assert.throws(() => gpuS.run(), /web\/runtime\/webgpu\.js/);
        await assert.rejects(createWebGpuSession(rlx, cpu, device), /not a WebGPU session/);
        const fresh = (() => { const b2 = build(); const s = b2.g.compile(b2.outs, { device: 'webgpu' }); b2.g.free(); return s; })();
        const gs = await createWebGpuSession(rlx, fresh, device);
        await assert.rejects(gs.run(), /input 'x' has not been set/);
        assert.throws(() => gs.setInput('x', new Float32Array(3)), /holds 15 values/);
        gs.free(); fresh.free(); gpuS.free(); cpu.free();
      });

      test('executor: a lost device rejects runs with reason device-lost', async () => {
        const own = (await dawnDevice()).device;
        const { g, outs } = build();
        const gpuS = g.compile(outs, { device: 'webgpu' });
        g.free();
        const gs = await createWebGpuSession(rlx, gpuS, own);
        gs.setInput('x', xs[0]);
        await gs.run();
        own.destroy();
        await own.lost;
        await assert.rejects(gs.run(), (err) => err.reason === 'device-lost' && /device lost/.test(err.message));
        gs.free(); gpuS.free();
      });

      test('executor: no WebGPU and too-small limits give WebGpuUnavailableError', async () => {
        const { g, outs } = build();
        const gpuS = g.compile(outs, { device: 'webgpu' });
        g.free();
        const small = { createBuffer() {}, limits: { maxBufferSize: 16, maxStorageBufferBindingSize: 16, maxStorageBuffersPerShaderStage: 8 } };
        await assert.rejects(createWebGpuSession(rlx, gpuS, small), (err) => err.reason === 'limits' && /maxBufferSize/.test(err.message));
        if (!globalThis.navigator?.gpu) {
          await assert.rejects(createWebGpuSession(rlx, gpuS), (err) => err.reason === 'no-webgpu');
        }
        gpuS.free();
      });

      test('executor: a preset input set in C before the executor starts is uploaded', async () => {
        const { g, outs } = build();
        const gpuS = g.compile(outs, { device: 'webgpu' }), cpu = g.compile(outs);
        g.free();
        gpuS.setInput('x', xs[1]);
        gpuS.setParam('w', wv);
        cpu.setInput('x', xs[1]);
        cpu.setParam('w', wv);
        cpu.run();
        const gs = await createWebGpuSession(rlx, gpuS, device);
        await gs.run();
        const want = cpu.output(1), got = gs.output(1);
        for (let k = 0; k < want.length; k++) assert.ok(close(got[k], want[k], 1e-6));
        gs.free(); gpuS.free(); cpu.free();
      });
    }

    test('webgpu summary', (t) => {
      const secs = ((performance.now() - t0) / 1000).toFixed(1);
      const skipped = Object.values(stats.skipped).reduce((a, b) => a + b, 0);
      const fams = Object.entries(stats.skipped).map(([f, c]) => `${f}: ${c}`).join(', ') || 'none';
      const line = `webgpu summary: ${stats.passed} passed, ${skipped} skipped (pending families ${fams}), ` +
        `${stats.refusedByDesign} fused cases refused by design${STRIDE > 1 && !FILTER ? `, every ${STRIDE}th case of ${n}` : ''}, ${secs} s`;
      console.log(line);
      t.diagnostic(line);
      if (pendingFiles().length === 0) assert.equal(skipped, 0, 'no pending lowering files remain, yet cases were skipped');
    });
  }
}

