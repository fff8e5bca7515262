// cluster_tree_live.test.mjs - the aggregation tree inside protocol.js's Rank
// (tree.js LiveTree), on simulated cohorts (sim.js SimCohort, a VirtualClock):
// the tree lays out [leader, ...members] as pre-order slices; the leader's
// egress is fanout params messages a step; the step's mean is the flat
// sample-weighted mean of every bucket (up to the f32 rounding of partial
// means); every rank computes on its own shard and ends bit-identical; an
// inner rank that dies after forwarding the params, or before it got them, is
// re-attached within the step (its children answer the grandparent and the
// step completes with their buckets), reported missing, and left out of the
// next layout; a leader crash is taken over; below the policy's threshold
// the step stays a star; malformed tree fields are dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SimCohort, shardGradient } from '../../web/cluster/sim.js';
import { weightedMean } from '../../web/cluster/protocol.js';
import { topologyFor, topologyOverrides, DEFAULT_POLICY } from '../../web/cluster/policy.js';
import { splitSubtree, subtreeHeight } from '../../web/cluster/tree.js';
import { validate } from '../../web/cluster/messages.js';

const name = (i) => `r${String(i).padStart(2, '0')}`;
const DIM = 16;

function noErrors(sim) {
  for (const r of sim.ranks.values()) {
    assert.equal(r.stats.handlerErrors, 0, `${r.id}: ${JSON.stringify(sim.events.filter((e) => e.type === 'error').slice(0, 3))}`);
  }
}

function assertBitIdentical(ranks) {
  const ref = ranks[0];
  for (const r of ranks) {
    assert.equal(r.version, ref.version, `${r.id} version`);
    assert.deepEqual(new Uint32Array(r.params.buffer), new Uint32Array(ref.params.buffer), `${r.id} params differ from ${ref.id}`);
  }
}

/** A cohort of n ranks whose computes record every bucket by version. */
function cohort(n, { fanout = 2, maxSteps = 6, computeMs = 5, policy = {}, delayMs = 2, compute = null } = {}) {
  const buckets = new Map(); // version -> [{id, grads, loss, samples}]
  const shards = new Map(); // version -> [{id, index, count}]
  const sim = new SimCohort({ dim: DIM, hub: { delayMs }, rank: { minMembers: n, maxSteps, policy: { treeAbove: 0, fanout, ...policy } } });
  for (let i = 0; i < n; i++) {
    const id = name(i);
    sim.add(id, {
      compute: (params, version, ctx) => {
        const special = compute?.(id, params, version, ctx);
        if (special) return special;
        const r = shardGradient(params, id, ctx.step, 1 + (i % 3));
        if (!buckets.has(version)) buckets.set(version, []);
        buckets.get(version).push({ id, ...r });
        if (!shards.has(version)) shards.set(version, []);
        shards.get(version).push({ id, index: ctx.index, count: ctx.count });
        return new Promise((resolve) => sim.clock.setTimeout(() => resolve(r), computeMs));
      },
    });
  }
  // minMembers gates the first step only (as on the page): then whoever is left trains
  sim.clock.setTimeout(function open() {
    if (sim.leader()?.step > 0) for (const r of sim.ranks.values()) r.minMembers = 1;
    else sim.clock.setTimeout(open, 10);
  }, 10);
  return { sim, buckets, shards, ids: Array.from({ length: n }, (_, i) => name(i)) };
}

/** mean (recovered from an update: (p0 - p1) / lr) against the flat mean, within f32 rounding of p0, p1 and the partials. */
function closeTo(mean, flat, what, p0, lr) {
  for (let i = 0; i < flat.length; i++) {
    const tol = 1e-6 * Math.max(1e-3, Math.abs(flat[i])) + (2 ** -22 * Math.abs(p0[i])) / lr;
    assert.ok(Math.abs(mean[i] - flat[i]) <= tol, `${what}: element ${i}: ${mean[i]} vs ${flat[i]}`);
  }
}

