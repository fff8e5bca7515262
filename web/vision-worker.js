// vision-worker.js - the compute side of vision-bench.html, in a module
// Worker so the page never blocks: loads pkg/rlx_web.js and runs VisionBench
// forward / training runs on the CPU, WebGPU or WebGL2 (whichever the page
// picks among those available here), posting progress as it goes.
//
// Messages in:  { id, cmd: 'hello' }
//               { id, cmd: 'run', slug, backend, batch, steps, lr, seed }
//               { cmd: 'stop' }            (ends the current run early)
// Messages out: { id, progress: { step, steps, loss, elapsedMs } }
//               { id, ok: true, result }  |  { id, ok: false, error }
import init, * as rlx from './pkg/rlx_web.js';

const YIELD_MS = 40; // longest stretch of work between two looks at the message queue
let stopRequested = false;

/** Lets queued messages (e.g. 'stop') in, without setTimeout's 4 ms clamp. */
function yieldToEvents() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(0);
  });
}

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
async function run(id, { slug, backend, batch, steps, lr, seed }) {
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

    // Forward: the first call compiles; then as many calls as fit in ~150 ms (at least 3).
    const logits = await forward(x, params);
    await yieldToEvents();
    let forwards = 0;
    const f0 = performance.now();
    while (forwards < 3 || (performance.now() - f0 < 150 && forwards < 1000)) {
      await forward(x, params);
      forwards++;
    }
    const forwardMs = (performance.now() - f0) / forwards;
    await yieldToEvents();

    const losses = [];
    const warm = await trainStep(x, labels, params, lr); // compiles the training plan
    const compileStep = warm[0];
    let done = 0;
    let last = performance.now();
    const t0 = last;
    let workMs = 0;
    for (let step = 0; step < steps && !stopRequested; step++) {
      const s0 = performance.now();
      const out = await trainStep(x, labels, params, lr);
      workMs += performance.now() - s0;
      losses.push(out[0]);
      params = out.subarray(1);
      done++;
      if (performance.now() - last > YIELD_MS || step === steps - 1) {
        postMessage({ id, progress: { step: done, steps, loss: out[0], elapsedMs: performance.now() - t0 } });
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
      stopped: done < steps,
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

self.onmessage = async (event) => {
  const msg = event.data ?? {};
  if (msg.cmd === 'stop') {
    stopRequested = true;
    return;
  }
  try {
    let result;
    if (msg.cmd === 'hello') result = await hello();
    else if (msg.cmd === 'run') result = await run(msg.id, msg);
    else throw new Error(`unknown command ${msg.cmd}`);
    postMessage({ id: msg.id, ok: true, result });
  } catch (err) {
    postMessage({ id: msg.id, ok: false, error: String(err?.message ?? err) });
  }
};
