// step.js - the leader's side of a protocol.js Rank's step: who steps,
// publishing params, collecting the members' buckets, aggregating them
// (plain or robust), applying the update, and halting the run. These are
// methods of Rank, installed on its prototype by protocol.js (`this` is the
// rank).
//
// The end of a run:
// - Divergence ends the run instead of retrying a step forever: when the
//   leader's own bucket is non-finite, its own compute fails, a step's
//   deadline passes with only non-finite buckets, or the update would make
//   the params non-finite, the leader halts and broadcasts `halt` {step,
//   reason}; every rank that hears it (or a heartbeat carrying it) halts
//   too. The params stay the last good ones.
//
// At scale and under attack (settings enc, agg, clip, clipMax, strikes):
// - enc 'auto' | 'f16' | 'int8' packs buckets (with error feedback) and the
//   leader's updates as deltas that every rank, the leader included, adds to
//   the params it holds (compress.js); a rank missing the base asks for the
//   full params. No enc setting: f32, as before.
// - agg 'trimmed' | 'median' and clip / clipMax aggregate robustly
//   (robust.js); a peer whose buckets are rejected or outliers `strikes`
//   times in a row is left out of the steps, and the params broadcasts list
//   it with the reason (roster rows say `excluded`). In a tree step buckets
//   travel up as f32 partial means and take the plain mean (the params
//   still come down as compressed deltas, relayed as they are).
//
// Long computes: at the step's deadline a member still computing (its
// heartbeat's busyMs, follow.js) is waited for, up to SLOWER_PEER times the
// leader's own compute; then the step resolves with what arrived.
import { policyFor } from './policy.js';
import { paramsHash, copyF32, allFinite, weightedMean, sgd } from './reduce.js';
import { unpack } from './compress.js';
import { aggregate, robustOn, DEFAULT_ROBUST } from './robust.js';
import { pushRate } from './rate.js';

const SLOWER_PEER = 8; // the step waits for a computing member up to this many times the leader's own compute

/** Rank's leader-side step and halt methods (protocol.js installs them; never constructed). */
export class StepMethods {
  // ---- publishing and starting steps ---------------------------------------

  _stepMembers() {
    const ids = [this.id];
    for (const p of this.peers.values()) {
      if (p.leader === this.id && p.role === 'follower' && !this.suspects.has(p.id) && !this.guard.isExcluded(p.id)) ids.push(p.id);
    }
    return ids.sort();
  }

  _canStep() {
    return this.role === 'leader' && this.training && !this.halted && !this.stopped && this.step < this.maxSteps;
  }

  _readyToStep() {
    return !this.collect && this._canStep() && this._stepMembers().length >= this.minMembers;
  }

  _maybeStartStep() {
    if (this._readyToStep()) this._startStep();
  }

  /**
   * Hands the current params to the cohort: as the start of the next step
   * (one task later, so a leader with no peers to wait for still lets its
   * event loop breathe), or, when the cohort may not step, as plain params.
   */
  _publish() {
    if (this._readyToStep()) {
      if (this._stepTimer) return;
      const wait = Math.max(0, this._lastStepAt + this.minStepMs - this.clock.now());
      this._stepTimer = this.clock.setTimeout(() => {
        this._stepTimer = null;
        if (this.stopped) return;
        if (this._readyToStep()) this._startStep();
        else if (this.role === 'leader' && !this.collect) this._publish(); // a step that started meanwhile sent the params
      }, wait);
    } else {
      this.members = this._stepMembers();
      this._send(null, { type: 'params', version: this.version, step: this.step, go: false, members: this.members, settings: this.cohortSettings(), ...this._paramsPayload(null) });
    }
  }

  _sendSync(peer) {
    const now = this.clock.now();
    if (now - peer.lastSyncAt < this.policy.heartbeatMs / 2) return;
    peer.lastSyncAt = now;
    this.stats.syncsSent++;
    // A member of the step in progress may still contribute to it.
    const go = !!this.collect && this.collect.members.has(peer.id) && this.collect.version === this.version;
    this._send(peer.id, { type: 'params', version: this.version, step: this.step, go, members: this.members, settings: this.cohortSettings(), ...this._paramsPayload(null) });
  }

