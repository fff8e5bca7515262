// cluster_protocol.test.mjs - web/cluster/protocol.js against stub ranks
// (web/cluster/sim.js) over the in-process bus, on simulated time: election,
// elastic join, leader takeover, split-brain convergence, stopped and
// suspended tabs, an asynchronous (WebGPU-like) rank among synchronous ones,
// the quorum / heartbeat policy, a slow rank in a large cohort, bit-identical
// params, the sample-weighted mean, stale and malformed messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { policyFor, paramsHash, weightedMean, claimBeats, Rank } from '../../web/cluster/protocol.js';
import { SimCohort, rng } from '../../web/cluster/sim.js';
import { InProcessHub } from '../../web/cluster/bus.js';
import { VirtualClock } from '../../web/cluster/clock.js';

const ids = (...xs) => xs;

function bytesOf(f32) {
  return Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
}

function assertBitIdentical(ranks) {
  const [first, ...rest] = ranks;
  for (const r of rest) {
    assert.equal(r.version, first.version, `${r.id} holds version ${r.version}, ${first.id} ${first.version}`);
    assert.ok(bytesOf(r.params).equals(bytesOf(first.params)), `${r.id} params differ from ${first.id}`);
    assert.equal(r.hash, first.hash);
  }
}

function noErrors(sim) {
  for (const r of sim.ranks.values()) {
    assert.equal(r.stats.handlerErrors, 0, `${r.id}: ${JSON.stringify(sim.events.filter((e) => e.type === 'error'))}`);
  }
}

// ---- policy -------------------------------------------------------------------

test('the policy adapts to the number of peers (2, 10, 100)', () => {
  const p2 = policyFor(2);
  const p10 = policyFor(10);
  const p100 = policyFor(100);
  assert.deepEqual(p2, { peers: 2, quorum: 2, heartbeatMs: 250, dropMs: 1000, takeoverMs: 750, collectMs: 1500 });
  assert.deepEqual(p10, { peers: 10, quorum: 6, heartbeatMs: 395, dropMs: 1580, takeoverMs: 1185, collectMs: 1500 });
  assert.deepEqual(p100, { peers: 100, quorum: 60, heartbeatMs: 1250, dropMs: 5000, takeoverMs: 3750, collectMs: 2500 });
  // unanimity up to three ranks, then ~60%
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((n) => policyFor(n).quorum), [1, 2, 3, 3, 3, 4, 5]);
  // the beat stretches monotonically and is capped; timeouts follow the beat
  let last = 0;
  for (let n = 1; n <= 1000; n++) {
    const p = policyFor(n);
    assert.ok(p.heartbeatMs >= last);
    assert.ok(p.heartbeatMs <= 2000);
    assert.equal(p.dropMs, 4 * p.heartbeatMs);
    assert.equal(p.takeoverMs, 3 * p.heartbeatMs);
    assert.ok(p.takeoverMs < p.dropMs);
    assert.ok(p.collectMs >= 2 * p.heartbeatMs);
    assert.ok(p.quorum >= Math.min(n, 3) && p.quorum <= n);
    last = p.heartbeatMs;
  }
  // beat traffic n(n-1)/period grows slower than n^2
  const traffic = (n) => (n * (n - 1)) / policyFor(n).heartbeatMs;
  assert.ok(traffic(100) / traffic(10) < (100 * 99) / (10 * 9) / 3);
  // overrides, and nonsense sizes
  assert.equal(policyFor(10, { heartbeatMs: 10, collectMs: 5 }).heartbeatMs, 16);
  assert.equal(policyFor(0).peers, 1);
  assert.equal(policyFor(NaN).quorum, 1);
});

test('claims: higher term wins, then lower id', () => {
  assert.ok(claimBeats({ term: 2, id: 'z' }, { term: 1, id: 'a' }));
  assert.ok(claimBeats({ term: 1, id: 'a' }, { term: 1, id: 'b' }));
  assert.ok(!claimBeats({ term: 1, id: 'b' }, { term: 1, id: 'a' }));
  assert.ok(!claimBeats({ term: 1, id: 'a' }, { term: 1, id: 'a' }));
});

