// web_threads.mjs - `make bench-web-threads` (part of `make bench`): the
// vision models' SGD training steps of rlx_web.wasm on 1 and 2 threads (or
// --threads=...) in Node: init({ threads: 1 }) loads the one-thread build
// (rlx_web.wasm), more threads the threaded build (rlx_web_threads.wasm,
// helper Workers on a shared memory).  Each round loads every count in
// turn (rounds interleave them) and times --steps steps of each model at
// its batch after one warm-up step; the medians of a step's milliseconds
// are printed with the speed-up over one thread, and one JSON line per
// model and count.  Every count's loss and updated params must equal one
// thread's bitwise (the builds are), else the bench exits 1.
//
//   node bench/web_threads.mjs [--threads=1,2] [--rounds=5] [--steps=5] [--simd=simd128|relaxed]
// Needs: make web/pkg/rlx_web.wasm web/pkg/rlx_web_threads.wasm (and the relaxed
// builds for --simd=relaxed, which Node 20 runs with --experimental-wasm-relaxed-simd).
import { availableParallelism } from 'node:os';
import init, { VisionBench, free } from '../web/pkg/rlx_web.js';
import { benchArgs, median } from './bench_args.mjs';

const args = benchArgs('web_threads');
const counts = (args.threads ?? '1,2').split(',').map(Number);
const rounds = Number(args.rounds ?? 5), steps = Number(args.steps ?? 5);
const simd = args.simd ?? 'simd128';
if (!counts.every((t) => Number.isInteger(t) && t >= 1) || !(rounds >= 1) || !(steps >= 1)) {
  throw new Error('web_threads: --threads takes counts >= 1; --rounds and --steps numbers >= 1');
}
const MODELS = [['mnist-mlp', 64], ['mnist-cnn', 32], ['cifar-cnn', 16], ['resnet', 8]];

const times = {};  // `${slug} ${threads}` -> ms of every timed step
const first = {};  // slug -> the first count's step output, as bytes
let mismatch = false;
for (let r = 0; r < rounds; r++) {
  for (const threads of counts) {
    const rt = await init({ threads, simd });
    if (rt.threads !== threads) throw new Error(`web_threads: ${threads} threads asked, ${rt.threads} run (${rt.threadsWhy})`);
    for (const [slug, batch] of MODELS) {
      const bench = new VisionBench(slug);
      const params = bench.init_params(7);
      const { x, labels } = bench.synthetic_batch(7, batch);
      const out = bench.train_step_cpu(x, labels, params, 0.01);
      const bytes = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
      first[slug] ??= bytes;
      if (!bytes.equals(first[slug])) {
        console.error(`web_threads: ${slug} on ${threads} threads: the step differs from ${counts[0]} thread(s)'`);
        mismatch = true;
      }
      const key = `${slug} ${threads}`;
      times[key] ??= [];
      for (let s = 0; s < steps; s++) {
        const t0 = performance.now();
        bench.train_step_cpu(x, labels, params, 0.01);
        times[key].push(performance.now() - t0);
      }
      bench.free();
    }
  }
}
free();

console.log(`rlx_web training steps (SGD), ${simd}, ${availableParallelism()} logical cores, ${rounds} rounds x ${steps} steps, medians`);
console.log('model | batch | threads | ms per step | vs 1 thread');
for (const [slug, batch] of MODELS) {
  const base = median(times[`${slug} ${counts[0]}`]);
  for (const threads of counts) {
    const ms = median(times[`${slug} ${threads}`]);
    console.log(`${slug} | ${batch} | ${threads} | ${ms.toFixed(1)} | ${(base / ms).toFixed(2)}x`);
  }
}
for (const [slug, batch] of MODELS) {
  for (const threads of counts) console.log(JSON.stringify({ model: slug, batch, threads, simd, ms: median(times[`${slug} ${threads}`]) }));
}
if (mismatch) process.exit(1);
