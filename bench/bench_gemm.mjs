// bench_gemm.mjs - GEMM throughput in one run, one table:
//   native  rlx_gemm (the library's path) and OpenBLAS sgemm on one thread,
//           measured by the bench binary (JSON lines on stdout)
//   node    our GEMM compiled to wasm (SIMD128) next to TensorFlow.js's `wasm`
//           backend tf.matMul, calls interleaved in this process.
// usage: node bench/bench_gemm.mjs [--native=BIN] --wasm=MODULE [--out=build/bench/gemm.json]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfwasm from '@tensorflow/tfjs-backend-wasm';
import { loadWasi } from './wasi_shim.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const outFile = args.out ?? 'build/bench/gemm.json';
// [M, K, N] and names as in the TF.js anchors (W5 of /work/shared/bench/tfjs/workloads.mjs).
const SIZES = [[64, 784, 128], [256, 256, 256], [512, 512, 512], [1024, 1024, 1024]];
const workload = ([M, K, N]) => `W5 matmul ${M}x${K}x${N}`;
const gflops = ([M, K, N], ms) => (2 * M * K * N) / (ms * 1e6);
const loadStart = os.loadavg()[0];

function stats(ts) {
  const s = [...ts].sort((a, b) => a - b), n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { n, median_ms: median, min_ms: s[0], max_ms: s[n - 1] };
}

// The anchors' protocol (warm-up, then timed calls; fewer for 1024^3), with
// the contenders' calls interleaved so that all see the same machine load.
async function benchInterleaved(fns, big) {
  const warmup = big ? 3 : 10, iters = big ? 20 : 50, ts = fns.map(() => []);
  for (let i = 0; i < warmup; i++) for (const fn of fns) await fn();
  for (let i = 0; i < iters; i++)
    for (let f = 0; f < fns.length; f++) {
      const s = performance.now();
      await fns[f]();
      ts[f].push(performance.now() - s);
    }
  return ts.map(stats);
}

const results = [];
const add = (size, row) => results.push({ ...row, workload: workload(size), gflops: gflops(size, row.median_ms) });

