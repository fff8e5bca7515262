// receive.js - what a protocol.js Rank does with each message it receives:
// validation, the senders' rules, keeping the peers map, and dispatch by
// type to the election (election.js), follower (follow.js) and step
// (step.js) methods. These are methods of Rank, installed on its prototype
// by protocol.js (`this` is the rank).
//
// - Every message is validated; malformed, oversized (payload longer than the
//   model) and non-finite ones are dropped and counted in rank.stats.dropped,
//   buckets for any other version are dropped as stale. Nothing a peer sends
//   can throw out of the message handler.
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
import { BOUNDS } from './policy.js';
import { validate, Invalid, MAX_ID, unwrapLead } from './messages.js';

/** Rank's receiving methods (protocol.js installs them; never constructed). */
export class ReceiveMethods {
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

  _touch(msg) {
    const now = this.clock.now();
    let p = this.peers.get(msg.from);
    const isNew = !p;
    if (p) {
      this.peers.delete(msg.from); // the map stays in order of last contact: the longest silent first
      this.peers.set(msg.from, p);
    } else {
      if (this.peers.size >= BOUNDS.maxPeers) this._evictSilent();
      p = { id: msg.from, role: 'joining', leader: null, term: msg.term, version: -1, step: 0, hbMs: 0, busyMs: 0, sps: 0, backend: null, fallback: null, hash: null, lastSeen: now, lastSyncAt: -Infinity };
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
        busyMs: msg.busyMs ?? 0,
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
}
