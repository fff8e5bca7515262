// cluster_robust.test.mjs - web/cluster/robust.js and the guarded leader of
// protocol.js: the mean, trimmed mean and median on hand-made columns,
// clipping against the step's median norm and a fixed maximum, the
// leave-one-out direction that gives a sign-flipped bucket away, PeerGuard
// (strikes in a row, a good bucket resets them, the reason, the running
// direction mean), and stub cohorts (web/cluster/sim.js) with one bad rank:
// with the robust settings it is excluded, every rank's roster says why, the
// excluded rank stops computing and the rest train on; without them nothing
// is excluded (the default protocol is unchanged).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aggregate, trimCount, PeerGuard, robustOn, DEFAULT_ROBUST } from '../../web/cluster/robust.js';
import { weightedMean } from '../../web/cluster/reduce.js';
import { SimCohort, rng, shardGradient } from '../../web/cluster/sim.js';

const b = (from, values, { samples = 1, loss = 1 } = {}) => ({ from, grads: Float32Array.from(values), samples, loss });

test('rules: the mean is the sample-weighted mean; trimmed and median per coordinate; the loss takes the same rule', () => {
  const buckets = [b('a', [1, 10], { samples: 2, loss: 1 }), b('b', [2, 20], { loss: 2 }), b('c', [3, -5], { loss: 3 }), b('d', [4, 0], { loss: 4 }), b('e', [100, 7], { loss: 100 })];
  const m = aggregate(buckets, 2, { rule: 'mean' });
  const w = weightedMean(buckets, 2);
  assert.deepEqual(m.grad, w.grad);
  assert.equal(m.loss, w.loss);
  assert.equal(m.samples, 6);
  const t = aggregate(buckets, 2, { rule: 'trimmed' });
  assert.deepEqual(Array.from(t.grad), [3, Math.fround(17 / 3)]); // [2,3,4] and [0,7,10]
  assert.equal(t.loss, 3);
  const med = aggregate(buckets, 2, { rule: 'median' });
  assert.deepEqual(Array.from(med.grad), [3, 7]);
  const four = aggregate(buckets.slice(0, 4), 2, { rule: 'median' });
  assert.deepEqual(Array.from(four.grad), [2.5, 5]);
  assert.deepEqual([1, 2, 3, 4, 5, 10, 20].map((n) => trimCount(n)), [0, 0, 1, 1, 1, 2, 4]);
  assert.throws(() => aggregate(buckets, 2, { rule: 'mode' }), /rule must be one of/);
  assert.throws(() => aggregate([], 2), /no buckets/);
});

test('clipping: to a multiple of the median norm (an outlier) or to a fixed maximum', () => {
  const unit = (from, s = 1) => b(from, [0.6 * s, 0.8 * s]);
  const buckets = [unit('a'), unit('b'), unit('c'), unit('d'), unit('x', 1e6)];
  const plain = aggregate(buckets, 2, { rule: 'mean' });
  assert.ok(plain.grad[0] > 1e5, 'unclipped, the big bucket dominates the mean');
  const clipped = aggregate(buckets, 2, { rule: 'mean', clip: 3 });
  assert.ok(Math.abs(clipped.grad[0] - (4 * 0.6 + 3 * 0.6) / 5) < 1e-6, `clipped mean ${clipped.grad[0]}`);
  const x = clipped.verdicts.find((v) => v.from === 'x');
  assert.ok(Math.abs(x.scale - 3e-6) < 1e-12);
  assert.match(x.outlier, /^bucket norm 1\.0e\+6x the median of the step$/);
  assert.ok(clipped.verdicts.filter((v) => v.from !== 'x').every((v) => v.scale === 1 && v.outlier === null));
  // a fixed maximum clips every bucket above it but calls none an outlier below 10x the median
  const fixed = aggregate([unit('a', 2), unit('b', 1), unit('c', 1)], 2, { rule: 'mean', clipMax: 1.5 });
  assert.deepEqual(fixed.verdicts.map((v) => Math.round(v.scale * 1e6) / 1e6), [0.75, 1, 1]);
  assert.ok(fixed.verdicts.every((v) => v.outlier === null));
  // without clip the outlier threshold is 10x the median
  const off = aggregate([unit('a'), unit('b'), unit('c', 9)], 2, { rule: 'median' });
  assert.ok(off.verdicts.every((v) => v.outlier === null));
  const far = aggregate([unit('a'), unit('b'), unit('c', 11)], 2, { rule: 'median' });
  assert.match(far.verdicts[2].outlier, /11\.0x/);
});

