// llm_threads.test.mjs - the language-model module's threaded build in
// Debian's chromium (headless, playwright-core) against tools/serve.py,
// which serves the pages cross-origin isolated (COOP + COEP): on a page's
// main thread (whose joins spin: Atomics.wait traps there) loadGguf with
// threads 2 and 3 takes rlx_llm_threads_relaxed.wasm, says so in info, and
// gives logits bitwise equal to the one-thread build's in the same page and
// Node's greedy tokens; GgufWorker runs it in a Worker (its helper Workers
// nested there) to the same tokens; generate.html?threads=2 shows the
// threads and why; loadGguf with train: true and threads 2 takes
// rlx_llm_train_threads_relaxed.wasm and fine-tunes to the one-thread
// build's losses and adapter bytes, and finetune.html?threads=2 shows the
// threads and why; a page served without the isolation headers falls back
// to the one-thread build with the reason in info.threadsWhy.  The same
// page's init({ threads: 2 or 3 }) of rlx_web.js takes rlx_web_threads_relaxed.wasm
// and gives the four vision models' training steps bitwise equal to one
// thread's; every op case and gradient check of tests/c, built threaded
// (build/wasm-tests/opcases_threads.wasm, every loop split), gives on 3
// threads in the page the bits of the one-thread build opcases.wasm.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer, launch, newPage, valueOf, missing } from './helpers.mjs';
import { loadGguf } from '../../web/runtime/llm.js';

const FIXTURE = 'llama-q4_0';
const FILE = fileURLToPath(new URL(`../../web/data/lm/${FIXTURE}.gguf`, import.meta.url));
const THREADED = new URL('../../web/pkg/rlx_llm_threads_relaxed.wasm', import.meta.url);
const PROMPT = 'The miller counted the sacks';
const TOKENS = 6;
const why = missing() ?? (!existsSync(THREADED) ? 'missing web/pkg/rlx_llm_threads_relaxed.wasm: run `make wasm`' : null) ??
  (!existsSync(FILE) ? `missing ${FILE}: run make lm-web-fixtures` : null);
const WEB_THREADED = new URL('../../web/pkg/rlx_web_threads_relaxed.wasm', import.meta.url);
const whyWeb = missing() ?? (!existsSync(WEB_THREADED) ? 'missing web/pkg/rlx_web_threads_relaxed.wasm: run `make wasm`' : null);
const CASES = ['opcases', 'opcases_threads'].map((n) => fileURLToPath(new URL(`../../build/wasm-tests/${n}.wasm`, import.meta.url)));
const CASE_INSTANCE = fileURLToPath(new URL('../common/case_instance.mjs', import.meta.url));
const whyCases = missing() ?? (CASES.every((f) => existsSync(f)) ? null : 'missing build/wasm-tests/opcases*.wasm: run `make wasm`');
let server;
let browser;
let expected; // Node's greedy ids of PROMPT (the one-thread build)

