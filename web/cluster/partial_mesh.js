// partial_mesh.js - the cluster page's WebRTC room as one wire transport
// (sendRaw / onRaw / hasRank, as mesh.js MeshLink, for fabric.js) whose
// connections stay O(fanout) per peer in a large room. Page side only.
//
// Up to policy.meshAbove peers (16) the room is a full mesh: one MeshLink on
// the room, every peer connected to every other, exactly as before. Above
// it (or forced with ?mesh=partial) each peer keeps only its overlay links
// (overlay.js: its parent and children in the step's tree, its predecessor
// and successor on a ring; at most fanout + 3):
//   - a link is a Trystero room of its own, edgeRoomId(room, a, b), that
//     only its two ends join. Trystero 0.25 shares one RTCPeerConnection
//     between all the rooms two peers have in common, so a link to a peer
//     already connected comes up at once (no signalling), and a peer's
//     connections are the peers it shares a room with;
//   - the room itself becomes the lobby: the greeter (the leader's page, or
//     the lowest rank when the leader is not in the room) stays in it, a
//     newcomer joins it, is connected to the greeter (and to other
//     newcomers), hears the roster, joins its links and leaves the lobby as
//     soon as one link is up; a page that lost every link joins it again;
//   - presence: every page floods a small 'mesh-here' message (its rank id,
//     its Trystero id, the leader it follows) every presenceMs; the roster
//     is who was heard within 6 periods, and the overlay is laid out again
//     from it (the leader first, as tree.js lays out a step);
//   - forwarding: a buffer is delivered once and forwarded to every link but
//     the one it came from, deduplicated by (from, seq) (fabric.js
//     SeenSet); a unicast whose addressee is a link goes there only; into
//     the lobby (a full mesh whose members reach each other directly) only
//     the greeter forwards, and only what came over a link. So
//     heartbeats, elections and halts reach everyone, a tree step's params
//     and partials take the direct link when the overlay matches the step's
//     layout, and a few hops when it does not yet (a re-attached subtree
//     whose new parent is not linked to it until the roster drops the dead
//     rank). Buffers without a seq are delivered, never forwarded;
//   - a link still down retryMs after it was opened is opened again (a
//     failed connection; Trystero would try again only at its next
//     announce, a minute later);
//   - a link the layout no longer wants, and a connection that no room of
//     this page uses any more, go after lingerMs (Trystero itself would keep
//     an unused connection ~2 minutes), and one that Trystero finished for
//     a room this page had left already after retryMs; the roster's clock
//     stops while this page's own timers run late (a busy or throttled tab).
// The switch is one way: a room that grew past the threshold stays partial.
// Tabs bridged into the room by a page (fabric.js) are reached through it;
// they are not overlay peers.
//
// Presence is signed with the page's rank identity (auth.js; identity()
// returns it, null before a rank runs: no presence then), as every buffer a
// MeshLink passes on must be.
//
//   const mesh = new RoomMesh({ ...MeshLink's options, selfRank: () => fabric.selfId, identity: () => fabric.identity,
//     policy: { meshAbove, fanout }, presenceMs = 1000, lingerMs = 2000, tickMs = 250, retryMs = 10000 });
//   mesh.sendRaw(buf) / mesh.onRaw(fn) / mesh.hasRank(id) / mesh.connections() /
//   mesh.peers() / mesh.acceptedCount / mesh.stats / await mesh.diagnostics() / await mesh.close()
import { MeshLink } from './mesh.js';
import { SeenSet, OnceVerifier, signBuffer, SIG_PLACEHOLDER, verifiedHeader } from './auth.js';
import { encode, peekHeader } from './wire.js';
import { meshFor, DEFAULT_POLICY } from './policy.js';
import { overlayNeighbours, greeterOf, edgeRoomId } from './overlay.js';
import { trackPeerConnections } from './ice.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export const PRESENCE = 'mesh-here';
const EXPIRE_PERIODS = 6; // presence crosses pages that may be busy: a few late periods are not a departure

const COUNTERS = ['sent', 'received', 'bytesOut', 'bytesIn'];