// ---- election and join -------------------------------------------------------------

test('election: one leader, the lowest id, everyone following it', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minStepMs: 10 } });
  for (const id of ids('d', 'b', 'e', 'a', 'c')) sim.add(id);
  await sim.until(() => sim.converged(), 5000);
  const leader = sim.leader();
  assert.equal(leader.id, 'a');
  assert.equal(leader.term, 1);
  assert.equal(sim.leaders().length, 1);
  for (const r of sim.live()) {
    assert.equal(r.leaderId, 'a');
    assert.equal(r.term, 1);
    assert.deepEqual(r.roster().map((row) => row.id), ['a', 'b', 'c', 'd', 'e']);
  }
  await sim.run(2000);
  assert.equal(sim.leader().id, 'a');
  assert.equal(sim.leader().stats.elections, 1);
  for (const r of sim.live()) if (r.id !== 'a') assert.equal(r.stats.elections, 0);
  noErrors(sim);
  sim.stopAll();
});

test('election with staggered starts and a lossy bus still converges to one leader', async () => {
  const sim = new SimCohort({ hub: { delayMs: (f, t) => 1 + ((f.charCodeAt(0) * 7 + t.charCodeAt(0)) % 13), drop: 0.1, seed: 3 } });
  sim.add('m');
  await sim.run(1000); // alone, 'm' founds the cohort
  assert.equal(sim.get('m').role, 'leader');
  sim.add('k');
  await sim.run(100);
  sim.add('b');
  sim.add('x');
  await sim.until(() => sim.converged(), 10_000);
  // the newcomer 'b' has the lowest id but joins the incumbent instead of taking over
  assert.equal(sim.leader().id, 'm');
  await sim.run(3000);
  assert.equal(sim.leader().id, 'm');
  assert.equal(sim.leaders().length, 1);
  noErrors(sim);
  sim.stopAll();
});

test('elastic join: the newcomer gets current params + version and computes from the next step', async () => {
  // With 4 ranks a step needs 3 buckets; the newcomer's link is the fastest so
  // its bucket is among them (with equal links the last arrival never is).
  const sim = new SimCohort({ hub: { delayMs: (from) => (from === 'a' ? 1 : 2) }, rank: { minMembers: 3 } });
  for (const id of ids('b', 'c', 'd')) sim.add(id);
  await sim.until(() => sim.leader()?.step >= 20, 5000);
  const leader = sim.leader();
  assert.equal(leader.id, 'b');

  let synced = null;
  const joiner = sim.add('a', { start: false }); // lowest id of all: must still not take over
  joiner.on((type, data) => {
    if (type === 'role' && data.to === 'follower' && !synced) {
      synced = { version: joiner.version, hash: joiner.hash, step: joiner.step };
      // at the moment of adoption the newcomer holds exactly what the leader broadcast
      assert.equal(joiner.hash, paramsHash(joiner.params));
    }
  });
  const stepAtJoin = leader.step;
  joiner.start();
  await sim.until(() => synced && leader.history.some((h) => h.contributors.includes('a')), 5000);
  assert.ok(synced.version >= stepAtJoin - 1, 'joined at the current version, not an old one');
  const calls = joiner.compute.calls;
  assert.ok(calls.length > 0);
  assert.ok(calls[0].version >= synced.version, 'first compute is on a step after the sync');
  const firstWith = leader.history.find((h) => h.contributors.includes('a'));
  assert.ok(firstWith.version >= synced.version);
  assert.equal(sim.leader().id, 'b', 'the incumbent keeps leading');
  assert.equal(joiner.stats.elections, 0);
  // the shard index is the newcomer's place among the step's members
  const last = calls.at(-1);
  assert.equal(last.count, 4);
  assert.equal(last.index, 0);

  leader.setTraining(false);
  await sim.until(() => sim.synced(), 5000);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

// ---- takeover and exclusion ----------------------------------------------------------------

test('leader takeover: a silent leader is replaced, training goes on', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 4 } });
  for (const id of ids('a', 'b', 'c', 'd')) sim.add(id);
  await sim.until(() => sim.leader()?.step >= 10, 5000);
  const old = sim.get('a');
  const versionBefore = old.version;
  old.stop({ silent: true }); // a crashed / killed tab: no goodbye
  const t0 = sim.clock.now();
  await sim.until(() => sim.leader() && sim.leader().id !== 'a', 5000);
  const took = sim.clock.now() - t0;
  const next = sim.leader();
  assert.equal(next.id, 'b', 'lowest id among the ranks holding the newest params');
  assert.equal(next.term, 2);
  assert.ok(next.version > versionBefore, 'version stays monotonic across the takeover');
  const pol = policyFor(4);
  assert.ok(took <= pol.takeoverMs + 2 * pol.heartbeatMs, `takeover took ${took} ms`);
  // the old leader leaves every roster; the remaining three keep stepping
  next.minMembers = 3;
  await sim.until(() => sim.live().every((r) => !r.roster().some((row) => row.id === 'a')), 5000);
  const stepsAfter = next.step;
  await sim.run(500);
  assert.ok(next.step > stepsAfter + 20, `only ${next.step - stepsAfter} steps after the takeover`);
  assert.ok(next.history.at(-1).contributors.every((id) => id !== 'a'));
  next.setTraining(false);
  await sim.until(() => sim.synced(), 5000);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('a leader that says goodbye is replaced at once', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 } });
  for (const id of ids('a', 'b', 'c')) sim.add(id);
  await sim.until(() => sim.converged(), 5000);
  sim.get('a').stop();
  const t = await sim.until(() => sim.leader() && sim.leader().id === 'b', 5000);
  assert.ok(t < 50, `took ${t} ms`);
  assert.ok(sim.live().every((r) => r.roster().every((row) => row.id !== 'a')));
  sim.stopAll();
});

