// cluster_hostile.test.mjs - a hostile peer in the cohort (web/cluster
// auth.js, rules.js, protocol.js). Each test lets an honest cohort train,
// runs one attack, and checks that the honest ranks keep training under
// their one honest leader with none of the attacker's state: no halt, the
// leader unchanged, steps going on, versions still one per step, every
// honest rank holding the leader's bytes, the settings untouched.
// (1) On the simulation (SimCohort: trusted ids, virtual time): rules that
// need no keys - a term near 2^53, a heartbeat period of 1e300, a bucket of
// 1.7e308 samples from outside the step, 50,000 invented ids, an announced
// version near 2^53. (2) On the wire buses (BroadcastChannelBus, Fabric,
// MeshLink; real time, waiting for events): forged senders - a halt and
// params in the leader's name, a relayed lead that the leader did not sign,
// forged sequence numbers ahead of the leader's, a forged `from` steering a
// mesh route - and the same rule breaks from a signed attacker, which ends
// excluded with the reason in every roster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimCohort } from '../../web/cluster/sim.js';
import { BroadcastChannelBus } from '../../web/cluster/bus.js';
import { Rank } from '../../web/cluster/protocol.js';
import { stubCompute } from '../../web/cluster/sim.js';
import { Fabric } from '../../web/cluster/fabric.js';
import { MeshLink } from '../../web/cluster/mesh.js';
import { BOUNDS } from '../../web/cluster/policy.js';
import { encodeMessage } from '../../web/cluster/wire.js';
import { signBuffer, SIG_PLACEHOLDER, createIdentity } from '../../web/cluster/auth.js';
import { waitFor, identities } from './cluster_wait.mjs';
import { FakeNet } from './cluster_fake_trystero.mjs';

const DIM = 8;
const HONEST = ['a', 'b', 'c'];

// ---- (1) the simulation -----------------------------------------------------------------

/** Three honest ranks trained to step 5 on virtual time, and an attacker endpoint 'z' on their hub. */
async function simCohort() {
  const sim = new SimCohort({ dim: DIM, hub: { delayMs: 2 } });
  for (const id of HONEST) sim.add(id);
  await sim.until(() => sim.converged() && sim.leader().step >= 5, 60_000);
  const attacker = sim.hub.connect('z');
  return { sim, attacker, leader: sim.leader() };
}

/** The honest ranks trained on under their leader: no halt, steps advanced, one version a step, same bytes. */
async function assertHonest(sim, leader, from, { steps = 20 } = {}) {
  leader.maxSteps = from + steps; // then the cohort rests, every rank holding the last params
  await sim.until(() => sim.leader() === leader && leader.step >= from + steps && sim.synced(), 120_000);
  const honest = HONEST.map((id) => sim.get(id));
  for (const r of honest) {
    assert.equal(r.halted, null, `${r.id} halted`);
    assert.equal(r.leaderId, leader.id, `${r.id} follows ${r.leaderId}`);
    assert.equal(r.hash, leader.hash, `${r.id} holds other bytes`);
    assert.equal(r.version, leader.version);
    assert.ok(r.term < 100, `${r.id} term ${r.term}`);
  }
  assert.equal(leader.version, leader.step, 'one version a step (no jump)');
  assert.equal(leader.lr, 0.1, 'the settings are the leader\'s');
}

test('sim: a heartbeat with term 2^53-1, then silence, does not split the cohort; a later election still works', async () => {
  const { sim, attacker, leader } = await simCohort();
  const s0 = leader.step;
  attacker.send(null, { type: 'hb', term: Number.MAX_SAFE_INTEGER, role: 'leader', leader: 'z', version: leader.version, step: leader.step, hbMs: 250, sps: 0 });
  await assertHonest(sim, leader, s0);
  // the leader crashes: the next claim is a small term, and the cohort goes on under it
  leader.stop({ silent: true });
  for (const r of sim.live()) r.maxSteps = s0 + 30;
  await sim.until(() => sim.synced() && sim.leader() !== leader && sim.leader().step >= s0 + 30, 120_000);
  const next = sim.leader();
  assert.ok(next.term < 100, `term ${next.term}`);
  assert.ok(sim.live().every((r) => r.halted === null && r.hash === next.hash));
});