export class RoomMesh extends EventTarget {
  constructor(opts = {}) {
    super();
    const {
      selfRank = () => null, identity = () => null, policy = {}, presenceMs = 1000, lingerMs = 2000, tickMs = 250,
      retryMs = 10000, onEvent = null, MeshLinkImpl = MeshLink, now = () => Date.now(), ...linkOpts
    } = opts;
    if (typeof selfRank !== 'function') throw new RlxError(STATUS.INVALID_ARG, 'RoomMesh needs selfRank (a function returning the page\'s rank id or null)');
    for (const [k, v] of Object.entries({ presenceMs, lingerMs, tickMs, retryMs })) {
      if (!(v > 0)) throw new RlxError(STATUS.INVALID_ARG, `RoomMesh ${k} must be a positive number of ms`);
    }
    this.roomId = linkOpts.roomId;
    this.selfId = linkOpts.trystero?.selfId ?? null;
    this.policy = { ...DEFAULT_POLICY, ...policy };
    this.presenceMs = presenceMs;
    this.lingerMs = lingerMs;
    this.retryMs = retryMs;
    this.closed = false;
    this.mode = meshFor(1, this.policy).mesh; // 'partial' at once when forced
    this.roster = new Map(); // rank -> { peer, heardAt, beat, leader, ms }
    this.counts = { forwarded: 0, duplicates: 0, presence: 0, unforwardable: 0, idleClosed: 0, linksOpened: 0, linksClosed: 0, linksRetried: 0, lobbyLeft: 0, strayClosed: 0 };
    this._linkOpts = linkOpts;
    this._onEvent = onEvent;
    this._MeshLink = MeshLinkImpl;
    this._selfRank = selfRank;
    this._identity = identity;
    this._now = now;
    this._rank = null;
    this._leader = null; // the leader this page's own rank follows (its heartbeats say)
    this._beat = 0;
    this._lastPresence = -Infinity;
    this._seen = new SeenSet();
    this._verifier = new OnceVerifier();
    this._raw = new Set();
    this._edges = new Map(); // neighbour rank -> MeshLink
    this._edgeOpened = new Map(); // neighbour rank -> when its link was opened
    this._closing = new Map(); // room id -> Promise of a leaving link
    this._done = emptyTotals(); // counters of links closed already
    this._pcs = new Map(); // peerId -> { pc, idleSince }
    this._reported = new Set(); // peer-refused / peer-failed once per peer
    this._preflight = linkOpts.preflight ?? null;
    // every RTCPeerConnection Trystero makes for this page's rooms, to close those no room uses
    const Impl = linkOpts.RTCPeerConnectionImpl ?? globalThis.RTCPeerConnection;
    this._tracker = linkOpts.trackAttempts !== false && typeof Impl === 'function' ? trackPeerConnections(Impl) : null;
    this._strayFrom = new WeakMap(); // connection no room uses -> since when
    this._unlinkedSince = null;
    this._greeter = false;
    this.lobby = this._open(this.roomId, { track: true });
    this._tickMs = tickMs;
    this._unwanted = new Map(); // linked rank the overlay no longer wants -> since when
    this._timer = setInterval(() => this._tick(), tickMs);
  }

  // ---- the transport --------------------------------------------------------

  get stats() {
    const s = { ...this._done, dropped: { ...this._done.dropped }, peers: {} };
    for (const link of this._links()) {
      for (const k of COUNTERS) s[k] += link.stats[k];
      for (const [k, v] of Object.entries(link.stats.dropped)) s.dropped[k] = (s.dropped[k] ?? 0) + v;
      for (const [id, c] of Object.entries(link.stats.peers)) s.peers[id] = addCounters(s.peers[id], c);
    }
    return Object.assign(s, this.counts);
  }

  get acceptedCount() {
    return this._neighbourPeers().size;
  }

  onRaw(fn) {
    this._raw.add(fn);
    return () => this._raw.delete(fn);
  }

  /** A rank this room reaches: a peer of the roster, or a rank a link has heard from. */
  hasRank(rankId) {
    if (rankId !== this._rank && this.roster.has(rankId)) return true;
    for (const link of this._links()) if (link.hasRank(rankId)) return true;
    return false;
  }

