// gradcases.test.mjs - the gradient checks (tests/c/grad_cases.c) and the
// training-step models (tests/c/grad_train.c) run inside
// build/wasm-tests/opcases.wasm: every rule agrees with finite differences
// in wasm too, and every optimizer lowers the loss of the MLP and the CNN.
// RLX_TEST_SIMD=relaxed runs them in the relaxed-SIMD build
// (build/wasm-tests/opcases_relaxed.wasm; Node 20 needs
// --experimental-wasm-relaxed-simd).
// Build first: make wasm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WasiShim } from '../../web/runtime/wasi.js';

const SIMD = process.env.RLX_TEST_SIMD ?? 'simd128';
if (!['simd128', 'relaxed'].includes(SIMD)) throw new Error(`RLX_TEST_SIMD must be simd128 or relaxed, got ${SIMD}`);
const WASM = new URL(`../../build/wasm-tests/opcases${SIMD === 'relaxed' ? '_relaxed' : ''}.wasm`, import.meta.url);
const TAG = SIMD === 'relaxed' ? 'relaxed ' : '';

async function load() {
  const bytes = readFileSync(WASM);
  if (!WebAssembly.validate(bytes)) {
    throw new Error(`${WASM.pathname} does not validate here${SIMD === 'relaxed' ? ' (relaxed SIMD: Node 20 needs --experimental-wasm-relaxed-simd)' : ''}`);
  }
  const module = await WebAssembly.compile(bytes);
  const wasi = new WasiShim({ stdout: () => {}, stderr: () => {} });
  const instance = await WebAssembly.instantiate(module, wasi.imports(module));
  wasi.attach(instance);
  instance.exports._initialize?.();
  return instance.exports;
}

const e = await load();
const cstr = (ptr) => {
  const mem = new Uint8Array(e.memory.buffer);
  let end = ptr;
  while (mem[end] !== 0) end++;
  return new TextDecoder().decode(mem.subarray(ptr, end));
};

for (let i = 0; i < e.gradcase_count(); i++) {
  const name = cstr(e.gradcase_name(i));
  test(`${TAG}wasm ${name}`, () => {
    const status = e.gradcase_check(i);
    assert.equal(status, 0, `${name}: ${cstr(e.gradcase_message())}`);
    assert.ok(e.gradcase_checked() > 0, `${name}: nothing was checked`);
    assert.ok(e.gradcase_max_err() <= e.gradcase_tol(i), `${name}: ${cstr(e.gradcase_message())}`);
  });
}

const optimizers = [['sgd', 0, 1.0], ['momentum', 1, 0.2], ['adam', 2, 0.02], ['adamw', 3, 0.02]];
for (const model of ['mlp', 'cnn'])
  for (const [name, kind, lr] of optimizers)
    test(`${TAG}wasm training step lowers the ${model} loss with ${name}`, () => {
      assert.equal(e.train_run(model === 'cnn' ? 1 : 0, kind, lr, 150), 0);
      const first = e.train_first(), last = e.train_last();
      assert.ok(last < 0.7 * first, `${model}/${name}: loss ${first} -> ${last}`);
    });