test('sim: a leader claim with a heartbeat period of 1e300, then silence, does not stall the cohort', async () => {
  const { sim, attacker, leader } = await simCohort();
  const s0 = leader.step;
  attacker.send(null, { type: 'hb', term: leader.term + 1, role: 'leader', leader: 'z', version: leader.version + 1, step: leader.step, hbMs: 1e300, sps: 0 });
  await assertHonest(sim, leader, s0);
  assert.ok(HONEST.every((id) => sim.get(id).stats.dropped.rule >= 1), 'the claim was dropped by every rank');
});

test('sim: a bucket of 1.7e308 samples (and plain buckets) from a rank outside the step do not halt or enter it', async () => {
  const { sim, attacker, leader } = await simCohort();
  const s0 = leader.step;
  const flood = () => {
    if (leader.stopped) return;
    attacker.send(leader.id, { type: 'grad', term: leader.term, version: leader.version, step: leader.step, loss: 1, samples: 1.7e308, payload: new Float32Array(DIM).fill(1) });
    attacker.send(leader.id, { type: 'grad', term: leader.term, version: leader.version, step: leader.step, loss: 1, samples: 4, payload: new Float32Array(DIM).fill(1e3) });
    if (leader.step < s0 + 20) sim.clock.setTimeout(flood, 1);
  };
  flood();
  await assertHonest(sim, leader, s0);
  assert.ok(leader.history.every((h) => !h.contributors.includes('z')), 'no step took the attacker\'s bucket');
  assert.ok(leader.rules.isExcluded('z'), 'struck out');
  assert.match(leader.roster().find((r) => r.id === 'z').excluded, /broken rules/);
});

test('sim: 50,000 invented ids (a heartbeat period of 1e300, then a valid one) are capped, dropped when silent, and training recovers', async () => {
  const { sim, leader } = await simCohort();
  const honest = HONEST.map((id) => sim.get(id));
  const inject = (msg) => {
    for (const r of honest) r._onMessage({ ...msg });
  };
  const before = leader.step;
  await sim.run(5000);
  const baseline = leader.step - before; // steps in 5 s before the attack
  for (let i = 0; i < 50_000; i++) inject({ type: 'hb', from: `x${i}`, to: null, term: leader.term, role: 'follower', leader: leader.id, version: leader.version, step: leader.step, hbMs: 1e300, sps: 0 });
  assert.ok(honest.every((r) => r.peers.size === 2), 'out-of-range heartbeats add no peer');
  for (let i = 0; i < 50_000; i++) inject({ type: 'hb', from: `y${i}`, to: null, term: leader.term, role: 'follower', leader: leader.id, version: leader.version, step: leader.step, hbMs: 250, sps: 0 });
  assert.ok(honest.every((r) => r.peers.size <= BOUNDS.maxPeers), `peers capped at ${BOUNDS.maxPeers}`);
  assert.ok(honest.every((r) => r.peers.has(leader.id) || r === leader), 'the leader was not evicted');
  // silent from now on: within the drop limit of the longest heartbeat they are gone
  await sim.run(30_000);
  assert.ok(honest.every((r) => r.peers.size === 2), `silent ids dropped: ${honest.map((r) => r.peers.size)}`);
  const s1 = leader.step;
  await sim.run(5000);
  assert.ok(leader.step - s1 >= baseline / 2, `training recovered: ${leader.step - s1} steps in 5 s, ${baseline} before`);
  await assertHonest(sim, leader, leader.step, { steps: 1 });
});