  _startStep() {
    const members = this._stepMembers();
    this.members = members;
    const c = {
      version: this.version,
      step: this.step,
      members: new Set(members),
      buckets: new Map(),
      nonFinite: new Set(), // members whose bucket for this step was NaN / Infinity
      t0: this.clock.now(),
      timer: null,
    };
    this.collect = c;
    this._lastStepAt = c.t0;
    c.timer = this.clock.setTimeout(() => this._collectDeadline(c), this.policy.collectMs);
    const params = { type: 'params', version: c.version, step: c.step, go: true, members, settings: this.cohortSettings(), ...this._paramsPayload(c.version) };
    if (!this._tree.startStep(c, params)) this._send(null, params); // a tree step goes down the tree (tree.js)
    this._requestCompute();
  }

  _cancelCollect() {
    if (this.collect) this.clock.clearTimeout(this.collect.timer);
    this.collect = null;
  }

  // ---- collecting and resolving --------------------------------------------

  _onGrad(msg) {
    const c = this.collect;
    if (!c || msg.term !== this.term || msg.version !== c.version) {
      this.stats.dropped.stale++;
      return;
    }
    if (c.tree ? !this._tree.accept(c, msg) : !c.members.has(msg.from)) {
      // a partial overlapping what the step holds, or (counted by accept / struck here) from outside the step
      if (!c.tree) {
        this.stats.dropped.rule++;
        this.rules.strike(msg.from, `a bucket for step ${c.step}, which it is not a member of`);
      }
      return;
    }
    if (this.guard.isExcluded(msg.from)) {
      this.stats.dropped.excluded++;
      return;
    }
    this._submit({ from: msg.from, version: msg.version, step: msg.step, loss: msg.loss, samples: msg.samples, grads: unpack(msg) });
  }

  /** The payload of a params broadcast: the delta of `version` when one is pending (null: whole), and the exclusions. */
  _paramsPayload(version) {
    const fields = (version !== null && this.traffic.paramsFields(version)) || { payload: this.params };
    return this.guard.excluded.size ? { ...fields, excluded: this.guard.list() } : fields;
  }

  /** One bucket of `from` judged: reason null (good) or why it was bad; strikes lead to exclusion. */
  _strike(from, reason, step = this.step) {
    if (from === this.id || !robustOn(this.settings)) return;
    this.guard.strikes = this.settings.strikes ?? DEFAULT_ROBUST.strikes;
    const why = this.guard.judge(from, reason, step);
    if (!why) return;
    this.stats.excluded++;
    this._emit('excluded', { id: from, reason: why });
    this._emit('roster', { size: this._liveCount() });
  }

  /**
   * The step's aggregate: the sample-weighted mean, or robust.js's when the
   * settings ask for it. A tree step's buckets are partial means of whole
   * subtrees, not one rank's bucket each: their weighted mean, as before.
   */
  _aggregate(buckets, c) {
    const s = this.settings;
    const step = c.step;
    if (!robustOn(s) || c.tree) return weightedMean(buckets, this.paramCount);
    const out = aggregate(buckets, this.paramCount, { rule: s.agg ?? 'mean', clip: s.clip ?? 0, clipMax: s.clipMax ?? 0 });
    for (const v of out.verdicts) this._strike(v.from, this.guard.verdict(v), step);
    return out;
  }

  _submit(b) {
    const c = this.collect;
    if (!c || b.version !== c.version) {
      this.stats.dropped.stale++;
      return;
    }
    if (c.buckets.has(b.from)) {
      this.stats.dropped.duplicate++;
      return;
    }
    if (!Number.isFinite(b.loss) || !allFinite(b.grads)) {
      this.stats.dropped.nonFinite++;
      this._emit('dropped', { kind: 'nonFinite', from: b.from, why: 'bucket holds NaN or Infinity' });
      c.nonFinite.add(b.from);
      this._strike(b.from, 'rejected: the bucket holds NaN or Infinity', c.step);
      if (b.from === this.id) this._halt(divergedAt(c.step, b.loss, this.lr), { step: c.step });
      return;
    }
    c.buckets.set(b.from, b);
    this._tryResolve();
  }

  /** Buckets needed now: the quorum of the step's members that are still live. */
  _needed(c) {
    let live = 0;
    for (const id of c.members) if (id === this.id || (this.peers.has(id) && !this.suspects.has(id))) live++;
    return policyFor(Math.max(1, live), this.policyOverrides).quorum;
  }

  _tryResolve() {
    const c = this.collect;
    if (c && (c.tree ? this._tree.ready(c) : c.buckets.size >= this._needed(c))) this._resolve(c, false);
  }

