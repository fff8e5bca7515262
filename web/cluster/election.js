// election.js - liveness and leadership of a protocol.js Rank: heartbeats,
// the tick that watches every peer's silence, dropping silent peers,
// leadership claims, following a leader, elections and takeover. These are
// methods of Rank, installed on its prototype by protocol.js (`this` is the
// rank).
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
//   instead of claiming leadership with stale params. A peer that announced
//   a long compute (a heartbeat's busyMs, follow.js) may stay silent that
//   much longer.
import { DEFAULT_POLICY, claimBeats, BOUNDS } from './policy.js';

/** Rank's liveness and leadership methods (protocol.js installs them; never constructed). */
export class ElectionMethods {
  // ---- liveness ------------------------------------------------------------

  _peerLimit(p, beats) {
    const pol = this.policy;
    const own = beats === 'drop' ? pol.dropMs : pol.takeoverMs;
    const factor = beats === 'drop' ? this._beats('dropBeats') : this._beats('takeoverBeats');
    return Math.max(own, factor * (p?.hbMs ?? 0)) + (p?.busyMs ?? 0); // a peer computing announced its silence
  }

  _beats(key) {
    return this.policyOverrides[key] ?? DEFAULT_POLICY[key];
  }

  _beat() {
    this._send(null, this._heartbeat(this.role === 'stopped' ? 'follower' : this.role));
  }

  /** A heartbeat saying `role`, with this rank's view of the cohort. */
  _heartbeat(role) {
    return {
      type: 'hb',
      role,
      leader: this.leaderId,
      version: this.version,
      step: this.step,
      hbMs: this.policy.heartbeatMs,
      busyMs: this._busyLeft(),
      sps: this.samplesPerSec(),
      backend: this.info.backend,
      fallback: this.info.fallback,
      hash: this.hash,
      halted: this.halted,
    };
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
      this.rules.noteActivity();
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

  // ---- leadership ----------------------------------------------------------

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
    this._send(to, this._heartbeat(this.role));
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
}
