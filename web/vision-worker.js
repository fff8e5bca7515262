// vision-worker.js - the compute side of vision-bench.html, in a module
// Worker so the page never blocks: runs runtime/vision.js's VisionBench
// forward / training runs on the CPU, WebGPU or WebGL2 (whichever the page
// picks among those available here), posting progress as it goes.  The
// training batches are one synthetic batch (the benchmark) or, for the 28x28
// models, the Fashion-MNIST subset (cluster/data.js), then with the test
// accuracy measured EVALS times per run.  On a software GPU picked by name
// (SwiftShader), the first steps are timed against the same step on the CPU
// (software-gpu.js) and the page warns with that figure.
//
// Messages in:  { id, cmd: 'hello' }
//               { id, cmd: 'run', slug, backend, data: 'synthetic' | 'fashion', batch, steps, lr, seed }
//               { cmd: 'stop' }            (ends the current run early)
// Messages out: { id, progress: { phase, text } }    (a long phase begins)
//               { id, progress: { step, steps, loss, losses: [[step, loss], ...], elapsedMs } }
//               { id, progress: { eval: { step, accuracy, evaluated, confusion } } }   (fashion only)
//               { id, progress: { slowdown } }      (a software GPU: its measured slowdown against the CPU)
//               { id, ok: true, result }  |  { id, ok: false, error }
import { init, runtime } from './runtime/instance.js';
import { backend as syncBackend, preferred_backend, parse_backend, init_webgpu, init_webgl, backend_environment } from './runtime/select.js';
import { VisionBench, list_vision_models, vision_model_info } from './runtime/vision.js';
import { loadSubset, scoreSet, subsetFits, Shards } from './cluster/data.js';
import { serve, yieldToEvents } from './worker-rpc.js';
import { SoftwareProbe } from './software-gpu.js';

const YIELD_MS = 40; // longest stretch of work between two looks at the message queue
const EVALS = 10; // test evaluations per Fashion-MNIST run: every ceil(steps / EVALS) steps and at the last
let stopRequested = false;
let subset = null; // Promise of { train, test }, fetched by the first Fashion-MNIST run

function fashionSubset() {
  subset ??= Promise.all([loadSubset('train'), loadSubset('test')]).then(([train, test]) => ({ train, test }));
  subset.catch(() => { subset = null; }); // a failed fetch is tried again by the next run
  return subset;
}

/** Why a model cannot train on the Fashion-MNIST subset, or null when it can. */
function whyNotFashion(info) {
  return subsetFits(info) ? null
    : `${info.slug} takes [${info.input_dims.join(', ')}] inputs and the Fashion-MNIST subset is 28x28 grayscale`;
}

async function hello() {
  await init();
  await Promise.all([init_webgpu(), init_webgl()]);
  const env = backend_environment();
  return {
    backends: { cpu: env.cpu, webgpu: env.webgpu, webgl: env.webgl },
    models: list_vision_models().map((slug) => {
      const info = vision_model_info(slug);
      return { ...info, fashion: whyNotFashion(info) };
    }),
    backend: syncBackend(),
    preferred: preferred_backend(),
    version: runtime().version(),
    // the CPU's threads: the threaded build where this page is cross-origin isolated, and why
    threads: runtime().threads, threadsWhy: runtime().threadsWhy,
    evals: EVALS,
  };
}

/**
 * Forward timing, then `steps` SGD steps on one synthetic batch or on
 * Fashion-MNIST batches (after one untimed warm-up step that also compiles
 * the training plan).  samplesPerSec counts the training steps only; the
 * test evaluations are in evalMs, compiling in compileMs, and totalMs is the
 * whole run (compiling, forward timing, steps and evaluations).
 */
