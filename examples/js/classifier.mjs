#!/usr/bin/env node
// classifier.mjs - a small image classifier described in code with the RLX
// JS SDK (web/rlx.ts -> web/rlx.js), trained and then used for inference, in
// Node.  The browser twin of this file is web/describe-model.js (run from
// the "Describe a model in code" section of web/index.html).
//
// The model, the same as examples/c/classifier.c and examples/python/classifier.py:
//   logits = relu(x W1 + b1) W2 + b2        x[B, 784] -> [B, 128] -> [B, 10]
//   loss   = mean softmax cross-entropy of logits against the labels
//
// W1 is He-uniform, W2 and the biases start at zero, so every class starts
// equally likely and the first loss is ln(10).  compile_backward turns the
// graph into one whose outputs are [loss, dW1, db1, dW2, db2]; 100 Adam
// steps (--steps; lr 1e-3 or --lr, written out below) on batches of 64
// Fashion-MNIST images ($RLX_DATA_DIR or /usr/share/datasets/fashion-mnist;
// synthetic images when the files are missing or with --synthetic); a second
// graph with a larger batch computes the logits and the loss of 1000
// held-out images, with the weights before and after training.
//
// Checks (exit status 1 when one fails): the first loss is ln(10) +- 0.05,
// and the loss fell: the held-out loss after training is at least 0.001
// below the one before (true of a healthy run of any length, even one step;
// never of a run that learned nothing, such as --lr 0).  Exit status 2 on a
// library error or bad arguments.
//
// Run: make wasm sdk && node examples/js/classifier.mjs [--synthetic] [--steps N] [--lr LR]
//                                                        [--backend auto|cpu|webgpu|webgl]
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import Rlx, { RlxError } from '../../web/rlx.js';

const IN = 784, HID = 128, OUT = 10, BATCH = 64, EVAL_BATCH = 1000, SYNTHETIC_POOL = 640;
const LR = 1e-3, BETA1 = 0.9, BETA2 = 0.999, EPS = 1e-8;
const MIN_FALL = 0.001; // how far the held-out loss must fall
const USAGE =
  'usage: node examples/js/classifier.mjs [--synthetic] [--steps N] [--lr LR] [--backend auto|cpu|webgpu|webgl]';

// ---- the model ------------------------------------------------------------
/** Adds the classifier for a batch size to graph g: node ids of logits, loss and the params. */
function buildClassifier(g, batch) {
  const x = g.input('x', [batch, IN]);
  const labels = g.input('labels', [batch], 'i32');
  const w1 = g.param('w1', [IN, HID]), b1 = g.param('b1', [HID]);
  const w2 = g.param('w2', [HID, OUT]), b2 = g.param('b2', [OUT]);
  const hidden = g.relu(g.add(g.matmul(x, w1), b1));
  const logits = g.add(g.matmul(hidden, w2), b2);
  const loss = g.reduce_mean(g.softmax_cross_entropy(logits, labels));
  return { logits, loss, params: [w1, b1, w2, b2] };
}
const PARAMS = [['w1', IN * HID], ['b1', HID], ['w2', HID * OUT], ['b2', OUT]];

/** Adam over named Float32Arrays: p -= lr * mhat / (sqrt(vhat) + eps). */
function adam(params, lr) {
  const m = {}, v = {};
  for (const [name, n] of PARAMS) [m[name], v[name]] = [new Float32Array(n), new Float32Array(n)];
  let t = 0;
  return (grads) => {
    t += 1;
    const c1 = 1 - BETA1 ** t, c2 = 1 - BETA2 ** t;
    for (const [name] of PARAMS) {
      const p = params[name], g = grads[name], mm = m[name], vv = v[name];
      for (let i = 0; i < p.length; i++) {
        mm[i] = BETA1 * mm[i] + (1 - BETA1) * g[i];
        vv[i] = BETA2 * vv[i] + (1 - BETA2) * g[i] * g[i];
        p[i] -= (lr * (mm[i] / c1)) / (Math.sqrt(vv[i] / c2) + EPS);
      }
    }
  };
}

// ---- numbers and data -----------------------------------------------------
/** The 32-bit LCG of the C and Python examples, so all three draw the same numbers. */
function lcg(seed) {
  let state = seed >>> 0;
  return () => { // [0, 1)
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 8) / 16777216;
  };
}

