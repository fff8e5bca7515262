// llm_wasm.test.mjs - GGUF language models through web/runtime/llm.js and
// web/pkg/rlx_llm.wasm in Node, on the seeded test models of build/lm/
// (make lm-fixtures): tokenization equals llama.cpp's
// (tests/llama_ref/expected/), greedy generation equals the native CLI's
// (build/rlx generate) and llama.cpp's at every step its top-two gap is
// clear (> 0.05), the streamed text equals detokenize of the ids, every
// kind of source loads with progress, bad arguments are RlxErrors naming
// the function and the argument, a file past the wasm32 budget is refused
// before anything is read, and the module stays within its size budget.
// RLX_TEST_SIMD=relaxed runs all of it on the relaxed-SIMD build
// (rlx_llm_relaxed.wasm; Node 20 needs --experimental-wasm-relaxed-simd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, openAsBlob, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadGguf as loadGgufAny, RlxError } from '../../web/runtime/llm.js';
import { MODULE_FILES } from '../../web/runtime/simd.js';
import { FATAL_STATUS } from '../../web/runtime/loader.js';
import { LLM_BUDGET as BUDGET } from '../common/llm_budget.mjs';

// The build under test; every load below asks for it (a bad options argument is passed on as it is).
const SIMD = process.env.RLX_TEST_SIMD ?? 'simd128';
if (!['simd128', 'relaxed'].includes(SIMD)) throw new Error(`RLX_TEST_SIMD must be simd128 or relaxed, got ${SIMD}`);
const loadGguf = (source, options) => loadGgufAny(source,
  options === undefined || (typeof options === 'object' && options !== null && !Array.isArray(options)) ? { simd: SIMD, ...options } : options);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WASM = fileURLToPath(MODULE_FILES.llm[SIMD]);
const CLI = `${ROOT}build/rlx`;
const GAP = 0.05;
// The smallest fixture of each arch and tokenizer: SPM (llama), byte-level BPE (qwen2, qwen3).
const FIXTURES = ['llama-q4_0', 'qwen2-q4_0', 'qwen3-q4_k'];
// Greedy ids against llama.cpp's: f16 weights, where both compute in float.  (On the
// quantized types llama.cpp's dot products quantize the activations to Q8 first, which
// moves its logits by more than the 0.05 gap; there the reference is the native CLI.)
const FLOAT_FIXTURES = ['llama-f16', 'qwen2-f16', 'qwen3-f16'];
const fixture = (name) => `${ROOT}build/lm/${name}.gguf`;
const expected = (name) => JSON.parse(readFileSync(`${ROOT}tests/llama_ref/expected/${name}.json`, 'utf8'));

/** An RlxError whose message matches re. */
const rlxError = (re) => (err) => {
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, re);
  return true;
};

