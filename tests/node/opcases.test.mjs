// opcases.test.mjs - runs every op case (tests/c/cases_*.c) inside
// build/wasm-tests/opcases.wasm (debug_poison on) and checks, one subtest per
// case: status ok, max_err within the case tolerance, and every output equal
// to the native run (build/tests/opcases_native.bin, written by
// tests/c/dump_opcases.c) within |a - b| <= 1e-5 * (1 + |b|).
// RLX_TEST_SIMD=relaxed runs the relaxed-SIMD build of the same cases
// (build/wasm-tests/opcases_relaxed.wasm; Node 20 needs
// --experimental-wasm-relaxed-simd), with the same tolerances.
// Build first: make wasm build/tests/opcases_native.bin
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { WasiShim } from '../../web/runtime/wasi.js';

const root = new URL('../../', import.meta.url);
const SIMD = process.env.RLX_TEST_SIMD ?? 'simd128';
const WASM = new URL(`build/wasm-tests/opcases${SIMD === 'relaxed' ? '_relaxed' : ''}.wasm`, root);
const TAG = SIMD === 'relaxed' ? 'relaxed ' : '';
const NATIVE = new URL('build/tests/opcases_native.bin', root);
const REL_TOL = 1e-5;

/** Parses the dump: Map name -> { status, out: Float32Array }. */
function readNativeDump(bytes) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = new TextDecoder().decode(bytes.subarray(0, 7));
  assert.equal(magic, 'RLXOPC1', 'bad magic in opcases_native.bin');
  const count = dv.getUint32(8, true);
  const cases = new Map();
  let at = 12;
  for (let i = 0; i < count; i++) {
    const len = dv.getUint32(at, true);
    const name = new TextDecoder().decode(bytes.subarray(at + 4, at + 4 + len));
    at += 4 + len;
    const status = dv.getInt32(at, true);
    const n = dv.getUint32(at + 4, true);
    at += 8;
    const out = new Float32Array(n);
    for (let k = 0; k < n; k++) out[k] = dv.getFloat32(at + 4 * k, true);
    at += 4 * n;
    cases.set(name, { status, out });
  }
  return cases;
}

function close(a, b) {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true; // same infinities
  return Math.abs(a - b) <= REL_TOL * (1 + Math.abs(b));
}

async function loadCases() {
  const module = await WebAssembly.compile(readFileSync(WASM));
  const log = [];
  const wasi = new WasiShim({ stdout: (s) => log.push(s), stderr: (s) => log.push(s) });
  const instance = await WebAssembly.instantiate(module, wasi.imports(module));
  wasi.attach(instance);
  instance.exports._initialize?.();
  const e = instance.exports;
  const cstr = (ptr) => {
    const mem = new Uint8Array(e.memory.buffer);
    let end = ptr;
    while (mem[end] !== 0) end++;
    return new TextDecoder().decode(mem.subarray(ptr, end));
  };
  const names = Array.from({ length: e.opcase_count() }, (_, i) => cstr(e.opcase_name(i)));
  const run = (i) => {
    const r = e.opcase_run_case(i);
    assert.ok(r, `opcase_run_case(${i}) returned NULL`);
    try {
      const n = e.result_n_out(r) >>> 0;
      return {
        status: e.result_status(r),
        message: cstr(e.result_message(r)),
        maxErr: e.result_max_err(r),
        worst: e.result_worst_index(r),
        out: new Float32Array(e.memory.buffer, e.result_out(r), n).slice(),
      };
    } finally {
      e.result_free(r);
    }
  };
  return { names, tol: (i) => e.opcase_tol(i), run, log };
}

if (!['simd128', 'relaxed'].includes(SIMD)) {
  test('RLX_TEST_SIMD', () => assert.fail(`RLX_TEST_SIMD must be simd128 or relaxed, got ${SIMD}`));
} else if (!existsSync(WASM) || !existsSync(NATIVE)) {
  test(`${TAG}op cases: build outputs present`, () => {
    assert.fail(`missing ${WASM.pathname} or build/tests/opcases_native.bin: run \`make wasm build/tests/opcases_native.bin\``);
  });
} else if (!WebAssembly.validate(readFileSync(WASM))) {
  test(`${TAG}op cases: the module validates`, () => {
    assert.fail(`${WASM.pathname} does not validate here${SIMD === 'relaxed' ? ' (relaxed SIMD: Node 20 needs --experimental-wasm-relaxed-simd)' : ''}`);
  });
} else {
  const native = readNativeDump(readFileSync(NATIVE));
  const wasm = await loadCases();

  test(`${TAG}wasm and native have the same case list`, () => {
    assert.deepEqual([...wasm.names].sort(), [...native.keys()].sort());
  });

  wasm.names.forEach((name, i) => {
    test(TAG + name, () => {
      const got = wasm.run(i);
      assert.equal(got.status, 0, `wasm: status ${got.status}: ${got.message}`);
      const tol = wasm.tol(i);
      assert.ok(got.maxErr <= tol,
        `wasm: max_err ${got.maxErr.toExponential(3)} > tol ${tol} at output ${got.worst}`);
      const ref = native.get(name);
      assert.ok(ref, 'case missing from the native dump (stale build/tests/opcases_native.bin?)');
      assert.equal(ref.status, 0, `native run failed with status ${ref.status}`);
      assert.equal(got.out.length, ref.out.length, 'output length differs from native');
      for (let k = 0; k < ref.out.length; k++) {
        if (!close(got.out[k], ref.out[k])) {
          assert.fail(`output ${k}: wasm ${got.out[k]} vs native ${ref.out[k]} ` +
            `(|diff| ${Math.abs(got.out[k] - ref.out[k]).toExponential(3)})`);
        }
      }
    });
  });
}