function heUniform(seed, fanIn, n) {
  const next = lcg(seed), bound = Math.sqrt(6 / fanIn);
  return Float32Array.from({ length: n }, () => (2 * next() - 1) * bound);
}

/** Ten random prototype images; sample i is the prototype of class i mod 10, half-blended with noise. */
function syntheticData() {
  const next = lcg(7);
  const protos = Array.from({ length: OUT }, () => Float32Array.from({ length: IN }, next));
  const samples = (n) => {
    const x = new Float32Array(n * IN), y = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < IN; k++) x[i * IN + k] = 0.5 * protos[i % OUT][k] + 0.5 * next();
      y[i] = i % OUT;
    }
    return [x, y];
  };
  const [trainX, trainY] = samples(SYNTHETIC_POOL);
  const [evalX, evalY] = samples(EVAL_BATCH);
  return { name: 'synthetic', trainX, trainY, evalX, evalY };
}

/** An IDX file (gzip or raw): images scaled to [0, 1] or labels. */
function readIdx(path) {
  let bytes = readFileSync(path);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims = bytes[3];
  const shape = Array.from({ length: dims }, (_, i) => view.getUint32(4 + 4 * i));
  const data = bytes.subarray(4 + 4 * dims);
  return { shape, data };
}

/** Fashion-MNIST: training images from its training set, held-out ones from its test set; null when missing. */
function fashionMnist(nTrain) {
  const dir = process.env.RLX_DATA_DIR || '/usr/share/datasets/fashion-mnist';
  const file = (f) => join(dir, f);
  if (!existsSync(file('train-images-idx3-ubyte.gz'))) return null;
  const images = (f, n) => Float32Array.from(readIdx(file(f)).data.subarray(0, n * IN), (b) => b / 255);
  const labels = (f, n) => Int32Array.from(readIdx(file(f)).data.subarray(0, n));
  const count = readIdx(file('train-labels-idx1-ubyte.gz')).shape[0];
  nTrain = Math.min(nTrain, Math.floor(count / BATCH) * BATCH);
  return {
    name: `Fashion-MNIST (${dir})`,
    trainX: images('train-images-idx3-ubyte.gz', nTrain), trainY: labels('train-labels-idx1-ubyte.gz', nTrain),
    evalX: images('t10k-images-idx3-ubyte.gz', EVAL_BATCH), evalY: labels('t10k-labels-idx1-ubyte.gz', EVAL_BATCH),
  };
}

function parseArgs(argv) {
  const args = { synthetic: false, steps: 100, lr: LR, backend: 'auto' };
  const bad = (what, value) => {
    console.error(`classifier.mjs: ${what} (got '${value}')\n${USAGE}`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1] ?? '';
    if (argv[i] === '--synthetic') {
      args.synthetic = true;
    } else if (argv[i] === '--steps') {
      if (!/^[0-9]+$/.test(value) || !(Number(value) >= 1 && Number(value) <= 1e6)) {
        bad('--steps must be 1 to 1000000', value);
      }
      args.steps = Number(value), i++;
    } else if (argv[i] === '--lr') {
      if (value.trim() === '' || !(Number(value) >= 0) || !Number.isFinite(Number(value))) {
        bad('--lr must be a number >= 0', value);
      }
      args.lr = Number(value), i++;
    } else if (argv[i] === '--backend' && value) {
      args.backend = value, i++;
    } else {
      bad('unknown argument', argv[i]);
    }
  }
  return args;
}