/** The native CLI's greedy ids after the prompt ids (build/rlx generate --ids: a last JSON line {prompt_ids, ids}). */
function nativeIds(file, promptIds, n, extra = []) {
  const out = execFileSync(CLI, ['generate', '--model', file, '--prompt-ids', promptIds.join(','), '--max-tokens', String(n),
    '--temperature', '0', '--ids', ...extra], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const last = JSON.parse(out.trimEnd().split('\n').at(-1));
  assert.deepEqual(last.prompt_ids, promptIds);
  return last.ids;
}

test('the SDK exports loadGguf (web/rlx.js), and tests/types/llm_check.ts type-checks against web/rlx.d.ts (tsc --strict)', async () => {
  const sdk = await import('../../web/rlx.js');
  const model = await sdk.loadGguf(fixture('qwen2-q4_0'), { simd: SIMD });
  assert.equal(model.info.arch, 'qwen2');
  assert.equal(model.info.simd, SIMD);
  assert.deepEqual((await model.generate('Hi', { maxTokens: 3, temperature: 0 })).ids.length, 3);
  model.free();
  try {
    execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '--noEmit', '--strict', '--target', 'es2022',
      '--module', 'esnext', '--moduleResolution', 'bundler', '--lib', 'es2022,dom', 'tests/types/llm_check.ts'],
    { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  }
});

test('the native CLI is built (make build/rlx)', () => assert.ok(existsSync(CLI), `missing ${CLI}`));

test(`${SIMD === 'relaxed' ? 'rlx_llm_relaxed' : 'rlx_llm'}.wasm is within its ${BUDGET.toLocaleString('en')}-byte budget and valid`, () => {
  const bytes = statSync(WASM).size;
  assert.ok(bytes <= BUDGET, `${WASM} is ${bytes} bytes, ${bytes - BUDGET} over its ${BUDGET}-byte budget`);
  assert.ok(WebAssembly.validate(readFileSync(WASM)), `${WASM} does not validate${SIMD === 'relaxed' ? ' (Node 20 needs --experimental-wasm-relaxed-simd)' : ''}`);
});

for (const name of [...FIXTURES, ...FLOAT_FIXTURES]) {
  const float = FLOAT_FIXTURES.includes(name);
  test(`${name}: tokenize = llama.cpp, greedy = ${float ? "llama.cpp's where its gap is clear" : "the native CLI's"}, stream = detokenize`, async (t) => {
    const ref = expected(name);
    const model = await loadGguf(fixture(name));
    try {
      assert.equal(model.info.arch, ref.arch);
      assert.equal(model.info.nVocab, ref.vocab);
      for (const c of ref.tokenize) {
        assert.deepEqual(model.tokenize(c.text), c.ids, `tokenize ${JSON.stringify(c.text)}`);
        if (c.ids_text) assert.deepEqual(model.tokenize(c.text, { special: false }), c.ids_text, `tokenize ${JSON.stringify(c.text)} as text`);
      }
      let compared = 0; // greedy steps checked against llama.cpp
      for (const g of ref.generate.slice(0, 2)) {
        assert.deepEqual(model.tokenize(g.prompt), g.prompt_ids);
        const pieces = [];
        const r = await model.generate(g.prompt_ids, { maxTokens: 8, temperature: 0, onToken: (text, id) => { pieces.push([text, id]); } });
        assert.ok(r.ids.length > 0 && r.ids.length <= 8);
        assert.equal(r.stoppedBy, r.ids.length === 8 ? 'maxTokens' : 'eog');
        assert.deepEqual(r.ids, nativeIds(fixture(name), g.prompt_ids, 8), `${JSON.stringify(g.prompt)}: wasm vs native`);
        if (float) {
          // llama.cpp: the same ids up to the first step whose top-two gap is small (rounding may decide it).
          const clear = g.gap.findIndex((gap) => gap <= GAP);
          const upTo = Math.min(r.ids.length, clear < 0 ? g.ids.length : clear);
          compared += upTo;
          assert.deepEqual(r.ids.slice(0, upTo), g.ids.slice(0, upTo), `${JSON.stringify(g.prompt)}: wasm vs llama.cpp (first ${upTo} steps)`);
        }
        assert.deepEqual(pieces.map(([, id]) => id), r.ids, 'onToken saw every id');
        assert.equal(pieces.map(([text]) => text).join(''), r.text);
        // The streamed text is detokenize(ids), bytes that are not UTF-8 (the random models make
        // some) decoded alike: one U+FFFD per bad byte.  SentencePiece's detokenize drops the
        // first piece's leading space, as llama.cpp's does.
        const detok = model.detokenize(r.ids);
        assert.ok(r.text === detok || (r.text.startsWith(' ') && r.text.slice(1) === detok),
          `the streamed text is detokenize(ids): ${JSON.stringify(r.text)} vs ${JSON.stringify(detok)}`);
        assert.equal(r.stats.promptTokens, g.prompt_ids.length);
        assert.equal(r.stats.generatedTokens, r.ids.length);
        // The same prompt as text gives the same tokens.
        const again = await model.generate(g.prompt, { maxTokens: r.ids.length, temperature: 0 });
        assert.deepEqual(again.ids, r.ids);
        t.diagnostic(`${name} ${JSON.stringify(g.prompt)}: prompt ${r.stats.promptTokensPerSecond?.toFixed(0)} tokens/s, ` +
          `generation ${r.stats.generateTokensPerSecond?.toFixed(0)} tokens/s`);
      }
      if (float) assert.ok(compared >= 8, `${name}: ${compared} greedy steps had a clear gap to compare`);
    } finally {
      model.free();
    }
  });
}

// Every other fixture (each arch in every weight type, the tied output, the exported
// transformer): it loads, tokenizes as llama.cpp does, and its greedy tokens are the native CLI's.
const ALL_FIXTURES = readdirSync(`${ROOT}tests/llama_ref/expected`).map((f) => f.replace(/\.json$/, '')).sort();
test(`every fixture (${ALL_FIXTURES.length}) loads in wasm, tokenizes as llama.cpp and decodes greedily as the native CLI`, async () => {
  assert.ok(ALL_FIXTURES.length >= 36, `${ALL_FIXTURES.length} reference files`);
  for (const name of ALL_FIXTURES.filter((n) => !FIXTURES.includes(n) && !FLOAT_FIXTURES.includes(n))) {
    const ref = expected(name);
    const model = await loadGguf(fixture(name));
    try {
      for (const c of ref.tokenize) assert.deepEqual(model.tokenize(c.text), c.ids, `${name}: tokenize ${JSON.stringify(c.text)}`);
      const g = ref.generate[0];
      const r = await model.generate(g.prompt_ids, { maxTokens: 6, temperature: 0 });
      assert.deepEqual(r.ids, nativeIds(fixture(name), g.prompt_ids, 6), `${name}: wasm vs native`);
    } finally {
      model.free();
    }
  }
});

test('xq8: 8-bit activations decode greedily as the native CLI --xq8 (int8 rows for q4_0, rounded x for q8_0), info.xq8', async () => {
  for (const name of ['llama-q4_0', 'qwen2-q4_0', 'qwen3-q8_0', 'llama-q8_0', 'llama-tied-q8_0']) {
    const g = expected(name).generate[0];
    const [model, plain] = [await loadGguf(fixture(name), { xq8: true }), await loadGguf(fixture(name))];
    try {
      assert.equal(model.info.xq8, true);
      assert.equal(plain.info.xq8, false);
      const r = await model.generate(g.prompt_ids, { maxTokens: 8, temperature: 0 });
      assert.deepEqual(r.ids, nativeIds(fixture(name), g.prompt_ids, 8, ['--xq8']), `${name}: wasm vs native, xq8`);
      // the logits move by the rounding: not equal to f32's, not far
      const [a, b] = [model.logits(g.prompt_ids), plain.logits(g.prompt_ids)];
      let moved = 0, scale = 0;
      for (let i = 0; i < a.length; i++) moved = Math.max(moved, Math.abs(a[i] - b[i])), scale = Math.max(scale, Math.abs(b[i]));
      assert.ok(moved > 1e-4 && moved < 0.05 * scale, `${name}: xq8 moved the logits by ${moved} (scale ${scale})`);
    } finally {
      model.free();
      plain.free();
    }
  }
  await assert.rejects(loadGguf(fixture('llama-q4_0'), { xq8: 1 }), rlxError(/^loadGguf: options\.xq8 must be true or false, got number 1/));
  await assert.rejects(loadGguf(fixture('llama-q4_0'), { xq8: true, backend: 'webgl' }),
    rlxError(/^loadGguf: options\.xq8 \(8-bit activations\) runs on the CPU only; backend 'webgl'/));
});

test('generate is also an async iterable of { text, id }: the pieces join to the result, break stops it; logits(); backend', async () => {
  const model = await loadGguf(fixture('llama-q4_0'), { backend: 'cpu' });
  try {
    const whole = await model.generate('The miller', { maxTokens: 10, temperature: 0 });
    assert.equal(whole.ids.length, 10);
    const pieces = [];
    const run = model.generate('The miller', { maxTokens: 10, temperature: 0 });
    for await (const piece of run) pieces.push(piece);
    assert.deepEqual(pieces.map((p) => p.id), whole.ids);
    assert.equal(pieces.map((p) => p.text).join(''), whole.text);
    assert.deepEqual((await run).ids, whole.ids, 'the same object is the Promise of the result');
    const early = model.generate('The miller', { maxTokens: 10, temperature: 0 });
    let seen = 0;
    for await (const _ of early) if (++seen === 3) break;
    const stopped = await early;
    assert.equal(stopped.stoppedBy, 'abort');
    assert.ok(stopped.ids.length >= 3 && stopped.ids.length < 10, `${stopped.ids.length} ids after a break at 3`);
    // A failing generation rejects the Promise and throws from the loop.
    await assert.rejects(model.generate('x', { topP: 2 }), rlxError(/GgufModel.generate: options.topP/));
    await assert.rejects(async () => { for await (const _ of model.generate('x', { topP: 2 })); }, rlxError(/options.topP/));
    // logits(ids): a fresh context holding ids, the logits after the last.
    const ids = model.tokenize('The miller');
    const a = model.logits(ids);
    assert.equal(model.position, ids.length);
    model.eval([5]);
    assert.deepEqual(model.logits(ids), a);
    assert.throws(() => model.logits([]), rlxError(/GgufModel.logits: ids is empty/));
  } finally {
    model.free();
  }
  // Node has no navigator.gpu and no WebGL2: 'webgpu' and 'webgl' are refused with the reason (tests/node/llm_webgpu.test.mjs
  // runs WebGPU on Dawn, tests/browser/llm_gpu.test.mjs both in Chromium).
  await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'webgpu' }),
    rlxError(/options.backend 'webgpu': WebGPU cannot run the model here: WebGPU is not available here \(no navigator.gpu\)/));
  await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'webgl' }),
    rlxError(/^loadGguf: options.backend 'webgl': WebGL2 cannot run the model here: WebGL2 is not available here \(no OffscreenCanvas or document\)/));
  await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'tpu' }), rlxError(/options.backend must be 'auto', 'cpu', 'webgpu', 'webgl'/));
});

