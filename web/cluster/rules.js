// rules.js - what a rank accepts from each sender beyond the shape that
// messages.js checks. On the wire a sender is its key (auth.js: `from` is
// verified), so rules can be kept per sender:
//   - bounds (policy.js BOUNDS): terms advance by at most termJump over the
//     highest term this rank holds, heartbeat periods lie in the policy's
//     range, heartbeat versions below maxVersion, bucket samples below the
//     largest batch x local steps (settings.js) per rank a bucket covers;
//   - rates: heartbeats, need and bye of one sender are a token bucket
//     (controlBurst, then controlPerBeat a heartbeat period). Time this
//     rank itself stood still (a synchronous compute, such as a WebGL2 step
//     in its Worker, or a suspended tab) raises the bucket's cap by what
//     the sender could send meanwhile: the messages held back arrive at
//     once afterwards and are no flood. A stall is a gap of over two
//     heartbeat periods between two things this rank handles (a message
//     or its own tick, which comes every period while it runs);
//   - who may send what is the Rank's (protocol.js): params, halt and
//     settings only from the leader it follows, buckets only from the
//     step's members (it calls strike() for the latter).
// A message that breaks a rule is dropped and its sender struck; at
// BOUNDS.ruleStrikes strikes the sender is excluded: every message of it is
// dropped from then on, and the roster names the reason. The book is
// robust.js's PeerGuard, the one the leader keeps for poisoned buckets.
import { BOUNDS, hbMaxMs } from './policy.js';
import { PeerGuard } from './robust.js';
import { LIMITS, SCALE_LIMITS } from './settings.js';

/** Most samples one rank's bucket may carry: the largest batch x the most local steps. */
export const MAX_SAMPLES = LIMITS.batch[1] * SCALE_LIMITS.H[1];
const CONTROL = new Set(['hb', 'need', 'bye']);

export class SenderRules {
  constructor(rank) {
    this.rank = rank;
    this.guard = new PeerGuard({ strikes: BOUNDS.ruleStrikes, what: 'broken rules' });
    this.highestTerm = 0;
    this._tokens = new Map(); // sender -> { tokens, at, stalled }
    this._lastActive = null; // when this rank last handled a message or a tick
    this.stalledMs = 0; // time this rank stood still, summed (noteActivity)
    this.stats = { broken: 0, excluded: 0 };
  }

  /** The highest term a message may carry now (Infinity while this rank follows no synchronised leader). */
  termCeiling() {
    const r = this.rank;
    if (r.version < 0) return Infinity;
    return Math.max(this.highestTerm, r.term) + BOUNDS.termJump;
  }

  /**
   * Why a validated message of another rank must be dropped, or null.
   * 'excluded' for a sender excluded already; any other reason struck it.
   */
  check(msg) {
    this.noteActivity();
    if (this.guard.isExcluded(msg.from)) return 'excluded';
    const why = this._broken(msg);
    if (why) {
      this.strike(msg.from, why);
      return why;
    }
    if (this.rank.version >= 0 && msg.term > this.highestTerm) this.highestTerm = msg.term;
    return null;
  }

  _broken(msg) {
    const r = this.rank;
    if (CONTROL.has(msg.type) && !this._spend(msg.from)) return `more than ${BOUNDS.controlBurst} heartbeats / requests at once`;
    const ceiling = this.termCeiling();
    if (msg.term > ceiling) return `term ${msg.term} jumps past ${ceiling}`;
    if (msg.type === 'hb') {
      const max = hbMaxMs(r.policyOverrides);
      if (msg.hbMs > max) return `heartbeat period ${msg.hbMs} ms above ${max} ms`;
      if (msg.version > BOUNDS.maxVersion) return `version ${msg.version} above ${BOUNDS.maxVersion}`;
      if (msg.busyMs > BOUNDS.maxBusyMs) return `a compute of ${msg.busyMs} ms announced (at most ${BOUNDS.maxBusyMs} ms)`;
    }
    if (msg.type === 'grad') {
      const covers = Array.isArray(msg.ids) ? msg.ids.length : 1;
      if (msg.samples > MAX_SAMPLES * covers) return `${msg.samples} samples in a bucket of ${covers} rank${covers === 1 ? '' : 's'} (at most ${MAX_SAMPLES} each)`;
    }
    return null;
  }

  /** This rank handled something now (a message, its tick): a gap since the last over two periods was a stall of its own. */
  noteActivity() {
    const now = this.rank.clock.now();
    const per = this.rank.policy.heartbeatMs;
    if (this._lastActive !== null && now - this._lastActive > 2 * per) this.stalledMs += now - this._lastActive - per;
    this._lastActive = now;
  }

  /** Token bucket of one sender's control messages. */
  _spend(from) {
    const now = this.rank.clock.now();
    let b = this._tokens.get(from);
    if (!b) {
      if (this._tokens.size >= BOUNDS.maxPeers) this._tokens.delete(this._tokens.keys().next().value);
      b = { tokens: BOUNDS.controlBurst, at: now, stalled: this.stalledMs };
      this._tokens.set(from, b);
    }
    const per = this.rank.policy.heartbeatMs;
    const rate = BOUNDS.controlPerBeat / per;
    const cap = BOUNDS.controlBurst + (this.stalledMs - b.stalled) * rate; // the burst, and what our stall held back
    b.tokens = Math.max(b.tokens, Math.min(cap, b.tokens + (now - b.at) * rate));
    b.at = now;
    b.stalled = this.stalledMs;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** One broken rule of `from`; returns the exclusion reason when this strike excludes it. */
  strike(from, why) {
    this.stats.broken++;
    const excluded = this.guard.judge(from, why, this.rank.step);
    if (excluded) this.stats.excluded++;
    this.rank._ruleBroken(from, why, excluded);
    return excluded;
  }

  isExcluded(id) {
    return this.guard.isExcluded(id);
  }

  reasonFor(id) {
    return this.guard.reasonFor(id);
  }
}
