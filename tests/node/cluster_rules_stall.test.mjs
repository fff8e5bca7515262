// cluster_rules_stall.test.mjs - rules.js's rate of control messages: a
// sender flooding heartbeats is struck and excluded, but the heartbeats held
// back while this rank itself stood still (a synchronous WebGL2 step in its
// Worker, a suspended tab) arrive at once afterwards and are no flood.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SenderRules } from '../../web/cluster/rules.js';
import { BOUNDS } from '../../web/cluster/policy.js';

const HB = 250;

/** The few fields of a Rank that SenderRules reads, on a clock the test moves. */
function fakeRank() {
  const rank = {
    t: 0,
    clock: { now: () => rank.t },
    policy: { heartbeatMs: HB },
    policyOverrides: {},
    version: 0,
    term: 1,
    step: 0,
    broken: [],
    _ruleBroken(from, why, excluded) {
      rank.broken.push({ from, why, excluded });
    },
  };
  rank.rules = new SenderRules(rank);
  return rank;
}

const hb = (from) => ({ type: 'hb', from, term: 1, hbMs: HB, version: 0 });

/** `n` heartbeats of each sender, one period apart, all handled `at` (a backlog) or as they come. */
function deliver(rank, senders, n, { backlogAt = null } = {}) {
  const start = rank.t;
  for (let i = 0; i < n; i++) {
    rank.t = backlogAt ?? start + i * HB;
    if (backlogAt === null) rank.rules.noteActivity(); // our own tick
    for (const s of senders) rank.rules.check(hb(s));
  }
}

test('heartbeats held back by a 20 s stall of this rank are not a flood', () => {
  const rank = fakeRank();
  deliver(rank, ['a', 'b'], 8); // 2 s of normal traffic
  const stallEnd = rank.t + 20000;
  // 80 periods of heartbeats from each peer, handled at once when the stall ends
  deliver(rank, ['a', 'b'], 80, { backlogAt: stallEnd });
  assert.deepEqual(rank.broken, []);
  assert.ok(rank.rules.stalledMs >= 19000, `stalled ${rank.rules.stalledMs} ms`);
  // the credit is the stall's, spent once: a flood after it is still struck and excluded
  rank.t += HB;
  rank.rules.noteActivity();
  for (let i = 0; i < 1000; i++) rank.rules.check(hb('a'));
  assert.ok(rank.rules.isExcluded('a'));
  assert.ok(rank.broken.every((b) => b.from === 'a'));
});

test('a flood without a stall is struck and excluded; a stall earns at most what its length allows', () => {
  const rank = fakeRank();
  deliver(rank, ['a'], 4);
  for (let i = 0; i < BOUNDS.controlBurst + BOUNDS.ruleStrikes + 4; i++) rank.rules.check(hb('m'));
  // the burst passes; the next ruleStrikes are struck, the last of them excludes; after that it is dropped unstruck
  assert.equal(rank.broken.filter((b) => b.from === 'm').length, BOUNDS.ruleStrikes);
  assert.ok(rank.rules.isExcluded('m'), 'the flooder is excluded');
  assert.ok(!rank.rules.isExcluded('a'));

  // a 5 s stall holds back 20 periods: 20 x controlPerBeat messages pass beyond the burst, not more
  const r2 = fakeRank();
  deliver(r2, ['a'], 4);
  r2.t += 5000;
  const allowed = BOUNDS.controlBurst + (5000 - HB) / HB * BOUNDS.controlPerBeat;
  let passed = 0;
  for (let i = 0; i < allowed + 20; i++) if (r2.rules.check(hb('a')) === null) passed++;
  assert.ok(passed <= allowed + 1, `${passed} passed, at most ${allowed} may`);
  assert.ok(passed >= allowed - 1, `${passed} passed, ${allowed} should`);
});