// ---- native: ours and OpenBLAS (one thread), from the bench binary -------------
if (args.native) {
  const run = spawnSync(args.native, SIZES.map((s) => s.join('x')), {
    env: { ...process.env, OPENBLAS_NUM_THREADS: '1' }, encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`${args.native} failed (${run.status}): ${run.stderr}`);
  for (const line of run.stdout.split('\n').filter(Boolean)) {
    const row = JSON.parse(line);
    add(SIZES.find((s) => workload(s) === row.workload), row);
  }
}

// ---- node: our wasm module and tfjs-wasm --------------------------------------
const ours = await loadWasi(fs.readFileSync(args.wasm));
const cString = (p) => {
  const m = new Uint8Array(ours.memory.buffer);
  return new TextDecoder().decode(m.subarray(p, m.indexOf(0, p)));
};
const oursPath = cString(ours.exports.bench_path());
const selftestFailures = ours.exports.bench_selftest();

if (!(await tf.setBackend('wasm'))) throw new Error('tfjs wasm backend failed to init');
await tf.ready();
const tfjsPath = `simd=${await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')} threads=${tfwasm.getThreadsCount()}`;

for (const size of SIZES) {
  const [M, K, N] = size;
  const c = ours.exports.bench_setup(M, K, N);
  if (!c) throw new Error('bench_setup: out of memory');
  const rnd = (n) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
  const a = tf.tensor2d(rnd(M * K), [M, K]), b = tf.tensor2d(rnd(K * N), [K, N]);
  const gemm = () => {
    if (ours.exports.bench_gemm() !== 0) throw new Error('rlx_gemm failed');
  };
  const contenders = {
    // The anchors' protocol (workloads.mjs W5): the product, then read into JS
    // (tfjs: await t.data(); ours: copy C out of wasm memory).
    'rlx-wasm': () => {
      gemm();
      return new Float32Array(ours.memory.buffer, c, M * N).slice();
    },
    'tfjs-wasm': async () => {
      const y = tf.matMul(a, b);
      await y.data();
      y.dispose();
    },
    // The product alone (tfjs-wasm runs its kernel synchronously in tf.matMul).
    'rlx-wasm-compute': gemm,
    'tfjs-wasm-compute': () => tf.matMul(a, b).dispose(),
  };
  const measured = await benchInterleaved(Object.values(contenders), M >= 1024);
  tf.dispose([a, b]);
  const err = ours.exports.bench_check();
  Object.keys(contenders).forEach((backend, i) => {
    const mine = backend.startsWith('rlx');
    add(size, { host: 'node', backend, path: mine ? oursPath : tfjsPath, ...measured[i], ...(mine ? { max_abs_err: err } : {}) });
  });
}

// ---- report -------------------------------------------------------------------
const find = (backend, size) => results.find((r) => r.backend === backend && r.workload === workload(size));
const num = (r) => (r ? r.gflops.toFixed(1) : '-').padStart(10);
const ratio = (x, y) => (x && y ? (x.gflops / y.gflops).toFixed(2) + 'x' : '-').padStart(8);
const PAIRS = [['rlx-wasm', 'tfjs-wasm'], ['rlx-wasm-compute', 'tfjs-wasm-compute'], ['rlx', 'openblas']];
const cell = (a, b, c) => `${a.padStart(10)}${b.padStart(10)}${c.padStart(8)}  `;
const lines = [
  `GEMM GFLOP/s (2MKN / median time); ${os.cpus()[0].model}, ${os.cpus().length} cores, node ${process.version}, tfjs ${tf.version_core}`,
  `paths: rlx-wasm ${oursPath} (self-test failures: ${selftestFailures}), tfjs-wasm ${tfjsPath}, ` +
    `native ${find('rlx', SIZES[0])?.path ?? '-'}, OpenBLAS core ${find('openblas', SIZES[0])?.path ?? '-'}`,
  '',
  `${''.padEnd(26)}|${'with readback to JS'.padStart(26).padEnd(30)}|${'compute only'.padStart(22).padEnd(30)}|${'native, 1 thread'.padStart(24)}`,
  `${'workload'.padEnd(26)}|${cell('rlx-wasm', 'tfjs-wasm', 'ratio')}|${cell('rlx-wasm', 'tfjs-wasm', 'ratio')}|${cell('rlx', 'openblas', 'ratio')}`,
];
for (const s of SIZES) {
  const cells = PAIRS.map(([x, y]) => [find(x, s), find(y, s)]).map(([x, y]) => `${num(x)}${num(y)}${ratio(x, y)}  `);
  lines.push(`${workload(s).padEnd(26)}|${cells.join('|')}`);
}
lines.push('',
  'ratio = ours / theirs.  "with readback": the TF.js anchors\' W5 protocol (tfjs awaits t.data(), ours copies C',
  'out of wasm memory); "compute only": the product alone.  Contenders\' calls are interleaved.');
const loadEnd = os.loadavg()[0];
if (Math.max(loadStart, loadEnd) > 1.2)
  lines.push(`note: load average ${loadStart.toFixed(2)} -> ${loadEnd.toFixed(2)} on ${os.cpus().length} cores; other work was running, numbers are noisy.`);
console.log(lines.join('\n'));

const env = { node: process.version, cpu: os.cpus()[0].model, cores: os.cpus().length, tfjs: tf.version_core,
              date: new Date().toISOString(), loadavg_start: +loadStart.toFixed(2), loadavg_end: +loadEnd.toFixed(2),
              wasm_selftest_failures: selftestFailures };
fs.mkdirSync(path.dirname(outFile), { recursive: true });
fs.writeFileSync(outFile, JSON.stringify({ env, results }, null, 1));
console.log(`\nwrote ${outFile}`);
