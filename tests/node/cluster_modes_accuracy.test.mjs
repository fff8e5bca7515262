// cluster_modes_accuracy.test.mjs - the cluster's traffic-saving modes train
// a real model as well as plain f32 lockstep: 5 protocol.js ranks of
// mnist-mlp (101,770 parameters) in one Node process, each computing real
// gradients through the wasm module (VisionBench.grads_cpu) on its shard of
// the Fashion-MNIST subset, over a wire-mode in-process bus
// (tests/node/cluster_cohort_harness.mjs). After the same 9,600 training
// samples, f16 and int8 buckets / deltas (error feedback), periodic
// averaging (H = 4, f32) and periodic averaging with int8 (H = 8) each reach
// a test accuracy on the 1,000 held-out images no more than 1 percentage
// point below f32 lockstep's; every rank ends with the same parameter bytes;
// the messages shrink by 2x / ~4x and periodic mode sends about 1/H of the
// bytes per sample. Skipped when the subset is not built (run `make`).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { load, trainCohort } from './cluster_cohort_harness.mjs';

const SAMPLES = 9600;
const RUN = { slug: 'mnist-mlp', ranks: 5, batch: 16, lr: 0.1, samples: SAMPLES, seed: 1 };
let env = null;

before(async () => {
  env = await load();
});

test(`mnist-mlp, 5 ranks, ${SAMPLES} samples: f16, int8 and periodic averaging within 1 point of f32 lockstep`, async (t) => {
  if (!env) {
    t.skip('web/data/fashion-mnist-*.bin not built (make)');
    return;
  }
  const modes = [
    ['f32 lockstep', { enc: 'f32' }],
    ['f16 lockstep', { enc: 'f16' }],
    ['int8 lockstep', { enc: 'int8' }],
    ['periodic H=4, f32', { enc: 'f32', sync: 'periodic', H: 4, outerLr: 0.7, outerMomentum: 0.9 }],
    ['periodic H=8, int8', { enc: 'int8', sync: 'periodic', H: 8, outerLr: 0.7, outerMomentum: 0.9 }],
  ];
  const rows = [];
  for (const [name, settings] of modes) {
    const t0 = performance.now();
    const r = await trainCohort(env, { ...RUN, settings });
    const follower = Object.entries(r.bytesPerStep).find(([id]) => id !== r.leader)[1];
    rows.push({ name, ...r, follower, leaderBytes: r.bytesPerStep[r.leader], seconds: (performance.now() - t0) / 1000 });
    assert.equal(r.halted, null, `${name} halted: ${r.halted}`);
    assert.ok(r.sameBytes, `${name}: the ranks hold different parameters (${r.hashes.join(' ')})`);
    assert.equal(r.samples, SAMPLES, `${name}: trained on ${r.samples} samples`);
  }
  console.log('| mode | steps | test accuracy | bytes sent per step, follower / leader | bytes per sample | wall s |');
  for (const x of rows) {
    console.log(`| ${x.name} | ${x.steps} | ${(100 * x.acc).toFixed(1)}% | ${x.follower.toLocaleString('en')} / ${x.leaderBytes.toLocaleString('en')} | ` +
      `${((x.follower * 4 + x.leaderBytes) / x.samplesPerStep).toFixed(0)} | ${x.seconds.toFixed(1)} |`);
  }
  const [base, f16, int8, per4, per8] = rows;
  assert.ok(base.acc > 0.6, `f32 lockstep reached only ${base.acc}`);
  for (const x of rows.slice(1)) {
    assert.ok(x.acc >= base.acc - 0.01, `${x.name}: test accuracy ${x.acc} vs f32 lockstep ${base.acc}`);
  }
  // traffic: buckets (followers) and deltas (leader) shrink; periodic sends one round per H local steps
  assert.ok(f16.follower < 0.51 * base.follower && f16.leaderBytes < 0.53 * base.leaderBytes, 'f16 halves the messages');
  assert.ok(int8.follower < 0.26 * base.follower && int8.leaderBytes < 0.3 * base.leaderBytes, 'int8 quarters them');
  const perSample = (x) => (x.follower * 4 + x.leaderBytes) / x.samplesPerStep;
  assert.ok(perSample(per4) < perSample(base) / 3.5, 'periodic H=4 sends about 1/4 of the bytes per sample');
  assert.ok(perSample(per8) < perSample(base) / 28, 'periodic H=8 with int8 sends about 1/32 of the bytes per sample');
});
