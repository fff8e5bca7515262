// protocol.js - one data-parallel rank of the tab cluster, as a state machine
// that knows nothing about transports (any bus.js bus) or about how gradients
// are computed (a `compute` callback, sync or async).
//
// The cohort trains in lockstep around one leader:
//   1. The leader broadcasts `params` {version, step, go: true, members}.
//   2. Every rank (the leader too) runs compute(params, version, ctx) on its
//      own shard and sends a `grad` bucket {version, loss, samples, payload}.
//   3. Once a quorum of buckets for exactly that version has arrived (all of
//      them up to 3 ranks, ~60% beyond; see policyFor), the leader takes the
//      sample-weighted mean of the buckets that arrived, applies the update
//      (SGD or a callback) and goes back to 1 with version + 1.
// Bit-identity is by construction: a rank's parameters are only ever the
// bytes of the leader's latest `params` broadcast (the leader keeps the very
// array it broadcasts); no rank applies an update locally. Every rank hashes
// what it holds (FNV-1a over the f32 bits) and reports it, so divergence
// would be visible in the roster.
//
// A rank built with a `model` key (slug and parameter count) stamps it and
// PROTOCOL_VERSION on every message and refuses peers whose key or version
// differs: they are listed in refused() with the reason, and since they
// refuse this rank too, both sides say why.
//
// This file holds the Rank class (its state, public surface and plumbing);
// the rest of its methods live by purpose in
//   election.js  heartbeats, liveness, leadership claims, elections
//   receive.js   validating and dispatching each message, the peers map
//   follow.js    adopting the leader's params and settings, computing buckets
//   step.js      the leader's step: collect, aggregate, update; halting
// and protocol.js installs them on Rank.prototype.
import { realClock } from './clock.js';
import { policyFor, BOUNDS } from './policy.js';
import { paramsHash, copyF32 } from './reduce.js';
import { MAX_ID } from './messages.js';
import { SenderRules } from './rules.js';
import { LiveTree } from './tree.js';
import { Traffic } from './compress.js';
import { PeerGuard } from './robust.js';
import { rateOf } from './rate.js';
import { llmMismatch } from './task_key.js';
import { ElectionMethods } from './election.js';
import { ReceiveMethods } from './receive.js';
import { FollowMethods } from './follow.js';
import { StepMethods } from './step.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export { DEFAULT_POLICY, policyFor, claimBeats } from './policy.js';
export { paramsHash, weightedMean, sgd } from './reduce.js';

/** Version of the rank protocol's message set; ranks that speak another refuse each other. */
export const PROTOCOL_VERSION = 2;

// ---- the rank ---------------------------------------------------------------

/**
 * new Rank({ id, bus, compute, params, ... }).start()
 *
 *   id         this rank's id (default bus.id); ids order elections
 *   bus        any bus.js bus
 *   compute    (params, version, ctx) -> {grads, loss, samples} or a Promise
 *              of it; ctx = {step, index, count} (index among the step's
 *              members, for sharding). params is read-only.
 *   params     initial parameters (Float32Array); used only if this rank
 *              founds the cohort, otherwise replaced by the leader's
 *   lr         SGD learning rate (default 0.1), or
 *   update     (params, meanGrad, {version, step, lr}) -> new Float32Array
 *   info       {backend, fallback}: what this rank resolved to, and why
 *   clock      realClock (default) or a VirtualClock / FreezableClock
 *   policy     overrides of DEFAULT_POLICY
 *   maxSteps   the leader stops starting steps at this step count
 *   minMembers the leader starts a step only with this many synced members
 *   minStepMs  shortest time between two step starts (default 0)
 *   firstComputeMs  how long this rank's first compute may take (default 0:
 *              short; a language model's gradient says seconds): peers
 *              tolerate that much silence (follow.js, long computes)
 *   discoverMs how long a newcomer listens for a leader before electing
 *   onEvent    fn(type, data): 'role' (role or leader changed), 'step' (the
 *              leader resolved one), 'roster' (a peer appeared or left:
 *              call roster() for the rows),
 *              'left' (a peer timed out or said goodbye), 'dropped' (a
 *              message was rejected, with its kind), 'error'
 *   Ids must be unique per tab (e.g. crypto.randomUUID()).
 */
