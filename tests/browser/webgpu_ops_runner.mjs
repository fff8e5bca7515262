// webgpu_ops_runner.mjs - every op case of build/wasm-tests/opcases.wasm
// (tests/c/wasm_gpu_cases.c) in the browser: the case's WebGPU session runs
// through web/runtime/webgpu.js on navigator.gpu and its output is compared
// with the CPU run of the same case in the same wasm module, with the
// tolerances of tests/common/gpu_compare.mjs (shared with the Node/Dawn run).
// Loaded by gpu_parity_page.html; driven by webgpu_ops.test.mjs.
import { WasiShim } from '../../web/runtime/wasi.js';
import { createWebGpuSession } from '../../web/runtime/webgpu.js';
import { toleranceOf, worstMismatch, mismatchMessage, allowedRefusal } from '../common/gpu_compare.mjs';

let loaded = null;

async function loadCases(url = new URL('../../build/wasm-tests/opcases.wasm', import.meta.url)) {
  if (loaded) return loaded;
  const module = await WebAssembly.compileStreaming(fetch(url));
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
  loaded = { e, cstr };
  return loaded;
}

/**
 * Runs the cases whose name contains `filter`, `from` .. `to` (indices).
 * `pending`: [[op, family], ...] of the WebGPU lowerings still pending.
 * `skipEvery` k > 1: not the cases whose index is a multiple of k (Dawn's share).
 * Returns { count, results }, one result per case run: { name, op, outcome:
 * 'pass' | 'fused' | 'pending' | 'fail', message, maxErr, ms (compile of the
 * executor session, run and readback) }.
 */
export async function runOpCases({ filter = '', pending = [], from = 0, to = Infinity, skipEvery = 0 } = {}) {
  const { e, cstr } = await loadCases();
  const pendingOps = new Map(pending);
  const count = e.gpucase_count();
  const results = [];
  for (let i = from; i < Math.min(count, to); i++) {
    if (skipEvery > 1 && i % skipEvery === 0) continue; // a case Dawn checked (tests/node/webgpu_ops.test.mjs)
    const name = cstr(e.gpucase_name(i));
    if (filter && !name.includes(filter)) continue;
    const t0 = performance.now();
    const r = await runCase(e, cstr, i, name, pendingOps);
    results.push({ ...r, ms: performance.now() - t0 });
  }
  return { count, results };
}

async function runCase(e, cstr, i, name, pendingOps) {
  const h = e.gpucase_prepare(i);
  if (!h) return { name, outcome: 'fail', message: 'gpucase_prepare returned NULL' };
  let gs = null;
  let op = '?';
  try {
    if (e.gpucase_cpu_status(h) !== 0) return { name, outcome: 'fail', message: `CPU: ${cstr(e.gpucase_cpu_message(h))}` };
    op = cstr(e.gpucase_op(h));
    const status = e.gpucase_gpu_status(h);
    if (status !== 0) {
      const msg = cstr(e.gpucase_gpu_message(h));
      const refusal = allowedRefusal(status, msg, pendingOps);
      if (refusal) return { name, op, outcome: refusal.kind, message: refusal.family ? `family ${refusal.family}: ${refusal.op}` : msg };
      return { name, op, outcome: 'fail', message: `WebGPU compile failed (status ${status}): ${msg}` };
    }
    const nOut = e.gpucase_n_out(h) >>> 0;
    const want = new Float32Array(e.memory.buffer, e.gpucase_cpu_out(h), nOut).slice();
    gs = await createWebGpuSession(e, e.gpucase_gpu_session(h)); // navigator.gpu, one shared device
    await gs.run();
    const got = gs.output(0);
    if (got.length !== want.length) return { name, op, outcome: 'fail', message: `output has ${got.length} values, the CPU's ${want.length}` };
    const tol = toleranceOf(op);
    const worst = worstMismatch(got, want, tol);
    if (worst) return { name, op, outcome: 'fail', message: mismatchMessage(op, worst, tol) };
    let maxErr = 0;
    for (let k = 0; k < want.length; k++) {
      if (Number.isFinite(want[k])) maxErr = Math.max(maxErr, Math.abs(got[k] - want[k]) / (1 + Math.abs(want[k])));
    }
    return { name, op, outcome: 'pass', maxErr };
  } catch (err) {
    return { name, op, outcome: 'fail', message: `${err.name}: ${err.message}` };
  } finally {
    gs?.free();
    e.gpucase_free(h);
  }
}