test('sim: a heartbeat announcing version 2^53-2 neither stalls the election nor overflows the next leader\'s versions', async () => {
  const { sim, attacker, leader } = await simCohort();
  const s0 = leader.step;
  let lying = true; // for the whole test: the liar never goes quiet
  const lie = () => {
    attacker.send(null, { type: 'hb', term: leader.term, role: 'follower', leader: null, version: Number.MAX_SAFE_INTEGER - 1, step: 0, hbMs: 250, sps: 0 });
    if (lying) sim.clock.setTimeout(lie, 200);
  };
  lie();
  leader.stop({ silent: true });
  for (const r of sim.live()) r.maxSteps = s0 + 20;
  await sim.until(() => sim.synced() && sim.leader() !== leader && sim.leader().step >= s0 + 20, 120_000);
  lying = false;
  const next = sim.leader();
  assert.ok(next.version <= BOUNDS.maxVersion + 100, `version ${next.version}`);
  assert.ok(sim.live().every((r) => r.halted === null && r.hash === next.hash));
});

// ---- (2) the wire buses -----------------------------------------------------------------

// Real time: beats of 40 ms, silence limits and the step deadline far above a loaded machine's stalls.
const PATIENT = { heartbeatMs: 40, dropBeats: 50, takeoverBeats: 50, collectMs: 30_000 };

/** Three signed ranks on a BroadcastChannel, trained to step 5; a raw channel for the attacker. */
async function wireCohort() {
  const name = `rlx-hostile-${process.pid}-${Math.random()}`;
  const keys = await identities(3);
  const ranks = keys.map((k) => new Rank({ bus: new BroadcastChannelBus(name, k), compute: stubCompute(k.id, { batch: 4 }), params: new Float32Array(DIM).fill(0.5),
    policy: PATIENT, discoverMs: 400, minMembers: 3, lr: 0.1 }));
  for (const r of ranks) r.start();
  const leader = ranks[0];
  const synced = () => ranks.every((r) => r.version === leader.version && (r === leader || (r.role === 'follower' && r.leaderId === leader.id))) && leader.role === 'leader' && !leader.collect;
  await waitFor(() => leader.role === 'leader' && leader.step >= 5 && ranks.every((r) => r === leader || r.role === 'follower'), 'the cohort at step 5');
  const raw = new BroadcastChannel(name);
  let seq = 1e6;
  return {
    ranks, leader, raw, synced,
    /** msg as `signer` signs it (from: its id unless msg names another). */
    sign(signer, msg) {
      return signBuffer(signer, encodeMessage({ from: signer.id, to: null, seq: seq++, term: leader.term, ...msg, pk: signer.pk, sig: SIG_PLACEHOLDER }));
    },
    async post(signer, msg) {
      raw.postMessage(await this.sign(signer, msg));
    },
    close() {
      for (const r of ranks) {
        r.stop({ silent: true });
        r.bus.close();
      }
      raw.close();
    },
  };
}

async function assertWireHonest(c, from, steps = 10) {
  const { ranks, leader } = c;
  leader.maxSteps = from + steps; // then the cohort rests, every rank holding the last params
  await waitFor(() => leader.step >= from + steps && c.synced(), `${steps} more steps`);
  for (const r of ranks) {
    assert.equal(r.halted, null, `${r.id} halted`);
    assert.equal(r.leaderId, leader.id);
    assert.equal(r.hash, leader.hash, `${r.id} holds other bytes`);
    assert.equal(r.lr, 0.1);
  }
  assert.equal(leader.role, 'leader');
  assert.equal(leader.version, leader.step, 'one version a step (no jump)');
}