  sendRaw(buf) {
    if (this.closed) return false;
    const h = peekHeader(buf);
    if (h?.type === 'hb' && h.from === this._selfRank()) this._leader = typeof h.leader === 'string' ? h.leader : null;
    if (this.mode === 'full') return this.lobby ? this.lobby.sendRaw(buf) : false;
    if (h) this._seen.first(h);
    return this._route(buf, h, null) > 0;
  }

  /**
   * This page's connections: mode, held (RTCPeerConnections of accepted
   * peers, plus idle ones not closed yet), accepted, the overlay's
   * neighbours and the links that are up, whether it is in the lobby.
   */
  connections() {
    const peers = this._neighbourPeers();
    const idle = [...this._pcs.entries()].filter(([id, e]) => !peers.has(id) && e.pc && e.pc.connectionState !== 'closed').length;
    const full = this.mode === 'full' && this.lobby ? this.lobby.connections() : null;
    return {
      mode: this.mode,
      meshAbove: meshFor(1, this.policy).meshAbove,
      fanout: this.policy.fanout,
      held: full ? full.held : peers.size + idle,
      accepted: peers.size,
      idle,
      lobby: !!this.lobby,
      neighbours: [...this._edges.keys()].sort(),
      linked: [...this._edges.entries()].filter(([, l]) => l.acceptedCount > 0).map(([r]) => r).sort(),
      roster: this.roster.size + (this._rank ? 1 : 0),
      unicastPeers: full ? full.unicastPeers : 0,
      unicast: full ? full.unicast : {},
    };
  }

  /** What this page's overlay holds, for a debug view: its rank, the roster it heard, and each link's peers. */
  debug() {
    const t = this._now();
    return {
      selfId: this.selfId, rank: this._rank, leader: this._leaderView(), greeter: this._greeter, mode: this.mode,
      roster: [...this.roster].map(([rank, e]) => ({ rank, peer: e.peer, leader: e.leader, heardMsAgo: t - e.heardAt })),
      lobby: this.lobby ? this.lobby.peers().map(({ peerId, state, reason, ageMs }) => ({ peerId, state, reason, ageMs })) : null,
      links: [...this._edges].map(([rank, l]) => ({ rank, peers: l.peers().map(({ peerId, state, reason }) => ({ peerId, state, reason })) })),
      closing: [...this._closing.keys()],
      counts: { ...this.counts },
    };
  }

  /** One row per peer (the link where it is accepted first). */
  peers() {
    const rows = new Map();
    for (const link of this._links()) {
      for (const row of link.peers()) if (!rows.has(row.peerId) || row.state === 'accepted') rows.set(row.peerId, row);
    }
    return [...rows.values()];
  }

  async diagnostics() {
    const links = this._links();
    const all = await Promise.all(links.map((l) => l.diagnostics()));
    const rows = new Map();
    for (const d of all) {
      for (const p of d.peers) if (!rows.has(p.peerId) || p.handshake.state === 'accepted') rows.set(p.peerId, p);
    }
    const lobby = this.lobby ? all[0] : null;
    return { selfId: this.selfId, roomId: this.roomId, at: Date.now(), accepted: this.acceptedCount, peers: [...rows.values()],
      attempts: lobby?.attempts ?? [], preflight: this.preflight ?? null, mesh: this.connections() };
  }

  set preflight(p) {
    this._preflight = p;
    for (const link of this._links()) link.preflight = p;
  }