test('stopped-tab exclusion: a silent follower leaves the roster and the quorum', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 3 } });
  for (const id of ids('a', 'b', 'c')) sim.add(id);
  await sim.until(() => sim.leader()?.step >= 5, 5000);
  const leader = sim.get('a');
  sim.get('c').stop({ silent: true });
  // n = 3 is unanimous: the step in flight waits until c is dropped (or the collect deadline)
  await sim.until(() => !leader.roster().some((row) => row.id === 'c'), 5000);
  assert.ok(leader.stats.peersDropped >= 1);
  leader.minMembers = 2;
  const before = leader.step;
  await sim.run(300);
  assert.ok(leader.step > before + 20, `${leader.step - before} steps without c`);
  for (const h of leader.history.filter((x) => x.step > before)) {
    assert.deepEqual(h.contributors, ['a', 'b']);
    assert.equal(h.members, 2);
  }
  assert.deepEqual(sim.get('b').roster().map((row) => row.id), ['a', 'b']);
  noErrors(sim);
  sim.stopAll();
});

test('a suspended follower is dropped, and on waking rejoins without claiming', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 2, minStepMs: 5 } });
  for (const id of ids('a', 'b', 'c', 'd')) sim.add(id);
  await sim.until(() => sim.converged() && sim.leader().step >= 5, 5000);
  const leader = sim.get('a');
  sim.freeze('b');
  await sim.run(policyFor(4).dropMs + 1000);
  assert.ok(!leader.roster().some((row) => row.id === 'b'), 'frozen tab dropped');
  const stepped = leader.step;
  await sim.run(300);
  assert.ok(leader.step > stepped + 20, 'the cohort keeps training without it');
  assert.ok(leader.history.at(-1).contributors.every((id) => id !== 'b'));
  sim.thaw('b');
  const b = sim.get('b');
  assert.ok(b.stats.lateTicks >= 1, 'b noticed its timers ran late');
  leader.setTraining(false);
  await sim.until(() => sim.synced(), 5000);
  assert.equal(b.stats.elections, 0, 'a waking tab must not claim leadership');
  assert.equal(sim.leader().id, 'a');
  assert.equal(leader.term, 1);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('a suspended leader is replaced; on waking it steps down and adopts the new params', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 2 } });
  for (const id of ids('a', 'b', 'c')) sim.add(id);
  await sim.until(() => sim.converged() && sim.leader().step >= 5, 5000);
  sim.freeze('a');
  await sim.until(() => sim.get('b').role === 'leader', 5000);
  const b = sim.get('b');
  await sim.until(() => b.step >= sim.get('a').step + 10, 5000);
  sim.thaw('a');
  b.setTraining(false);
  await sim.until(() => sim.synced(), 5000);
  assert.equal(sim.leader().id, 'b');
  assert.equal(sim.get('a').role, 'follower');
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('long synchronous computes that block the event loop cause no false takeover', async () => {
  // Each compute blocks for 1.2 s of wall time: longer than the takeover
  // (750 ms) and drop (1000 ms) timeouts of a 3-rank cohort. (The simulation
  // is one thread, so the three computes block one after another; the long
  // collect window keeps that artefact from cutting ranks out of a step.)
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 3, maxSteps: 12, policy: { collectMs: 10_000 } } });
  const blocking = (p, v, ctx) => {
    sim.clock.t += 1200;
    return { grads: new Float32Array(p.length).fill(0.01), loss: 1, samples: 2 };
  };
  for (const id of ids('a', 'b', 'c')) sim.add(id, { result: blocking });
  await sim.until(() => sim.leader()?.step === 12 && sim.synced(), 120_000, 100);
  assert.equal(sim.leader().id, 'a');
  for (const r of sim.live()) {
    assert.equal(r.stats.elections, r.id === 'a' ? 1 : 0, `${r.id} elections`);
    assert.equal(r.stats.stepDowns, 0);
    assert.equal(r.stats.peersDropped, 0, `${r.id} dropped a peer that was only busy`);
  }
  assert.ok(sim.leader().history.every((h) => h.contributors.length === 3));
  noErrors(sim);
  sim.stopAll();
});

