// sdk.test.mjs - the SDK (web/rlx.ts -> web/rlx.js + web/rlx.d.ts, `make
// sdk`) in Node: Rlx.init and its backends, vision models (forward, train
// step and bench equal the low-level CPU entry points; 'auto' says why it
// did not take the GPU backends; an explicit GPU request is refused with the
// reason), the transformer, rlx.graph() building and training a model,
// dispose, clear errors; tests/types/sdk_check.ts type-checks with
// tsc --strict; and the npm package: `npm pack` in web/ makes a tarball that
// `npm install --offline` puts into a fresh folder, where `import Rlx from
// 'rlx'` works (init, vision forward, graph build + train) and its types
// resolve through package.json's exports.
// Build first: make wasm sdk
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = `${ROOT}node_modules/typescript/bin/tsc`;
const missing = !existsSync(`${ROOT}web/pkg/rlx_web.wasm`) ? 'missing web/pkg/rlx_web.wasm: run `make wasm`'
  : !existsSync(`${ROOT}web/rlx.js`) ? 'missing web/rlx.js: run `make sdk`' : null;
if (missing) test('SDK built', () => assert.fail(missing));
const skip = !!missing;
const { default: Rlx, VisionModel, RlxError } = missing ? {} : await import('../../web/rlx.js');
const low = missing ? null : await import('../../web/pkg/rlx_web.js');

function close(got, want, what, tol = 1e-6) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])))) assert.fail(`${what}[${i}]: ${got[i]} != ${want[i]}`);
  }
}

async function rejectsClear(promise, ...patterns) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof RlxError, `not an RlxError: ${err}`);
    for (const p of patterns) assert.match(err.message, p);
    return true;
  });
}

test('Rlx.init: backends with reasons; webgpu / webgl can be turned off', { skip }, async () => {
  const rlx = await Rlx.init();
  assert.match(rlx.version, /\d+\.\d+/);
  const env = rlx.backends();
  assert.deepEqual(env.cpu, { available: true, reason: null });
  assert.equal(env.webgpu.available, false);
  assert.match(env.webgpu.reason, /no navigator\.gpu/);
  assert.equal(env.webgl.available, false);
  assert.ok(env.webgl.reason.length > 10);
  assert.deepEqual(rlx.visionModels(), low.list_vision_models());
  assert.equal(rlx.wasm.mlp_forward, low.mlp_forward, 'the low-level module is rlx.wasm');
  const off = await Rlx.init({ webgpu: false, webgl: false });
  assert.equal(off.backends().webgpu.reason, 'WebGPU was turned off (init_webgpu(false))');
  assert.match(off.backends().webgl.reason, /turned off|not in this build/);
  await Rlx.init(); // back on for the other tests
  rlx.dispose();
  off.dispose();
});

test('vision models: forward, train step and bench equal the CPU entry points; auto says why not the GPUs', { skip, timeout: 60000 }, async () => {
  const rlx = await Rlx.init();
  for (const slug of rlx.visionModels()) {
    const m = rlx.vision(slug);
    assert.ok(m instanceof VisionModel);
    const bench = new low.VisionBench(slug);
    const params = m.initParams(7);
    close(params, bench.init_params(7), `${slug} initParams`, 0);
    const { x, labels } = m.syntheticBatch(3, 2);
    close(x, bench.synthetic_batch(3, 2).x, `${slug} syntheticBatch`, 0);
    const logits = await m.forward(x, params);
    close(logits, bench.forward_cpu(x, params), `${slug} forward`);
    close(m.forwardCpu(x, params), logits, `${slug} forwardCpu`);
    const step = await m.trainStep(x, labels, params, { lr: 0.05 });
    assert.equal(step.backend, 'cpu');
    const want = bench.train_step_cpu(x, labels, params, 0.05);
    close([step.loss], [want[0]], `${slug} loss`);
    close(step.params, want.subarray(1), `${slug} params`);
    const cpuStep = m.trainStepCpu(x, labels, params, 0.05);
    close(cpuStep.params, step.params, `${slug} trainStepCpu`);
    const resolved = m.resolve('auto', { batch: 2 });
    assert.equal(resolved.backend, 'cpu');
    assert.deepEqual(resolved.fallbacks.map((f) => f.backend), ['webgpu', 'webgl']);
    await rejectsClear(m.forward(x, params, { backend: 'webgpu' }), /select_backend: webgpu was requested but cannot be used: .*navigator\.gpu/);
    await rejectsClear(m.trainStep(x, labels, params, { backend: 'gl' }), /webgl was requested but cannot be used/);
    assert.throws(() => m.forwardCpu(x.subarray(1), params), /x has \d+ values, not a multiple/);
    await assert.rejects(m.forward(new Float32Array(5), params), /x must hold batch \* \d+ values, got 5/);
    m.dispose();
    assert.throws(() => m.initParams(1), /the model .* was disposed/);
    bench.free();
  }
  rlx.dispose();
});

