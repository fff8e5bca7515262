// train-worker.js - the compute side of train.html, in a module Worker:
// trains a vision model on the Fashion-MNIST subset (web/data/, 3,000 train
// and 1,000 test images made by `make`) on the backend the page picks, with
// SGD fused into the backend's training step or momentum / Adam applied on
// the host to the backend's gradients (optim.js), and evaluates on the whole
// test split as it goes.
//
// Messages in:  { id, cmd: 'hello' }
//               { id, cmd: 'train', slug, backend, optimizer: { kind, lr }, batch, steps, evalEvery, seed }
//               { cmd: 'stop' }      (acted on after the step in flight)
// Messages out: { id, progress: { phase, text, step, steps, losses: [[step, loss], ...], samplesPerSec } }
//               { id, progress: { phase: 'eval', step, accuracy, perClass, confusion, predictions } }
//               { id, progress: { phase: 'measured', slowdown } }   (a software GPU: software-gpu.js)
//               { id, ok: true, result: { status: 'finished' | 'stopped' | 'diverged', step, ... } }
//               { id, ok: false, error }
import { init, runtime } from './runtime/instance.js';
import { init_webgpu, init_webgl, backend_environment, backend_candidates, parse_backend } from './runtime/select.js';
import { VisionBench, list_vision_models, vision_model_info } from './runtime/vision.js';
import { loadSubset, scoreBatch, subsetFits, Shards } from './cluster/data.js';
import { makeOptimizer } from './optim.js';
import { serve, yieldToEvents } from './worker-rpc.js';
import { SoftwareProbe } from './software-gpu.js';

export const GRID = 24; // test samples shown with their predictions
const EVAL_BATCH = 100;
const POST_MS = 100; // at most this long between two progress messages
let stopRequested = false;
let data = null; // { train, test, grid: { pixels, labels } }

async function hello() {
  await init();
  await Promise.all([init_webgpu(), init_webgl()]);
  const [train, test] = await Promise.all([loadSubset('train'), loadSubset('test')]);
  const grid = { pixels: new Float32Array(GRID * test.inputLen), labels: new Int32Array(GRID) };
  for (let i = 0; i < GRID; i++) grid.labels[i] = test.sample(i, grid.pixels, i * test.inputLen);
  data = { train, test, grid };
  const env = backend_environment();
  const models = list_vision_models().map((slug) => vision_model_info(slug)).filter(subsetFits);
  const auto = Object.fromEntries(models.map((m) => {
    const c = backend_candidates(m.slug, 'auto');
    return [m.slug, { backend: c.candidates[0], skipped: c.skipped }];
  }));
  return {
    version: runtime().version(),
    // the CPU's threads: the threaded build where this page is cross-origin isolated, and why
    threads: runtime().threads, threadsWhy: runtime().threadsWhy,
    backends: { cpu: env.cpu, webgpu: env.webgpu, webgl: env.webgl },
    models,
    auto,
    train: train.count,
    test: test.count,
    grid: { pixels: grid.pixels, labels: grid.labels, side: Math.round(Math.sqrt(test.inputLen)) },
  };
}

/** Accuracy, per-class accuracy, the confusion matrix (rows: true class) and the grid's predictions. */
async function evaluate(forward, params, classes) {
  const { test } = data;
  const confusion = Array.from({ length: classes }, () => new Array(classes).fill(0));
  const x = new Float32Array(EVAL_BATCH * test.inputLen);
  const labels = new Int32Array(EVAL_BATCH);
  const predictions = new Int32Array(GRID);
  let correct = 0;
  for (let start = 0; start + EVAL_BATCH <= test.count; start += EVAL_BATCH) {
    for (let k = 0; k < EVAL_BATCH; k++) labels[k] = test.sample(start + k, x, k * test.inputLen);
    const scored = scoreBatch(await forward(x, params), labels, classes, confusion);
    correct += scored.correct;
    if (start < GRID) predictions.set(scored.predicted.subarray(0, GRID - start), start);
    if (stopRequested) break;
  }
  const seen = confusion.reduce((s, row) => s + row.reduce((a, b) => a + b, 0), 0);
  const perClass = confusion.map((row, c) => {
    const n = row.reduce((a, b) => a + b, 0);
    return n ? row[c] / n : NaN;
  });
  return { accuracy: seen ? correct / seen : NaN, evaluated: seen, perClass, confusion, predictions: Array.from(predictions) };
}