// ---- split brain ---------------------------------------------------------------------------

test('split brain: after a partition heals, the higher term wins and the other side adopts its params', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 2 } });
  for (const id of ids('a', 'b', 'c', 'd')) sim.add(id);
  await sim.until(() => sim.converged() && sim.leader().step >= 5, 5000);
  sim.hub.partition([['a', 'b'], ['c', 'd']]);
  await sim.until(() => sim.leaders().length === 2, 5000);
  const [a, c] = [sim.get('a'), sim.get('c')];
  assert.equal(a.role, 'leader');
  assert.equal(c.role, 'leader');
  assert.ok(c.term > a.term);
  await sim.run(300); // both halves train on their own
  assert.notEqual(a.hash, c.hash);
  const cSteps = c.step;
  sim.hub.heal();
  await sim.until(() => sim.leaders().length === 1 && sim.converged(), 5000);
  assert.equal(sim.leader().id, 'c');
  assert.equal(a.stats.stepDowns, 1);
  assert.ok(c.step >= cSteps, 'the winner keeps its own progress');
  c.setTraining(false);
  await sim.until(() => sim.synced(), 5000);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('split brain with equal terms: the lower id wins', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 2 } });
  sim.hub.partition([['c', 'd'], ['a', 'b']]);
  for (const id of ids('a', 'b', 'c', 'd')) sim.add(id);
  await sim.until(() => sim.leaders().length === 2 && sim.get('c').step > 5 && sim.get('a').step > 5, 5000);
  assert.equal(sim.get('a').term, 1);
  assert.equal(sim.get('c').term, 1);
  sim.hub.heal();
  await sim.until(() => sim.leaders().length === 1 && sim.converged(), 5000);
  assert.equal(sim.leader().id, 'a');
  assert.equal(sim.get('c').stats.stepDowns, 1);
  sim.leader().setTraining(false);
  await sim.until(() => sim.synced(), 5000);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

