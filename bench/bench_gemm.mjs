// bench_gemm.mjs - GEMM throughput, one process, one table:
//   native  rlx_gemm (the library's path) and OpenBLAS one thread, from the
//           bench binary (JSON lines on stdout; run with OPENBLAS_NUM_THREADS=1)
//   node    our GEMM compiled to wasm (SIMD128) next to TensorFlow.js's `wasm`
//           backend tf.matMul, alternating per workload.
// usage: node bench/bench_gemm.mjs --native=BIN --wasm=MODULE [--out=build/bench/gemm.json]
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-wasm';
import { loadWasi } from './wasi_shim.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const outFile = args.out ?? 'build/bench/gemm.json';
// [M, K, N] and names as in the TF.js anchors (W5 of /work/shared/bench/tfjs/workloads.mjs).
const SIZES = [[64, 784, 128], [256, 256, 256], [512, 512, 512], [1024, 1024, 1024]];
const workload = ([M, K, N]) => `W5 matmul ${M}x${K}x${N}`;
const gflops = ([M, K, N], ms) => (2 * M * K * N) / (ms * 1e6);

function stats(ts) {
  const s = [...ts].sort((a, b) => a - b), n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { n, median_ms: median, min_ms: s[0], max_ms: s[n - 1] };
}

// The anchors' protocol (warm-up, then timed calls; fewer for 1024^3), with
// the contenders' calls interleaved so that both see the same machine load.
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
const add = (row) => results.push({ ...row, gflops: gflops(row.size, row.median_ms) });

// ---- native: ours and OpenBLAS, measured by the bench binary -------------------
if (args.native) {
  const run = spawnSync(args.native, SIZES.map((s) => s.join('x')), {
    env: { ...process.env, OPENBLAS_NUM_THREADS: '1' }, encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`${args.native} failed: ${run.stderr}`);
  for (const line of run.stdout.split('\n').filter(Boolean)) {
    const r = JSON.parse(line);
    const size = SIZES.find((s) => workload(s) === r.workload);
    add({ ...r, size });
  }
}

// ---- node: our wasm module and tfjs-wasm, alternating per workload ------------
const ours = await loadWasi(fs.readFileSync(args.wasm));
const path_ = (p) => { const m = new Uint8Array(ours.memory.buffer); let e = p; while (m[e]) e++; return new TextDecoder().decode(m.subarray(p, e)); };
const oursPath = path_(ours.exports.bench_path());
const selftestFailures = ours.exports.bench_selftest();

if (!(await tf.setBackend('wasm'))) throw new Error('tfjs wasm backend failed to init');
await tf.ready();
const tfjsInfo = { simd: await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'), threads: (await import('@tensorflow/tfjs-backend-wasm')).getThreadsCount() };

for (const size of SIZES) {
  const [M, K, N] = size, big = M >= 1024;
  const c = ours.exports.bench_setup(M, K, N);
  if (!c) throw new Error('bench_setup: out of memory');
  const rnd = (n) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
  const a = tf.tensor2d(rnd(M * K), [M, K]), b = tf.tensor2d(rnd(K * N), [K, N]);
  const gemm = () => {
    if (ours.exports.bench_gemm() !== 0) throw new Error('rlx_gemm failed');
  };
  const fns = {
    // The anchors' protocol (workloads.mjs W5): product, then read it into JS
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
    // The product alone (tfjs-wasm runs kernels synchronously inside tf.matMul).
    'rlx-wasm-compute': gemm,
    'tfjs-wasm-compute': () => tf.matMul(a, b).dispose(),
  };
  const stats_ = await benchInterleaved(Object.values(fns), big);
  tf.dispose([a, b]);
  Object.keys(fns).forEach((backend, i) => {
    const ours_ = backend.startsWith('rlx');
    add({ host: 'node', backend, path: ours_ ? oursPath : `simd=${tfjsInfo.simd} threads=${tfjsInfo.threads}`,
          workload: workload(size), ...stats_[i], size, ...(ours_ ? { max_abs_err: ours.exports.bench_check() } : {}) });
  });
}

// ---- report -------------------------------------------------------------------
const find = (backend, size) => results.find((r) => r.backend === backend && r.workload === workload(size));
const fmt = (r) => (r ? r.gflops.toFixed(1).padStart(8) : '       -');
const ratio = (x, y) => (x && y ? (x.gflops / y.gflops).toFixed(2) + 'x' : '-').padStart(7);
const lines = [
  `GEMM GFLOP/s (median of timed calls); ${os.cpus()[0].model}, ${os.cpus().length} cores, node ${process.version}, tfjs ${tf.version_core}`,
  `wasm path: ${oursPath} (self-test failures: ${selftestFailures}); native path: ${find('rlx', SIZES[0])?.path ?? '-'}; OpenBLAS core: ${find('openblas', SIZES[0])?.path ?? '-'}`,
  '',
'workload                    rlx-wasm tfjs-wasm   ratio | compute only: rlx-wasm tfjs-wasm   ratio |   native openblas   ratio',
];
for (const s of SIZES) {
  const w = find('rlx-wasm', s), t = find('tfjs-wasm', s), wc = find('rlx-wasm-compute', s), tc = find('tfjs-wasm-compute', s);
  const n = find('rlx', s), o = find('openblas', s);
  lines.push(`${workload(s).padEnd(26)}${fmt(w)} ${fmt(t)} ${ratio(w, t)} |              ${fmt(wc)} ${fmt(tc)} ${ratio(wc, tc)} | ${fmt(n)} ${fmt(o)} ${ratio(n, o)}`);
}
lines.push('', 'rlx-wasm/tfjs-wasm: the anchors\' protocol (product, then read it into JS: t.data() / copy out of wasm memory);',
  'compute only: the product alone; native: rlx_gemm vs OpenBLAS sgemm, one thread. Calls interleaved; GFLOP/s = 2MKN / median.');
console.log(lines.join('\n'));

const env = { node: process.version, cpu: os.cpus()[0].model, cores: os.cpus().length, tfjs: tf.version_core,
              date: new Date().toISOString(), loadavg: os.loadavg().map((v) => +v.toFixed(2)), wasm_selftest_failures: selftestFailures };
fs.mkdirSync(path.dirname(outFile), { recursive: true });
fs.writeFileSync(outFile, JSON.stringify({ env, results: results.map(({ size, ...r }) => r) }, null, 1));
console.log(`\nwrote ${outFile}`);
