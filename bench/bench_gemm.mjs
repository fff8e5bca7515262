// bench_gemm.mjs - GEMM throughput in one run, one table:
//   native  rlx_gemm (the library's path) and OpenBLAS sgemm on one thread,
//           measured by the bench binary (JSON lines on stdout)
//   node    our GEMM compiled to wasm (SIMD128, and with --wasm-relaxed its
//           relaxed-SIMD build) next to TensorFlow.js's `wasm` backend
//           tf.matMul, calls interleaved in this process.
// OpenBLAS runs with the best kernel the CPU supports: its CPU detection can
// fall back to the generic "Prescott" kernel on CPUs it does not know (seen on
// a Xeon with AVX-512), so the bench binary gets OPENBLAS_CORETYPE=SkylakeX
// when /proc/cpuinfo lists avx512f, Haswell with avx2 and fma, else nothing
// (OpenBLAS's own choice); the kernel OpenBLAS reports is printed with the
// figures.  That variable is set for this command only (never in the tests).
// Results must be right before they are compared: ours against OpenBLAS
// natively, rlx-wasm against a float64 reference (and its self-test); a wrong
// result exits 1 with the error instead of the table.
// usage: node [--experimental-wasm-relaxed-simd] bench/bench_gemm.mjs [--native=BIN] --wasm=MODULE
//          [--wasm-relaxed=MODULE] [--out=build/bench/gemm.json]
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

