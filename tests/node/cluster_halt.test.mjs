// cluster_halt.test.mjs - how a run ends and what settings are in force, in
// web/cluster/protocol.js on stub ranks (web/cluster/sim.js): a diverging
// cohort (every bucket NaN, as with a huge or negative learning rate) halts
// on every rank with a message naming the step instead of retrying the step
// forever; one hostile NaN bucket does not end the run; a failing compute on
// the leader ends it with the error; followers adopt the leader's settings
// (lr, step limit, and the rest) and a rank that takes over keeps them; ranks
// of another model or protocol refuse each other and say why on both sides.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimCohort, shardGradient } from '../../web/cluster/sim.js';
import { PROTOCOL_VERSION } from '../../web/cluster/protocol.js';

const nanBucket = (p) => ({ grads: new Float32Array(p.length).fill(NaN), loss: NaN, samples: 4 });

test('a diverging cohort halts on every rank with the step, instead of livelocking', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 3, policy: { collectMs: 200 } } });
  // finite for two steps, then NaN everywhere (the loss overflowed)
  const result = (p, v, ctx) => (ctx.step < 2 ? shardGradient(p, 'x', ctx.step, 4) : nanBucket(p));
  for (const id of ['a', 'b', 'c']) sim.add(id, { result });
  await sim.until(() => sim.live().every((r) => r.halted), 10_000);
  const leader = sim.leader();
  assert.ok(leader, 'one leader');
  for (const r of sim.live()) {
    assert.match(r.halted, /diverged at step 2/);
    assert.equal(r.haltedAt, 2);
    assert.ok(r.params.every(Number.isFinite), 'the last good params are kept');
    assert.equal(r.step, 2);
  }
  // and it stays halted: no more steps, no compute calls
  const calls = sim.live().map((r) => r.compute.calls.length);
  await sim.run(3000);
  assert.deepEqual(sim.live().map((r) => r.compute.calls.length), calls);
  assert.equal(leader.step, 2);
  assert.ok(sim.events.some((e) => e.type === 'halted' && e.id !== leader.id), 'followers report the halt too');
  sim.stopAll();
});

test('only non-finite buckets from followers (leader not computing) also end the run at the deadline', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 2, policy: { collectMs: 200 } } });
  sim.add('a', { computeWhenLeader: false }); // 'a' founds the cohort (lowest id) and only coordinates
  sim.add('b', { result: nanBucket });
  await sim.until(() => sim.get('a').halted && sim.get('b').halted, 10_000);
  assert.match(sim.get('a').halted, /diverged at step 0/);
  assert.match(sim.get('b').halted, /diverged at step 0/);
  sim.stopAll();
});

test('one NaN bucket from a follower among finite ones is dropped, and training goes on', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 3, maxSteps: 5, policy: { collectMs: 200 } } });
  sim.add('a');
  sim.add('b');
  sim.add('c', { result: nanBucket });
  await sim.until(() => sim.leader()?.step === 5 && sim.synced(), 20_000);
  assert.ok(sim.live().every((r) => !r.halted));
  assert.ok(sim.leader().stats.dropped.nonFinite >= 5);
  sim.stopAll();
});

test('a failing compute on the leader ends the run with its error', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 2 } });
  let n = 0;
  sim.add('a', { compute: (p, v, ctx) => { if (++n > 2) throw new Error('GPU device lost'); return shardGradient(p, 'a', ctx.step, 4); } });
  sim.add('b');
  await sim.until(() => sim.get('a').halted && sim.get('b').halted, 10_000);
  assert.match(sim.get('b').halted, /could not compute its gradient at step \d+: GPU device lost/);
  sim.stopAll();
});

test('followers adopt the leader settings; a rank that takes over keeps them', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 } });
  sim.add('a', { lr: 0.05, maxSteps: 6, minMembers: 3, settings: { slug: 'm', batch: 16, optimizer: 'sgd' } });
  sim.add('b', { lr: 5, maxSteps: 100, settings: { slug: 'm', batch: 64, optimizer: 'sgd' } });
  sim.add('c', { lr: 7, settings: { slug: 'm', batch: 8, optimizer: 'sgd' } });
  await sim.until(() => sim.leader()?.step === 6 && sim.synced(), 20_000);
  assert.equal(sim.leader().id, 'a');
  for (const id of ['b', 'c']) {
    const st = sim.get(id).status();
    assert.deepEqual(st.settings, { slug: 'm', batch: 16, optimizer: 'sgd', lr: 0.05, maxSteps: 6 });
    assert.equal(st.settingsFrom, 'a');
  }
  // the leader goes; b takes over with the cohort's lr, not its own 5
  sim.get('a').stop({ silent: true });
  sim.get('b').maxSteps = 9; // a user raising the limit on the new leader's tab
  await sim.until(() => sim.leader()?.id === 'b' && sim.leader().step === 9 && sim.synced(), 20_000);
  assert.equal(sim.get('b').lr, 0.05);
  assert.equal(sim.get('c').status().settings.lr, 0.05);
  assert.equal(sim.get('c').status().settings.maxSteps, 9);
  assert.equal(sim.get('c').status().settingsFrom, 'b');
  sim.stopAll();
});

test('ranks of another model or protocol refuse each other, with the reason on both sides', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 } });
  const a = sim.add('a', { model: 'mnist-cnn/4' });
  const b = sim.add('b', { model: 'mnist-mlp/4' });
  const c = sim.add('c', { model: 'mnist-cnn/4' });
  await sim.until(() => a.role === 'leader' && b.role === 'leader' && c.role === 'follower' && a.refused().length && b.refused().length, 10_000);
  assert.deepEqual(a.refused().map((r) => r.id), ['b']);
  assert.match(a.refused()[0].reason, /trains mnist-mlp\/4; this cohort trains mnist-cnn\/4/);
  assert.deepEqual(b.refused().map((r) => r.id).sort(), ['a', 'c']);
  assert.match(b.refused()[0].reason, /trains mnist-cnn\/4; this cohort trains mnist-mlp\/4/);
  assert.deepEqual(a.roster().map((r) => r.id), ['a', 'c'], 'a refused peer is not a member');
  assert.ok(a.stats.dropped.refused > 0);
  // another protocol version (an old cached tab) is refused with a hint
  sim.hub.connect('z').send(null, { type: 'hb', term: 0, model: 'mnist-cnn/4', pv: PROTOCOL_VERSION - 1 });
  await sim.run(20);
  assert.match(a.refused().find((r) => r.id === 'z').reason, new RegExp(`protocol ${PROTOCOL_VERSION - 1}, this rank ${PROTOCOL_VERSION} \\(reload it\\)`));
  sim.stopAll();
});