  get preflight() {
    return this._preflight ?? null;
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this._timer);
    this._raw.clear();
    await Promise.all([...this._links().map((l) => l.close()), ...this._closing.values()]);
  }

  // ---- routing --------------------------------------------------------------

  _links() {
    const out = this.lobby ? [this.lobby] : [];
    for (const l of this._edges.values()) out.push(l);
    return out;
  }

  /** peerId -> a link where that peer is accepted (Trystero carries every room over one connection). */
  _neighbourPeers() {
    const out = new Map();
    for (const link of this._links()) for (const id of link.acceptedPeers()) if (!out.has(id)) out.set(id, link);
    return out;
  }

  /**
   * Sends buf to its addressee's peer when that is a neighbour, else floods
   * it: to every link's peer but `except`. A forwarded buffer goes into the
   * lobby only from the greeter, and only when it came over a link (a lobby
   * is a full mesh: its members sent their own buffers to each other
   * already). Returns how many peers it went to.
   */
  _route(buf, h, except, via = null) {
    const peers = this._neighbourPeers();
    let targets = null;
    const to = h?.to;
    if (typeof to === 'string') {
      const peer = this.roster.get(to)?.peer;
      if (peer && peers.has(peer)) targets = [peer];
    }
    if (!targets) {
      const intoLobby = via === null || (this._greeter && via !== this.lobby);
      const onLinks = new Set();
      for (const link of this._edges.values()) for (const id of link.acceptedPeers()) onLinks.add(id);
      targets = [...peers.keys()].filter((id) => intoLobby || onLinks.has(id));
    }
    const byLink = new Map();
    for (const id of targets) {
      if (id === except) continue;
      const link = peers.get(id);
      if (!byLink.has(link)) byLink.set(link, []);
      byLink.get(link).push(id);
    }
    let n = 0;
    for (const [link, ids] of byLink) n += link.sendToPeers(buf, ids);
    return n;
  }

  _arrived(buf, peerId, via) {
    if (this.closed) return;
    const h = verifiedHeader(buf) ?? peekHeader(buf); // a MeshLink verified it
    if (h?.type === PRESENCE) {
      if (this._presence(h) && this.mode === 'partial') {
        this.counts.forwarded++;
        this._route(buf, h, peerId, via);
      }
      return; // the mesh's own message: never delivered to the rank
    }
    if (this.mode === 'full' || !h) return this._deliver(buf); // as MeshLink alone (fabric.js deduplicates)
    if (!Number.isSafeInteger(h.seq) || typeof h.from !== 'string') {
      this.counts.unforwardable++;
      return this._deliver(buf);
    }
    if (!this._seen.first(h)) {
      this.counts.duplicates++;
      return;
    }
    if (h.to !== this._selfRank()) {
      this.counts.forwarded++;
      this._route(buf.slice(0), h, peerId, via); // a copy: the original may be transferred to the Worker
    }
    this._deliver(buf);
  }

  _deliver(buf) {
    const handlers = [...this._raw];
    handlers.forEach((fn, i) => fn(i === handlers.length - 1 ? buf : buf.slice(0)));
  }

  // ---- presence and the overlay ----------------------------------------------

  /** A presence message: true when it is new (then it is forwarded). */
  _presence(h) {
    const ok = typeof h.from === 'string' && h.from.length <= 128 && typeof h.peer === 'string' && h.peer.length <= 128 &&
      Number.isSafeInteger(h.beat) && h.beat > 0 && h.seq === -h.beat && (h.leader === null || typeof h.leader === 'string') &&
      Number.isFinite(h.ms) && h.ms > 0 && h.ms <= 60_000;
    if (!ok) {
      this.counts.unforwardable++;
      return false;
    }
    if (!this._seen.first(h)) {
      this.counts.duplicates++;
      return false;
    }
    this.counts.presence++;
    if (h.from === this._rank) return false;
    const known = this.roster.get(h.from);
    if (!known || known.beat < h.beat) this.roster.set(h.from, { peer: h.peer, heardAt: this._now(), beat: h.beat, leader: h.leader, ms: h.ms });
    if (this.mode === 'full' && h.mode === 'partial' && meshFor(1, this.policy).meshAbove !== Infinity) this._goPartial();
    return true;
  }

  _goPartial() {
    if (this.mode === 'partial') return;
    this.mode = 'partial';
    this._emit('mesh-mode', { mode: 'partial' });
  }

  /** The leader: the one this page's rank follows, else the one most of the roster names. */
  _leaderView() {
    if (this._leader) return this._leader;
    const votes = new Map();
    for (const e of this.roster.values()) if (e.leader) votes.set(e.leader, (votes.get(e.leader) ?? 0) + 1);
    let best = null;
    for (const [id, v] of votes) if (!best || v > votes.get(best) || (v === votes.get(best) && id < best)) best = id;
    return best;
  }

  _sendPresence() {
    const me = this._identity();
    if (!me || me.id !== this._rank) return;
    this._beat++;
    const h = { type: PRESENCE, from: this._rank, to: null, seq: -this._beat, beat: this._beat, peer: this.selfId,
      leader: this._leaderView(), mode: this.mode, n: this.roster.size + 1, ms: this.presenceMs, pk: me.pk, sig: SIG_PLACEHOLDER };
    const buf = encode(h);
    this._seen.first(h);
    signBuffer(me, buf).then(() => {
      if (!this.closed) this._route(buf, h, null);
    }, () => {});
  }

  _tick() {
    if (this.closed) return;
    const t = this._now();
    // a page whose own timers ran late (a busy or throttled tab) heard nothing meanwhile: that is not silence
    const late = this._lastTick === undefined ? 0 : t - this._lastTick - 2 * this._tickMs;
    this._lastTick = t;
    if (late > 0) for (const e of this.roster.values()) e.heardAt += late;
    const rank = this._selfRank() ?? null;
    if (rank !== this._rank) {
      this._rank = rank; // a new rank (Start after Stop): links are named by rank ids
      for (const r of [...this._edges.keys()]) this._dropEdge(r);
      this.roster.delete(rank);
    }
    for (const [id, e] of this.roster) if (t - e.heardAt > EXPIRE_PERIODS * Math.max(e.ms, this.presenceMs)) this.roster.delete(id);
    if (this.mode === 'full' && this.lobby && meshFor(this.lobby.acceptedCount + 1, this.policy).mesh === 'partial') this._goPartial();
    if (this.mode !== 'partial') return;
    if (rank && t - this._lastPresence >= this.presenceMs) {
      this._lastPresence = t;
      this._sendPresence();
    }
    this._layout(rank);
    this._closeIdle(t);
  }

  /** Joins the links the overlay wants, leaves the others, and enters or leaves the lobby. */
  _layout(rank) {
    const ranks = [...this.roster.keys()];
    const leader = this._leaderView();
    const want = rank ? overlayNeighbours(rank, ranks, { leader, fanout: this.policy.fanout }).all : new Set();
    const t = this._now();
    // a link the layout no longer wants goes after lingerMs (a roster that flickers does not tear links down)
    for (const [r, link] of [...this._edges]) {
      if (want.has(r)) this._unwanted.delete(r);
      else if (!this._unwanted.has(r)) this._unwanted.set(r, t);
      else if (t - this._unwanted.get(r) >= this.lingerMs) this._dropEdge(r);
      // a wanted link still down after retryMs is opened again: Trystero then announces anew at once
      if (want.has(r) && link.acceptedCount === 0 && t - this._edgeOpened.get(r) >= this.retryMs) {
        this._dropEdge(r);
        this.counts.linksRetried++;
      }
    }
    for (const r of want) {
      if (this._edges.has(r)) continue;
      const id = edgeRoomId(this.roomId, rank, r);
      if (this._closing.has(id)) continue; // Trystero hands back a room until it has left it
      this._edges.set(r, this._open(id));
      this._edgeOpened.set(r, t);
      this.counts.linksOpened++;
    }
    const linked = [...this._edges.values()].some((l) => l.acceptedCount > 0);
    if (linked) this._unlinkedSince = null;
    else this._unlinkedSince ??= t;
    const greeter = rank !== null && greeterOf([rank, ...ranks], leader) === rank;
    this._greeter = greeter;
    // back into the lobby only after lingerMs without a link (a new layout's links take a moment)
    const lost = !linked && (this.lobby || t - this._unlinkedSince >= this.lingerMs);
    const wantLobby = !rank || greeter || lost;
    if (wantLobby && !this.lobby && !this._closing.has(this.roomId)) this.lobby = this._open(this.roomId, { track: true });
    if (!wantLobby && this.lobby) {
      this._retire(this.lobby);
      this.lobby = null;
      this.counts.lobbyLeft++;
    }
  }

  _dropEdge(r) {
    const link = this._edges.get(r);
    if (!link) return;
    this._edges.delete(r);
    this._edgeOpened.delete(r);
    this._unwanted.delete(r);
    this._retire(link);
    this.counts.linksClosed++;
  }

  /** Closes connections no room of this page uses, lingerMs after the last one left. */
  _closeIdle(t) {
    const peers = this._neighbourPeers();
    for (const [id, link] of peers) this._remember(id, link);
    this._closeStray(t);
    for (const [id, e] of this._pcs) {
      if (peers.has(id)) continue;
      e.idleSince ??= t;
      if (t - e.idleSince < this.lingerMs) continue;
      this._pcs.delete(id);
      if (e.pc.connectionState === 'closed') continue;
      try {
        e.pc.close();
        this.counts.idleClosed++;
      } catch {
        // closed already
      }
    }
  }

  /**
   * Closes a connection that is up but belongs to no peer of any room of
   * this page, retryMs after it was first seen so: Trystero can finish one
   * for a room this page has left already (it would keep it ~2 minutes).
   */
  _closeStray(t) {
    if (!this._tracker) return;
    const used = new Set([...this._pcs.values()].map((e) => e.pc));
    for (const link of this._links()) {
      for (const row of link.peers()) {
        const pc = link.connectionOf(row.peerId);
        if (pc) used.add(pc);
      }
    }
    for (const { pc, closedAt } of this._tracker.records()) {
      if (closedAt || pc.connectionState !== 'connected' || used.has(pc)) {
        this._strayFrom.delete(pc);
        continue;
      }
      if (!this._strayFrom.has(pc)) this._strayFrom.set(pc, t);
      if (t - this._strayFrom.get(pc) < this.retryMs) continue;
      this._strayFrom.delete(pc);
      try {
        pc.close();
        this.counts.strayClosed++;
      } catch {
        // closed already
      }
    }
  }

  /** Keeps peerId's RTCPeerConnection (Trystero's, shared by every room) to close it once no room uses it. */
  _remember(peerId, link) {
    const pc = link.connectionOf(peerId);
    if (pc) this._pcs.set(peerId, { pc, idleSince: null });
  }

  // ---- links ------------------------------------------------------------------

  _open(roomId, { track = false } = {}) {
    const link = new this._MeshLink({
      ...this._linkOpts,
      roomId,
      verifier: this._verifier, // one for every link: a flooded copy is verified once, whichever link brings it
      trackAttempts: track && this._linkOpts.trackAttempts !== false,
      tracker: this._tracker,
      preflight: this._preflight ?? null,
      onEvent: (type, d) => {
        if (type === 'peer-join' || type === 'peer-accepted') this._remember(d.peerId, link);
        this._linkEvent(type, d);
      },
    });
    link.onRaw((buf, peerId) => this._arrived(buf, peerId, link));
    return link;
  }

  /** Leaves a link's room; its counters go into the totals. */
  _retire(link) {
    for (const id of link.acceptedPeers()) this._remember(id, link);
    const s = link.stats;
    for (const k of COUNTERS) this._done[k] += s[k];
    for (const [k, v] of Object.entries(s.dropped)) this._done.dropped[k] = (this._done.dropped[k] ?? 0) + v;
    const id = link.roomId;
    const leaving = Promise.resolve(link.close()).catch(() => {}).finally(() => {
      if (this._closing.get(id) === leaving) this._closing.delete(id);
    });
    this._closing.set(id, leaving);
  }

  _linkEvent(type, d) {
    if (type === 'peer-refused' || type === 'peer-failed') {
      const key = `${type}:${d.peerId}`;
      if (this._reported.has(key)) return;
      this._reported.add(key);
    }
    this._emit(type, d);
  }

  _emit(type, detail) {
    if (this.closed) return;
    this.dispatchEvent(new CustomEvent(type, { detail }));
    try {
      this._onEvent?.(type, detail);
    } catch {
      // the page's handler; the transport goes on
    }
  }
}

function emptyTotals() {
  return { sent: 0, received: 0, bytesOut: 0, bytesIn: 0, dropped: {} };
}

function addCounters(a, b) {
  const out = { ...(a ?? {}) };
  for (const [k, v] of Object.entries(b)) out[k] = (out[k] ?? 0) + v;
  return out;
}