test('vision bench: onProgress per step, the loss falls, the backend and its fallbacks are reported', { skip, timeout: 60000 }, async () => {
  const rlx = await Rlx.init();
  const m = rlx.vision('mnist-mlp');
  const seen = [];
  const r = await m.bench({ steps: 12, seed: 5, lr: 0.05, batch: 4, onProgress: (p) => seen.push(p) });
  assert.equal(seen.length, 12);
  assert.deepEqual(seen.map((p) => p.step), Array.from({ length: 12 }, (_, i) => i + 1));
  assert.ok(seen.every((p) => p.steps === 12 && p.backend === 'cpu'));
  assert.equal(r.slug, 'mnist-mlp');
  assert.equal(r.backend, 'cpu');
  assert.equal(r.fallbacks.length, 2);
  assert.equal(r.losses.length, 12);
  assert.equal(r.initialLoss, r.losses[0]);
  assert.equal(r.finalLoss, r.losses[11]);
  assert.ok(r.finalLoss < r.initialLoss, `the loss did not fall: ${r.initialLoss} -> ${r.finalLoss}`);
  assert.ok(r.stepsPerSec > 0 && Math.abs(r.samplesPerSec - 4 * r.stepsPerSec) < 1e-6 * r.samplesPerSec);
  // The same steps as the low-level bench_cpu (same params, batch and SGD).
  const [first, last] = new low.VisionBench('mnist-mlp').bench_cpu(12, 5, 0.05, 4);
  close([r.initialLoss, r.finalLoss], [first, last], 'bench vs bench_cpu', 1e-5);
  const cpu = m.benchCpu(12, 5, 0.05, 4);
  close([cpu.initialLoss, cpu.finalLoss], [first, last], 'benchCpu', 1e-6);
  await assert.rejects(m.bench({ steps: 0 }), /steps must be an integer >= 1/);
  rlx.dispose();
  assert.throws(() => m.initParams(1), /was disposed/, 'rlx.dispose() disposes its models');
  assert.throws(() => rlx.vision('mnist-mlp'), /this Rlx was disposed/);
});

test('transformer: nextLogits and logits equal the low-level entry points', { skip }, async () => {
  const rlx = await Rlx.init();
  const lm = rlx.transformer({ vocab: 16, dim: 16, nLayers: 1, nHeads: 2, ffn: 32, seed: 9 });
  assert.equal(lm.config.headDim, 8);
  close(lm.nextLogits([1, 2, 3]), low.transformer_next_logits([1, 2, 3], 16, 16, 1, 2, 8, 32, 9), 'nextLogits');
  close(lm.logits([4, 5]), low.transformer_logits([4, 5], 16, 16, 1, 2, 8, 32, 9), 'logits');
  assert.throws(() => lm.nextLogits([99]), /token ids must be integers in \[0, vocab = 16\)/);
  const bad = rlx.transformer({ vocab: 16, dim: 15, nLayers: 1, nHeads: 2, ffn: 32 });
  assert.throws(() => bad.nextLogits([1]), /head_dim must be an integer/);
  lm.dispose();
  assert.throws(() => lm.nextLogits([1]), /the transformer was disposed/);
  rlx.dispose();
});

