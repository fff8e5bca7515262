// cluster_long_compute.test.mjs - ranks whose compute blocks their thread for
// seconds (a language model's gradient on the CPU), on simulated time
// (web/cluster/sim.js): a blocked rank sends no heartbeat and hears nothing
// (its clock and its inbox are frozen for the compute), yet announces the
// compute first (busyMs, follow.js), so no one is dropped or replaced, and
// every step waits for both buckets; a rank that dies inside an announced
// compute is still dropped once the announcement runs out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimCohort, shardGradient } from '../../web/cluster/sim.js';
import { policyFor } from '../../web/cluster/protocol.js';

/** A compute that holds rank `id`'s thread for ms(step) of simulated time, then returns its bucket. */
function blocking(sim, id, ms, { dieAtStep = Infinity } = {}) {
  return (params, version, ctx) => {
    sim.freeze(id);
    if (ctx.step >= dieAtStep) return new Promise(() => {}); // never returns: the tab died mid-compute
    return new Promise((resolve) => sim.clock.setTimeout(() => {
      sim.thaw(id);
      resolve(shardGradient(params, id, ctx.step, 4, { seed: sim.seed }));
    }, ms(ctx.step)));
  };
}

const uneven = { a: () => 3000, b: (step) => (step % 2 ? 4600 : 2200) }; // they differ by more than a drop limit

function cohort(opts = {}) {
  const sim = new SimCohort({ hub: { delayMs: 2 }, rank: { minMembers: 2, firstComputeMs: 10000 } });
  for (const id of ['a', 'b']) sim.add(id, { compute: blocking(sim, id, uneven[id], opts[id]), mode: 'sync' });
  return sim;
}

test('ranks blocked for seconds by their computes keep one leader and both buckets in every step', async () => {
  assert.ok(3000 - 2200 > policyFor(2).dropMs / 2 && 4600 - 3000 > policyFor(2).dropMs, 'the computes differ by more than the silence a peer is allowed');
  const sim = cohort();
  await sim.until(() => sim.leader()?.step >= 8, 200000, 20);
  const leader = sim.leader();
  for (const r of sim.live()) {
    assert.equal(r.stats.peersDropped, 0, `${r.id} dropped a computing peer`);
    assert.ok(r.stats.elections <= 1, `${r.id} held ${r.stats.elections} elections`);
  }
  assert.equal(leader.stats.shortSteps, 0, 'a step resolved without a bucket that was being computed');
  assert.ok(leader.history.slice(0, 8).every((h) => h.contributors.length === 2), 'both ranks contribute to every step');
  leader.setTraining(false);
  await sim.until(() => sim.synced(), 60000, 20);
  const [x, y] = sim.live();
  assert.equal(x.hash, y.hash);
  sim.stopAll();
});

test('a rank that dies inside an announced compute is dropped when the announcement runs out', async () => {
  const sim = cohort({ b: { dieAtStep: 4 } });
  await sim.until(() => sim.leader()?.step >= 4, 200000, 20);
  const a = sim.get('a');
  a.minMembers = 1; // as the page does once the cohort trained: the one left goes on alone
  const at = sim.clock.now();
  await sim.until(() => !a.roster().some((row) => row.id === 'b'), 60000, 20);
  // b announced twice its last compute (at most 2 x 4600 ms); a's own blocked computes (the step's and the
  // next one's, 3000 ms each) do not count as b's silence; then the drop limit: dropped then, not never
  const bound = 2 * 4600 + 2 * 3000 + policyFor(2).dropMs + 1000;
  assert.ok(sim.clock.now() - at <= bound, `dropped after ${sim.clock.now() - at} ms (bound ${bound})`);
  const step = a.step;
  await sim.until(() => a.step >= step + 2, 60000, 20);
  assert.equal(a.role, 'leader');
  sim.stopAll();
});