// ---- mixed and slow ranks -------------------------------------------------------------

for (const asyncId of ['a', 'b']) {
  test(`an asynchronous rank (${asyncId === 'a' ? 'the leader' : 'a follower'}) among synchronous ones contributes to every step`, async () => {
    const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 3, maxSteps: 30 } });
    for (const id of ids('a', 'b', 'c')) sim.add(id, { mode: id === asyncId ? 'immediate' : 'sync' });
    await sim.until(() => sim.leader()?.step === 30 && sim.synced(), 5000);
    const h = sim.leader().history;
    assert.equal(h.length, 30);
    for (const rec of h) assert.deepEqual(rec.contributors, ['a', 'b', 'c']);
    assert.equal(sim.get(asyncId).compute.calls.length, 30);
    assertBitIdentical(sim.live());
    noErrors(sim);
    sim.stopAll();
  });
}

test('one slow rank does not throttle a larger cohort (quorum), but does a small one (unanimity)', async () => {
  async function run(n, slowMs) {
    const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: n } });
    const names = Array.from({ length: n }, (_, i) => `r${String(i).padStart(2, '0')}`);
    for (const id of names) sim.add(id, { mode: 'timer', delayMs: id === names.at(-1) ? slowMs : 5 });
    await sim.until(() => sim.leader()?.step >= 1, 10_000);
    const leader = sim.leader();
    const s0 = leader.step;
    await sim.run(3000);
    const steps = leader.step - s0;
    const slow = sim.get(names.at(-1));
    const withSlow = leader.history.filter((h) => h.contributors.includes(slow.id)).length;
    sim.stopAll();
    return { steps, withSlow, slow, leader };
  }
  const big = await run(10, 2000);
  // a 10-rank step needs 6 buckets: ~7 ms per step, not the 2 s straggler
  assert.ok(big.steps > 200, `10 ranks made only ${big.steps} steps in 3 s`);
  assert.ok(big.withSlow <= 2, 'the straggler is almost never in a step');
  assert.ok(big.slow.stats.abandoned >= 1, 'its late buckets are abandoned (stale) instead of sent');
  assert.equal(big.leader.stats.shortSteps, 0, 'no step waited for the collect deadline');
  // the policy is visible for the UI
  assert.equal(big.leader.status().policy.quorum, 6);

  const small = await run(3, 400);
  assert.ok(small.steps < 10, `3 ranks are unanimous and wait for the straggler (${small.steps} steps)`);
});

test('a 100-rank cohort runs on the stretched beat and resolves each step at the 60% quorum', async () => {
  const name = (i) => `r${String(i).padStart(3, '0')}`;
  // uneven links, so a different 60 are first each step; the star forced
  // (policy treeAbove), as 100 ranks would otherwise step as a tree
  // (cluster_tree_live.test.mjs)
  const sim = new SimCohort({ dim: 16, hub: { delayMs: (f, t) => 1 + ((f.charCodeAt(3) * 31 + t.charCodeAt(3) * 17 + f.charCodeAt(2) * 7 + t.charCodeAt(2)) % 9) },
    rank: { minMembers: 100, maxSteps: 8, policy: { treeAbove: Infinity } } });
  for (let i = 0; i < 100; i++) sim.add(name(i), { mode: 'timer', delayMs: 3 });
  await sim.until(() => sim.leader()?.step === 8 && sim.synced(), 30_000, 50);
  const leader = sim.leader();
  assert.equal(leader.id, 'r000');
  for (const r of sim.live()) {
    assert.deepEqual(r.policy, policyFor(100));
    assert.equal(r.roster().length, 100);
  }
  assert.ok(leader.history.every((h) => h.members === 100 && h.contributors.length === 60));
  assert.equal(new Set(sim.live().map((r) => r.hash)).size, 1, 'all 100 bit-identical');
  noErrors(sim);
  sim.stopAll();
});

// ---- numerics ----------------------------------------------------------------------------------

