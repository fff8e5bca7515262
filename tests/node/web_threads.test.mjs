// web_threads.test.mjs - the threaded builds of rlx_web.wasm
// (web/pkg/rlx_web_threads.wasm: helper Workers on a shared memory,
// web/runtime/threads.js) in Node: every op case and gradient check of
// tests/c (build/wasm-tests/opcases_threads.wasm, the same C built threaded,
// with the work threshold lowered so that tiny cases split too; a gradient
// check compares 1 and 3 threads itself) and the four
// vision models' training steps give bitwise the outputs, losses and params
// of the one-thread build at 2 and 3 threads; init({ threads: 1 }) takes
// rlx_web.wasm and says why; a bad threads value is an RlxError naming
// init and the option; free() and re-init stop every Worker (30 rounds)
// and the dropped instance's objects refuse to run.
// RLX_TEST_SIMD=relaxed runs the relaxed twins (rlx_web_threads_relaxed.wasm).
// Build first: make wasm.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { WasiShim } from '../../web/runtime/wasi.js';
import { instantiateModule, liveThreadWorkers, startThreads } from '../../web/runtime/threads.js';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { caseInstance } from '../common/case_instance.mjs';

const root = new URL('../../', import.meta.url);
const SIMD = process.env.RLX_TEST_SIMD === 'relaxed' ? 'relaxed' : 'simd128';
const THREADED = new URL(`web/pkg/rlx_web_threads${SIMD === 'relaxed' ? '_relaxed' : ''}.wasm`, root);
const CASES = new URL('build/wasm-tests/opcases.wasm', root);
const CASES_MT = new URL('build/wasm-tests/opcases_threads.wasm', root);
const missing = [THREADED, CASES, CASES_MT].find((u) => !existsSync(u));
const skip = missing ? `missing ${missing.pathname}: run \`make wasm\`` : false;
const MODELS = ['mnist-mlp', 'mnist-cnn', 'cifar-cnn', 'resnet'];

/** Bitwise equality of two Float32Arrays (NaN payloads too), naming the first difference. */
function sameBits(a, b, what) {
  assert.equal(a.length, b.length, `${what}: length`);
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i]) assert.fail(`${what}: value ${i} is ${a[i]} here, ${b[i]} on one thread`);
  }
}

/** An instance of an op-case module: the plain one, or the threaded one with `threads` threads (work threshold 1). */
async function caseModule(url, threads) {
  const { e, buffer, stop } = await caseInstance(await WebAssembly.compile(readFileSync(url)), threads,
    { WasiShim, instantiateModule, startThreads });
  const outputs = (i) => {
    const r = e.opcase_run_case(i);
    try {
      assert.equal(e.result_status(r), 0, `case ${i}: status`);
      return new Float32Array(buffer(), e.result_out(r), e.result_n_out(r) >>> 0).slice();
    } finally {
      e.result_free(r);
    }
  };
  const grad = (i) => [e.gradcase_check(i), e.gradcase_max_err(), e.gradcase_checked()];
  const train = (cnn, kind) => [e.train_run(cnn, kind, 0.05, 3), e.train_first(), e.train_last()];
  return { e, outputs, grad, train, close: stop };
}

async function gone() {
  for (let i = 0; i < 200 && liveThreadWorkers() > 0; i++) await new Promise((r) => setTimeout(r, 25));
  assert.equal(liveThreadWorkers(), 0, 'Workers of freed instances are still running');
}

test('op cases, gradient checks and training models: bitwise the same on 1, 2 and 3 threads', { skip }, async () => {
  const one = await caseModule(CASES);
  const many = [await caseModule(CASES_MT, 2), await caseModule(CASES_MT, 3)];
  try {
    const n = one.e.opcase_count();
    assert.ok(n > 100, `${n} op cases`);
    for (let i = 0; i < n; i++) {
      const want = one.outputs(i);
      for (const [k, m] of many.entries()) sameBits(m.outputs(i), want, `op case ${i} on ${k + 2} threads`);
    }
    // A gradient check compiles its backward graph on 1 and on 3 threads and
    // fails unless they are bitwise equal: the 3-thread module runs them.
    for (let i = 0; i < one.e.gradcase_count(); i++) {
      assert.deepEqual(many[1].grad(i), one.grad(i), `gradient check ${i} on 3 threads`);
    }
    for (const cnn of [0, 1]) {
      for (const kind of [0, 2]) {
        const want = one.train(cnn, kind);
        for (const [k, m] of many.entries()) assert.deepEqual(m.train(cnn, kind), want, `training model ${cnn}/${kind} on ${k + 2} threads`);
      }
    }
  } finally {
    for (const m of many) m.close();
  }
  await gone();
});

/** One SGD step of each vision model on the live runtime: [loss, updated params...] by slug. */
function visionSteps() {
  return Object.fromEntries(MODELS.map((slug) => {
    const bench = new rlx.VisionBench(slug);
    try {
      const params = bench.init_params(7);
      const batch = bench.synthetic_batch(7, slug === 'resnet' ? 2 : 4);
      return [slug, bench.train_step_cpu(batch.x, batch.labels, params, 0.05)];
    } finally {
      bench.free();
    }
  }));
}

test('init({ threads }): the vision models\' training steps are bitwise the same on 1, 2 and 3 threads', { skip }, async () => {
  const rt = await init({ threads: 1, simd: SIMD });
  assert.equal(rt.threads, 1);
  assert.equal(rt.threadsWhy, 'threads is 1', 'one thread takes rlx_web.wasm');
  assert.ok(!rt.pool);
  const want = visionSteps();
  for (const threads of [2, 3]) {
    const t = await init({ threads, simd: SIMD });
    assert.notEqual(t, rt, 'another thread count loads a fresh instance');
    assert.equal(t.threads, threads);
    assert.equal(t.simd, SIMD);
    assert.match(t.threadsWhy, new RegExp(`^${threads} threads: the calling thread and ${threads - 1} Worker`));
    assert.equal(liveThreadWorkers(), threads - 1, 'the old instance\'s Workers were stopped');
    assert.equal(await init(), t, 'init() without threads keeps the live instance');
    const got = visionSteps();
    for (const slug of MODELS) sameBits(got[slug], want[slug], `${slug} loss and params on ${threads} threads`);
  }
  rlx.free();
  await gone();
});

test('init: a bad threads value is an RlxError naming init and threads', { skip }, async () => {
  for (const bad of [0, 65, 1.5, '2', null, -1]) {
    await assert.rejects(init({ threads: bad }), (err) => err?.name === 'RlxError' &&
      /^init: threads must be an integer from 1 to 64, got /.test(err.message));
  }
});

test('free() and re-init leave no Worker behind (30 rounds)', { skip }, async () => {
  for (let i = 0; i < 30; i++) {
    const rt = await init({ threads: 2 + (i % 2), simd: SIMD });
    assert.equal(rt.threads, 2 + (i % 2));
    if (i % 3 === 0) rlx.free();
  }
  const rt = rlx.runtime();
  const g = rt.graph();
  rlx.free();
  // The dropped instance's objects refuse (a run would wait for its stopped Workers), but free.
  assert.throws(() => g.input('x', [2]), (err) => err?.name === 'RlxError' && /^rlx_web: rlx_\w+ on an instance dropped by free\(\)/.test(err.message));
  g.free();
  await gone();
});