/** Runs infer (outputs [logits, loss]) with params: the held-out loss, logits and run time (ms). */
async function heldout(infer, params) {
  for (const [name] of PARAMS) infer.feed(name, params[name]);
  const t0 = performance.now();
  await infer.run(); // synchronous on cpu and webgl, a Promise on webgpu
  const ms = performance.now() - t0;
  return { loss: infer.output(1)[0], logits: infer.output(0), ms };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const d = (!args.synthetic && fashionMnist(args.steps * BATCH)) || syntheticData();
  const nTrain = d.trainY.length;
  console.log(`data: ${d.name}, ${nTrain} training images; model 784 -> 128 relu -> 10, Adam lr ${args.lr}, batch ${BATCH}`);
  const rlx = await Rlx.init();

  // ---- the graphs: a training step (its backward pass), the model for a bigger batch
  const g = rlx.graph();
  const m = buildClassifier(g, BATCH);
  const forwardNodes = g.node_count;
  const step = g.compile_backward(m.loss, m.params, args.backend); // outputs [loss, dw1, db1, dw2, db2]
  g.free(); // the compiled graph keeps what it needs
  console.log(`backend: ${step.backend}${step.fallbacks.map((f) => `; not ${f.backend}: ${f.reason}`).join('')}`);
  console.log(`${forwardNodes} nodes in the forward graph; output sizes [${step.output_sizes().join(', ')}]`);
  const ge = rlx.graph();
  const e = buildClassifier(ge, EVAL_BATCH);
  const infer = ge.compile_forward([e.logits, e.loss], args.backend);
  ge.free();
  infer.feed('x', d.evalX);
  infer.feed('labels', d.evalY);

  const params = {
    w1: heUniform(42, IN, IN * HID), b1: new Float32Array(HID), w2: new Float32Array(HID * OUT), b2: new Float32Array(OUT),
  };
  const before = (await heldout(infer, params)).loss;

  // ---- training: Adam over the gradients -------------------------------------
  const update = adam(params, args.lr);
  const losses = [];
  const t0 = performance.now();
  for (let i = 0; i < args.steps; i++) {
    const start = (i * BATCH) % nTrain;
    step.feed('x', d.trainX.subarray(start * IN, (start + BATCH) * IN));
    step.feed('labels', d.trainY.subarray(start, start + BATCH));
    for (const [name] of PARAMS) step.feed(name, params[name]);
    await step.run(); // synchronous on cpu and webgl, a Promise on webgpu
    losses.push(step.output(0)[0]);
    update(Object.fromEntries(PARAMS.map(([name], k) => [name, step.output(1 + k)])));
    if (i === 0 || (i + 1) % 10 === 0) console.log(`step ${String(i + 1).padStart(3)}  loss ${losses[i].toFixed(6)}`);
  }
  const trainS = (performance.now() - t0) / 1000;
  console.log(`first loss ${losses[0].toFixed(6)} (ln 10 = ${Math.log(10).toFixed(6)}); ${args.steps} steps in ` +
    `${trainS.toFixed(3)} s (${((1e3 * trainS) / args.steps).toFixed(2)} ms/step)`);
  step.free();

  // ---- inference: the held-out images with the trained weights ---------------
  const { loss: after, logits, ms: inferMs } = await heldout(infer, params);
  infer.free();
  const predicted = Array.from({ length: EVAL_BATCH }, (_, r) => {
    let best = 0;
    for (let c = 1; c < OUT; c++) if (logits[r * OUT + c] > logits[r * OUT + best]) best = c;
    return best;
  });
  const correct = predicted.filter((p, r) => p === d.evalY[r]).length;
  console.log(`inference: ${EVAL_BATCH} held-out images in ${inferMs.toFixed(2)} ms, loss ${after.toFixed(6)} ` +
    `(${before.toFixed(6)} before training), accuracy ${((100 * correct) / EVAL_BATCH).toFixed(1)}%; ` +
    `first predictions [${predicted.slice(0, 8).join(', ')}], ` +
    `labels [${Array.from(d.evalY.subarray(0, 8)).join(', ')}]`);
  rlx.dispose();

  // ---- checks -----------------------------------------------------------------
  const failures = [];
  if (Math.abs(losses[0] - Math.log(10)) > 0.05) {
    failures.push(`the first loss ${losses[0].toFixed(6)} is not ln(10) = ${Math.log(10).toFixed(6)} +- 0.05`);
  }
  if (!(after <= before - MIN_FALL)) {
    failures.push(`the loss did not fall: held-out loss ${after.toFixed(6)} after ${args.steps} steps vs ` +
      `${before.toFixed(6)} before training (needs to fall by ${MIN_FALL})`);
  }
  for (const f of failures) console.error(`FAIL: ${f}`);
  if (failures.length) return 1;
  console.log(`OK: first loss is ln(10); the held-out loss fell from ${before.toFixed(6)} to ${after.toFixed(6)}`);
  return 0;
}

main().then((code) => process.exit(code), (err) => {
  console.error(err instanceof RlxError ? `rlx error: ${err.message}` : err);
  process.exit(2);
});
