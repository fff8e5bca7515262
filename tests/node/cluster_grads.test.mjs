// cluster_grads.test.mjs - the gradient buckets of the tab cluster in wasm
// under Node: VisionBench.grads_cpu (through web/cluster/compute.js Buckets) on two halves
// of a batch, combined by their sample-weighted mean (reduce.js, what the
// leader does), equals the gradient of the whole batch within 1e-5, for an
// even and an uneven split of mnist-cnn; a bucket is the step train_step
// takes; and data.js: the subset file parses, and the shards of one step are
// disjoint and cover the set as the steps go by.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { Buckets } from '../../web/cluster/compute.js';
import { weightedMean } from '../../web/cluster/reduce.js';
import { parseSubset, syntheticSet, Shards } from '../../web/cluster/data.js';

const SLUG = 'mnist-cnn';
const SUBSET = new URL('../../web/data/fashion-mnist-train.bin', import.meta.url);
let info;
let grads;

before(async () => {
  await init();
  info = rlx.vision_model_info(SLUG);
  grads = new Buckets(rlx, SLUG, 'cpu');
});

/** A batch of n samples (the subset when built, else synthetic) and params from a seed. */
function problem(n, seed) {
  const bench = new rlx.VisionBench(SLUG);
  const set = existsSync(SUBSET) ? parseSubset(readFileSync(SUBSET)) : syntheticSet(bench, 64, seed);
  const { x, labels } = new Shards(set, { seed }).batch(0, 0, 1, n);
  const params = bench.init_params(seed);
  bench.free();
  return { x, labels, params };
}

function part(p, from, to) {
  const len = info.input_len;
  return { x: p.x.subarray(from * len, to * len), labels: p.labels.subarray(from, to) };
}

function maxRelErr(got, want) {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / Math.max(scale, 1e-30));
  return worst;
}

for (const [n, split] of [[16, 8], [12, 5]]) {
  test(`mnist-cnn: sample-weighted mean of buckets ${split} + ${n - split} == the batch of ${n} (1e-5)`, () => {
    const p = problem(n, 7 + n);
    const full = grads.run(p.x, p.labels, p.params);
    const a = part(p, 0, split);
    const b = part(p, split, n);
    const ga = grads.run(a.x, a.labels, p.params);
    const gb = grads.run(b.x, b.labels, p.params);
    assert.equal(full.samples, n);
    assert.equal(ga.samples + gb.samples, n);
    assert.equal(full.grads.length, info.param_flat_len);
    assert.ok(full.grads.some((v) => v !== 0), 'a zero gradient proves nothing');
    assert.ok(maxRelErr(ga.grads, full.grads) > 1e-3, 'the halves must differ from the whole for the test to mean anything');
    const mean = weightedMean([ga, gb], info.param_flat_len);
    const err = maxRelErr(mean.grad, full.grads);
    assert.ok(err <= 1e-5, `weighted mean of the buckets differs from the full batch by ${err} (relative to the largest entry)`);
    for (let i = 0; i < full.grads.length; i++) {
      assert.ok(Math.abs(mean.grad[i] - full.grads[i]) <= 1e-5 * (1 + Math.abs(full.grads[i])), `grad[${i}]: ${mean.grad[i]} vs ${full.grads[i]}`);
    }
    assert.ok(Math.abs(mean.loss - full.loss) <= 1e-5 * (1 + full.loss), `loss ${mean.loss} vs ${full.loss}`);
    assert.equal(mean.samples, n);
  });
}

test('mnist-cnn: a bucket is the step train_step takes (p - lr g)', () => {
  const p = problem(8, 3);
  const lr = 0.5;
  const g = grads.run(p.x, p.labels, p.params);
  const bench = new rlx.VisionBench(SLUG);
  const out = bench.train_step_cpu(p.x, p.labels, p.params, lr);
  bench.free();
  assert.ok(Math.abs(out[0] - g.loss) <= 1e-6 * (1 + g.loss));
  for (let i = 0; i < g.grads.length; i++) {
    const want = p.params[i] - lr * g.grads[i];
    assert.ok(Math.abs(out[1 + i] - want) <= 1e-5 * (1 + Math.abs(want)), `param ${i}: ${out[1 + i]} vs ${want}`);
  }
  // params are left as they were; bad lengths are refused with the argument named
  const again = grads.run(p.x, p.labels, p.params);
  assert.deepEqual(again.grads, g.grads);
  assert.equal(again.backend, 'cpu');
  assert.throws(() => grads.run(p.x, p.labels, p.params.subarray(1)), /grads_cpu.*params/);
  assert.throws(() => grads.run(p.x.subarray(1), p.labels, p.params), /grads_cpu.*x/);
});

test('data.js: the subset parses; the shards of a step are disjoint and walk through the set', () => {
  const bytes = existsSync(SUBSET) ? readFileSync(SUBSET) : null;
  if (bytes) {
    const set = parseSubset(bytes);
    assert.equal(set.count, 3000);
    assert.equal(set.inputLen, 784);
    const x = new Float32Array(784);
    const label = set.sample(0, x, 0);
    assert.ok(label >= 0 && label < 10);
    assert.ok(x.every((v) => v >= 0 && v <= 1) && x.some((v) => v > 0));
    assert.throws(() => parseSubset(bytes.subarray(0, 100)), /bytes, expected/);
    const bad = Uint8Array.from(bytes.subarray(0, 24));
    bad[0] = 0;
    assert.throws(() => parseSubset(bad), /magic/);
  }
  const set = { kind: 'test', count: 50, inputLen: 1, classes: 10, sample: (i, dst, at) => ((dst[at] = i), i % 10) };
  const shards = new Shards(set, { seed: 3 });
  for (const count of [1, 2, 3, 7]) {
    const seen = new Set();
    for (let step = 0; step < 20; step++) {
      const ids = [];
      for (let index = 0; index < count; index++) ids.push(...shards.indices(step, index, count, 4));
      if (count * 4 <= 50) assert.equal(new Set(ids).size, ids.length, `count ${count}, step ${step}: shards overlap`);
      ids.forEach((i) => seen.add(i));
    }
    assert.equal(seen.size, 50, `count ${count}: the steps did not cover the set`);
  }
  const b = shards.batch(2, 1, 3, 4);
  assert.deepEqual(Array.from(b.x), Array.from(b.indices));
  assert.deepEqual(Array.from(b.labels), Array.from(b.indices, (i) => i % 10));
});