test('wire: a halt, params and settings in the leader\'s name (unsigned, or signed by another key) are dropped and counted', async () => {
  const c = await wireCohort();
  try {
    const { leader, ranks } = c;
    const mallory = await createIdentity();
    const s0 = leader.step;
    const forged = { from: leader.id, term: leader.term };
    const params = { type: 'params', version: leader.version + 1_000_000, step: leader.step, go: true, settings: { lr: 1e30, maxSteps: 0 }, payload: new Float32Array(DIM).fill(42) };
    // unsigned, in the leader's name
    c.raw.postMessage(encodeMessage({ type: 'halt', ...forged, to: null, seq: 1, step: leader.step, reason: 'forged' }));
    c.raw.postMessage(encodeMessage({ ...params, ...forged, to: null, seq: 2 }));
    // signed with mallory's key, in the leader's name
    await c.post(mallory, { type: 'halt', ...forged, step: leader.step, reason: 'forged' });
    await c.post(mallory, { ...params, ...forged });
    // mallory's own, naming the leader as the tree's root
    await c.post(mallory, { ...params, tree: { root: leader.id, k: 2, n: 4, at: 1, ids: ranks.slice(1).map((r) => r.id), depth: 1, ms: 1000 } });
    await c.post(mallory, { type: 'halt', step: leader.step, reason: 'forged' });
    await waitFor(() => ranks.slice(1).every((r) => r.bus.stats.unsigned >= 2 && r.bus.stats.wrongId >= 2), 'the forgeries counted');
    await assertWireHonest(c, s0);
    assert.ok(ranks.every((r) => !r.params.includes(42)));
  } finally {
    c.close();
  }
});

test('wire: a relayed tree step whose lead the leader did not sign is dropped', async () => {
  const c = await wireCohort();
  try {
    const { leader, ranks } = c;
    const mallory = await createIdentity();
    const s0 = leader.step;
    const lead = JSON.stringify({ type: 'params', version: leader.version + 1_000_000, step: leader.step, go: true, term: leader.term, settings: { lr: 1e30, maxSteps: 0 },
      from: leader.id, pk: mallory.pk, ph: 'x'.repeat(43), sig: 'A'.repeat(86) });
    for (const r of ranks.slice(1)) {
      await c.post(mallory, { type: 'params', to: r.id, version: leader.version + 1_000_000, step: leader.step, go: true, lead, payload: new Float32Array(DIM).fill(42),
        tree: { root: leader.id, k: 2, n: 3, at: 1, ids: [r.id], depth: 1, ms: 1000 } });
    }
    await waitFor(() => ranks.slice(1).every((r) => r.bus.stats.badSignature >= 1), 'the bad leads counted');
    await assertWireHonest(c, s0);
    assert.ok(ranks.every((r) => !r.params.includes(42)));
  } finally {
    c.close();
  }
});

test('wire: a signed attacker breaking the rules (term 2^53-1, heartbeat 1e300, 1.7e308 samples, a flood) is struck and excluded; the cohort trains on', async () => {
  const c = await wireCohort();
  try {
    const { leader, ranks } = c;
    const mallory = await createIdentity();
    const s0 = leader.step;
    await c.post(mallory, { type: 'hb', term: Number.MAX_SAFE_INTEGER, role: 'leader', leader: mallory.id, version: leader.version, step: 0, hbMs: 40, sps: 0 });
    await c.post(mallory, { type: 'hb', term: leader.term + 1, role: 'leader', leader: mallory.id, version: leader.version + 1, step: 0, hbMs: 1e300, sps: 0 });
    await c.post(mallory, { type: 'grad', to: leader.id, version: leader.version, step: leader.step, loss: 1, samples: 1.7e308, payload: new Float32Array(DIM).fill(1) });
    const flood = [];
    for (let i = 0; i < BOUNDS.controlBurst + 2 * BOUNDS.ruleStrikes; i++) flood.push(c.sign(mallory, { type: 'need', version: 0 }));
    for (const buf of await Promise.all(flood)) c.raw.postMessage(buf); // at once: past the burst before tokens refill
    await waitFor(() => ranks.every((r) => r.rules.isExcluded(mallory.id)), 'the attacker excluded by every rank');
    await assertWireHonest(c, s0);
    for (const r of ranks) assert.match(r.roster().find((row) => row.id === mallory.id).excluded, /broken rules/);
  } finally {
    c.close();
  }
});