async function train(s, post) {
  if (!data) throw new Error('the data is not loaded yet');
  stopRequested = false;
  const where = parse_backend(s.backend);
  const backend = where === 'auto' ? backend_candidates(s.slug, 'auto').candidates[0] : where;
  const bench = new VisionBench(s.slug);
  try {
    const info = bench.info();
    if (!subsetFits(info)) throw new Error(`${s.slug} does not take 28x28 images with 10 classes`);
    let params = bench.init_params(s.seed);
    const opt = makeOptimizer(s.optimizer, params.length);
    const fused = opt.kind === 'sgd';
    const forward = (x, p) => bench.forward(backend, x, p);
    const stepFn = fused
      ? (x, labels, p) => bench.train_step(backend, x, labels, p, opt.lr)
      : (x, labels, p) => bench.grads(backend, x, labels, p);
    // A software GPU picked by name: a few of its steps against the same step on the CPU.
    const probe = new SoftwareProbe(backend_environment()[backend]?.software, backend, 'a training step');
    const shards = new Shards(data.train, { seed: s.seed });
    const pending = [];
    let step = 0, trainMs = 0, lastPost = performance.now();
    const rate = () => (trainMs > 0 ? (1000 * s.batch * Math.max(step - 1, 0)) / trainMs : NaN);
    const end = (status, extra = {}) => ({ status, step, backend, samplesPerSec: rate(), ...extra });
    post({ phase: 'compiling', text: `compiling ${s.slug} for ${backend} (the first step)`, step: 0, steps: s.steps, losses: [] });
    await yieldToEvents();
    while (step < s.steps) {
      if (stopRequested) return end('stopped');
      const { x, labels } = shards.batch(step, 0, 1, s.batch);
      const t0 = performance.now();
      const out = await stepFn(x, labels, params);
      const loss = out[0];
      if (!Number.isFinite(loss)) {
        post({ phase: 'training', step: step + 1, steps: s.steps, losses: [...pending.splice(0), [step + 1, loss]] });
        return end('diverged', { step: step + 1, loss });
      }
      if (fused) params = out.slice(1);
      else opt.step(params, out.subarray(1));
      // The first step compiles: it is left out of the rate (and of the probe).
      const ms = performance.now() - t0;
      if (step > 0) trainMs += ms;
      if (step > 0 && probe.add(ms, step === s.steps - 1)) {
        const cpuStep = fused ? () => bench.train_step('cpu', x, labels, params, opt.lr) : () => bench.grads('cpu', x, labels, params);
        post({ phase: 'measured', slowdown: await probe.measure(cpuStep) });
      }
      step++;
      pending.push([step, loss]);
      const evalNow = step % s.evalEvery === 0 || step === s.steps;
      if (evalNow || performance.now() - lastPost > POST_MS) {
        post({ phase: 'training', text: `step ${step} / ${s.steps}`, step, steps: s.steps, losses: pending.splice(0),
          samplesPerSec: rate() });
        lastPost = performance.now();
        await yieldToEvents();
      }
      if (evalNow) {
        post({ phase: 'evaluating', text: `step ${step}: evaluating on ${data.test.count} test images`, step,
          steps: s.steps, losses: [] });
        await yieldToEvents();
        const ev = await evaluate(forward, params, info.num_classes);
        post({ phase: 'eval', step, ...ev });
        await yieldToEvents();
        lastPost = performance.now();
      }
    }
    return end('finished');
  } finally {
    bench.free();
  }
}

serve({ hello, train }, () => { stopRequested = true; });
