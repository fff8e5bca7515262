#!/usr/bin/env node
// webgpu_gemm.mjs - GEMM throughput of the WebGPU backend: for each size n
// a graph y = a . b (a, b inputs [n, n]) is compiled for WebGPU by the wasm
// module (web/pkg/rlx_web.wasm), its plan is instantiated by the generic
// executor web/runtime/webgpu.js on Dawn (npm `webgpu`), and the plan's
// dispatches are replayed back to back to time the GPU.  Reports GFLOP/s
// (2 n^3 per product) and the time of one full run() (upload-free, with the
// output read back), after a spot check of the result against float64 dot
// products.
//
//   node bench/webgpu_gemm.mjs [--sizes=1024,2048,4096] [--seconds=1] [--out=FILE.json]
//
// CPU machines: Dawn on SwiftShader (the Vulkan environment is added when
// missing; use small sizes, e.g. --sizes=256,512,1024).  GPU machine: set
// RLX_DAWN_MODULE to the carried Dawn module (source .gpu/enter.sh) and
// carry web/pkg/rlx_web.wasm (build it with `make wasm`).
import { writeFileSync } from 'node:fs';
import { withDawnEnv, dawnDevice } from '../tools/dawn_node.mjs';
import { loadRlx } from '../web/runtime/loader.js';
import { createWebGpuSession } from '../web/runtime/webgpu.js';

withDawnEnv();

const opts = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([\w-]+)(?:=(.*))?$/.exec(a);
  if (!m) { console.error(`webgpu_gemm: unknown argument ${a}`); process.exit(2); }
  return [m[1], m[2] ?? '1'];
}));
const sizes = (opts.sizes ?? '1024,2048,4096').split(',').map(Number);
const seconds = Number(opts.seconds ?? 1);

const { adapter, device } = await dawnDevice();
const info = adapter.info ?? {};
const adapterName = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ');
const rlx = await loadRlx(new URL('../web/pkg/rlx_web.wasm', import.meta.url));

// Deterministic values in [-1, 1).
function fill(n, seed) {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 31 - 1;
  }
  return a;
}

// Encodes the plan's dispatches `reps` times in one compute pass, submits,
// and resolves when the GPU is done: ms of wall time.
async function replay(gs, reps) {
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  for (let r = 0; r < reps; r++) {
    gs.plan.steps.forEach((st, k) => {
      pass.setPipeline(gs.pipelines[st.pipeline].pipeline);
      pass.setBindGroup(0, gs.bindGroups[k]);
      pass.dispatchWorkgroups(st.groups[0], st.groups[1], st.groups[2]);
    });
  }
  pass.end();
  const t0 = performance.now();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  return performance.now() - t0;
}

const results = [];
console.log(`adapter: ${adapterName}`);
console.log('     n   GFLOP/s   ms/product   ms/run()   dispatches   max rel err');
for (const n of sizes) {
  const g = rlx.graph();
  const a = g.input('a', [n, n]);
  const b = g.input('b', [n, n]);
  const y = g.op('matmul', [a, b], [0, 0]);
  const s = g.compile([y], { device: 'webgpu' });
  const gs = await createWebGpuSession(rlx, s, device);
  const A = fill(n * n, 1), B = fill(n * n, 2);
  gs.setInput('a', A);
  gs.setInput('b', B);
  let t0 = performance.now();
  await gs.run();
  const firstMs = performance.now() - t0;
  const Y = gs.output(0);
  let err = 0;
  for (let t = 0; t < 16; t++) {
    const i = (t * 7919) % n, j = (t * 104729 + 3) % n;
    let want = 0;
    for (let k = 0; k < n; k++) want += A[i * n + k] * B[k * n + j];
    err = Math.max(err, Math.abs(Y[i * n + j] - want) / (1 + Math.abs(want)));
  }
  // Calibrate the repetitions to ~`seconds` of GPU time, then best of 3.
  let reps = 1, ms = await replay(gs, 1);
  while (ms < seconds * 250 && reps < 1 << 14) { reps *= 2; ms = await replay(gs, reps); }
  let best = Infinity;
  for (let t = 0; t < 3; t++) best = Math.min(best, (await replay(gs, reps)) / reps);
  t0 = performance.now();
  await gs.run();
  const runMs = performance.now() - t0;
  const gflops = (2 * n ** 3) / best / 1e6;
  const gfText = gflops >= 100 ? gflops.toFixed(0) : gflops.toPrecision(3);
  console.log(`${String(n).padStart(6)} ${gfText.padStart(9)} ${best.toFixed(3).padStart(12)} ` +
              `${runMs.toFixed(1).padStart(10)} ${String(gs.dispatchCount).padStart(12)} ${err.toExponential(2).padStart(13)}`);
  results.push({ n, gflops, ms_per_product: best, ms_run: runMs, ms_first_run: firstMs, dispatches: gs.dispatchCount, max_rel_err: err });
  gs.free();
  s.free();
  g.free();
  if (err > 1e-3) { console.error(`webgpu_gemm: n=${n}: result differs from float64 (max rel err ${err})`); process.exitCode = 1; }
}
if (opts.out) writeFileSync(opts.out, JSON.stringify({ adapter: adapterName, results }, null, 2));
device.destroy();
