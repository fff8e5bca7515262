// cluster_tree.test.mjs - web/cluster/tree.js: an aggregation tree over 128
// simulated ranks gives the same sample-weighted mean as the flat reduce
// (bit-exact for data whose sums are exact in f32, within f32 rounding
// otherwise), keeps every rank's egress at <= fanout + 1 messages per step
// whatever n is (the star's leader sends n - 1), holds bit-identical params,
// and re-lays out the subtree of a rank that dies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { treeLayout, simulateTree } from '../../web/cluster/tree.js';
import { weightedMean } from '../../web/cluster/protocol.js';
import { shardGradient, rng } from '../../web/cluster/sim.js';

test('treeLayout: a complete k-ary tree rooted at members[0]', () => {
  const ids = Array.from({ length: 100 }, (_, i) => `n${i}`);
  for (const k of [1, 2, 3, 4, 8, 99]) {
    const t = treeLayout(ids, k);
    assert.equal(t.root, 'n0');
    assert.equal(t.parentOf('n0'), null);
    const seen = new Set(['n0']);
    for (const id of ids) {
      const kids = t.childrenOf(id);
      assert.ok(kids.length <= k);
      for (const c of kids) {
        assert.equal(t.parentOf(c), id);
        assert.ok(!seen.has(c));
        seen.add(c);
      }
    }
    assert.equal(seen.size, ids.length, `fanout ${k}: every rank reached exactly once`);
    // depth = levels below the root
    let depth = 0;
    for (let id = 'n99'; t.parentOf(id) !== null; id = t.parentOf(id)) depth++;
    assert.equal(t.depth, depth);
    assert.equal(t.heightOf('n0'), depth);
  }
  assert.equal(treeLayout(ids, 4).depth, 4);
  assert.equal(treeLayout(['solo'], 4).depth, 0);
  assert.throws(() => treeLayout([], 4));
  assert.throws(() => treeLayout(ids, 0));
});

/** A compute per rank that records every bucket it produced, by version. */
function recorder(makeResult) {
  const buckets = new Map(); // version -> [{grads, loss, samples, id}]
  const compute = (id) => (params, version, ctx) => {
    const r = makeResult(params, id, ctx.step);
    if (!buckets.has(version)) buckets.set(version, []);
    buckets.get(version).push({ ...r, id });
    return r;
  };
  return { buckets, compute };
}

test('128 ranks: the tree mean equals the flat mean; egress per rank stays O(fanout)', async () => {
  const n = 128;
  const dim = 32;
  const { buckets, compute } = recorder((p, id, step) => shardGradient(p, id, step, 1 + (id.charCodeAt(4) % 4)));
  const tree = await simulateTree({ n, fanout: 4, dim, steps: 4, compute });
  assert.equal(tree.layout.depth, 4);
  for (const rec of tree.root.history) {
    const all = buckets.get(rec.version);
    assert.equal(all.length, n);
    assert.equal(rec.contributors.length, n);
    const flat = weightedMean(all, dim);
    assert.equal(rec.samples, flat.samples);
    let worst = 0;
    for (let i = 0; i < dim; i++) {
      const scale = Math.max(1e-3, Math.abs(flat.grad[i]));
      worst = Math.max(worst, Math.abs(rec.mean[i] - flat.grad[i]) / scale);
    }
    assert.ok(worst < 1e-5, `step ${rec.step}: relative error ${worst}`);
    assert.ok(Math.abs(rec.loss - flat.loss) < 1e-9 * Math.max(1, flat.loss));
  }
  // egress: the root sends `fanout` params messages a step, nobody more than fanout + 1
  const root = tree.egress[0];
  assert.equal(root.msgs, 4);
  assert.equal(root.floats, 4 * dim);
  assert.ok(tree.egress.every((e) => e.perStepMax <= 5), `max ${Math.max(...tree.egress.map((e) => e.perStepMax))}`);
  const leaves = tree.egress.filter((e) => tree.layout.childrenOf(e.id).length === 0);
  assert.ok(leaves.length > 90 && leaves.every((e) => e.msgs === 1), 'a leaf sends one partial');
  // every rank computed on the root's bytes
  const hashes = new Set(tree.ranks.map((r) => r.stepHash));
  assert.equal(hashes.size, 1);

  // the star, for comparison: the leader sends n - 1 params messages a step
  const star = await simulateTree({ n, fanout: n - 1, dim, steps: 2, compute: recorder((p, id, step) => shardGradient(p, id, step, 2)).compute });
  assert.equal(star.egress[0].msgs, n - 1);
  assert.equal(star.egress[0].floats, (n - 1) * dim);
  assert.ok(star.egress[0].msgs / root.msgs > 30);
});

test('bit-exact against the flat mean when the sums are exact in f32', async () => {
  const n = 150;
  const dim = 24;
  const { buckets, compute } = recorder((p, id, step) => {
    const r = rng((id.charCodeAt(4) * 131 + Number(id.slice(1)) * 7 + step) >>> 0);
    const grads = Float32Array.from({ length: dim }, () => Math.floor(r() * 2001) - 1000);
    return { grads, loss: Math.floor(r() * 100), samples: 1 + Math.floor(r() * 8) };
  });
  const tree = await simulateTree({ n, fanout: 3, dim, steps: 3, lr: 1 / 1024, compute });
  for (const rec of tree.root.history) {
    const flat = weightedMean(buckets.get(rec.version), dim);
    assert.deepEqual(Array.from(rec.mean), Array.from(flat.grad), `step ${rec.step}`);
    assert.equal(rec.loss, flat.loss);
  }
});

test('a dead inner rank: its step resolves at the deadline, then its subtree is re-parented', async () => {
  const n = 128;
  const dim = 8;
  const { buckets, compute } = recorder((p, id, step) => shardGradient(p, id, step, 2));
  const tree = await simulateTree({ n, fanout: 4, dim, steps: 5, compute, kill: { afterStep: 2, ids: ['r0002'] } });
  const h = tree.root.history;
  assert.deepEqual(h.map((x) => x.contributors.length), [128, 128, 128 - 21, 127, 127], 'r0002 + 4 children + 16 grandchildren lost once');
  assert.deepEqual(h[2].missing, ['r0002']);
  assert.ok(!h[3].contributors.includes('r0002'));
  assert.ok(h[3].contributors.includes('r0009') && h[3].contributors.includes('r0040'), 'its children and grandchildren are back');
  for (const rec of h) {
    const flat = weightedMean(buckets.get(rec.version).filter((b) => rec.contributors.includes(b.id)), dim);
    for (let i = 0; i < dim; i++) assert.ok(Math.abs(rec.mean[i] - flat.grad[i]) <= 1e-5 * Math.max(1e-3, Math.abs(flat.grad[i])));
  }
});