async function run({ slug, backend, data = 'synthetic', batch, steps, lr, seed }, post) {
  const start = performance.now();
  await init();
  const where = parse_backend(backend);
  if (where === 'auto') throw new Error(`unknown backend "${backend}" (pick cpu, webgpu or webgl)`);
  if (data !== 'synthetic' && data !== 'fashion') throw new Error(`unknown data "${data}" (pick synthetic or fashion)`);
  stopRequested = false;
  const bench = new VisionBench(slug);
  // VisionBench.forward / train_step on the backend picked: awaited (Promises on WebGPU).
  const forward = (x, params) => bench.forward(where, x, params);
  const trainStep = (x, labels, params, lr) => bench.train_step(where, x, labels, params, lr);
  try {
    const info = bench.info();
    let params = bench.init_params(seed);
    const { x, labels } = bench.synthetic_batch(seed, batch);

    const probe = new SoftwareProbe(backend_environment()[where]?.software, where, 'a training step');
    let compileMs = 0;
    const phase = async (kind, text) => {
      post({ phase: kind, text });
      await yieldToEvents();
    };
    const fashion = data === 'fashion';
    let shards = null, test = null;
    if (fashion) {
      const why = whyNotFashion(info);
      if (why) throw new Error(`${why}: it trains on synthetic data only`);
      await phase('loading', 'loading the Fashion-MNIST subset');
      const set = await fashionSubset();
      shards = new Shards(set.train, { seed });
      test = set.test;
    }
    // The batch of a step: the synthetic one every time, or the next one of the shuffled training subset.
    const batchAt = (step) => (fashion ? shards.batch(step, 0, 1, batch) : { x, labels });
    const evalEvery = Math.ceil(steps / EVALS);
    let evalMs = 0, evals = 0, lastEval = null;
    const evaluate = async (step) => {
      await phase('evaluating', `step ${step}: test accuracy on ${test.count} test images`);
      const e0 = performance.now();
      const ev = await scoreSet(test, (tx) => forward(tx, params), { stop: () => stopRequested });
      evalMs += performance.now() - e0;
      if (stopRequested) return;
      evals++;
      lastEval = { step, accuracy: ev.accuracy, evaluated: ev.evaluated, confusion: ev.confusion };
      post({ eval: lastEval });
      await yieldToEvents();
    };
    // Forward: the first call compiles; then as many calls as fit in ~150 ms (at least 3).
    await phase('compiling', `compiling the forward pass for ${where}`);
    let c0 = performance.now();
    const logits = await forward(x, params);
    compileMs += performance.now() - c0;
    await phase('timing', 'timing the forward pass');
    let forwards = 0;
    const f0 = performance.now();
    while (!stopRequested && (forwards < 3 || (performance.now() - f0 < 150 && forwards < 1000))) {
      await forward(x, params);
      forwards++;
    }
    const forwardMs = (performance.now() - f0) / Math.max(forwards, 1);

    const losses = [];
    let pending = [];
    let compileStep = NaN;
    if (!stopRequested) {
      await phase('compiling', `compiling the training step for ${where}`);
      const b = batchAt(0);
      c0 = performance.now();
      compileStep = (await trainStep(b.x, b.labels, params, lr))[0]; // compiles the training plan
      compileMs += performance.now() - c0;
    }
    let done = 0;
    let diverged = false;
    let last = performance.now();
    const t0 = last;
    let workMs = 0;
    for (let step = 0; step < steps && !stopRequested && !diverged; step++) {
      const b = batchAt(step);
      const s0 = performance.now();
      const out = await trainStep(b.x, b.labels, params, lr);
      const ms = performance.now() - s0;
      workMs += ms;
      if (probe.add(ms, step === steps - 1)) post({ slowdown: await probe.measure(() => bench.train_step('cpu', b.x, b.labels, params, lr)) });
      const loss = out[0];
      losses.push(loss);
      pending.push([step + 1, loss]);
      diverged = !Number.isFinite(loss);
      if (!diverged) params = out.subarray(1); // a non-finite step is not taken
      done++;
      const evalNow = fashion && !diverged && (done % evalEvery === 0 || done === steps);
      if (performance.now() - last > YIELD_MS || step === steps - 1 || diverged || evalNow) {
        post({ step: done, steps, loss, losses: pending, elapsedMs: performance.now() - start });
        pending = [];
        await yieldToEvents();
        if (evalNow && !stopRequested) await evaluate(done);
        last = performance.now();
      }
    }
    const wallMs = performance.now() - t0;
    const stepMs = done ? workMs / done : NaN;
    let sum = 0;
    for (const v of logits) sum += v;
    return {
      slug: info.slug,
      title: info.title,
      params: info.param_flat_len,
      backend: where,
      data,
      batch,
      steps: done,
      requested: steps,
      stopped: done < steps && !diverged,
      diverged,
      forwardMs,
      stepMs,
      stepsPerSec: 1000 / stepMs,
      samplesPerSec: (1000 * batch) / stepMs,
      wallMs,
      totalMs: performance.now() - start,
      compileMs,
      evals,
      evalMs,
      test: lastEval, // the last test evaluation (fashion), or null
      warmupLoss: compileStep,
      losses,
      logitsHead: Array.from(logits.subarray(0, info.num_classes)),
      logitsSum: sum,
    };
  } finally {
    bench.free();
  }
}

serve({ hello, run }, () => { stopRequested = true; });