test('params stay bit-identical across ranks after N steps on a delaying, lossy bus', async () => {
  const jitter = rng(99);
  const sim = new SimCohort({
    dim: 64,
    hub: { delayMs: () => 1 + Math.floor(jitter() * 20), drop: 0.03, seed: 11 },
    rank: { minMembers: 6, maxSteps: 40, lr: 0.2 },
  });
  for (const id of ids('a', 'b', 'c', 'd', 'e', 'f')) sim.add(id, { mode: id === 'd' ? 'immediate' : 'sync', batch: 2 + id.charCodeAt(0) % 5 });
  await sim.until(() => sim.leader()?.step === 40 && sim.synced(), 30_000);
  assertBitIdentical(sim.live());
  const h = sim.leader().history;
  assert.ok(h.at(-1).loss < h[0].loss / 4, `loss ${h[0].loss} -> ${h.at(-1).loss}`);
  noErrors(sim);
  sim.stopAll();
});

test('the reduce is the sample-weighted mean, applied once by the leader', async () => {
  const dim = 5;
  const grads = {
    a: Float32Array.from([1, -2, 0.5, 4, 0]),
    b: Float32Array.from([3, 0.25, -1, 0, 8]),
    c: Float32Array.from([-0.5, 6, 2, 1, -4]),
  };
  const samples = { a: 1, b: 2, c: 5 };
  const losses = { a: 0.5, b: 1.5, c: 3 };
  const lr = 0.5;
  const sim = new SimCohort({ dim, hub: { delayMs: 1 }, rank: { minMembers: 3, maxSteps: 1, lr } });
  for (const id of ids('a', 'b', 'c')) {
    sim.add(id, { result: () => ({ grads: grads[id], loss: losses[id], samples: samples[id] }) });
  }
  const p0 = sim.initialParams('a');
  await sim.until(() => sim.leader()?.step === 1 && sim.synced(), 5000);
  // by hand: (1*g_a + 2*g_b + 5*g_c) / 8, then p - lr * mean
  const mean = [];
  for (let i = 0; i < dim; i++) mean.push((1 * grads.a[i] + 2 * grads.b[i] + 5 * grads.c[i]) / 8);
  assert.deepEqual(mean, [0.5625, 3.5625, 1.0625, 1.125, -0.5]);
  const expected = Float32Array.from(p0, (p, i) => p - lr * mean[i]);
  for (const r of sim.live()) assert.deepEqual(Array.from(r.params), Array.from(expected));
  const rec = sim.leader().history[0];
  assert.equal(rec.samples, 8);
  assert.equal(rec.loss, (0.5 * 1 + 1.5 * 2 + 3 * 5) / 8);
  // the exported helper agrees
  const wm = weightedMean(['a', 'b', 'c'].map((id) => ({ grads: grads[id], loss: losses[id], samples: samples[id] })), dim);
  assert.deepEqual(Array.from(wm.grad), mean);
  sim.stopAll();
});

test('a custom update callback replaces SGD', async () => {
  const sim = new SimCohort({
    dim: 3,
    hub: { delayMs: 1 },
    rank: { minMembers: 2, maxSteps: 3, update: (p, g, ctx) => Float32Array.from(p, (x, i) => x + g[i] * 0 + ctx.step + 1) },
  });
  sim.add('a');
  sim.add('b');
  const p0 = sim.initialParams('a');
  await sim.until(() => sim.leader()?.step === 3 && sim.synced(), 5000);
  assert.deepEqual(Array.from(sim.get('b').params), Array.from(p0, (x) => Math.fround(Math.fround(Math.fround(x + 1) + 2) + 3)));
  sim.stopAll();
});

test('an update that would make params non-finite halts training instead of spreading NaN', async () => {
  const sim = new SimCohort({ dim: 2, hub: { delayMs: 1 }, rank: { minMembers: 2, lr: 1e38 } });
  sim.add('a', { result: () => ({ grads: Float32Array.of(1e30, 1), loss: 1, samples: 1 }) });
  sim.add('b', { result: () => ({ grads: Float32Array.of(1e30, 1), loss: 1, samples: 1 }) });
  await sim.until(() => sim.get('a').halted, 5000);
  assert.match(sim.get('a').status().halted, /non-finite/);
  assert.ok(sim.live().every((r) => r.params.every(Number.isFinite)));
  sim.stopAll();
});

