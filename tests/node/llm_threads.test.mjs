// llm_threads.test.mjs - the language-model module's threaded build
// (web/pkg/rlx_llm_threads.wasm: helper Workers on a shared memory,
// web/runtime/llm_threads.js) in Node, on the seeded test models of
// build/lm/ (make lm-fixtures): the logits of a prompt and of greedy steps
// after it, and the greedy ids of a generation, are bitwise the same on 1
// (the threaded build with no Worker), 2 and 3 threads and equal to the
// one-thread build's; loadGguf picks the build and says why in info; a
// model loaded and freed 30 times (or freed while it generates) leaves no
// Worker running, and one never freed (or trapped) does not keep Node from
// exiting; without a shared memory loadGguf falls back to one thread with the
// reason; bad threads options are RlxErrors naming loadGguf and
// the option; both threaded builds stay within the one-thread module's
// budget (tests/common/llm_budget.mjs).  RLX_TEST_SIMD=relaxed runs it on the relaxed-SIMD
// builds (Node 20 needs --experimental-wasm-relaxed-simd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';
import { MODULE_FILES } from '../../web/runtime/simd.js';
import { liveThreadWorkers } from '../../web/runtime/llm_threads.js';
import { LLM_BUDGET as BUDGET } from '../common/llm_budget.mjs';

const SIMD = process.env.RLX_TEST_SIMD ?? 'simd128';
if (!['simd128', 'relaxed'].includes(SIMD)) throw new Error(`RLX_TEST_SIMD must be simd128 or relaxed, got ${SIMD}`);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const THREADED = MODULE_FILES.llmThreads[SIMD];
const fixture = (name) => `${ROOT}build/lm/${name}.gguf`;
// A prompt long enough for the prompt path's tiles to split, from ids every fixture has.
const PROMPT = Array.from({ length: 48 }, (_, i) => 3 + ((i * 37) % 500));
const STEPS = 4;

const bits = (f32) => Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength).toString('base64');
const argmax = (a) => a.reduce((best, v, i) => (v > a[best] ? i : best), 0);

/** What a model computes: the prompt's logits, STEPS greedy steps' logits, and a greedy generation's ids. */
async function run(name, options) {
  const model = await loadGguf(fixture(name), { simd: SIMD, ...options });
  try {
    const logits = [model.logits(PROMPT)];
    for (let s = 0; s < STEPS; s++) logits.push(model.eval([argmax(logits.at(-1))]));
    const { ids } = await model.generate(PROMPT, { maxTokens: 8, temperature: 0 });
    return { info: model.info, logits: logits.map(bits), ids };
  } finally {
    model.free();
  }
}

/** Waits (a few seconds at most) until every helper Worker has exited. */
async function noWorkerLeft() {
  for (let i = 0; i < 200 && liveThreadWorkers() > 0; i++) await new Promise((r) => setTimeout(r, 25));
  assert.equal(liveThreadWorkers(), 0, 'Workers of freed models are still running');
}

const rlxError = (re) => (err) => {
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, re);
  return true;
};

for (const name of ['qwen2-q4_0', 'llama-q8_0', 'qwen3-q4_k']) {
  test(`${name}: logits and greedy ids bitwise the same on 1, 2 and 3 threads as the one-thread build`, async () => {
    const ref = await run(name, { threads: 1 });
    assert.equal(ref.info.threads, 1);
    assert.equal(ref.info.threadsWhy, 'options.threads is 1');
    const runs = { 'threaded build, 1 thread': await run(name, { threads: 1, wasm: THREADED }) };
    for (const threads of [2, 3]) runs[`${threads} threads`] = await run(name, { threads });
    for (const [what, r] of Object.entries(runs)) {
      assert.deepEqual(r.ids, ref.ids, `${what}: greedy ids`);
      r.logits.forEach((l, i) => assert.equal(l, ref.logits[i], `${what}: logits ${i ? `of step ${i}` : 'of the prompt'}`));
      assert.equal(r.info.simd, SIMD);
    }
    assert.equal(runs['2 threads'].info.threads, 2);
    assert.match(runs['2 threads'].info.threadsWhy, /^2 threads: the calling thread and 1 Worker/);
    assert.equal(runs['3 threads'].info.threads, 3);
    assert.equal(runs['threaded build, 1 thread'].info.threads, 1);
    await noWorkerLeft();
  });
}