const median = (ts) => {
  const s = [...ts].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
function stats(ts, cpu) {
  const s = [...ts].sort((a, b) => a - b);
  return { n: s.length, median_ms: median(s), min_ms: s[0], max_ms: s.at(-1), cpu_median_ms: median(cpu) };
}
// The process's CPU time (ms): robust to other work on the machine (every
// contender computes on this thread).
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// The anchors' protocol (warm-up, then timed calls; fewer for 1024^3), with
// the contenders' calls interleaved so that all see the same machine load.
async function benchInterleaved(fns, big) {
  const warmup = big ? 3 : 10, iters = big ? 20 : 50, ts = fns.map(() => []), cpu = fns.map(() => []);
  for (let i = 0; i < warmup; i++) for (const fn of fns) await fn();
  for (let i = 0; i < iters; i++)
    for (let f = 0; f < fns.length; f++) {
      const s = performance.now(), c = cpuMs();
      await fns[f]();
      ts[f].push(performance.now() - s);
      cpu[f].push(cpuMs() - c);
    }
  return ts.map((t, f) => stats(t, cpu[f]));
}

const results = [];
const add = (size, row) => results.push({ ...row, workload: workload(size), gflops: gflops(size, row.median_ms),
  ...(row.cpu_median_ms ? { gflops_cpu: gflops(size, row.cpu_median_ms) } : {}) });

// The OpenBLAS kernel to ask for: the widest the CPU has (see the header).
function openblasCoretype() {
  let flags = '';
  try {
    flags = (/^flags\s*:(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8')) ?? [])[1] ?? '';
  } catch { /* not Linux: leave it to OpenBLAS */ }
  const has = (f) => new RegExp(`\\b${f}\\b`).test(flags);
  if (has('avx512f')) return { coretype: 'SkylakeX', why: 'avx512f' };
  if (has('avx2') && has('fma')) return { coretype: 'Haswell', why: 'avx2+fma' };
  return { coretype: null, why: 'no avx2+fma' };
}
const blasCore = openblasCoretype();

// Worst |C - reference| a right float32 product of depth K stays under.
const tolerance = (K) => 1e-4 + 1e-5 * K;
const problems = [];

// ---- native: ours and OpenBLAS (one thread), from the bench binary -------------
if (args.native) {
  const env = { ...process.env, OPENBLAS_NUM_THREADS: '1' };
  if (blasCore.coretype) env.OPENBLAS_CORETYPE = blasCore.coretype;
  else delete env.OPENBLAS_CORETYPE;
  const run = spawnSync(args.native, SIZES.map((s) => s.join('x')), { env, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${args.native} failed (${run.status}): ${run.stderr}`);
  for (const line of run.stdout.split('\n').filter(Boolean)) {
    const row = JSON.parse(line), size = SIZES.find((s) => workload(s) === row.workload);
    add(size, row);
    if (row.backend === 'rlx' && !(row.max_abs_err <= tolerance(size[1])))
      problems.push(`${row.workload}: native rlx_gemm differs from OpenBLAS by ${row.max_abs_err} (max abs; tolerance ${tolerance(size[1])})`);
  }
}
const blasKernel = results.find((r) => r.backend === 'openblas')?.path ?? '-';
const blasNote = !args.native ? '-'
  : `${blasKernel} (OPENBLAS_CORETYPE=${blasCore.coretype ?? 'unset'}, from /proc/cpuinfo: ${blasCore.why}` +
    `${blasCore.coretype && blasKernel.toLowerCase() !== blasCore.coretype.toLowerCase() ? `; OpenBLAS reports ${blasKernel}, not the kernel asked for` : ''})`;

// ---- node: our wasm modules and tfjs-wasm -------------------------------------
async function loadOurs(file) {
  const bytes = fs.readFileSync(file);
  if (!WebAssembly.validate(bytes)) {
    throw new Error(`bench_gemm: ${file} does not validate here (a relaxed-SIMD module needs node --experimental-wasm-relaxed-simd on Node 20)`);
  }
  const m = await loadWasi(bytes);
  const mem = new Uint8Array(m.memory.buffer), p = m.exports.bench_path();
  return { m, path: new TextDecoder().decode(mem.subarray(p, mem.indexOf(0, p))), selftest: m.exports.bench_selftest() };
}
// 'rlx-wasm' (SIMD128) and, when given, 'rlx-wasm-relaxed'
const builds = { 'rlx-wasm': await loadOurs(args.wasm) };
if (args['wasm-relaxed']) builds['rlx-wasm-relaxed'] = await loadOurs(args['wasm-relaxed']);
const oursPath = Object.values(builds).map((b) => b.path).join(' / ');
const selftestFailures = Object.values(builds).reduce((n, b) => n + b.selftest, 0);

if (!(await tf.setBackend('wasm'))) throw new Error('tfjs wasm backend failed to init');
await tf.ready();
const tfjsPath = `simd=${await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')} threads=${tfwasm.getThreadsCount()}`;

for (const size of SIZES) {
  const [M, K, N] = size;
  const rnd = (n) => Float32Array.from({ length: n }, () => Math.random() * 2 - 1);
  const a = tf.tensor2d(rnd(M * K), [M, K]), b = tf.tensor2d(rnd(K * N), [K, N]);
  const contenders = {};
  for (const [name, { m }] of Object.entries(builds)) {
    const c = m.exports.bench_setup(M, K, N);
    if (!c) throw new Error('bench_setup: out of memory');
    const gemm = () => {
      if (m.exports.bench_gemm() !== 0) throw new Error('rlx_gemm failed');
    };
    // The anchors' protocol (workloads.mjs W5): the product, then read into JS
    // (tfjs: await t.data(); ours: copy C out of wasm memory).
    contenders[name] = () => {
      gemm();
      return new Float32Array(m.memory.buffer, c, M * N).slice();
    };
    // The product alone (tfjs-wasm runs its kernel synchronously in tf.matMul).
    contenders[`${name}-compute`] = gemm;
  }
  contenders['tfjs-wasm'] = async () => {
    const y = tf.matMul(a, b);
    await y.data();
    y.dispose();
  };
  contenders['tfjs-wasm-compute'] = () => tf.matMul(a, b).dispose();
  const measured = await benchInterleaved(Object.values(contenders), M >= 1024);
  tf.dispose([a, b]);
  const errs = {};
  for (const [name, { m }] of Object.entries(builds)) {
    errs[name] = m.exports.bench_check();
    if (!(errs[name] <= tolerance(K))) problems.push(`${workload(size)}: ${name} differs from a float64 reference by ${errs[name]} (max abs; tolerance ${tolerance(K)})`);
  }
  Object.keys(contenders).forEach((backend, i) => {
    const build = builds[backend.replace(/-compute$/, '')];
    add(size, { host: 'node', backend, path: build ? build.path : tfjsPath, ...measured[i],
      ...(build ? { max_abs_err: errs[backend.replace(/-compute$/, '')] } : {}) });
  });
}

for (const [name, b] of Object.entries(builds)) {
  if (b.selftest !== 0) problems.push(`${name}: ${b.selftest} GEMM self-test case(s) failed (bench_selftest)`);
}
if (problems.length) {
  for (const p of problems) console.error(`bench_gemm: WRONG RESULT ${p}`);
  console.error('bench_gemm: no GFLOP/s table: a wrong product is not a speed');
  process.exit(1);
}

// ---- report -------------------------------------------------------------------
const find = (backend, size) => results.find((r) => r.backend === backend && r.workload === workload(size));
const num = (r, key = 'gflops') => (r?.[key] ? r[key].toFixed(1) : '-').padStart(10);
const ratio = (x, y, key = 'gflops') => (x?.[key] && y?.[key] ? (x[key] / y[key]).toFixed(2) + 'x' : '-').padStart(8);
// Column groups: ours (one or two builds) next to theirs, a ratio per build of ours.
const relaxed = 'rlx-wasm-relaxed' in builds;
const GROUPS = [
  { title: 'with readback to JS', ours: ['rlx-wasm', ...(relaxed ? ['rlx-wasm-relaxed'] : [])], theirs: 'tfjs-wasm' },
  { title: 'compute only', ours: ['rlx-wasm-compute', ...(relaxed ? ['rlx-wasm-relaxed-compute'] : [])], theirs: 'tfjs-wasm-compute' },
  { title: 'compute only, by CPU time', key: 'gflops_cpu', ours: ['rlx-wasm-compute', ...(relaxed ? ['rlx-wasm-relaxed-compute'] : [])],
    theirs: 'tfjs-wasm-compute' },
  ...(args.native ? [{ title: `native, 1 thread (OpenBLAS ${blasKernel})`, ours: ['rlx'], theirs: 'openblas' }] : []),
];
const heads = { 'rlx-wasm': 'simd128', 'rlx-wasm-compute': 'simd128', 'rlx-wasm-relaxed': 'relaxed', 'rlx-wasm-relaxed-compute': 'relaxed',
  'tfjs-wasm': 'tfjs-wasm', 'tfjs-wasm-compute': 'tfjs-wasm', rlx: 'rlx', openblas: 'openblas' };
const groupCells = (g, f) => [...g.ours.map((o) => f.num(o)), f.num(g.theirs), ...g.ours.map((o) => f.ratio(o))].join('') + '  ';
const width = (g) => 10 * (g.ours.length + 1) + 8 * g.ours.length + 2;
const lines = [
  `GEMM GFLOP/s (2MKN / median time); ${os.cpus()[0].model}, ${os.cpus().length} cores, node ${process.version}, tfjs ${tf.version_core}`,
  `paths: rlx-wasm ${oursPath} (self-test failures: ${selftestFailures}), tfjs-wasm ${tfjsPath}, ` +
    `native ${find('rlx', SIZES[0])?.path ?? '-'}, OpenBLAS kernel ${blasNote}`,
  '',
  `${''.padEnd(26)}|${GROUPS.map((g) => g.title.padStart(Math.min(width(g), 10 + g.title.length)).padEnd(width(g))).join('|')}`,
  `${'workload'.padEnd(26)}|${GROUPS.map((g) => groupCells(g, { num: (b) => heads[b].padStart(10),
    ratio: (b) => (g.ours.length > 1 ? `/${heads[b].slice(0, 5)}` : 'ratio').padStart(8) })).join('|')}`,
];
for (const s of SIZES) {
  lines.push(`${workload(s).padEnd(26)}|${GROUPS.map((g) => groupCells(g, { num: (b) => num(find(b, s), g.key),
    ratio: (b) => ratio(find(b, s), find(g.theirs, s), g.key) })).join('|')}`);
}
lines.push('',
  'ratio = ours / theirs (/simd1, /relax: our SIMD128 or relaxed-SIMD build over theirs).  "with readback":',
  'the TF.js anchors\' W5 protocol (tfjs awaits t.data(), ours copies C out of wasm memory); "compute only":',
  'the product alone; "by CPU time": from the process\'s CPU time per call instead of the wall clock (robust to',
  'other work on the machine).  Contenders\' calls are interleaved.');
const loadEnd = os.loadavg()[0];
if (Math.max(loadStart, loadEnd) > 1.2)
  lines.push(`note: load average ${loadStart.toFixed(2)} -> ${loadEnd.toFixed(2)} on ${os.cpus().length} cores; other work was running, numbers are noisy.`);
console.log(lines.join('\n'));

const env = { node: process.version, cpu: os.cpus()[0].model, cores: os.cpus().length, tfjs: tf.version_core,
              date: new Date().toISOString(), loadavg_start: +loadStart.toFixed(2), loadavg_end: +loadEnd.toFixed(2),
              wasm_selftest_failures: selftestFailures, openblas_coretype: blasCore.coretype, openblas_kernel: blasKernel };
fs.mkdirSync(path.dirname(outFile), { recursive: true });
fs.writeFileSync(outFile, JSON.stringify({ env, results }, null, 1));
console.log(`\nwrote ${outFile}`);