  _collectDeadline(c) {
    if (this.collect !== c) return;
    const busy = this._busyWait(c);
    if (busy > 0) {
      c.timer = this.clock.setTimeout(() => this._collectDeadline(c), busy);
      return;
    }
    if (c.buckets.size > 0) {
      this._resolve(c, true);
    } else if (c.nonFinite.size > 0) {
      this._halt(divergedAt(c.step, NaN, this.lr), { step: c.step });
    } else {
      c.timer = this.clock.setTimeout(() => this._collectDeadline(c), this.policy.collectMs);
    }
  }

  /**
   * How much longer the step waits for a member whose bucket is missing
   * while it computes (its announced busyMs, or this rank's own compute),
   * at most SLOWER_PEER x this rank's own compute past the step's start
   * (a peer announcing endless computes does not hold every step). 0: none.
   */
  _busyWait(c) {
    const now = this.clock.now();
    let until = 0;
    for (const id of c.members) {
      if (c.buckets.has(id)) continue;
      if (id === this.id) {
        if (this._computing) until = Math.max(until, this._busyUntil);
        continue;
      }
      const p = this.peers.get(id);
      if (p && p.busyMs > 0 && !this.suspects.has(id)) until = Math.max(until, p.lastSeen + p.busyMs);
    }
    const own = this._lastComputeMs();
    if (own !== null) until = Math.min(until, c.t0 + Math.max(this.policy.collectMs, SLOWER_PEER * own));
    return Math.max(0, Math.ceil(until - now));
  }

  _resolve(c, short) {
    this.clock.clearTimeout(c.timer);
    this.collect = null;
    const buckets = [...c.buckets.values()];
    const { grad, loss, samples } = this._aggregate(buckets, c);
    let next;
    try {
      next = this.update
        ? this.update(this.params, grad, { version: c.version, step: c.step, lr: this.lr })
        : sgd(this.params, grad, this.lr);
    } catch (err) {
      this._halt(`update threw: ${err?.message ?? err}`);
      return;
    }
    if (!(next instanceof Float32Array) || next.length !== this.paramCount) {
      this._halt('update must return a Float32Array of the model size');
      return;
    }
    if (!allFinite(next)) {
      this._halt(`diverged at step ${c.step}: the update would make the parameters non-finite (lr ${this.lr}); ` +
        'the last good parameters are kept', { step: c.step });
      return;
    }
    // The leader holds exactly the array it is about to broadcast (or, for a
    // compressed delta, exactly what every rank computes from it).
    next = this.traffic.leaderStep(this.params, next, { setting: this.settings.enc, ranks: c.members.size, version: this.version, term: this.term });
    this.params = next === this.params ? copyF32(next) : next;
    this.hash = paramsHash(this.params);
    this.version += 1;
    this.paramsTerm = this.term;
    this.step = c.step + 1;
    this.lastLoss = loss;
    this.stats.stepsLed++;
    if (short) this.stats.shortSteps++;
    const now = this.clock.now();
    pushRate(this._cohortRate, now, samples, now - c.t0);
    const record = {
      step: c.step,
      version: c.version,
      loss,
      samples,
      contributors: buckets.map((b) => b.from).sort(),
      members: c.members.size,
      ms: now - c.t0,
      short,
      ...this._tree.resolved(c), // a tree step: every rank its partials covered, the missing ones
    };
    this.history.push(record);
    if (this.history.length > 1000) this.history.shift();
    this._emit('step', record);
    this._publish();
  }

  // ---- the end of a run ----------------------------------------------------

  /** Ends the run on this rank (and, from the leader, on the cohort): no more steps or buckets. */
  _halt(reason, { step = this.step, from = this.id } = {}) {
    if (this.halted) return;
    this.halted = String(reason).slice(0, 500);
    this.haltedAt = step;
    this._cancelCollect();
    if (this.role === 'leader') this._send(null, { type: 'halt', step, reason: this.halted });
    this._emit('halted', { reason: this.halted, step, from });
    this._emit('error', { where: 'update', error: this.halted });
  }
}

function divergedAt(step, loss, lr) {
  const what = Number.isFinite(loss) ? 'the gradients became NaN or Infinity' : `the loss became ${loss}`;
  return `diverged at step ${step}: ${what} (lr ${lr} may be too large); the last good parameters are kept`;
}