export class Rank {
  constructor(opts) {
    const {
      bus,
      compute,
      params,
      id = bus?.id,
      lr = 0.1,
      update = null,
      info = {},
      clock = realClock,
      policy = {},
      maxSteps = Infinity,
      minMembers = 1,
      minStepMs = 0,
      firstComputeMs = 0,
      discoverMs,
      onEvent = null,
      computeWhenLeader = true,
      model = null,
      settings = {},
    } = opts ?? {};
    if (!bus || typeof bus.send !== 'function' || typeof bus.onMessage !== 'function') throw new RlxError(STATUS.INVALID_ARG, 'Rank needs a bus');
    if (typeof compute !== 'function') throw new RlxError(STATUS.INVALID_ARG, 'Rank needs a compute function');
    if (!(params instanceof Float32Array) || params.length === 0) throw new RlxError(STATUS.INVALID_ARG, 'Rank needs initial params (Float32Array)');
    if (typeof id !== 'string' || !id || id.length > MAX_ID) throw new RlxError(STATUS.INVALID_ARG, 'Rank id must be a short non-empty string');
    if (bus.id !== undefined && bus.id !== id) throw new RlxError(STATUS.INVALID_ARG, `rank id ${id} differs from bus id ${bus.id}`);
    if (!(Number.isFinite(firstComputeMs) && firstComputeMs >= 0 && firstComputeMs <= BOUNDS.maxBusyMs)) {
      throw new RlxError(STATUS.INVALID_ARG, `Rank firstComputeMs must lie in [0, ${BOUNDS.maxBusyMs}]`);
    }
    if (model !== null && (typeof model !== 'string' || !model || model.length > 64)) throw new RlxError(STATUS.INVALID_ARG, 'Rank model must be a short string or null');

    this.id = id;
    this.bus = bus;
    this.compute = compute;
    this.lr = lr;
    this.model = model;
    this.settings = { ...settings };
    this.settingsFrom = null; // the leader whose settings are in force (null: our own)
    this.refusedPeers = new Map();
    this.haltedAt = null;
    this.update = update;
    this.info = { backend: info.backend ?? null, fallback: info.fallback ?? null };
    this.clock = clock;
    this.policyOverrides = { ...policy };
    this.maxSteps = maxSteps;
    this.minMembers = minMembers;
    this.minStepMs = minStepMs;
    this.firstComputeMs = firstComputeMs;
    this.computeWhenLeader = computeWhenLeader;
    this.discoverMs = discoverMs ?? policyFor(1, policy).takeoverMs;
    this._onEvent = onEvent;
    this._listeners = new Set();

    this.params = copyF32(params);
    this.paramCount = params.length;
    this.hash = paramsHash(this.params);
    this.version = -1; // -1: not yet synchronised with any leader
    this.step = 0;
    this.paramsTerm = -1;
    this.members = [];

    this.role = 'joining';
    this.term = 0;
    this.leaderId = null;
    this.leaderSeen = 0;
    this.needSync = true;
    this.training = true;
    this.halted = null;
    this.started = false;
    this.stopped = false;

    this.peers = new Map();
    this.suspects = new Set();
    this.collect = null;
    this.history = [];
    this.lastLoss = null;

    this._computing = false;
    this._computeWanted = false;
    this._computedVersion = -1;
    this._busyUntil = 0;
    this._rate = [];
    this._cohortRate = [];
    this._electAfter = Infinity;
    this._lastNeedAt = -Infinity;
    this._tickTimer = null;
    this._tickDue = 0;
    this._stepTimer = null;
    this._lastStepAt = -Infinity;
    this._off = null;
    this._tree = new LiveTree(this); // the data path of tree steps (tree.js)

    this.traffic = new Traffic();
    this.guard = new PeerGuard();
    this.rules = new SenderRules(this);
    this._passedOver = new Set(); // election candidates that were given their time and did not claim

    this.stats = {
      sent: 0,
      received: 0,
      dropped: { malformed: 0, oversized: 0, nonFinite: 0, stale: 0, duplicate: 0, notLeader: 0, refused: 0, excluded: 0, rule: 0 },
      resyncs: 0,
      excluded: 0,
      computeErrors: 0,
      abandoned: 0,
      handlerErrors: 0,
      stepsLed: 0,
      shortSteps: 0,
      adopted: 0,
      syncsSent: 0,
      elections: 0,
      stepDowns: 0,
      lateTicks: 0,
      peersDropped: 0,
    };
  }

  // ---- public surface -------------------------------------------------------

  start() {
    if (this.started) return this;
    this.started = true;
    this._off = this.bus.onMessage((msg) => this._onMessage(msg));
    this._electAfter = this.clock.now() + this.discoverMs;
    this._beat();
    this._scheduleTick();
    return this;
  }

  /** Leaves the cohort; silent: true models a crashed / killed tab (no goodbye). */
  stop({ silent = false } = {}) {
    if (this.stopped) return;
    if (!silent && this.started) this._send(null, { type: 'bye' });
    this.stopped = true;
    this._off?.();
    this.clock.clearTimeout(this._tickTimer);
    this.clock.clearTimeout(this._stepTimer);
    this._cancelCollect();
    this._setRole('stopped');
  }

  /** Pauses / resumes stepping (only the leader's flag matters). */
  setTraining(on) {
    this.training = !!on;
    if (this.training) this._maybeStartStep();
  }

  setInfo({ backend, fallback } = {}) {
    if (backend !== undefined) this.info.backend = backend;
    if (fallback !== undefined) this.info.fallback = fallback;
  }

  on(fn) {
    this._listeners.add(fn);
    return () => this._listeners.delete(fn);
  }

  /** Current policy, from this rank's view of the live cohort size. */
  get policy() {
    return policyFor(this._liveCount(), this.policyOverrides);
  }

