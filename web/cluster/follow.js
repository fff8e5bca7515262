// follow.js - a protocol.js Rank's side of every step: adopting the
// leader's params (whole, or as a compressed delta) and settings, and
// computing this rank's bucket and sending it (the leader computes one too).
// These are methods of Rank, installed on its prototype by protocol.js
// (`this` is the rank).
//
// Settings:
// - The leader's `settings` (lr, maxSteps and whatever else the caller puts
//   there, e.g. model, batch, optimizer) travel with every `params`; a
//   follower adopts them (its own lr and step limit no longer apply; a rank
//   that takes over keeps the cohort's), and reports them in status().
//
// Long computes (a language model's gradient takes seconds, and a CPU
// compute blocks the thread that would send heartbeats): before a compute
// that may outlast half a heartbeat period a rank beats once with `busyMs`,
// twice its last compute's duration (the Rank's firstComputeMs for its
// first, which also compiles), so that peers stretch its silence limit by that much
// (election.js) and the leader waits for its bucket instead of resolving
// the step without it (step.js).
import { paramsHash, copyF32 } from './reduce.js';
import { BOUNDS } from './policy.js';
import { adoptDelta } from './compress.js';
import { pushRate } from './rate.js';

const BUSY_MARGIN = 2; // announced busy time: this many times the last compute's duration

/** Rank's params, settings and compute methods (protocol.js installs them; never constructed). */
export class FollowMethods {
  // ---- params and settings from the leader ---------------------------------

  _onParams(msg) {
    if (msg.base !== undefined) {
      // a compressed delta against the params of version msg.base
      const d = adoptDelta({ params: this.params, version: this.version, term: this.paramsTerm, hash: this.hash, needSync: this.needSync }, msg);
      if (d.stale) {
        this.stats.dropped.stale++;
        return;
      }
      if (d.resync) {
        this.stats.resyncs++;
        this.needSync = true;
        this._askForParams();
        return;
      }
      msg = { ...msg, payload: d.params ?? this.params };
    }
    const newer = this.needSync || msg.term > this.paramsTerm || msg.version > this.version;
    if (newer) {
      this.params = copyF32(msg.payload);
      this.hash = paramsHash(this.params);
      this.version = msg.version;
      this.paramsTerm = msg.term;
      this.step = msg.step;
      this.needSync = false;
      this.stats.adopted++;
      if (Array.isArray(msg.members)) this.members = msg.members;
      if (msg.settings) this._adoptSettings(msg.from, msg.settings);
      this.guard.adopt(msg.excluded ?? []);
      if (this.role === 'joining') {
        this._setRole('follower');
        this._beat(); // lets the leader count us in from the next step
      }
    } else if (msg.version < this.version) {
      this.stats.dropped.stale++;
      return;
    } else if (msg.go && msg.version === this.version && Array.isArray(msg.members)) {
      // the step's go for params this rank holds already (its first step, from the same initial params):
      // the members are the step's, so the shard this rank computes is its own, not index 0 of an old roster
      this.members = msg.members;
    }
    if (msg.go && msg.version === this.version && !this.guard.isExcluded(this.id)) this._requestCompute();
  }

  _adoptSettings(from, settings) {
    const before = JSON.stringify(this.cohortSettings());
    const { lr, maxSteps, ...rest } = settings;
    this.settings = { ...this.settings, ...rest };
    if (typeof lr === 'number') this.lr = lr;
    if (typeof maxSteps === 'number') this.maxSteps = maxSteps > 0 ? maxSteps : Infinity;
    this.settingsFrom = from;
    if (JSON.stringify(this.cohortSettings()) !== before) this._emit('settings', { from, settings: this.cohortSettings() });
  }

  // ---- computing -----------------------------------------------------------

  _requestCompute() {
    if (this.halted || this.version < 0) return;
    if (this.role === 'leader' && !this.computeWhenLeader) return;
    if (this._computing) {
      this._computeWanted = true;
      return;
    }
    if (this._computedVersion === this.version) return;
    this._computing = true;
    this._computeWanted = false;
    const version = this.version;
    const step = this.step;
    const params = this.params;
    const shard = this._tree.shard(version); // in a tree step: this rank's place in the step's order
    const index = shard ? shard.index : Math.max(0, this.members.indexOf(this.id));
    const ctx = { step, index, count: shard ? shard.count : Math.max(1, this.members.length) };
    const t0 = this.clock.now();
    this._computedVersion = version;
    const busy = this._busyEstimate();
    if (busy > 0) {
      this._busyUntil = t0 + busy;
      this._beat(); // out before the compute blocks this thread (the caller drains the bus first)
    }
    Promise.resolve()
      .then(() => this.compute(params, version, ctx))
      .then(
        (r) => this._computed(r, version, step, t0),
        (err) => {
          this.stats.computeErrors++;
          this._emit('error', { where: 'compute', error: String(err?.stack ?? err) });
          if (this.role === 'leader' && this.collect?.version === version) {
            this._halt(`this rank could not compute its gradient at step ${step}: ${err?.message ?? err}`, { step });
          }
          this._computeDone();
        },
      );
  }

  _computed(r, version, step, t0) {
    if (this.stopped) return;
    const ok = r && r.grads instanceof Float32Array && r.grads.length === this.paramCount && typeof r.loss === 'number' && typeof r.samples === 'number' && r.samples > 0;
    if (!ok) {
      this.stats.computeErrors++;
      this._emit('error', { where: 'compute', error: 'compute must return {grads: Float32Array(paramCount), loss, samples > 0}' });
      this._computeDone();
      return;
    }
    const now = this.clock.now();
    pushRate(this._rate, now, r.samples, now - t0);
    if (version !== this.version) {
      this.stats.abandoned++; // newer params arrived meanwhile; this bucket is stale
    } else if (this.role === 'leader') {
      this._submit({ from: this.id, version, step, loss: r.loss, samples: r.samples, grads: r.grads });
    } else if (this._tree.takeOwn({ version, loss: r.loss, samples: r.samples, grads: r.grads })) {
      // a tree step: the bucket goes up inside this rank's partial (tree.js)
    } else if (this.leaderId) {
      this._send(this.leaderId, { type: 'grad', version, step, loss: r.loss, samples: r.samples, ...this.traffic.bucketFields(r.grads, this.settings.enc, this.members.length) });
    }
    this._computeDone();
  }

  /** The last compute's duration (the rate window's newest entry), or null before the first. */
  _lastComputeMs() {
    return this._rate.length ? this._rate[this._rate.length - 1].ms : null;
  }

  /** How long the compute about to start may keep this rank silent (0: too short to announce). */
  _busyEstimate() {
    const last = this._lastComputeMs();
    if (last === null) return this.firstComputeMs;
    return last > this.policy.heartbeatMs / 2 ? Math.min(BOUNDS.maxBusyMs, Math.ceil(BUSY_MARGIN * last)) : 0;
  }

  /** The busy time left that this rank's heartbeats announce (0 when not computing). */
  _busyLeft() {
    return this._computing ? Math.max(0, Math.ceil(this._busyUntil - this.clock.now())) : 0;
  }

  _computeDone() {
    this._computing = false;
    if (this._computeWanted && !this.stopped) {
      this._computeWanted = false;
      this._requestCompute();
    }
  }
}