test('sampling: a seed repeats its tokens, stop strings end the text, onToken false and a signal stop', async () => {
  const model = await loadGguf(fixture('llama-q4_0'));
  try {
    const opts = { maxTokens: 12, temperature: 0.9, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1.1, repeatLastN: 16 };
    const a = await model.generate('In the morning', { ...opts, seed: 7 });
    const b = await model.generate('In the morning', { ...opts, seed: 7 });
    const c = await model.generate('In the morning', { ...opts, seed: 2n ** 63n + 5n });
    assert.deepEqual(a.ids, b.ids);
    assert.equal(a.text, b.text);
    assert.equal(c.ids.length, 12);
    // A stop string from the greedy text: the text ends before it.
    const full = await model.generate('In the morning', { maxTokens: 16, temperature: 0 });
    const cut = [...full.text].slice(2, 4).join('');
    if (cut.trim()) {
      const s = await model.generate('In the morning', { maxTokens: 16, temperature: 0, stop: [cut] });
      assert.equal(s.stoppedBy, 'stop');
      assert.equal(s.text, full.text.slice(0, full.text.indexOf(cut)));
    }
    let n = 0;
    const cb = await model.generate('In the morning', { maxTokens: 16, temperature: 0, onToken: () => ++n < 3 });
    assert.equal(cb.stoppedBy, 'callback');
    assert.equal(cb.ids.length, 3);
    const ac = new AbortController();
    ac.abort();
    const ab = await model.generate('In the morning', { maxTokens: 16, signal: ac.signal });
    assert.equal(ab.stoppedBy, 'abort');
    assert.deepEqual(ab.ids, []);
    // eval and position: the context is what was evaluated.
    model.reset();
    assert.equal(model.position, 0);
    const logits = model.eval(model.tokenize('The miller'));
    assert.equal(logits.length, model.info.nVocab);
    assert.equal(model.position, model.tokenize('The miller').length);
    assert.ok(logits.every(Number.isFinite));
  } finally {
    model.free();
  }
});