test('direction: with a robust rule, a sign-flipped bucket has a negative leave-one-out cosine, honest ones positive', () => {
  const r = rng(4);
  const n = 400;
  const mu = Float32Array.from({ length: n }, () => r() - 0.5);
  const noisy = () => mu.map((m) => m + (r() - 0.5) * 1.5);
  const honest = [0, 1, 2, 3].map((i) => b(`h${i}`, noisy()));
  const flipped = b('f', noisy().map((v) => -v));
  for (const rule of ['trimmed', 'median']) {
    const out = aggregate([...honest, flipped], n, { rule });
    const cos = Object.fromEntries(out.verdicts.map((v) => [v.from, v.cos]));
    assert.ok(cos.f < -0.2, `${rule}: flipped cosine ${cos.f}`);
    for (const h of honest) assert.ok(cos[h.from] > 0.1, `${rule}: ${h.from} cosine ${cos[h.from]}`);
  }
  assert.equal(aggregate([...honest, flipped], n, { rule: 'mean' }).verdicts[0].cos, undefined, "the mean gives no direction");
  assert.equal(aggregate(honest.slice(0, 2), n, { rule: 'median' }).verdicts[0].cos, undefined, 'two buckets give no direction');
});

test('PeerGuard: N bad buckets in a row exclude a peer with the reason; a good one resets; direction needs a running mean', () => {
  const g = new PeerGuard({ strikes: 3 });
  assert.equal(g.judge('p', 'rejected: NaN', 1), null);
  assert.equal(g.judge('p', 'rejected: NaN', 2), null);
  assert.equal(g.judge('p', null, 3), null, 'a good bucket');
  assert.equal(g.judge('p', 'bucket norm 50x the median of the step', 4), null);
  assert.equal(g.judge('p', 'rejected: NaN', 5), null);
  const why = g.judge('p', 'rejected: NaN', 6);
  assert.equal(why, 'excluded at step 6: 3 buckets in a row rejected or outliers (last: rejected: NaN)');
  assert.ok(g.isExcluded('p'));
  assert.equal(g.judge('p', 'again', 7), null, 'excluded once');
  assert.deepEqual(g.list(), [{ id: 'p', reason: why }]);
  const f = new PeerGuard();
  f.adopt(g.list());
  assert.equal(f.reasonFor('p'), why);
  f.adopt([]);
  assert.equal(f.reasonFor('p'), null);
  // direction: one negative step is no verdict; a mean below minCos after minObs is
  const d = new PeerGuard();
  assert.equal(d.verdict({ from: 'q', cos: -0.9 }), null);
  for (let i = 0; i < DEFAULT_ROBUST.minObs - 2; i++) assert.equal(d.verdict({ from: 'q', cos: i % 2 ? 0.3 : -0.3 }), null);
  for (let i = 0; i < 40; i++) d.verdict({ from: 'h', cos: i % 3 === 0 ? -0.4 : 0.3 });
  assert.ok(d.alignment('h') > 0);
  assert.equal(d.verdict({ from: 'h', cos: -0.5 }), null, 'an honest peer with a third of its steps negative');
  let last = null;
  for (let i = 0; i < 30; i++) last = d.verdict({ from: 'x', cos: -0.3 });
  assert.match(last, /^buckets point away from the others' \(mean cosine -0\.30 over 30 steps\)$/);
  assert.equal(d.verdict({ from: 'y', outlier: 'bucket norm 20x the median of the step', cos: 0.9 }), 'bucket norm 20x the median of the step');
  assert.equal(robustOn({}), false);
  assert.equal(robustOn({ agg: 'mean' }), false);
  assert.equal(robustOn({ agg: 'median' }), true);
  assert.equal(robustOn({ clip: 3 }), true);
  assert.equal(robustOn({ clipMax: 1 }), true);
});

// ---- stub cohorts -----------------------------------------------------------------

const ATTACK = {
  scaled: (g) => g.map((v) => v * 1e6),
  flipped: (g) => g.map((v) => -v),
  nan: (g) => g.map((v, i) => (i === 3 ? NaN : v)),
};

function cohort({ settings, attack = null, bad = 'r3', enc = undefined }) {
  const sim = new SimCohort({ dim: 64, hub: { delayMs: 2, wire: true }, rank: { lr: 0.05, settings: { ...settings, ...(enc ? { enc } : {}) }, policy: { quorumFraction: 1 } } });
  for (let i = 0; i < 5; i++) {
    const id = `r${i}`;
    const result = id === bad && attack ? (p, _v, ctx) => {
      const r = shardGradient(p, id, ctx.step, 16);
      return { ...r, grads: ATTACK[attack](r.grads) };
    } : (p, _v, ctx) => shardGradient(p, id, ctx.step, 16);
    sim.add(id, { result });
  }
  return sim;
}

for (const [attack, settings, enc] of [
  ['scaled', { agg: 'trimmed', clip: 3 }, undefined],
  ['scaled', { agg: 'median' }, 'int8'],
  ['flipped', { agg: 'trimmed', clip: 3 }, undefined],
  ['nan', { agg: 'median' }, 'f16'],
]) {
  test(`stub cohort: a ${attack} peer is excluded (${JSON.stringify(settings)}${enc ? `, ${enc}` : ''}); every roster says why; the rest train on`, async () => {
    const sim = cohort({ settings, attack, enc });
    const leader = () => sim.leader();
    await sim.until(() => leader() && leader().stats.excluded === 1, 60_000);
    const l = leader();
    const row = l.roster().find((x) => x.id === 'r3');
    assert.match(row.excluded, /^excluded at step \d+: 5 buckets in a row rejected or outliers \(last: /);
    const want = { scaled: /bucket norm .*x the median/, flipped: /point away/, nan: /rejected: .*(NaN|Infinity)/ }[attack];
    assert.match(row.excluded, want);
    const excludedAt = l.step;
    const calls = () => sim.get('r3').compute.calls.length;
    await sim.until(() => l.step >= excludedAt + 2, 10_000);
    const before = calls();
    const loss0 = l.history[l.history.length - 1].loss;
    await sim.until(() => l.step >= excludedAt + 40, 30_000);
    // every rank (the excluded one too) shows it; it computes no more; the others step without it
    for (const r of sim.live()) assert.equal(r.roster().find((x) => x.id === 'r3').excluded, row.excluded, `${r.id}'s roster`);
    assert.equal(calls(), before, 'the excluded rank stopped computing');
    assert.ok(!l.members.includes('r3'));
    assert.deepEqual(l.history[l.history.length - 1].contributors, ['r0', 'r1', 'r2', 'r4']);
    const loss1 = l.history[l.history.length - 1].loss;
    assert.ok(loss1 < loss0, `the loss went on falling: ${loss0} -> ${loss1}`);
    assert.ok(l.params.every(Number.isFinite));
    for (const r of sim.live()) if (r.id !== 'r3') assert.equal(r.roster().filter((x) => x.excluded).length, 1, 'only r3 is excluded');
    sim.stopAll();
  });
}

test('stub cohort without robust settings: nobody is excluded (a NaN sender is dropped, as before)', async () => {
  const sim = cohort({ settings: {}, attack: 'nan' });
  await sim.until(() => sim.leader() && sim.leader().step >= 8, 60_000);
  const l = sim.leader();
  assert.equal(l.stats.excluded, 0);
  assert.ok(l.stats.dropped.nonFinite >= 5);
  assert.ok(l.roster().every((x) => x.excluded === null));
  sim.stopAll();
});