before(async () => {
  if (why && whyWeb) return;
  if (!why) {
    const model = await loadGguf(FILE, { threads: 1 });
    expected = (await model.generate(PROMPT, { maxTokens: TOKENS, temperature: 0 })).ids;
    model.free();
  }
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** In the page: the model's info, the base64 bits of its prompt logits, its greedy ids, for each threads count. */
function runInPage(page, counts) {
  return page.evaluate(async ({ file, prompt, tokens, counts }) => {
    const { loadGguf } = await import('./runtime/llm.js');
    const { liveThreadWorkers } = await import('./runtime/llm_threads.js');
    const bits = (f) => btoa(String.fromCharCode(...new Uint8Array(f.buffer, f.byteOffset, f.byteLength)));
    const out = { isolated: globalThis.crossOriginIsolated, runs: {} };
    for (const threads of counts) {
      const model = await loadGguf(file, { threads });
      const ids = model.tokenize(prompt);
      out.runs[threads] = { info: { ...model.info }, logits: bits(model.logits(ids)),
        ids: (await model.generate(prompt, { maxTokens: tokens, temperature: 0 })).ids };
      model.free();
    }
    out.live = liveThreadWorkers();
    return out;
  }, { file: `data/lm/${FIXTURE}.gguf`, prompt: PROMPT, tokens: TOKENS, counts });
}

test('a cross-origin isolated page runs the threaded build on its main thread: same logits and tokens', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html`);
  const r = await runInPage(page, [1, 2, 3]);
  assert.equal(r.isolated, true, 'tools/serve.py serves the page cross-origin isolated');
  assert.equal(r.runs[1].info.threads, 1);
  for (const t of [2, 3]) {
    const { info } = r.runs[t];
    assert.equal(info.threads, t);
    assert.match(info.threadsWhy, new RegExp(`^${t} threads: the calling thread and ${t - 1} Worker`));
    assert.equal(info.simd, 'relaxed', 'Chromium has relaxed SIMD: rlx_llm_threads_relaxed.wasm');
    assert.equal(r.runs[t].logits, r.runs[1].logits, `${t} threads: the prompt's logits differ from one thread's`);
    assert.deepEqual(r.runs[t].ids, expected, `${t} threads: greedy ids`);
  }
  assert.deepEqual(r.runs[1].ids, expected);
  assert.equal(r.live, 0, 'free() ended every Worker');
  assert.deepEqual(problems, []);
  await page.close();
});

test('GgufWorker runs the threaded build in a Worker; generate.html?threads=2 shows it', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html?model=${FIXTURE}&threads=2&autoload=1`);
  await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('status').dataset.state), null, { timeout: 60000 });
  assert.equal(await page.$eval('#status', (el) => el.dataset.state), 'ready', await page.textContent('#error'));
  assert.equal(Number(await valueOf(page, '#i-threads')), 2);
  assert.match(await page.textContent('#i-threads'), /^2 \(2 threads: the calling thread and 1 Worker on a shared memory\)$/);
  const r = await page.evaluate(async ({ file, prompt, tokens }) => {
    const { GgufWorker } = await import('./runtime/llm.js');
    const w = new GgufWorker();
    try {
      const info = await w.load(file, { threads: 2 });
      const { ids } = await w.generate(prompt, { maxTokens: tokens, temperature: 0 });
      return { threads: info.threads, why: info.threadsWhy, ids };
    } finally {
      w.terminate?.();
    }
  }, { file: `data/lm/${FIXTURE}.gguf`, prompt: PROMPT, tokens: TOKENS });
  assert.equal(r.threads, 2, r.why);
  assert.deepEqual(r.ids, expected);
  await page.goto(`${server.url}generate.html?threads=0`);
  assert.match(await page.textContent('#error'), /URL parameter threads=0: must be a whole number from 1 to 64/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('train: true with threads 2 runs the threaded training build: the same losses and adapter; finetune.html?threads=2 shows it', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}finetune.html?model=${FIXTURE}&threads=2&autoload=1`);
  await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('status').dataset.state), null, { timeout: 60000 });
  assert.equal(await page.$eval('#status', (el) => el.dataset.state), 'ready', await page.textContent('#error'));
  assert.match(await page.textContent('#r-threads'), /^2 \(2 threads: the calling thread and 1 Worker on a shared memory\)$/);
  const r = await page.evaluate(async ({ file }) => {
    const { loadGguf } = await import('./runtime/llm.js');
    const { liveThreadWorkers } = await import('./runtime/llm_threads.js');
    const hex = async (bytes) => [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
    const out = { runs: {} };
    for (const threads of [1, 2]) {
      const model = await loadGguf(file, { train: true, threads, nCtx: 64 });
      const f = await model.finetune('The small river ran past the old mill. '.repeat(12), { seq: 24, batch: 2, steps: 2, lr: 3e-3, seed: 5, evalEvery: 1 });
      out.runs[threads] = { info: { ...model.info }, losses: f.losses, valid: f.validLosses, adapter: await hex(f.adapter) };
      model.free();
    }
    out.live = liveThreadWorkers();
    return out;
  }, { file: `data/lm/${FIXTURE}.gguf` });
  assert.equal(r.runs[2].info.threads, 2, r.runs[2].info.threadsWhy);
  assert.equal(r.runs[2].info.simd, 'relaxed', 'Chromium has relaxed SIMD: rlx_llm_train_threads_relaxed.wasm');
  assert.deepEqual(r.runs[2].losses, r.runs[1].losses);
  assert.deepEqual(r.runs[2].valid, r.runs[1].valid);
  assert.equal(r.runs[2].adapter, r.runs[1].adapter, 'adapter bytes');
  assert.equal(r.live, 0, 'free() ended every Worker');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a page served without the isolation headers falls back to the one-thread build and says why', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  // The same origin, but this page's response carries no COOP / COEP headers.
  await page.route('**/no-isolation.html', (route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>plain</title>' }));
  await page.goto(`${server.url}no-isolation.html`);
  const r = await runInPage(page, [2]);
  assert.equal(r.isolated, false);
  assert.equal(r.runs[2].info.threads, 1);
  assert.match(r.runs[2].info.threadsWhy, /not cross-origin isolated/);
  assert.deepEqual(r.runs[2].ids, expected);
  assert.deepEqual(problems, []);
  await page.close();
});

test('rlx_web: init({ threads }) on an isolated page runs the threaded build: the vision models\' training steps equal to one thread\'s', { skip: whyWeb ?? false, timeout: 60000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html`);
  const r = await page.evaluate(async () => {
    const rlx = await import('./pkg/rlx_web.js');
    const { liveThreadWorkers } = await import('./runtime/threads.js');
    const runs = {};
    const base64 = (bytes) => { // in pieces: a spread of a whole resnet's params would overflow the stack
      let text = '';
      for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192));
      return btoa(text);
    };
    for (const threads of [1, 2, 3]) {
      const rt = await rlx.default({ threads });
      const steps = {};
      for (const [model, batch] of [['mnist-mlp', 16], ['mnist-cnn', 8], ['cifar-cnn', 4], ['resnet', 2]]) {
        const bench = new rlx.VisionBench(model);
        const b = bench.synthetic_batch(7, batch);
        const out = bench.train_step_cpu(b.x, b.labels, bench.init_params(7), 0.05);
        bench.free();
        steps[model] = base64(new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
      }
      runs[threads] = { threads: rt.threads, why: rt.threadsWhy, simd: rt.simd, steps };
    }
    rlx.free();
    return { runs, live: liveThreadWorkers() };
  });
  assert.equal(r.runs[1].threads, 1);
  for (const t of [2, 3]) {
    assert.equal(r.runs[t].threads, t, r.runs[t].why);
    assert.match(r.runs[t].why, new RegExp(`^${t} threads: the calling thread and ${t - 1} Worker`));
    assert.equal(r.runs[t].simd, 'relaxed', 'Chromium has relaxed SIMD: rlx_web_threads_relaxed.wasm');
    for (const model of Object.keys(r.runs[1].steps)) {
      assert.equal(r.runs[t].steps[model], r.runs[1].steps[model], `${model}: loss and params on ${t} threads differ from one thread's`);
    }
  }
  assert.equal(r.live, 0, 'free() ended every Worker');
  assert.deepEqual(problems, []);
  await page.close();
});