test('the default is half the logical cores (at least 1); the threaded build only with more than 1', async () => {
  const want = Math.max(1, Math.floor(availableParallelism() / 2));
  const model = await loadGguf(fixture('qwen2-q4_0'), { simd: SIMD });
  assert.equal(model.info.threads, want);
  if (want === 1) assert.equal(model.info.threadsWhy, 'options.threads is 1');
  model.free();
  await noWorkerLeft();
});

test('a model loaded and freed 30 times, or freed while it generates, leaves no Worker running', async () => {
  for (let i = 0; i < 30; i++) {
    const model = await loadGguf(fixture('qwen2-q4_0'), { simd: SIMD, threads: 2 + (i % 2) });
    assert.equal(liveThreadWorkers(), 1 + (i % 2));
    if (i % 3 === 0) model.logits(PROMPT.slice(0, 8));
    model.free();
    model.free(); // harmless twice
    await noWorkerLeft();
  }
  const model = await loadGguf(fixture('qwen2-q4_0'), { simd: SIMD, threads: 3 });
  let pieces = 0;
  const r = await model.generate(PROMPT, { maxTokens: 16, temperature: 0, onToken: () => { if (pieces++ === 0) model.free(); } });
  assert.ok(r.ids.length >= 1 && pieces >= 1, 'the generation ran');
  assert.equal(model.handle, 0, 'the model was freed once the generation stopped');
  await noWorkerLeft();
});

test('a threaded model never freed, even a trapped one, does not keep Node from exiting', () => {
  const script = `import { loadGguf } from ${JSON.stringify(new URL('../../web/runtime/llm.js', import.meta.url).href)};
    const m = await loadGguf(${JSON.stringify(fixture('qwen2-q4_0'))}, { simd: ${JSON.stringify(SIMD)}, threads: 3 });
    const t = await loadGguf(${JSON.stringify(fixture('qwen2-q4_0'))}, { simd: ${JSON.stringify(SIMD)}, threads: 2 });
    try { t.mod.call('rlx_llm_position', 0xfffffff0); } catch {}
    console.log(m.info.threads + t.info.threads);`;
  const out = execFileSync(process.execPath, [...process.execArgv, '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60_000 });
  assert.equal(out.trim(), '5');
});

test('where no shared memory can be had, loadGguf falls back to the one-thread build and says why', async () => {
  const Memory = WebAssembly.Memory;
  WebAssembly.Memory = function (desc) {
    if (desc?.shared) throw new RangeError('WebAssembly.Memory(): could not allocate memory');
    return new Memory(desc);
  };
  try {
    const model = await loadGguf(fixture('qwen2-q4_0'), { simd: SIMD, threads: 2 });
    assert.equal(model.info.threads, 1);
    assert.equal(model.info.threadsWhy, "cannot reserve the threaded build's shared memory (up to 4 GiB) " +
      '(WebAssembly.Memory(): could not allocate memory); one thread runs');
    assert.equal(model.tokenize('Hello').length > 0, true);
    model.free();
    await assert.rejects(loadGguf(fixture('qwen2-q4_0'), { simd: SIMD, threads: 2, wasm: THREADED }),
      rlxError(/^loadGguf: cannot reserve the threaded build's shared memory/), 'no fallback from an explicit options.wasm');
  } finally {
    WebAssembly.Memory = Memory;
  }
  assert.equal(liveThreadWorkers(), 0);
});

test('bad threads options are RlxErrors naming loadGguf and options.threads', async () => {
  for (const bad of [0, -1, 1.5, 65, '2', NaN, null, true]) {
    await assert.rejects(loadGguf(fixture('qwen2-q4_0'), { simd: SIMD, threads: bad }),
      rlxError(/^loadGguf: options\.threads must be an integer from 1 to 64, got /), `threads ${String(bad)}`);
  }
  assert.equal(liveThreadWorkers(), 0);
});

test(`the threaded builds are within the one-thread module's ${BUDGET.toLocaleString('en')}-byte budget and valid`, () => {
  for (const url of Object.values(MODULE_FILES.llmThreads)) {
    const file = fileURLToPath(url);
    const bytes = statSync(file).size;
    assert.ok(bytes <= BUDGET, `${file} is ${bytes} bytes, ${bytes - BUDGET} over the ${BUDGET}-byte budget`);
    if (url === THREADED) assert.ok(WebAssembly.validate(readFileSync(file)), `${file} does not validate`);
  }
});