test('sources: path, file: URL, bytes, ArrayBuffer, Blob (stream() or slice()), Response (with and without a length) load, with progress', async () => {
  const file = fixture('qwen3-q4_k');
  const bytes = readFileSync(file);
  const blob = await openAsBlob(file);
  const sources = {
    path: file,
    fileUrl: pathToFileURL(file),
    uint8: new Uint8Array(bytes),
    arrayBuffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    blob,
    blobNoStream: Object.defineProperty(blob.slice(0), 'stream', { value: undefined }), // read with slice()
    response: new Response(blob.stream(), { headers: { 'content-length': String(bytes.length) } }),
    responseNoLength: new Response(blob.stream()),
  };
  let ref = null;
  for (const [kind, source] of Object.entries(sources)) {
    const seen = [];
    const model = await loadGguf(source, { nCtx: 64, onProgress: (p) => seen.push(p) });
    try {
      assert.equal(model.info.nCtx, 64, kind);
      assert.equal(model.info.fileBytes, bytes.length, kind);
      const last = seen.at(-1);
      assert.equal(last.loaded, bytes.length, `${kind}: progress reaches the file's size`);
      assert.equal(last.total, kind === 'responseNoLength' ? null : bytes.length, kind);
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].loaded >= seen[i - 1].loaded, `${kind}: progress never goes back`);
      const ids = model.tokenize('Hello world');
      ref ??= ids;
      assert.deepEqual(ids, ref, kind);
    } finally {
      model.free();
    }
  }
});