// ---- robustness --------------------------------------------------------------------------

test('stale buckets are discarded and counted; the step is unaffected', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 2, maxSteps: 5 } });
  sim.add('a');
  sim.add('b');
  await sim.until(() => sim.leader()?.step === 5 && sim.synced(), 5000);
  const leader = sim.get('a');
  const before = Buffer.from(bytesOf(leader.params));
  const intruder = sim.hub.connect('z');
  const bucket = (over) => ({ type: 'grad', term: leader.term, version: leader.version, step: leader.step, loss: 1, samples: 1, payload: new Float32Array(4).fill(100), ...over });
  intruder.send('a', bucket({ version: leader.version - 1 })); // an old version
  intruder.send('a', bucket({ term: leader.term + 7 })); // another leader's term
  intruder.send('a', bucket({})); // current, but no step is collecting (training finished)
  await sim.run(20);
  assert.equal(leader.stats.dropped.stale, 3);
  assert.ok(bytesOf(leader.params).equals(before));
  sim.stopAll();
});

test('malformed, oversized and non-finite messages are dropped and counted, never crash a rank', async () => {
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 3 } });
  for (const id of ids('a', 'b', 'c')) sim.add(id);
  await sim.until(() => sim.converged() && sim.leader().step > 3, 5000);
  const leader = sim.get('a');
  const z = sim.hub.connect('0'); // lowest id of all
  const t = leader.term;
  const bad = [
    [{ type: 'nope', term: t }, 'malformed'],
    [{ type: 'hb', term: t, role: 'king', leader: null, version: 0, step: 0, hbMs: 10, sps: 0 }, 'malformed'],
    [{ type: 'hb', term: -1, role: 'leader', leader: '0', version: 0, step: 0, hbMs: 10, sps: 0 }, 'malformed'],
    [{ type: 'hb', term: 1e9, role: 'leader', leader: '0', version: 0, step: 0, hbMs: NaN, sps: 0 }, 'nonFinite'],
    [{ type: 'hb', term: t, role: 'follower', leader: 'a', version: 0, step: 0, hbMs: 10, sps: 0, payload: new Float32Array(4) }, 'malformed'],
    [{ type: 'grad', term: t, version: leader.version, step: 0, loss: NaN, samples: 1, payload: new Float32Array(4) }, 'nonFinite'],
    [{ type: 'grad', term: t, version: leader.version, step: 0, loss: 1, samples: 1, payload: Float32Array.of(1, NaN, 2, 3) }, 'nonFinite'],
    [{ type: 'grad', term: t, version: leader.version, step: 0, loss: 1, samples: 0, payload: new Float32Array(4) }, 'malformed'],
    [{ type: 'grad', term: t, version: leader.version, step: 0, loss: 1, samples: 1, payload: new Float32Array(1 << 16) }, 'oversized'],
    [{ type: 'grad', term: t, version: leader.version, step: 0, loss: 1, samples: 1, payload: new Float32Array(3) }, 'malformed'],
    [{ type: 'grad', term: t, version: '3', step: 0, loss: 1, samples: 1, payload: new Float32Array(4) }, 'malformed'],
    // a "leader" with a huge term and poisoned params: rejected before it can win anything
    [{ type: 'params', term: 1e9, version: 1e6, step: 0, go: true, payload: Float32Array.of(1, 2, Infinity, 4) }, 'nonFinite'],
    [{ type: 'params', term: 1e9, version: 1e6, step: 0, go: 'yes', payload: new Float32Array(4) }, 'malformed'],
    [{ type: 'params', term: 1e9, version: 1e6, step: 0, go: true, members: [1, 2], payload: new Float32Array(4) }, 'malformed'],
    [{ type: 'need', term: t }, 'malformed'],
  ];
  const expected = { malformed: 0, oversized: 0, nonFinite: 0 };
  for (const [msg, kind] of bad) {
    z.send(null, msg);
    expected[kind]++;
  }
  await sim.run(50);
  for (const r of sim.live()) {
    for (const kind of Object.keys(expected)) assert.equal(r.stats.dropped[kind], expected[kind], `${r.id} ${kind}`);
  }
  assert.equal(sim.leader().id, 'a');
  assert.equal(leader.term, t);
  const s = leader.step;
  await sim.run(100);
  assert.ok(leader.step > s + 10, 'still training');
  noErrors(sim);
  sim.stopAll();
});

