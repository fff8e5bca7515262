// describe-model.js - the snippet of index.html's "Describe a model in code":
// the classifier of examples/{c,python,js} (784 -> 128 relu -> 10, mean
// softmax cross-entropy, W2 and biases zero so the first loss is ln 10)
// described op by op, trained for 100 Adam steps on synthetic images, then
// used for inference.  run() resolves to what it measured.
import Rlx from './rlx.js';

const IN = 784, HID = 128, OUT = 10, BATCH = 64;

export async function run({ steps = 100, backend = 'auto', log = console.log } = {}) {
  const rlx = await Rlx.init();

  // The model, op by op.
  const g = rlx.graph();
  const x = g.input('x', [BATCH, IN]);
  const labels = g.input('labels', [BATCH], 'i32');
  const w1 = g.param('w1', [IN, HID]), b1 = g.param('b1', [HID]);
  const w2 = g.param('w2', [HID, OUT]), b2 = g.param('b2', [OUT]);
  const hidden = g.relu(g.add(g.matmul(x, w1), b1));
  const logits = g.add(g.matmul(hidden, w2), b2);
  const loss = g.reduce_mean(g.softmax_cross_entropy(logits, labels));
  const nodes = g.node_count; // 13

  // Backward: outputs [loss, dw1, db1, dw2, db2], sizes [1, 100352, 128, 1280, 10].
  const train = g.compile_backward(loss, [w1, b1, w2, b2], backend);
  const infer = g.compile_forward(logits, train.backend);
  log(`${nodes} nodes on ${train.backend}; output sizes [${train.output_sizes()}]`);
  for (const f of train.fallbacks) log(`  not ${f.backend}: ${f.reason}`);

  // Synthetic images: ten random prototypes, each sample half prototype, half noise.
  let seed = 7;
  const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) >>> 8) / 16777216;
  const protos = Array.from({ length: OUT }, () => Float32Array.from({ length: IN }, rand));
  const xs = new Float32Array(BATCH * IN), ys = new Int32Array(BATCH);
  const batch = () => {
    for (let i = 0; i < BATCH; i++) {
      ys[i] = Math.floor(rand() * OUT);
      for (let k = 0; k < IN; k++) xs[i * IN + k] = 0.5 * protos[ys[i]][k] + 0.5 * rand();
    }
  };

  // Params: W1 He-uniform, the rest zero; Adam (lr 1e-3) in a few lines.
  let s = 42;
  const he = () => (2 * (((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) >>> 8) / 16777216) - 1) * Math.sqrt(6 / IN);
  const p = { w1: Float32Array.from({ length: IN * HID }, he), b1: new Float32Array(HID),
    w2: new Float32Array(HID * OUT), b2: new Float32Array(OUT) };
  const names = Object.keys(p);
  const m = names.map((n) => new Float32Array(p[n].length)), v = names.map((n) => new Float32Array(p[n].length));
  const losses = [];
  for (let t = 1; t <= steps; t++) {
    batch();
    train.feed('x', xs);
    train.feed('labels', ys);
    names.forEach((n) => train.feed(n, p[n]));
    await train.run(); // synchronous on cpu and webgl, a Promise on webgpu
    losses.push(train.output(0)[0]);
    names.forEach((n, k) => {
      const grad = train.output(1 + k), c1 = 1 - 0.9 ** t, c2 = 1 - 0.999 ** t;
      for (let i = 0; i < grad.length; i++) {
        m[k][i] = 0.9 * m[k][i] + 0.1 * grad[i];
        v[k][i] = 0.999 * v[k][i] + 0.001 * grad[i] * grad[i];
        p[n][i] -= (1e-3 * m[k][i] / c1) / (Math.sqrt(v[k][i] / c2) + 1e-8);
      }
    });
    if (t === 1 || t % 10 === 0) log(`step ${t}  loss ${losses[t - 1].toFixed(6)}`);
  }

  // Inference with the trained weights on fresh images.
  batch();
  names.forEach((n) => infer.feed(n, p[n]));
  infer.feed('x', xs);
  await infer.run();
  const out = infer.output(0);
  let correct = 0;
  for (let i = 0; i < BATCH; i++) {
    const row = out.subarray(i * OUT, (i + 1) * OUT);
    correct += row.indexOf(Math.max(...row)) === ys[i] ? 1 : 0;
  }
  log(`inference: ${correct} of ${BATCH} fresh images right`);

  const result = { backend: train.backend, fallbacks: train.fallbacks, nodes, outputSizes: train.output_sizes(),
    losses, accuracy: correct / BATCH };
  train.free();
  infer.free();
  rlx.dispose(); // frees the graph
  return result;
}