test('a file past the wasm32 budget (3.5 GiB) is refused before it is read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlx-llm-'));
  try {
    const big = join(dir, 'big.gguf');
    writeFileSync(big, '');
    truncateSync(big, Math.floor(3.6 * 2 ** 30)); // sparse: no disk space, never read
    let progress = 0;
    await assert.rejects(loadGguf(big, { onProgress: () => progress++ }),
      rlxError(/^loadGguf: .*big\.gguf is 3865470566 bytes \(3\.60 GiB\), more than the 3\.50 GiB a wasm32 module can hold/));
    assert.equal(progress, 0, 'nothing was read');
    const body = new ReadableStream({ pull() { throw new Error('the body must not be read'); } });
    await assert.rejects(loadGguf(new Response(body, { headers: { 'content-length': String(2 ** 32) } })),
      rlxError(/is 4294967296 bytes \(4\.00 GiB\), more than the 3\.50 GiB .*RLX_GGUF_WASM32_DATA_BUDGET/));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a trap inside the module is a fatal RlxError (the status rlx_web.js uses), and the dead instance refuses work', async () => {
  const model = await loadGguf(fixture('llama-q4_0'));
  let err;
  try {
    model.mod.call('rlx_llm_position', 0xfffffff0); // reads far outside wasm memory: traps (the public API never passes this)
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err}`);
  assert.equal(err.status, FATAL_STATUS);
  assert.equal(err.statusName, 'fatal');
  assert.ok(err.cause instanceof WebAssembly.RuntimeError, 'the trap is kept as the cause');
  assert.match(err.message, /fatal error inside the wasm module \(in rlx_llm_position\).*load the model again/);
  assert.throws(() => model.tokenize('x'), (e) => e instanceof RlxError && e.status === FATAL_STATUS && /fatal error earlier/.test(e.message));
  const fresh = await loadGguf(fixture('llama-q4_0')); // a new instance works
  assert.ok(fresh.tokenize('Hello').length > 0);
  fresh.free();
});

test('bad arguments are RlxErrors naming the function and the argument', async () => {
  await assert.rejects(loadGguf(42), rlxError(/^loadGguf: source must be a URL or path, a File or Blob, a Response/));
  await assert.rejects(loadGguf(''), rlxError(/^loadGguf: source is an empty string/));
  await assert.rejects(loadGguf(fixture('llama-q4_0'), null), rlxError(/^loadGguf: options must be an object/));
  await assert.rejects(loadGguf(fixture('llama-q4_0'), { nCtx: -1 }), rlxError(/^loadGguf: options\.nCtx must be an integer/));
  await assert.rejects(loadGguf(fixture('llama-q4_0'), { onProgress: 1 }), rlxError(/^loadGguf: options\.onProgress must be a function/));
  await assert.rejects(loadGguf(`${ROOT}build/lm/no-such-model.gguf`), rlxError(/^loadGguf: cannot read .*no-such-model\.gguf: ENOENT/));
  await assert.rejects(loadGguf(new Uint8Array(0)), rlxError(/^loadGguf: bytes is empty/));
  await assert.rejects(loadGguf(new TextEncoder().encode('not a gguf file at all')), (err) => err instanceof RlxError && err.status < 0 && /^loadGguf: bytes: /.test(err.message));
  const truncated = readFileSync(fixture('llama-q4_0')).subarray(0, 100_000);
  await assert.rejects(loadGguf(truncated), (err) => err instanceof RlxError && /^loadGguf: bytes: /.test(err.message));

  const model = await loadGguf(fixture('llama-q4_0'));
  const n = model.info.nVocab;
  assert.throws(() => model.tokenize(5), rlxError(/^GgufModel\.tokenize: text must be a string/));
  assert.throws(() => model.tokenize('x', { addBos: 1 }), rlxError(/^GgufModel\.tokenize: options\.addBos must be true, false or undefined/));
  assert.throws(() => model.tokenize('x', 'special'), rlxError(/^GgufModel\.tokenize: options must be an object/));
  assert.throws(() => model.detokenize('1,2'), rlxError(/^GgufModel\.detokenize: ids must be an Array or Int32Array/));
  assert.throws(() => model.detokenize([1, n]), rlxError(new RegExp(`^GgufModel\\.detokenize: ids\\[1\\] must be a token id from 0 to ${n - 1}, got number ${n}`)));
  assert.throws(() => model.eval([]), rlxError(/^GgufModel\.eval: ids is empty/));
  const bad = [
    [42, /prompt must be a string or an Array of token ids/],
    [[], /prompt is empty/],
    [[0.5], /prompt\[0\] must be a token id/],
  ];
  for (const [prompt, re] of bad) await assert.rejects(model.generate(prompt), rlxError(new RegExp(`^GgufModel\\.generate: ${re.source}`)));
  const badOptions = {
    maxTokens: [-1, /options\.maxTokens must be an integer from 0/],
    temperature: [Number.NaN, /options\.temperature must be a number >= 0/],
    topK: [1.5, /options\.topK must be an integer/],
    topP: [2, /options\.topP must be a number from 0 to 1/],
    minP: [-0.1, /options\.minP must be a number from 0 to 1/],
    repeatPenalty: [0, /options\.repeatPenalty must be a number > 0/],
    repeatLastN: [-2, /options\.repeatLastN must be an integer from -1/],
    seed: [-1, /options\.seed must be an integer from 0 to 2\^53 - 1 or a BigInt/],
    stop: ['\n', /options\.stop must be an Array of strings/],
    onToken: ['print', /options\.onToken must be a function/],
    signal: [{}, /options\.signal must be an AbortSignal/],
    maxTokenz: [3, /unknown option maxTokenz/],
  };
  for (const [key, [value, re]] of Object.entries(badOptions)) {
    await assert.rejects(model.generate('Hi', { [key]: value }), rlxError(new RegExp(`^GgufModel\\.generate: ${re.source}`)), key);
  }
  await assert.rejects(model.generate('Hi', { stop: ['ok', ''] }), rlxError(/^GgufModel\.generate: options\.stop\[1\] must be a non-empty string/));
  await assert.rejects(model.generate('Hi', { seed: 2n ** 64n }), rlxError(/options\.seed/));
  // One generation at a time; free() during one ends it.
  // (reset() is tried before anything is awaited: a small model's 64 tokens
  // can be done by then; generate() takes the model when called, so the
  // second one is refused however fast the first runs.)
  const running = model.generate('Hi', { maxTokens: 64, onToken: () => {} });
  assert.throws(() => model.reset(), rlxError(/^GgufModel\.reset: a generation is running/));
  await assert.rejects(model.generate('Hi'), rlxError(/^GgufModel\.generate: a generation is already running/));
  model.free();
  const r = await running;
  assert.ok(['abort', 'maxTokens', 'eog'].includes(r.stoppedBy));
  assert.throws(() => model.tokenize('x'), rlxError(/^GgufModel\.tokenize: the model was freed/));
  await assert.rejects(model.generate('x'), rlxError(/^GgufModel\.generate: the model was freed/));
  model.free(); // harmless twice
});