test('rlx.graph(): describe a model in code and train it; dispose frees the graph', { skip }, async () => {
  const rlx = await Rlx.init();
  const g = rlx.graph();
  assert.ok(g instanceof low.WebGraph);
  const x = g.input('x', [8, 2]);
  const t = g.input('t', [8, 1]);
  const w = g.param('w', [2, 1]);
  const b = g.param('b', [1]);
  const d = g.sub(g.add(g.matmul(x, w), b), t);
  const loss = g.reduce_mean(g.mul(d, d));
  const step = g.compile_backward(loss, [w, b], 'auto');
  assert.equal(step.backend, 'cpu');
  const xs = Float32Array.from({ length: 16 }, (_, i) => ((i * 7) % 5) / 5 - 0.4);
  const ts = Float32Array.from({ length: 8 }, (_, r) => 2 * xs[2 * r] - 3 * xs[2 * r + 1] + 0.5);
  const p = { w: new Float32Array(2), b: new Float32Array(1) };
  step.feed('x', xs);
  step.feed('t', ts);
  const losses = [];
  for (let i = 0; i < 200; i++) {
    step.feed('w', p.w);
    step.feed('b', p.b);
    await step.run();
    losses.push(step.output(0)[0]);
    ['w', 'b'].forEach((n, k) => { const grad = step.output(1 + k); p[n] = p[n].map((v, j) => v - 0.5 * grad[j]); });
  }
  assert.ok(losses[199] < 1e-3 * losses[0], `the loss did not fall: ${losses[0]} -> ${losses[199]}`);
  close(p.w, [2, -3], 'learned w', 1e-2);
  step.free();
  rlx.dispose();
  assert.throws(() => g.relu(x), /the graph was freed/);
});

