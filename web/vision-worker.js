// vision-worker.js - the compute side of vision-bench.html, in a module
// Worker so the page never blocks: loads pkg/rlx_web.js and runs VisionBench
// forward / training runs on the CPU, WebGPU or WebGL2 (whichever the page
// picks among those available here), posting progress as it goes.
//
// Messages in:  { id, cmd: 'hello' }
//               { id, cmd: 'run', slug, backend, batch, steps, lr, seed }
//               { cmd: 'stop' }            (ends the current run early)
// Messages out: { id, progress: { phase, text } }    (a long phase begins)
//               { id, progress: { step, steps, loss, losses: [[step, loss], ...], elapsedMs } }
//               { id, ok: true, result }  |  { id, ok: false, error }
import init, * as rlx from './pkg/rlx_web.js';
import { serve, yieldToEvents } from './worker-rpc.js';

const YIELD_MS = 40; // longest stretch of work between two looks at the message queue
let stopRequested = false;

async function hello() {
  await init();
  await Promise.all([rlx.init_webgpu(), rlx.init_webgl()]);
  const env = rlx.backend_environment();
  return {
    backends: { cpu: env.cpu, webgpu: env.webgpu, webgl: env.webgl },
    models: rlx.list_vision_models().map((slug) => rlx.vision_model_info(slug)),
    backend: rlx.backend(),
    preferred: rlx.preferred_backend(),
    version: rlx.runtime().version(),
  };
}

/**
 * Forward timing, then `steps` SGD steps on one synthetic batch (after one
 * untimed warm-up step that also compiles the training plan).
 */
async function run({ slug, backend, batch, steps, lr, seed }, post) {
  await init();
  const where = rlx.parse_backend(backend);
  if (where === 'auto') throw new Error(`unknown backend "${backend}" (pick cpu, webgpu or webgl)`);
  stopRequested = false;
  const bench = new rlx.VisionBench(slug);
  // VisionBench.forward_cpu / _webgpu / _webgl and train_step_*: awaited (Promises on WebGPU).
  const forward = (x, params) => bench[`forward_${where}`](x, params);
  const trainStep = (x, labels, params, lr) => bench[`train_step_${where}`](x, labels, params, lr);
  try {
    const info = bench.info();
    let params = bench.init_params(seed);
    const { x, labels } = bench.synthetic_batch(seed, batch);

    const phase = async (kind, text) => {
      post({ phase: kind, text });
      await yieldToEvents();
    };
    // Forward: the first call compiles; then as many calls as fit in ~150 ms (at least 3).
    await phase('compiling', `compiling the forward pass for ${where}`);
    const logits = await forward(x, params);
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
      compileStep = (await trainStep(x, labels, params, lr))[0]; // compiles the training plan
    }
    let done = 0;
    let diverged = false;
    let last = performance.now();
    const t0 = last;
    let workMs = 0;
    for (let step = 0; step < steps && !stopRequested && !diverged; step++) {
      const s0 = performance.now();
      const out = await trainStep(x, labels, params, lr);
      workMs += performance.now() - s0;
      const loss = out[0];
      losses.push(loss);
      pending.push([step + 1, loss]);
      diverged = !Number.isFinite(loss);
      if (!diverged) params = out.subarray(1); // a non-finite step is not taken
      done++;
      if (performance.now() - last > YIELD_MS || step === steps - 1 || diverged) {
        post({ step: done, steps, loss, losses: pending, elapsedMs: performance.now() - t0 });
        pending = [];
        await yieldToEvents();
        last = performance.now();
      }
    }
    const stepMs = done ? workMs / done : NaN;
    let sum = 0;
    for (const v of logits) sum += v;
    return {
      slug: info.slug,
      title: info.title,
      params: info.param_flat_len,
      backend: where,
      batch,
      steps: done,
      requested: steps,
      stopped: done < steps && !diverged,
      diverged,
      forwardMs,
      stepMs,
      stepsPerSec: 1000 / stepMs,
      samplesPerSec: (1000 * batch) / stepMs,
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