test('op cases and gradient checks of tests/c on 3 threads in a page: bitwise the one-thread module\'s', { skip: whyCases ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.route('**/cases/*', (route) => {
    const name = new URL(route.request().url()).pathname.split('/').pop();
    if (name === 'case_instance.mjs') route.fulfill({ path: CASE_INSTANCE, contentType: 'text/javascript' });
    else route.fulfill({ path: CASES.find((f) => f.endsWith(`/${name}`)), contentType: 'application/wasm' });
  });
  await page.goto(`${server.url}generate.html`);
  const r = await page.evaluate(async () => {
    const runtime = { ...await import('./runtime/wasi.js'), ...await import('./runtime/threads.js') };
    const { caseInstance } = await import('./cases/case_instance.mjs');
    // One instance of an op-case module: the plain one, or the threaded one on `threads` threads (every loop split).
    const load = async (name, threads) => {
      const { e, buffer, stop } = await caseInstance(await WebAssembly.compileStreaming(fetch(`./cases/${name}.wasm`)),
        threads, runtime);
      // each case's output bits (a copy: a shared memory's view cannot be kept)
      const bits = (i) => {
        const res = e.opcase_run_case(i);
        try {
          if (e.result_status(res) !== 0) return `status ${e.result_status(res)}`;
          return Array.from(new Uint32Array(buffer(), e.result_out(res), e.result_n_out(res) >>> 0)).join();
        } finally {
          e.result_free(res);
        }
      };
      return { e, bits, stop };
    };
    // (a gradient check compiles its backward graph on 1 and on 3 threads itself and needs 3)
    const one = await load('opcases', 0), three = await load('opcases_threads', 3);
    const differ = [];
    const n = one.e.opcase_count();
    for (let i = 0; i < n; i++) if (three.bits(i) !== one.bits(i)) differ.push(`op case ${i}`);
    const grads = one.e.gradcase_count();
    for (let i = 0; i < grads; i++) {
      const g = (m) => [m.e.gradcase_check(i), m.e.gradcase_max_err(), m.e.gradcase_checked()].join();
      const [a, b] = [g(three), g(one)];
      if (a !== b) differ.push(`gradient check ${i}: ${a} (one thread ${b})`);
    }
    three.stop();
    return { n, grads, differ, live: runtime.liveThreadWorkers() };
  });
  assert.ok(r.n > 100 && r.grads > 20, `${r.n} op cases, ${r.grads} gradient checks`);
  assert.deepEqual(r.differ, [], 'on 3 threads these differ from one thread');
  assert.equal(r.live, 0, 'stop() ended every Worker');
  assert.deepEqual(problems, []);
  await page.close();
});