test('splitSubtree / subtreeHeight: contiguous pre-order slices of near-equal size', () => {
  const ids = Array.from({ length: 23 }, (_, i) => name(i));
  for (const k of [1, 2, 3, 4, 8]) {
    const seen = new Set();
    const walk = (chunk, depth) => {
      assert.equal(chunk.ids[0], ids[chunk.at], 'a slice starts at its place in the order');
      seen.add(chunk.ids[0]);
      const kids = splitSubtree(chunk.ids, k, chunk.at);
      assert.ok(kids.length <= k);
      const sizes = kids.map((c) => c.ids.length);
      if (sizes.length) assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, 'near-equal child subtrees');
      assert.equal(sizes.reduce((a, b) => a + b, 0), chunk.ids.length - 1);
      let h = 0;
      for (const c of kids) h = Math.max(h, 1 + walk(c, depth + 1));
      assert.equal(subtreeHeight(chunk.ids.length, k), h);
      return h;
    };
    walk({ ids, at: 0 }, 0);
    assert.equal(seen.size, ids.length, `fanout ${k}: every rank once`);
  }
  assert.deepEqual([1, 2, 5, 6, 21, 22, 1000].map((n) => subtreeHeight(n, 4)), [0, 1, 1, 2, 2, 3, 5]);
});

test('the policy: a star up to treeAbove ranks, a tree above; 0 forces the tree, Infinity the star', () => {
  assert.equal(topologyFor(DEFAULT_POLICY.treeAbove).topology, 'star');
  assert.equal(topologyFor(DEFAULT_POLICY.treeAbove + 1).topology, 'tree');
  assert.equal(topologyFor(DEFAULT_POLICY.treeAbove + 1).fanout, DEFAULT_POLICY.fanout);
  assert.equal(topologyFor(1, { treeAbove: 0 }).topology, 'star', 'one rank is never a tree');
  assert.equal(topologyFor(2, { treeAbove: 0 }).topology, 'tree');
  assert.equal(topologyFor(1000, { treeAbove: Infinity }).topology, 'star');
  assert.equal(topologyFor(50, { fanout: 3 }).fanout, 3);
  // cluster.html's ?tree= / ?fanout=
  assert.deepEqual(topologyOverrides({}), { overrides: {}, errors: [] });
  assert.deepEqual(topologyOverrides({ tree: '1', fanout: '2' }), { overrides: { treeAbove: 0, fanout: 2 }, errors: [] });
  assert.deepEqual(topologyOverrides({ tree: '0' }).overrides, { treeAbove: Infinity });
  assert.deepEqual(topologyOverrides({ tree: 'auto' }).overrides, {});
  assert.deepEqual(topologyOverrides({ tree: 'yes', fanout: '0' }).errors, [
    'tree: "yes" is not 1 (always a tree), 0 (always a star) or auto',
    'fanout: "0" is not a whole number from 1 to 64',
  ]);
  assert.equal(topologyOverrides({ fanout: '2.5' }).errors.length, 1);
});