test('tests/types/sdk_check.ts type-checks against web/rlx.d.ts and web/pkg/rlx_web.d.ts (tsc --strict)', { skip: skip || (!existsSync(TSC) && 'npm typescript missing: make setup') }, () => {
  try {
    execFileSync(process.execPath, [TSC, '--noEmit', '--strict', '--target', 'es2022', '--module', 'esnext', '--moduleResolution',
      'bundler', '--lib', 'es2022,dom', 'tests/types/sdk_check.ts'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  }
});

test('npm pack: the tarball installs offline into a fresh folder and works from Node, with its types', { skip, timeout: 180000 }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rlx-sdk-'));
  try {
    const env = { ...process.env, npm_config_cache: join(dir, 'npm-cache'), npm_config_update_notifier: 'false',
      npm_config_fund: 'false', npm_config_audit: 'false', npm_config_loglevel: 'error' };
    const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: `${ROOT}web`, env, encoding: 'utf8', timeout: 120_000 }));
    const files = packed[0].files.map((f) => f.path).sort();
    for (const f of ['package.json', 'rlx.js', 'rlx.d.ts', 'pkg/rlx_web.js', 'pkg/rlx_web.d.ts', 'pkg/rlx_web.wasm',
      'pkg/rlx_web_relaxed.wasm', 'pkg/rlx_web_threads.wasm', 'pkg/rlx_web_threads_relaxed.wasm', 'pkg/rlx_llm.wasm', 'pkg/rlx_llm_relaxed.wasm', 'pkg/rlx_llm_threads.wasm', 'pkg/rlx_llm_threads_relaxed.wasm', 'pkg/rlx_llm_gpu.wasm', 'pkg/rlx_llm_webgl.wasm', 'pkg/rlx_llm_train.wasm', 'pkg/rlx_llm_train_relaxed.wasm', 'pkg/rlx_llm_train_threads.wasm', 'pkg/rlx_llm_train_threads_relaxed.wasm', 'pkg/rlx_llm_train_gpu.wasm', 'pkg/rlx_llm_train_webgl.wasm', 'pkg/rlx_json_schema.wasm', 'runtime/llm_json_schema.js', 'runtime/llm_threads.js', 'runtime/thread_worker.js', 'runtime/threads.js', 'runtime/llm_finetune.js', 'runtime/llm_finetune_webgpu.js', 'runtime/llm_finetune_webgl.js', 'runtime/llm_finetune_gpu.js', 'runtime/llm_webgpu.js', 'runtime/llm_webgl.js', 'runtime/llm_gpu_steps.js', 'runtime/llm_chat.js', 'runtime/llm_chat_template.js', 'runtime/llm_openai.js', 'vendor/jinja.js', 'runtime/simd.js', 'runtime/loader.js', 'runtime/wasi.js', 'runtime/webgpu.js', 'runtime/webgraph.js', 'runtime/backends.js']) {
      assert.ok(files.includes(f), `the tarball lacks ${f} (has ${files.join(', ')})`);
    }
    assert.ok(!files.some((f) => /\.html$|^data\/|^cluster\//.test(f)), `the tarball carries page files: ${files.join(', ')}`);
    t.diagnostic(`${packed[0].filename}: ${files.length} files, ${(packed[0].size / 1024).toFixed(0)} KiB packed`);

    const app = join(dir, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'rlx-consumer', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--offline', '--no-save', join(dir, packed[0].filename)], { cwd: app, env, encoding: 'utf8', timeout: 120_000 });
    assert.ok(readdirSync(join(app, 'node_modules', 'rlx')).includes('rlx.js'));
    writeFileSync(join(app, 'main.mjs'), `
      import Rlx from 'rlx';
      import * as low from 'rlx/low-level';
      const rlx = await Rlx.init();
      const m = rlx.vision('mnist-cnn');
      const params = m.initParams(42);
      const { x, labels } = m.syntheticBatch(1, 2);
      const logits = await m.forward(x, params);
      const g = rlx.graph();
      const xi = g.input('x', [2, 784]), yi = g.input('labels', [2], 'i32');
      const w = g.param('w', [784, 10]);
      const loss = g.reduce_mean(g.softmax_cross_entropy(g.matmul(xi, w), yi));
      const step = g.compile_backward(loss, [w], 'auto');
      const xs = Float32Array.from({ length: 1568 }, (_, i) => Math.sin(i));
      let wv = new Float32Array(7840);
      const losses = [];
      for (let i = 0; i < 20; i++) {
        step.feed('x', xs); step.feed('labels', new Int32Array([3, 7])); step.feed('w', wv);
        await step.run();
        losses.push(step.output(0)[0]);
        const grad = step.output(1);
        wv = wv.map((v, k) => v - 0.1 * grad[k]);
      }
      console.log(JSON.stringify({ logits: Array.from(logits), backend: step.backend, sizes: step.output_sizes(), losses,
        low: typeof low.mlp_forward, backends: rlx.backends() }));
      rlx.dispose();
    `);
    const out = JSON.parse(execFileSync(process.execPath, ['main.mjs'], { cwd: app, encoding: 'utf8', timeout: 120_000 }));
    assert.equal(out.logits.length, 20);
    const bench = new low.VisionBench('mnist-cnn');
    close(out.logits, bench.forward_cpu(bench.synthetic_batch(1, 2).x, bench.init_params(42)), 'installed package: vision forward');
    assert.equal(out.backend, 'cpu');
    assert.deepEqual(out.sizes, [1, 7840]);
    close([out.losses[0]], [Math.log(10)], 'first loss', 1e-6);
    assert.ok(out.losses[19] < 0.5 * out.losses[0], `the loss did not fall: ${out.losses[0]} -> ${out.losses[19]}`);
    assert.equal(out.low, 'function');
    assert.equal(out.backends.cpu.available, true);

    // The types come with it: a consumer's TypeScript resolves 'rlx' through package.json exports.
    writeFileSync(join(app, 'main.ts'), `
      import Rlx, { type BenchResult } from 'rlx';
      import { WebGraph } from 'rlx/low-level';
      export async function f(): Promise<number> {
        const rlx = await Rlx.init({ webgpu: false });
        const r: BenchResult = await rlx.vision('mnist-mlp').bench({ steps: 2 });
        const g: WebGraph = rlx.graph();
        const id: number = g.relu(g.input('x', [2]));
        // @ts-expect-error no such method
        rlx.nope();
        return r.finalLoss + id;
      }
    `);
    if (existsSync(TSC)) {
      for (const resolution of [['--module', 'esnext', '--moduleResolution', 'bundler'], ['--module', 'nodenext', '--moduleResolution', 'nodenext']]) {
        try {
          execFileSync(process.execPath, [TSC, '--noEmit', '--strict', '--target', 'es2022', ...resolution, '--lib', 'es2022,dom',
            '--types', '', 'main.ts'], { cwd: app, encoding: 'utf8', stdio: 'pipe' });
        } catch (e) {
          assert.fail(`tsc (${resolution.join(' ')}) in the consumer failed:\n${e.stdout}${e.stderr}`);
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
