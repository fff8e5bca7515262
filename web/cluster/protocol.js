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
// Membership and leadership:
// - Heartbeats (`hb`) carry role, leader, term, version, step, the sender's
//   heartbeat period, resolved backend + fallback reason and samples/s. The
//   period stretches with the cohort size; drop and takeover timeouts are
//   multiples of it, and of the period each peer announces.
// - A new rank starts as 'joining': it announces itself and, on hearing the
//   leader, asks for params (`need`); the leader answers with a unicast
//   `params` {go: false}, so the newcomer holds the current params + version
//   and computes from the next step on.
// - No leader heard at all (bootstrap) or the leader silent for takeoverMs:
//   the live rank with the newest params (then the lowest id) claims
//   leadership with term = highest term seen + 1.
// - Two leaders (a healed partition, a race): the claim with the higher term,
//   then the lower id, wins; the other leader steps down, asks the winner for
//   params and adopts them, as do its followers.
// - A rank silent for dropMs (closed, crashed or suspended tab) leaves the
//   roster and stops counting toward the quorum. A rank whose own timers ran
//   late (it was the suspended one, or a long synchronous compute blocked it)
//   does not conclude that everyone else died: it takes the time it was not
//   running off every peer's silence, so on waking it resyncs as a follower
//   instead of claiming leadership with stale params.
// - Every message is validated; malformed, oversized (payload longer than the
//   model) and non-finite ones are dropped and counted in rank.stats.dropped,
//   buckets for any other version are dropped as stale. Nothing a peer sends
//   can throw out of the message handler.
// - A rank built with a `model` key (slug and parameter count) stamps it and
//   PROTOCOL_VERSION on every message and refuses peers whose key or version
//   differs: they are listed in refused() with the reason, and since they
//   refuse this rank too, both sides say why.
//
// Settings and the end of a run:
// - The leader's `settings` (lr, maxSteps and whatever else the caller puts
//   there, e.g. model, batch, optimizer) travel with every `params`; a
//   follower adopts them (its own lr and step limit no longer apply; a rank
//   that takes over keeps the cohort's), and reports them in status().
// - Divergence ends the run instead of retrying a step forever: when the
//   leader's own bucket is non-finite, its own compute fails, a step's
//   deadline passes with only non-finite buckets, or the update would make
//   the params non-finite, the leader halts and broadcasts `halt` {step,
//   reason}; every rank that hears it (or a heartbeat carrying it) halts
//   too. The params stay the last good ones.
//
// Hostile peers (rules.js, with policy.js BOUNDS): on a signed bus a
// message's `from` is its sender's key (auth.js). params, halt and settings
// are taken only from the leader this rank follows (a tree step's relayed
// params carry the leader's signed header: messages.js unwrapLead), a
// leadership claim only by claimBeats within the term bound, buckets only
// from the step's members; terms, heartbeat periods, versions and samples
// are bounded, control messages rate-limited per sender, and the peers map
// capped (the longest silent goes). A sender that breaks a rule is struck
// and, past BOUNDS.ruleStrikes, excluded (roster: the reason).
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
import { realClock } from './clock.js';
import { DEFAULT_POLICY, policyFor, claimBeats, BOUNDS } from './policy.js';
import { paramsHash, copyF32, allFinite, weightedMean, sgd } from './reduce.js';
import { validate, Invalid, MAX_ID, unwrapLead } from './messages.js';
import { SenderRules } from './rules.js';
import { LiveTree } from './tree.js';
import { Traffic, adoptDelta, unpack } from './compress.js';
import { aggregate, robustOn, PeerGuard, DEFAULT_ROBUST } from './robust.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export { DEFAULT_POLICY, policyFor, claimBeats } from './policy.js';
export { paramsHash, weightedMean, sgd } from './reduce.js';

/** Version of the message set below; ranks that speak another refuse each other. */
export const PROTOCOL_VERSION = 2;

// ---- the rank ---------------------------------------------------------------