test('wire: forged sequence numbers ahead of the leader\'s do not make a relay drop its messages', async () => {
  const [leader, mallory] = await identities(2);
  const links = [];
  const link = () => {
    const handlers = new Set();
    const l = { sendRaw() {}, onRaw: (fn) => (handlers.add(fn), () => handlers.delete(fn)), push: (buf) => handlers.forEach((fn) => fn(buf)) };
    links.push(l);
    return l;
  };
  const fabric = new Fabric('relay');
  const a = fabric.add('hostile', link());
  const b = fabric.add('honest', link());
  const got = [];
  fabric.onRaw((buf) => got.push(buf));
  // the hostile link sends the leader's next 60 seqs first: unsigned, and signed by mallory in the leader's name
  for (let seq = 1; seq <= 60; seq++) {
    const h = { type: 'hb', from: leader.id, to: null, seq, term: 1 };
    a.push(seq % 2 ? encodeMessage(h) : await signBuffer(mallory, encodeMessage({ ...h, pk: mallory.pk, sig: SIG_PLACEHOLDER })));
  }
  for (let seq = 1; seq <= 60; seq++) b.push(await signBuffer(leader, encodeMessage({ type: 'hb', from: leader.id, to: null, seq, term: 1, pk: leader.pk, sig: SIG_PLACEHOLDER })));
  await waitFor(() => fabric.stats.delivered + fabric.stats.unverified >= 120, 'the 120 buffers handled');
  assert.equal(got.length, 60, 'every real message delivered');
  assert.equal(fabric.stats.unverified, 60);
  assert.equal(fabric.stats.duplicates, 0);
  fabric.close();
});

test('wire: a forged `from` does not steer a mesh\'s unicast route', async () => {
  const net = new FakeNet();
  const mk = () => {
    const l = new MeshLink({ trystero: net.module({}), roomId: 'hostile', slug: 's', paramCount: DIM, trackAttempts: false });
    const got = [];
    l.onRaw((buf) => got.push(buf));
    return { l, got };
  };
  const [ka, kc] = await identities(2);
  const a = mk(); // sends to rank c
  const c = mk(); // rank c's page
  const x = mk(); // the attacker's page
  try {
    await waitFor(() => [a, c, x].every((p) => p.l.acceptedCount === 2), 'three accepted peers');
    const signed = (k, to) => signBuffer(k, encodeMessage({ type: 'hb', from: k.id, to, seq: 1, pk: k.pk, sig: SIG_PLACEHOLDER }));
    // the attacker claims rank c's id first (unsigned), then c speaks for itself
    x.l.sendRaw(encodeMessage({ type: 'hb', from: kc.id, to: null, seq: 7 }));
    await waitFor(() => a.l.stats.dropped.unverified === 1, 'the forgery dropped');
    assert.equal(a.l.hasRank(kc.id), false, 'no route from a forged buffer');
    c.l.sendRaw(await signed(kc, null));
    await waitFor(() => a.l.hasRank(kc.id), 'c\'s route learned');
    // and replays c's signed buffer afterwards: a copy teaches nothing
    x.l.sendRaw(await signed(kc, null));
    await waitFor(() => a.l.stats.dropped.duplicates === 1, 'the replay dropped as a copy');
    const before = net.sent('rlx-wire', a.l.selfId).length;
    a.l.sendRaw(await signed(ka, kc.id));
    const after = net.sent('rlx-wire', a.l.selfId).slice(before);
    assert.deepEqual(after.map((e) => e.to), [c.l.selfId], 'the unicast went to c\'s peer only');
  } finally {
    for (const p of [a, c, x]) await p.l.close();
  }
});