test('a compute that throws or returns garbage is counted; the cohort goes on', async () => {
  let n = 0;
  const sim = new SimCohort({ dim: 4, hub: { delayMs: 1 }, rank: { minMembers: 3, policy: { collectMs: 50, heartbeatMs: 20 } } });
  sim.add('a');
  sim.add('b');
  sim.add('c', {
    result: (p, v, ctx) => {
      n++;
      if (n % 3 === 1) throw new Error('device lost');
      if (n % 3 === 2) return { grads: new Float32Array(2), loss: 1, samples: 1 };
      return { grads: new Float32Array(4), loss: 1, samples: 1 };
    },
  });
  await sim.until(() => sim.leader()?.step >= 30, 10_000);
  assert.ok(sim.get('c').stats.computeErrors >= 10);
  assert.ok(sim.get('a').stats.shortSteps >= 5, 'steps without c resolved at the collect deadline');
  noErrors(sim);
  sim.stopAll();
});

test('the roster reports each peer: role, resolved backend, fallback reason, step, version, samples/s', async () => {
  const sim = new SimCohort({ hub: { delayMs: 1 }, rank: { minMembers: 3, minStepMs: 5 } });
  sim.add('a', { info: { backend: 'webgpu' }, mode: 'immediate' });
  sim.add('b', { info: { backend: 'cpu', fallback: 'webgpu refused: 3 of 31 steps run on the host' } });
  sim.add('c', { info: { backend: 'webgl' }, mode: 'timer', delayMs: 3 });
  await sim.until(() => sim.leader()?.step >= 50, 5000);
  await sim.run(600); // a couple of beats
  const rows = sim.get('c').roster();
  assert.deepEqual(rows.map((r) => [r.id, r.role, r.backend]), [
    ['a', 'leader', 'webgpu'],
    ['b', 'follower', 'cpu'],
    ['c', 'follower', 'webgl'],
  ]);
  assert.equal(rows[1].fallback, 'webgpu refused: 3 of 31 steps run on the host');
  assert.equal(rows[0].fallback, null);
  assert.ok(rows[2].self);
  for (const r of rows) {
    assert.ok(r.step > 40 && r.version > 40, JSON.stringify(r));
    assert.ok(r.samplesPerSec > 0, JSON.stringify(r));
    assert.equal(r.leader, 'a');
  }
  const st = sim.get('a').status();
  assert.ok(st.cohortSamplesPerSec > st.samplesPerSec, 'the cohort is faster than one rank');
  sim.get('b').setInfo({ backend: 'webgpu', fallback: null });
  await sim.run(600);
  assert.equal(sim.get('a').roster()[1].backend, 'webgpu');
  sim.stopAll();
});

test('a Rank refuses a bad configuration up front', () => {
  const hub = new InProcessHub({ clock: new VirtualClock() });
  const bus = hub.connect('a');
  const compute = () => null;
  assert.throws(() => new Rank({ compute, params: new Float32Array(2) }), /bus/);
  assert.throws(() => new Rank({ bus, params: new Float32Array(2) }), /compute/);
  assert.throws(() => new Rank({ bus, compute, params: [1, 2] }), /params/);
  assert.throws(() => new Rank({ bus, compute, params: new Float32Array(2), id: 'b' }), /differs/);
});
