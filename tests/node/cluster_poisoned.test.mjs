// cluster_poisoned.test.mjs - one bad rank among 5 training a real model
// (mnist-mlp through the wasm module on the Fashion-MNIST subset, the
// protocol over a wire-mode in-process bus: tests/node/cluster_cohort_harness.mjs)
// for 6,400 samples. The bad rank sends its true bucket scaled by 1e6,
// sign-flipped and scaled by 4 (outweighing the four honest ones), sign-flipped,
// NaN, or a stale bucket (the one it computed at the first step, again and
// again). With the plain mean, the scaled and the scaled sign-flipped
// buckets wreck the model (test accuracy near chance); a NaN bucket is
// dropped by validation (as before), but the bad rank is never excluded and
// every step waits for it until its deadline. With the robust settings
// (trimmed mean, clipping at 3x the median norm) the cohort converges to
// within 3 points of the test accuracy the same settings reach with the four
// honest ranks alone (what is left once the bad one is out; a trimmed mean
// of 4 is their median, which learns slower than the plain mean of 5), and
// the bad rank is excluded with a reason that every rank's roster shows --
// except the stale one, which is outvoted but looks like an honest bucket.
// Skipped when the subset is not built (make).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { load, trainCohort } from './cluster_cohort_harness.mjs';

const RUN = { slug: 'mnist-mlp', ranks: 5, batch: 16, lr: 0.1, samples: 6400, seed: 2 };
const ROBUST = { enc: 'f32', agg: 'trimmed', clip: 3 };
const PLAIN = { enc: 'f32' };
const BAD = 'r3';
let env = null;
let clean = null; // 5 honest ranks, plain mean
let honest = null; // the 4 honest ranks alone, robust settings: the reference of a cohort rid of its bad rank

before(async () => {
  env = await load();
  if (!env) return;
  clean = await trainCohort(env, { ...RUN, settings: PLAIN });
  honest = await trainCohort(env, { ...RUN, ranks: 4, samples: (RUN.samples * 4) / 5, settings: ROBUST });
  console.log(`clean: 5 ranks, plain mean ${(100 * clean.acc).toFixed(1)}%; 4 honest ranks, trimmed mean + clip ${(100 * honest.acc).toFixed(1)}%`);
});

function converged(r, what) {
  assert.equal(r.halted, null, `${what} halted: ${r.halted}`);
  assert.ok(r.acc >= 0.5 && r.acc >= honest.acc - 0.03, `${what}: test accuracy ${r.acc}; the 4 honest ranks alone reach ${honest.acc}`);
  assert.ok(r.sameBytes, `${what}: the ranks hold different parameters`);
}

function excludedRow(r) {
  return r.roster.find((x) => x.id === BAD)?.excluded ?? null;
}

const WRECKED = 0.3; // test accuracy at or below: the model is wrecked (chance is 0.1)

for (const kind of ['scaled', 'flipped4']) {
  test(`a ${kind === 'scaled' ? '1e6-scaled' : 'sign-flipped, 4x'} peer wrecks the plain mean; the robust mean converges and excludes it`, async (t) => {
    if (!env) return t.skip('web/data/fashion-mnist-*.bin not built (make)');
    const plain = await trainCohort(env, { ...RUN, settings: PLAIN, attack: { id: BAD, kind } });
    const robust = await trainCohort(env, { ...RUN, settings: ROBUST, attack: { id: BAD, kind } });
    console.log(`${kind}: plain mean ${plain.halted ? `halted (${plain.halted.slice(0, 60)})` : `${(100 * plain.acc).toFixed(1)}%`}, ` +
      `robust ${(100 * robust.acc).toFixed(1)}%; ${excludedRow(robust)}`);
    assert.ok(plain.halted || plain.acc <= WRECKED, `plain mean: test accuracy ${plain.acc}, not wrecked`);
    converged(robust, 'robust');
    assert.match(excludedRow(robust), /^excluded at step \d+: 5 buckets in a row rejected or outliers \(last: bucket norm .*x the median of the step\)$/);
    assert.equal(excludedRow(plain), null);
    for (const r of robust.cohort) assert.equal(r.roster().find((x) => x.id === BAD).excluded, excludedRow(robust), `${r.id}'s roster`);
  });
}

test('a sign-flipped peer (1x) is outvoted and excluded by its direction', async (t) => {
  if (!env) return t.skip('web/data/fashion-mnist-*.bin not built (make)');
  const robust = await trainCohort(env, { ...RUN, settings: ROBUST, attack: { id: BAD, kind: 'flipped' } });
  console.log(`flipped: robust ${(100 * robust.acc).toFixed(1)}%; ${excludedRow(robust)}`);
  converged(robust, 'robust');
  assert.match(excludedRow(robust), /\(last: buckets point away from the others' \(mean cosine -0\.\d+ over \d+ steps\)\)$/);
});

test('a NaN peer: dropped either way; only the guard excludes it, and then the steps stop waiting for it', async (t) => {
  if (!env) return t.skip('web/data/fashion-mnist-*.bin not built (make)');
  const plain = await trainCohort(env, { ...RUN, settings: PLAIN, attack: { id: BAD, kind: 'nan' } });
  const robust = await trainCohort(env, { ...RUN, settings: { ...ROBUST, enc: 'int8' }, attack: { id: BAD, kind: 'nan' } });
  console.log(`nan: plain mean ${(100 * plain.acc).toFixed(1)}% (${plain.stats.shortSteps} of ${plain.steps} steps waited for the deadline), ` +
    `robust (int8) ${(100 * robust.acc).toFixed(1)}% (${robust.stats.shortSteps} steps); ${excludedRow(robust)}`);
  assert.equal(excludedRow(plain), null);
  assert.ok(plain.stats.shortSteps >= plain.steps - 1, 'without the guard every step waits for the NaN peer');
  assert.match(excludedRow(robust), /\(last: rejected: int8 scale \d+ is NaN\)$/);
  assert.ok(robust.stats.shortSteps <= 6, `${robust.stats.shortSteps} short steps after the exclusion`);
  converged(robust, 'robust');
  assert.ok(plain.acc >= 0.5, 'the plain mean is not wrecked by NaN buckets: validation drops them');
});

test('a stale peer (its first bucket, replayed) is outvoted by the robust mean', async (t) => {
  if (!env) return t.skip('web/data/fashion-mnist-*.bin not built (make)');
  const robust = await trainCohort(env, { ...RUN, settings: ROBUST, attack: { id: BAD, kind: 'stale' } });
  console.log(`stale: robust ${(100 * robust.acc).toFixed(1)}%; excluded: ${excludedRow(robust)}`);
  converged(robust, 'robust');
});
