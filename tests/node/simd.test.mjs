// simd.test.mjs - which build of each wasm module the loaders take
// (web/runtime/simd.js): 'auto' gives the relaxed-SIMD build exactly when
// this engine validates relaxed SIMD, 'simd128' always gives the plain
// build, 'relaxed' the relaxed one or a clear refusal, a bad value is an
// RlxError naming the option, and each module reports what it is (rlx.simd,
// the GEMM path, a language model's info.simd), also when the caller hands
// over the bytes.  make test-node runs this file twice: plainly, and with
// --experimental-wasm-relaxed-simd (Node 20), so both branches run.
// Build first: make wasm lm-fixtures
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MODULE_FILES, relaxedSimdSupported } from '../../web/runtime/simd.js';
import { loadRlx, RlxError } from '../../web/runtime/loader.js';
import { loadGguf } from '../../web/runtime/llm.js';
import init, { runtime } from '../../web/pkg/rlx_web.js';

const supported = relaxedSimdSupported();
const AUTO = supported ? 'relaxed' : 'simd128';
const GEMM = { relaxed: 'relaxed-simd', simd128: 'simd128' };
const MODEL = fileURLToPath(new URL('../../build/lm/llama-q4_0.gguf', import.meta.url));
const rlxError = (re) => (err) => err instanceof RlxError && re.test(err.message);
const REFUSED = /'relaxed': this engine does not support relaxed SIMD \(Node 20 needs --experimental-wasm-relaxed-simd\)/;

test(`the probe agrees with the relaxed modules (relaxed SIMD here: ${supported})`, () => {
  for (const kind of ['web', 'llm', 'llmTrain', 'llmThreads', 'llmTrainThreads']) {
    assert.equal(WebAssembly.validate(readFileSync(MODULE_FILES[kind].relaxed)), supported, `${kind} relaxed build`);
    assert.equal(WebAssembly.validate(readFileSync(MODULE_FILES[kind].simd128)), true, `${kind} SIMD128 build`);
  }
});

test(`loadRlx: auto takes the ${AUTO} build, simd128 the plain one, relaxed ${supported ? 'the relaxed one' : 'is refused'}`, async () => {
  const auto = await loadRlx();
  assert.equal(auto.simd, AUTO);
  assert.equal(auto.gemmPath(), GEMM[AUTO]);
  const plain = await loadRlx(undefined, { simd: 'simd128' });
  assert.equal(plain.simd, 'simd128');
  assert.equal(plain.gemmPath(), 'simd128');
  if (supported) {
    const relaxed = await loadRlx(undefined, { simd: 'relaxed' });
    assert.deepEqual([relaxed.simd, relaxed.gemmPath()], ['relaxed', 'relaxed-simd']);
    // Bytes handed over are reported by what they are, whatever the option says.
    const given = await loadRlx(readFileSync(MODULE_FILES.web.relaxed), { simd: 'simd128' });
    assert.deepEqual([given.simd, given.gemmPath()], ['relaxed', 'relaxed-simd']);
  } else {
    await assert.rejects(loadRlx(undefined, { simd: 'relaxed' }), rlxError(new RegExp(`^loadRlx: opts\\.simd ${REFUSED.source}`)));
  }
  const given = await loadRlx(readFileSync(MODULE_FILES.web.simd128));
  assert.deepEqual([given.simd, given.gemmPath()], ['simd128', 'simd128']);
  for (const bad of ['sse', '', null, 1]) {
    await assert.rejects(loadRlx(undefined, { simd: bad }), rlxError(/^loadRlx: opts\.simd must be 'auto', 'relaxed', 'simd128', got /));
  }
});

test('the two builds compute the same product (within float rounding)', async () => {
  const builds = [await loadRlx(undefined, { simd: 'simd128' })];
  if (supported) builds.push(await loadRlx(undefined, { simd: 'relaxed' }));
  const M = 37, K = 300, N = 29; // a few register blocks with edges on every side
  const a = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 0.37));
  const b = Float32Array.from({ length: K * N }, (_, i) => Math.cos(i * 0.11));
  const outs = builds.map((rt) => {
    const g = rt.graph();
    const y = g.op('matmul', [g.input('a', [M, K]), g.param('b', [K, N])], [0, 0]);
    const s = g.compile([y]);
    g.free();
    s.setParam('b', b);
    s.setInput('a', a);
    s.run();
    const out = s.output(0);
    s.free();
    return out;
  });
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let want = 0;
      for (let k = 0; k < K; k++) want += a[i * K + k] * b[k * N + j];
      for (const [n, out] of outs.entries()) {
        assert.ok(Math.abs(out[i * N + j] - want) <= 1e-4 * (1 + Math.abs(want)), `build ${n}, C[${i}, ${j}] = ${out[i * N + j]}, want ${want}`);
      }
    }
  }
});

test(`loadGguf: info.simd is the build loaded (auto: ${AUTO})`, async () => {
  const simds = [undefined, 'simd128', ...(supported ? ['relaxed'] : [])];
  const ids = [];
  for (const simd of simds) {
    const model = await loadGguf(MODEL, { simd });
    try {
      assert.equal(model.info.simd, simd ?? AUTO);
      ids.push((await model.generate('Once upon a time', { maxTokens: 6, temperature: 0 })).ids);
    } finally {
      model.free();
    }
  }
  for (const other of ids.slice(1)) assert.deepEqual(other, ids[0], 'greedy tokens of the two builds');
  if (!supported) await assert.rejects(loadGguf(MODEL, { simd: 'relaxed' }), rlxError(new RegExp(`^loadGguf: options\\.simd ${REFUSED.source}`)));
  await assert.rejects(loadGguf(MODEL, { simd: 'avx' }), rlxError(/^loadGguf: options\.simd must be 'auto', 'relaxed', 'simd128', got string avx/));
});

test('rlx_web.js init({ simd }) checks the option and loads that build', async () => {
  await assert.rejects(init({ simd: 'fast' }), rlxError(/^init: simd must be 'auto', 'relaxed', 'simd128', got string fast/));
  const rt = await init({ simd: 'simd128' });
  assert.equal(rt.simd, 'simd128');
  assert.equal(runtime().gemmPath(), 'simd128');
});