  /** One row per live rank (this one included), sorted by id, for the UI. */
  roster() {
    const now = this.clock.now();
    const rows = [
      {
        id: this.id,
        self: true,
        role: this.role,
        leader: this.leaderId,
        term: this.term,
        backend: this.info.backend,
        fallback: this.info.fallback,
        step: this.step,
        version: this.version,
        samplesPerSec: this.samplesPerSec(),
        hash: this.hash,
        lastSeenMs: 0,
        excluded: this.guard.reasonFor(this.id),
      },
    ];
    const excludedRow = (id) => this.guard.reasonFor(id) ?? this.rules.reasonFor(id);
    for (const p of this.peers.values()) {
      rows.push({
        id: p.id,
        self: false,
        role: p.role,
        leader: p.leader,
        term: p.term,
        backend: p.backend,
        fallback: p.fallback,
        step: p.step,
        version: p.version,
        samplesPerSec: p.sps,
        hash: p.hash,
        lastSeenMs: now - p.lastSeen,
        excluded: excludedRow(p.id),
      });
    }
    for (const [id, reason] of this.rules.guard.excluded) {
      if (!this.peers.has(id)) rows.push({ id, self: false, role: 'excluded', leader: null, term: null, backend: null, fallback: null, step: null, version: null, samplesPerSec: 0, hash: null, lastSeenMs: null, excluded: reason });
    }
    return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Peers refused for another model or protocol: [{id, reason, lastSeenMs}]. */
  refused() {
    const now = this.clock.now();
    return [...this.refusedPeers.values()].map((r) => ({ id: r.id, reason: r.reason, lastSeenMs: now - r.lastSeen }));
  }

  /** The settings in force: the leader's once synchronised, else this rank's own. */
  cohortSettings() {
    return { ...this.settings, lr: this.lr, maxSteps: Number.isFinite(this.maxSteps) ? this.maxSteps : 0 };
  }

  status() {
    return {
      id: this.id,
      role: this.role,
      leader: this.leaderId,
      term: this.term,
      version: this.version,
      step: this.step,
      hash: this.hash,
      loss: this.lastLoss,
      training: this.training,
      halted: this.halted,
      haltedAt: this.haltedAt,
      settings: this.cohortSettings(),
      settingsFrom: this.settingsFrom,
      refused: this.refused(),
      policy: this.policy,
      samplesPerSec: this.samplesPerSec(),
      cohortSamplesPerSec: this.role === 'leader' ? rateOf(this._cohortRate) : null,
      stats: this.stats,
      tree: this._tree.status(), // topology of the last step seen from here, this rank's place in it
      transport: this.bus.stats ?? null, // wire-level drops (malformed buffers) live here
    };
  }

  /** This rank's own throughput over its last completed computes. */
  samplesPerSec() {
    return rateOf(this._rate);
  }

  // ---- plumbing ------------------------------------------------------------

  _emit(type, data) {
    try {
      this._onEvent?.(type, data);
      for (const fn of this._listeners) fn(type, data);
    } catch (err) {
      this.stats.handlerErrors++;
    }
  }

  /** The fields every message of this rank carries: its term, and its model key. */
  _stamp() {
    return this.model === null ? { term: this.term } : { term: this.term, model: this.model, pv: PROTOCOL_VERSION };
  }

  /** True (and the peer listed in refused()) when msg comes from another model or protocol. */
  _refuse(msg) {
    if (msg === null || typeof msg !== 'object' || typeof msg.from !== 'string' || msg.from === this.id) return false;
    if (msg.model === this.model && msg.pv === PROTOCOL_VERSION) return false;
    let reason;
    if (msg.pv !== PROTOCOL_VERSION) {
      reason = `speaks cluster protocol ${typeof msg.pv === 'number' ? msg.pv : 'unknown'}, this rank ${PROTOCOL_VERSION} (reload it)`;
    } else {
      const theirs = typeof msg.model === 'string' ? msg.model.slice(0, 64) : 'no model';
      const why = llmMismatch(this.model, theirs);
      reason = `trains ${theirs}; this cohort trains ${this.model}${why ? ` (${why})` : ''}`;
    }
    const id = msg.from.slice(0, MAX_ID);
    const isNew = !this.refusedPeers.has(id);
    this.refusedPeers.set(id, { id, reason, lastSeen: this.clock.now() });
    this.stats.dropped.refused++;
    if (isNew) this._emit('refused', { id, reason });
    return true;
  }

  _send(to, msg) {
    if (this.stopped) return;
    this.stats.sent++;
    this.bus.send(to, { ...msg, ...this._stamp() });
  }

  _setRole(role) {
    if (this.role === role) return;
    const from = this.role;
    this.role = role;
    this._emit('role', { from, to: role, leader: this.leaderId, term: this.term });
  }

  _liveCount() {
    return 1 + this.peers.size;
  }
}

// The methods of the other files, as if written in the class body above
// (same `this`, not enumerable); a name defined twice is a mistake.
for (const part of [ElectionMethods, ReceiveMethods, FollowMethods, StepMethods]) {
  for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(part.prototype))) {
    if (name === 'constructor') continue;
    if (Object.hasOwn(Rank.prototype, name)) throw new RlxError(STATUS.STATE, `Rank.${name} is defined in two files`);
    Object.defineProperty(Rank.prototype, name, d);
  }
}