test('15 ranks in a binary tree: fanout params a step from the leader, the flat weighted mean, shards, bit-identical', async () => {
  const { sim, buckets, shards, ids } = cohort(15, { fanout: 2, maxSteps: 6 });
  await sim.until(() => sim.leader()?.step === 6 && sim.synced(), 30_000);
  const leader = sim.leader();
  assert.equal(leader.id, 'r00');
  assert.equal(leader.history.length, 6);
  for (const h of leader.history) {
    assert.equal(h.topology, 'tree');
    assert.equal(h.depth, 3);
    assert.deepEqual(h.contributors, ids, `step ${h.step}: every rank's bucket`);
    assert.deepEqual(h.missing, []);
    assert.equal(h.short, false);
    const flat = weightedMean(buckets.get(h.version), DIM);
    assert.equal(h.samples, flat.samples);
    assert.ok(Math.abs(h.loss - flat.loss) <= 1e-6 * Math.abs(flat.loss));
    // the mean the leader applied: params before and after the step differ by lr * mean
    const got = shards.get(h.version);
    assert.deepEqual(got.map((s) => s.index).sort((a, b) => a - b), ids.map((_, i) => i), 'one shard per rank');
    assert.ok(got.every((s) => s.count === 15));
  }
  // the leader sent the params of each step to its 2 children only
  const t = leader.status().tree;
  assert.equal(t.topology, 'tree');
  assert.equal(t.role, 'root');
  assert.equal(t.stats.forwarded, 2 * 6);
  assert.equal(t.stats.absorbed, 2 * 6);
  // inner ranks forward to <= 2 children and send one partial a step
  for (const r of sim.live()) {
    if (r === leader) continue;
    const s = r.status().tree;
    assert.ok(s.stats.forwarded <= 2 * 6, `${r.id} forwarded ${s.stats.forwarded}`);
    assert.equal(s.stats.partials, 6, `${r.id}: one partial a step`);
    assert.ok(['inner', 'leaf'].includes(s.role));
    assert.equal(r.settingsFrom, 'r00', 'settings come from the leader, not the relay');
  }
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('the tree mean equals the flat mean, step by step (recorded buckets against the applied update)', async () => {
  const lr = 0.5;
  const { sim, buckets } = cohort(11, { fanout: 3, maxSteps: 4 });
  for (const r of sim.ranks.values()) r.lr = lr;
  const before = new Map();
  sim.get('r00').on((type, rec) => {
    if (type === 'step') before.set(rec.version, null);
  });
  // the params of each version, as the leader held them
  const held = new Map();
  const L = sim.get('r00');
  const origResolve = L._resolve.bind(L);
  L._resolve = (c, short) => {
    held.set(c.version, L.params.slice());
    return origResolve(c, short);
  };
  await sim.until(() => L.step === 4 && sim.synced(), 30_000);
  for (const h of L.history) {
    const flat = weightedMean(buckets.get(h.version), DIM);
    const p0 = held.get(h.version);
    const p1 = h.version + 1 === L.version ? L.params : held.get(h.version + 1);
    const applied = Float32Array.from(p0, (v, i) => (v - p1[i]) / lr);
    closeTo(applied, flat.grad, `step ${h.step}`, p0, lr);
  }
  noErrors(sim);
  sim.stopAll();
});

test('an inner rank that dies after forwarding the params: its children answer the grandparent, the step completes with their buckets', async () => {
  // 15 ranks, fanout 2: r00 -> r01 (r02..r07), r08 (r09..r14); r01 -> r02 (r03, r04, r05), r06 (r07)
  let victim = null;
  const { sim, buckets, ids } = cohort(15, {
    fanout: 2,
    maxSteps: 8,
    compute: (id, params, version, ctx) => {
      if (id === 'r02' && ctx.step === 3 && !victim) {
        victim = id; // it has forwarded the params to r03 and r05; it dies before its partial goes up
        sim.get(id).stop({ silent: true });
        return new Promise(() => {});
      }
      return null;
    },
  });
  await sim.until(() => sim.leader()?.step === 8 && sim.synced(), 60_000);
  const L = sim.leader();
  const h3 = L.history.find((h) => h.step === 3);
  assert.equal(victim, 'r02');
  assert.deepEqual(h3.missing, ['r02']);
  assert.deepEqual(h3.contributors, ids.filter((id) => id !== 'r02'), 'r03..r05 re-attached within step 3');
  assert.ok(!h3.short || h3.contributors.length === 14);
  const r01 = sim.get('r01').status().tree.stats;
  assert.ok(r01.reattached >= 1, 'r01 re-attached the subtree of r02');
  assert.ok(sim.get('r03').status().tree.stats.resent + sim.get('r05').status().tree.stats.resent >= 1,
    'a child of r02 resent its partial to r01');
  // the mean of step 3 is the flat mean of the 14 buckets
  const flat = weightedMean(buckets.get(h3.version).filter((b) => b.id !== 'r02'), DIM);
  assert.equal(h3.samples, flat.samples);
  // missed again in step 4 (its subtree re-attached again), then the layout leaves it out
  const h4 = L.history.find((h) => h.step === 4);
  assert.deepEqual(h4.missing, ['r02']);
  assert.equal(h4.contributors.length, 14);
  for (const h of L.history.filter((x) => x.step > 4)) {
    assert.equal(h.members, 14);
    assert.deepEqual(h.missing, []);
    assert.equal(h.contributors.length, 14);
  }
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('an inner rank that died before the step: the grandparent sends its children the params, the step completes with their buckets', async () => {
  const { sim, ids } = cohort(15, { fanout: 2, maxSteps: Infinity });
  const L = sim.get('r00');
  await sim.until(() => L.role === 'leader' && L.step >= 3, 30_000);
  // r08 leads the subtree r08..r14; it dies between two steps, silently
  L.setTraining(false);
  await sim.until(() => sim.synced(), 5_000);
  sim.get('r08').stop({ silent: true });
  const from = L.step;
  L.maxSteps = from + 4;
  L.setTraining(true);
  await sim.until(() => L.step === from + 4 && sim.synced(), 30_000);
  const first = L.history.find((h) => h.step === from);
  assert.deepEqual(first.missing, ['r08']);
  assert.deepEqual(first.contributors, ids.filter((id) => id !== 'r08'), 'r09..r14 re-attached to r00 within the step');
  const next = L.history.find((h) => h.step === from + 2);
  assert.equal(next.members, 14, 'then (missed twice) the layout leaves r08 out');
  assert.equal(next.contributors.length, 14);
  assert.ok(L.status().tree.stats.reattached >= 1);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('a leader crash in a tree: another rank takes over and the tree goes on from the last params', async () => {
  const { sim } = cohort(12, { fanout: 3, maxSteps: Infinity });
  const L = sim.get('r00');
  await sim.until(() => L.role === 'leader' && L.step >= 5, 30_000);
  const stepAt = L.step;
  L.stop({ silent: true });
  await sim.until(() => sim.leader() && sim.leader().id !== 'r00' && sim.leader().step >= stepAt + 5, 30_000);
  const N = sim.leader();
  assert.equal(N.id, 'r01');
  const recent = N.history.slice(-3);
  assert.ok(recent.every((h) => h.topology === 'tree' && h.members === 11 && h.contributors.length === 11));
  N.setTraining(false);
  await sim.until(() => sim.synced(), 10_000);
  assertBitIdentical(sim.live());
  noErrors(sim);
  sim.stopAll();
});

test('below the threshold the step is a star; the policy decides, not the follower', async () => {
  const sim = new SimCohort({ dim: 8, hub: { delayMs: 1 }, rank: { minMembers: 4, maxSteps: 3 } });
  for (const id of ['a', 'b', 'c', 'd']) sim.add(id, { policy: id === 'b' ? { treeAbove: 0 } : {} });
  await sim.until(() => sim.leader()?.step === 3 && sim.synced(), 10_000);
  const L = sim.leader();
  assert.equal(L.id, 'a');
  assert.ok(L.history.every((h) => h.topology === undefined && h.contributors.length >= 3));
  assert.equal(L.status().tree.topology, 'star');
  assert.equal(sim.get('b').status().tree.topology, 'star', 'a follower reports what the leader ran');
  noErrors(sim);
  sim.stopAll();
});

test('messages: tree fields are validated', () => {
  const payload = new Float32Array(4);
  const ok = { type: 'params', from: 'a', term: 1, version: 2, step: 1, go: true, payload, tree: { root: 'a', k: 2, n: 5, at: 1, ids: ['b', 'c'], depth: 2, ms: 1500 } };
  validate(ok, 4);
  for (const bad of [
    { ...ok, tree: null },
    { ...ok, tree: { ...ok.tree, k: 0 } },
    { ...ok, tree: { ...ok.tree, ids: [] } },
    { ...ok, tree: { ...ok.tree, ids: ['b', 7] } },
    { ...ok, tree: { ...ok.tree, at: 4 } },
    { ...ok, tree: { ...ok.tree, ms: 'x' } },
  ]) assert.throws(() => validate(bad, 4), /tree|ids|k |ms /);
  const grad = { type: 'grad', from: 'b', term: 1, version: 2, step: 1, loss: 1, samples: 3, payload, ids: ['b', 'c'], missing: [] };
  validate(grad, 4);
  assert.throws(() => validate({ ...grad, ids: [] }, 4), /ids/);
  assert.throws(() => validate({ ...grad, missing: [''] }, 4), /missing/);
});
