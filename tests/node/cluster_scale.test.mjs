// cluster_scale.test.mjs - web/cluster/scale_sim.js at a size `make test`
// affords (bench/cluster_scale.mjs runs 10, 100 and 1,000 ranks): the real
// protocol.js Rank over simulated links, as a star and as a tree, through
// boot, a steady window, churn (joins, silent departures, goodbyes, a rank
// crashing in the middle of a step), a leader crash and the end. Every live
// rank ends bit-identical; the tree's leader sends fanout params a step
// where the star's sends one per rank, and uses fanout data links; the
// step with the crash completes; a new leader steps within the policy's
// takeover time and a step; the tree's partial mesh (overlay.js) holds at
// most fanout + 3 connections per peer and the data path uses its links.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runScale, wireBytes, rankId } from '../../web/cluster/scale_sim.js';
import { encodeMessage } from '../../web/cluster/wire.js';

const N = 40;
const FANOUT = 4;
const results = {};

test('wireBytes is the wire.js size; rank ids are 36 characters and sort by index', () => {
  const msg = { type: 'grad', from: rankId(3), to: rankId(0), term: 2, version: 7, step: 6, loss: 0.5, samples: 32, ids: [rankId(3), rankId(9)], payload: new Float32Array(10) };
  assert.equal(wireBytes(msg), encodeMessage(msg).byteLength);
  assert.equal(rankId(12).length, 36);
  assert.ok(rankId(9) < rankId(10) && rankId(99) < rankId(100));
});

for (const topology of ['star', 'tree']) {
  test(`${N} ranks as a ${topology}: churn, a leader crash, every live rank bit-identical`, { timeout: 60_000 }, async (t) => {
    const r = await runScale({ n: N, topology, fanout: FANOUT, steady: 6, churnSteps: 5 });
    results[topology] = r;
    assert.equal(r.handlerErrors, 0);
    assert.equal(r.bitIdentical, true);
    assert.ok(r.live >= N - 4, `${r.live} live ranks`);
    assert.ok(r.stepsPerSec > 0.5, `${r.stepsPerSec} steps/s`);
    if (topology === 'star') {
      assert.equal(r.maxDataLinks, N - 1, 'the star leader exchanges data with every rank');
      assert.equal(r.maxDataLinksFollower, 1);
    } else {
      assert.ok(r.maxDataLinks <= FANOUT + 1, `the tree: ${r.maxDataLinks} data links at most per rank`);
      assert.ok(r.maxDataLinksFollower <= FANOUT + 1);
      assert.equal(r.depth, 3);
      assert.ok(r.contributorsPerStep >= N - 1, `a tree step takes every bucket (${r.contributorsPerStep} a step)`);
      const k = r.churn.crashStep;
      assert.ok(k, 'the crash shows in a step');
      assert.ok(k.missing.includes(rankId(1)), 'the crashed inner rank is reported missing');
      // the crashed rank's subtree was re-attached within the step: only ranks that left are missing
      assert.ok(k.contributors >= k.members - 1 - r.churn.silent - r.churn.byes, `${k.contributors} of ${k.members}`);
      assert.ok(r.churn.reattached >= 1);
      // the partial mesh: the tree's links and a ring, at most fanout + 3 connections per peer (not n - 1), and the
      // steady window's data path used links only
      assert.ok(r.mesh.maxLinks <= FANOUT + 3 && r.meshEnd.maxLinks <= FANOUT + 3, `partial mesh: ${r.mesh.maxLinks} / ${r.meshEnd.maxLinks}`);
      assert.equal(r.mesh.dataOffOverlay, 0);
      assert.equal(r.mesh.survivesOneDeath, true);
      t.diagnostic(`partial mesh at ${N} ranks: ${r.mesh.maxLinks} connections per peer at most (mean ${r.mesh.meanLinks.toFixed(2)}), ${r.meshEnd.maxLinks} after churn (full mesh: ${N - 1})`);
    }
    assert.ok(r.takeoverMs <= r.policyTakeoverMs + 2 * 1000, `new leader after ${r.takeoverMs} ms`);
    assert.ok(r.recoveryMs - r.takeoverMs < 2000, `first step ${r.recoveryMs - r.takeoverMs} ms after the takeover`);
  });
}

test(`at ${N} ranks the tree's leader sends a fraction of the star's bytes`, () => {
  const { star, tree } = results;
  if (!star || !tree) return;
  assert.ok(tree.leaderDataBytesPerStep < star.leaderDataBytesPerStep / 4,
    `leader data path per step: tree ${tree.leaderDataBytesPerStep}, star ${star.leaderDataBytesPerStep}`);
  // the tree's leader sends `fanout` params messages a step, plus the members' ids once
  assert.ok(tree.leaderDataBytesPerStep < (FANOUT + 1) * 4 * tree.dim, `${tree.leaderDataBytesPerStep} bytes`);
});