const RATE_WINDOW = 16; // completions kept for samples/s

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

  // ---- plumbing -------------------------------------------------------------

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

  _peerLimit(p, beats) {
    const pol = this.policy;
    const own = beats === 'drop' ? pol.dropMs : pol.takeoverMs;
    const factor = beats === 'drop' ? this._beats('dropBeats') : this._beats('takeoverBeats');
    return Math.max(own, factor * (p?.hbMs ?? 0));
  }

  _beats(key) {
    return this.policyOverrides[key] ?? DEFAULT_POLICY[key];
  }

  _beat() {
    this._send(null, {
      type: 'hb',
      role: this.role === 'stopped' ? 'follower' : this.role,
      leader: this.leaderId,
      version: this.version,
      step: this.step,
      hbMs: this.policy.heartbeatMs,
      sps: this.samplesPerSec(),
      backend: this.info.backend,
      fallback: this.info.fallback,
      hash: this.hash,
      halted: this.halted,
    });
  }

  _scheduleTick() {
    const ms = this.policy.heartbeatMs;
    this._tickDue = this.clock.now() + ms;
    this._tickTimer = this.clock.setTimeout(() => this._tick(), ms);
  }

  _tick() {
    if (this.stopped) return;
    try {
      const now = this.clock.now();
      const pol = this.policy;
      const late = now - this._tickDue;
      if (late > pol.heartbeatMs / 4) {
        // Our own timers ran late: this tab was suspended, or a synchronous
        // compute blocked it. That much of the silence we see is ours, not
        // our peers': shift every silence clock by it. (A dead peer is still
        // found once we are idle, e.g. waiting for params that never come.)
        if (late > pol.heartbeatMs) this.stats.lateTicks++;
        for (const p of this.peers.values()) p.lastSeen = Math.min(now, p.lastSeen + late);
        if (this.leaderId) this.leaderSeen = Math.min(now, this.leaderSeen + late);
        if (this._electAfter !== Infinity) this._electAfter += late;
      }
      this._expirePeers(now);
      if (this.role !== 'leader' && this.leaderId) {
        const lp = this.peers.get(this.leaderId);
        if (now - this.leaderSeen > this._peerLimit(lp, 'takeover')) this._leaderLost(true);
      }
      if (this.role !== 'leader' && !this.leaderId && now >= this._electAfter) this._elect();
      if (this.role !== 'leader' && this.leaderId && (this.needSync || this._tree.behind(this.peers.get(this.leaderId)?.version ?? -1))) {
        this._askForParams();
      }
      this._beat();
    } catch (err) {
      this.stats.handlerErrors++;
      this._emit('error', { where: 'tick', error: String(err?.stack ?? err) });
    }
    this._scheduleTick();
  }

  _expirePeers(now) {
    for (const r of [...this.refusedPeers.values()]) {
      if (now - r.lastSeen > this.policy.dropMs) this.refusedPeers.delete(r.id);
    }
    let changed = false;
    for (const p of [...this.peers.values()]) {
      if (now - p.lastSeen > this._peerLimit(p, 'drop')) {
        this.peers.delete(p.id);
        this.suspects.delete(p.id);
        this.stats.peersDropped++;
        changed = true;
        this._emit('left', { id: p.id, reason: 'silent' });
      }
    }
    if (changed) {
      this._emit('roster', { size: this._liveCount() });
      if (this.collect) this._tryResolve();
    }
  }

  // ---- receiving ------------------------------------------------------------

  _onMessage(msg) {
    if (this.stopped) return;
    this.stats.received++;
    if (this.model !== null && this._refuse(msg)) return;
    try {
      if (msg?.type === 'params' && msg.lead !== undefined) msg = unwrapLead(msg); // a tree step's params, relayed
      validate(msg, this.paramCount);
    } catch (err) {
      const kind = err instanceof Invalid ? err.kind : 'malformed';
      this.stats.dropped[kind]++;
      const c = this.collect;
      if (kind === 'nonFinite' && msg?.type === 'grad' && c && msg.version === c.version && c.members.has(msg.from)) {
        c.nonFinite.add(msg.from);
      }
      if (msg?.type === 'grad' && this.role === 'leader' && typeof msg.from === 'string') this._strike(msg.from.slice(0, MAX_ID), `rejected: ${err.message}`);
      this._emit('dropped', { kind, why: err.message, from: typeof msg?.from === 'string' ? msg.from : null });
      return;
    }
    if (msg.from === this.id) return;
    const broken = this.rules.check(msg);
    if (broken) {
      this.stats.dropped[broken === 'excluded' ? 'excluded' : 'rule']++;
      return;
    }
    try {
      this._handle(msg);
    } catch (err) {
      this.stats.handlerErrors++;
      this._emit('error', { where: msg.type, error: String(err?.stack ?? err) });
    }
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
      reason = `trains ${theirs}; this cohort trains ${this.model}`;
    }
    const id = msg.from.slice(0, MAX_ID);
    const isNew = !this.refusedPeers.has(id);
    this.refusedPeers.set(id, { id, reason, lastSeen: this.clock.now() });
    this.stats.dropped.refused++;
    if (isNew) this._emit('refused', { id, reason });
    return true;
  }

  _touch(msg) {
    const now = this.clock.now();
    let p = this.peers.get(msg.from);
    const isNew = !p;
    if (p) {
      this.peers.delete(msg.from); // the map stays in order of last contact: the longest silent first
      this.peers.set(msg.from, p);
    } else {
      if (this.peers.size >= BOUNDS.maxPeers) this._evictSilent();
      p = { id: msg.from, role: 'joining', leader: null, term: msg.term, version: -1, step: 0, hbMs: 0, sps: 0, backend: null, fallback: null, hash: null, lastSeen: now, lastSyncAt: -Infinity };
      this.peers.set(msg.from, p);
    }
    p.lastSeen = now;
    this.suspects.delete(msg.from);
    if (msg.from === this.leaderId && (msg.type === 'params' || (msg.type === 'hb' && msg.role === 'leader'))) {
      this.leaderSeen = now;
    }
    if (msg.type === 'hb') {
      Object.assign(p, {
        role: msg.role,
        leader: msg.leader ?? null,
        term: msg.term,
        version: msg.version,
        step: msg.step,
        hbMs: msg.hbMs,
        sps: msg.sps,
        backend: msg.backend ?? null,
        fallback: msg.fallback ?? null,
        hash: msg.hash ?? null,
      });
    }
    if (isNew) this._emit('roster', { size: this._liveCount(), joined: msg.from });
    return p;
  }

  /** The peers map is full: the longest silent peer (not the leader) goes. */
  _evictSilent() {
    for (const id of this.peers.keys()) {
      if (id === this.leaderId) continue;
      this.peers.delete(id);
      this.suspects.delete(id);
      this.stats.peersDropped++;
      this._emit('left', { id, reason: 'evicted' });
      return;
    }
  }

  /** rules.js: `from` broke a rule (the message is dropped); excluded: the reason, when this excluded it. */
  _ruleBroken(from, why, excluded) {
    this._emit('dropped', { kind: 'rule', from, why });
    if (!excluded) return;
    this.stats.excluded++;
    if (this.role === 'leader') this.guard.excluded.set(from, excluded); // the params broadcasts list it
    this.peers.delete(from);
    this.suspects.delete(from);
    this._emit('excluded', { id: from, reason: excluded });
    this._emit('roster', { size: this._liveCount() });
    if (from === this.leaderId && this.role !== 'leader') this._leaderLost(true);
  }

  _handle(msg) {
    const peer = this._touch(msg);
    if ((msg.type === 'halt' || (msg.type === 'hb' && msg.halted)) && msg.from === this.leaderId && !this.halted) {
      this._halt(msg.type === 'halt' ? msg.reason : msg.halted, { step: msg.step, from: msg.from });
    }
    switch (msg.type) {
      case 'hb':
        if (msg.role === 'leader') {
          this._onLeaderClaim(msg.from, msg.term);
        } else if (msg.from === this.leaderId && this.role !== 'leader') {
          this._leaderLost(false); // the rank we follow no longer leads
        }
        if (this.role === 'leader') {
          if (msg.role === 'joining') this._sendSync(peer);
          else if (msg.leader === this.id) this._maybeStartStep();
        } else if (this.leaderId && this.needSync) {
          this._askForParams();
        }
        break;
      case 'need':
        if (this.role === 'leader') this._sendSync(peer);
        else this.stats.dropped.notLeader++;
        break;
      case 'params': {
        // only from the leader this rank follows (relayed down a tree: from is the leader, via the relay)
        if (msg.from === this.leaderId && this.role !== 'leader') {
          this._tree.onParams(msg); // a tree step: forward to this rank's children first
          this._onParams(msg);
        } else this.stats.dropped.notLeader++;
        break;
      }
      case 'grad':
        if (this.role === 'leader') this._onGrad(msg);
        else if (!this._tree.onPartial(msg)) this.stats.dropped.notLeader++; // a child's partial in a tree step
        break;
      case 'bye':
        this.peers.delete(msg.from);
        this.suspects.delete(msg.from);
        this._emit('left', { id: msg.from, reason: 'goodbye' });
        this._emit('roster', { size: this._liveCount() });
        if (msg.from === this.leaderId) this._leaderLost(true);
        if (this.collect) this._tryResolve();
        break;
      default:
        break;
    }
  }

  // ---- leadership -----------------------------------------------------------

  _onLeaderClaim(from, term) {
    const claim = { term, id: from };
    if (this.role === 'leader') {
      if (claimBeats(claim, { term: this.term, id: this.id })) {
        this.stats.stepDowns++;
        this._cancelCollect();
        this._follow(from, term);
      } else {
        // Tell the weaker leader about us right away so it steps down.
        const p = this.peers.get(from);
        const now = this.clock.now();
        if (!p || now - (p.lastClaimReplyAt ?? -Infinity) >= this.policy.heartbeatMs / 2) {
          if (p) p.lastClaimReplyAt = now;
          this._beatTo(from);
        }
      }
      return;
    }
    if (this.leaderId === from) {
      if (term > this.term) this.term = term;
      return;
    }
    const current = this.leaderId ? { term: this.term, id: this.leaderId } : null;
    if (!current || claimBeats(claim, current)) this._follow(from, term);
  }

  _beatTo(to) {
    this._send(to, {
      type: 'hb',
      role: this.role,
      leader: this.leaderId,
      version: this.version,
      step: this.step,
      hbMs: this.policy.heartbeatMs,
      sps: this.samplesPerSec(),
      backend: this.info.backend,
      fallback: this.info.fallback,
      hash: this.hash,
      halted: this.halted,
    });
  }

  _follow(leader, term) {
    this._passedOver.clear();
    this._waitingFor = null;
    this.leaderId = leader;
    this.term = term;
    this.leaderSeen = this.clock.now();
    this._electAfter = Infinity;
    this.needSync = true;
    this._setRole('joining');
    this._lastNeedAt = -Infinity;
    this._beat();
  }

  _askForParams() {
    const now = this.clock.now();
    if (now - this._lastNeedAt < this.policy.heartbeatMs) return;
    this._lastNeedAt = now;
    this._send(this.leaderId, { type: 'need', version: this.version });
  }

  /** silent: the leader stopped answering (suspect it); else it stepped down. */
  _leaderLost(silent) {
    if (this.leaderId && silent) this.suspects.add(this.leaderId);
    this.leaderId = null;
    this._electAfter = this.clock.now();
    this._emit('role', { from: this.role, to: this.role, leader: null, term: this.term });
    this._elect();
  }

  /** No live leader: the newest params, then the lowest id, claims. */
  _elect() {
    // A live peer that itself announces leadership is followed, not replaced.
    let best = null;
    for (const p of this.peers.values()) {
      if (p.role === 'leader' && !this.suspects.has(p.id) && (!best || claimBeats(p, best))) best = p;
    }
    if (best) {
      this._follow(best.id, best.term);
      this._askForParams();
      return;
    }
    // Someone live still follows a leader we have not written off: wait for it.
    for (const p of this.peers.values()) {
      if (p.leader && p.leader !== this.id && !this.suspects.has(p.leader) && p.leader !== p.id) {
        this._electAfter = this.clock.now() + this.policy.takeoverMs;
        return;
      }
    }
    let candidate = { id: this.id, version: this.version };
    for (const p of this.peers.values()) {
      if (this.suspects.has(p.id) || this._passedOver.has(p.id)) continue;
      if (p.version > candidate.version || (p.version === candidate.version && p.id < candidate.id)) candidate = p;
    }
    if (candidate.id === this.id) {
      this._claim();
    } else if (this._waitingFor === candidate.id) {
      // It had its time and did not claim (gone quiet, or announcing params it does not hold): pass over it.
      this._passedOver.add(candidate.id);
      this._waitingFor = null;
      this._elect();
    } else {
      // Give the better candidate time to claim; re-run if it does not.
      this._waitingFor = candidate.id;
      this._electAfter = this.clock.now() + this.policy.takeoverMs;
    }
  }

  _claim() {
    let term = this.term;
    let version = this.version;
    const ceiling = this.rules.termCeiling(); // a term heard before this rank synchronised may be out of bounds
    for (const p of this.peers.values()) {
      if (p.term <= ceiling) term = Math.max(term, p.term);
      version = Math.max(version, Math.min(p.version, BOUNDS.maxVersion));
    }
    this.stats.elections++;
    this.term = term + 1;
    this.leaderId = this.id;
    this._electAfter = Infinity;
    // A fresh version label, above anything the cohort has seen, so every
    // rank's version check stays monotonic across the takeover.
    this.version = version + 1;
    this.paramsTerm = this.term;
    this.needSync = false;
    this.settingsFrom = null; // the settings adopted from the last leader stay in force
    this._setRole('leader');
    this._beat();
    this._publish();
  }

  // ---- follower side ----------------------------------------------------------

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

  _sendSync(peer) {
    const now = this.clock.now();
    if (now - peer.lastSyncAt < this.policy.heartbeatMs / 2) return;
    peer.lastSyncAt = now;
    this.stats.syncsSent++;
    // A member of the step in progress may still contribute to it.
    const go = !!this.collect && this.collect.members.has(peer.id) && this.collect.version === this.version;
    this._send(peer.id, { type: 'params', version: this.version, step: this.step, go, members: this.members, settings: this.cohortSettings(), ...this._paramsPayload(null) });
  }

  // ---- computing ----------------------------------------------------------------

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

  _computeDone() {
    this._computing = false;
    if (this._computeWanted && !this.stopped) {
      this._computeWanted = false;
      this._requestCompute();
    }
  }

  // ---- leader side ------------------------------------------------------------------

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
    if (c.buckets.size > 0) {
      this._resolve(c, true);
    } else if (c.nonFinite.size > 0) {
      this._halt(divergedAt(c.step, NaN, this.lr), { step: c.step });
    } else {
      c.timer = this.clock.setTimeout(() => this._collectDeadline(c), this.policy.collectMs);
    }
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

function pushRate(window, t, samples, ms) {
  window.push({ t, samples, ms });
  if (window.length > RATE_WINDOW) window.shift();
}

/** Samples per second over a window of completions (t, samples, duration). */
function rateOf(window) {
  if (!window.length) return 0;
  if (window.length === 1) {
    const { samples, ms } = window[0];
    return ms > 0 ? (samples * 1000) / ms : 0;
  }
  const span = window[window.length - 1].t - window[0].t;
  if (span <= 0) return 0;
  let s = 0;
  for (let i = 1; i < window.length; i++) s += window[i].samples;
  return (s * 1000) / span;
}
