// mesh.js - the cluster page's WebRTC mesh transport (page side, main thread;
// a Worker has no RTCPeerConnection, so this must never be imported into
// one: MeshLink and the preflight throw there). Signalling and data channels
// come from Trystero (npm trystero 0.25.4, bundled by `make` into
// web/vendor/trystero.js); this file adds what the cluster needs on top: a
// wire transport (sendRaw/onRaw of wire.js buffers, for bus.js proxyRelay), a
// per-peer handshake that refuses peers of another protocol, model or
// parameter count, a handshake timeout, per-peer ICE diagnostics and failure
// messages that say what to do. It never decodes a payload: routing reads
// the u32 length and JSON header of a buffer, nothing after it.
//
// Configuration (all pure functions):
//   DEFAULT_ICE_SERVERS                public STUN only (never TURN: it relays every byte)
//   parseTurn('url|user|cred;...')     -> [{ urls, username, credential }] (turn:/turns: only; throws on a bad entry)
//   parseRelays('wss://a,wss://b')     -> [url] (ws:// or wss:// only; throws otherwise)
//   iceConfig({ turn, relayOnly, stun }) -> rtcConfig: STUN first, TURN after,
//                                      iceTransportPolicy 'relay' when relayOnly (needs TURN)
// Loading:
//   await loadTrystero(url = DEFAULT_TRYSTERO_URL)   import + checkTrysteroApi (the page passes ?p2p=)
//   checkTrysteroApi(mod) -> mod       throws an RlxError (INVALID_ARG) naming what is missing
//   adaptRoom(room)                    one shape over Trystero 0.25+ (makeAction returns
//                                      { send, onMessage }, onPeerJoin is an assignable property)
//                                      and the legacy API ([send, get, progress] tuples,
//                                      onPeerJoin(fn) functions); throws naming what is missing
// The transport:
//   const link = new MeshLink({
//     trystero,                 the module from loadTrystero()                        (required)
//     roomId, password = '',    Trystero room; the password encrypts the SDP and is checked peer to peer
//     slug, paramCount,         the model, compared in the handshake                  (required)
//     protocol,                 the rank protocol version, compared too (default protocol.js PROTOCOL_VERSION)
//     appId = 'rlx-cluster', relayUrls = [] (Trystero's public Nostr relays), rtcConfig = iceConfig(),
//     handshakeTimeoutMs = 20000, helloRetryMs = 2000, preflight = null (an icePreflight() result:
//     sharpens failure diagnoses), trackAttempts = true (see ice.js trackPeerConnections),
//     RTCPeerConnectionImpl = RTCPeerConnection, onEvent = null, verifier = null (auth.js OnceVerifier; shared by a RoomMesh's links),
//     tracker = null (a trackPeerConnections() of ice.js to use instead of one of its own; shared by a RoomMesh's links) })
//   One MeshLink per room per page: Trystero keeps one room object per appId and roomId.
//   link.sendRaw(buf) -> bool          to every accepted peer, or only the peer of header.to
//                                      once that rank's first verified buffer came from that peer;
//                                      in order per peer (a queue each); false: no one to send to
//   link.onRaw(fn) -> off              fn(ArrayBuffer, peerId) for every buffer of an accepted peer
//                                      whose signature verifies (auth.js; others: stats.dropped.unverified)
//   link.sendToPeers(buf, peerIds) -> n  to those accepted peers only (partial_mesh.js routes by peer)
//   link.acceptedPeers() / link.connectionOf(peerId)   accepted peer ids; a peer's RTCPeerConnection (or null)
//   link.hasRank(rankId) -> bool       that rank sent from an accepted peer (fabric.js routing)
//   link.stats                         { sent, received, bytesOut, bytesIn, dropped, peers: { id: {...} } }
//   link.peers() / link.acceptedCount / await link.diagnostics() / await link.close()
//   events (EventTarget CustomEvent detail, and onEvent(type, detail)):
//     peer-join { peerId }             the data channel is open (Trystero's onPeerJoin)
//     peer-accepted { peerId, remote, ms }
//     peer-refused { peerId, reason, side: 'local' | 'remote' }   once per peer
//     peer-leave { peerId, state }
//     peer-failed { peerId, message, case, error }                once per peer until it is accepted
//     diagnostics { ... }              what diagnostics() resolved to
// Handshake on action 'rlx-hs' (JSON): each side sends { t: 'hello', mesh, protocol, app,
// slug, paramCount }; a matching hello is answered { t: 'accept' }, a mismatch
// { t: 'refuse', reason }. A peer is accepted once its hello matched AND it
// accepted ours; only then do buffers flow (action 'rlx-wire'), both ways.
// Hellos are re-sent every helloRetryMs until then; all three messages are idempotent.
// A peer with no handshake within handshakeTimeoutMs (or whose connection
// failed) is abandoned and reported, not refused: it is tried again when it
// says hello or Trystero joins it again, and gets a hello now and then.
//
// Connections per peer. Trystero 0.25.4 connects every peer of a room to
// every other (each peer announces itself on the relays every ~5.3 s and a
// peer not connected to it answers with an offer): a MeshLink's room of n
// peers holds n - 1 RTCPeerConnections per peer, and there is no hook to
// decline one. What Trystero 0.25 does share is the connection: two peers
// hold ONE RTCPeerConnection whatever number of rooms they are both in. So
// the cluster page does not use one MeshLink for a large room:
// partial_mesh.js RoomMesh keeps this file's full mesh up to
// policy.meshAbove peers and above it gives each overlay link (overlay.js:
// the tree's links and a ring) a MeshLink of its own in a two-peer room, so
// a peer's connections are its links (at most fanout + 3). Within one room
// this file routes: a buffer whose header names one rank (`to`) goes to
// that rank's peer only. connections() measures a MeshLink: { held: the
// RTCPeerConnections Trystero holds for the room, accepted, unicastPeers:
// the peers that got a buffer addressed to one rank }. The options weighed
// (docs/cluster.md, "Connections per peer", and partial_mesh.js): js-libp2p with WebRTC and
// gossipsub (a bounded-degree mesh, but browser-to-browser WebRTC signals
// through a libp2p circuit-relay server, the stack bundles to 1.08 MB
// minified / 301 KB gzipped against Trystero's 62 / 23 KB, and gossipsub
// floods where the tree needs direct links anyway); one Trystero room per
// subtree (about 2k connections per peer, the same machinery as a room per
// link with more connections); unicast over one room (no new connection
// when the layout changes, but n - 1 of them). Tabs of one browser share a
// BroadcastChannel, where every post reaches every tab whatever the topology.
import { peekHeader } from './wire.js';
import { llmMismatch } from './task_key.js';
import { OnceVerifier, SeenSet, markCopy } from './auth.js';
import { PROTOCOL_VERSION as RANK_PROTOCOL } from './protocol.js';
import { assertNotWorker, classifyIce, icePreflight, peerIceStats, trackPeerConnections } from './ice.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export { icePreflight, classifyIce } from './ice.js';

/**
 * The version of this file's own messages (the handshake and the actions).
 * The rank protocol's version is the `protocol` option (protocol.js's
 * PROTOCOL_VERSION by default); the hello carries and compares both.
 */
export const MESH_VERSION = 1;
export const APP_ID = 'rlx-cluster';
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 20000;
/** An abandoned peer still gets our hello, every this many hello retry periods. */
const ABANDONED_HELLO_RETRIES = 5;
export const DEFAULT_ICE_SERVERS = Object.freeze([
  Object.freeze({ urls: 'stun:stun.l.google.com:19302' }),
  Object.freeze({ urls: 'stun:stun1.l.google.com:19302' }),
  Object.freeze({ urls: 'stun:stun.cloudflare.com:3478' }),
]);
export const DEFAULT_TRYSTERO_URL = new URL('../vendor/trystero.js', import.meta.url).href;

const HS_ACTION = 'rlx-hs';
const WIRE_ACTION = 'rlx-wire';
const MAX_RANKS_PER_PEER = 64;
const ROUTE_STALE_MS = 10_000;

export const shortId = (id) => (typeof id === 'string' && id ? id.slice(0, 8) : '?');

// ---- configuration ---------------------------------------------------------------

/** '?turn=' text -> RTCIceServer[]: entries 'url|user|credential' joined by ';'. */
export function parseTurn(text) {
  if (text == null) return [];
  if (typeof text !== 'string') throw new RlxError(STATUS.INVALID_ARG, 'turn: expected a string like turn:host:3478|user|credential');
  const out = [];
  text.split(';').map((e) => e.trim()).filter(Boolean).forEach((entry, i) => {
    const fields = entry.split('|');
    const where = `turn entry ${i + 1} (${JSON.stringify(entry.length > 80 ? `${entry.slice(0, 80)}...` : entry)})`;
    if (fields.length !== 3) throw new RlxError(STATUS.INVALID_ARG, `${where}: expected url|user|credential, got ${fields.length} field${fields.length === 1 ? '' : 's'}`);
    const [urls, username, credential] = fields.map((f) => f.trim());
    if (!/^turns?:[^\s|;]+$/i.test(urls)) throw new RlxError(STATUS.INVALID_ARG, `${where}: the url must start with turn: or turns:`);
    if (!username || !credential) throw new RlxError(STATUS.INVALID_ARG, `${where}: the user and the credential must not be empty`);
    out.push({ urls, username, credential });
  });
  return out;
}

/** '?relays=' text -> signalling relay URLs (comma-separated ws:// or wss://). */
export function parseRelays(text) {
  if (text == null) return [];
  if (typeof text !== 'string') throw new RlxError(STATUS.INVALID_ARG, 'relays: expected a comma-separated list of ws:// or wss:// URLs');
  return text.split(',').map((u) => u.trim()).filter(Boolean).map((u) => {
    let url;
    try {
      url = new URL(u);
    } catch {
      throw new RlxError(STATUS.INVALID_ARG, `relay ${JSON.stringify(u)} is not a URL (expected ws://HOST:PORT or wss://HOST)`);
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new RlxError(STATUS.INVALID_ARG, `relay ${JSON.stringify(u)}: only ws:// and wss:// relays are supported`);
    return u;
  });
}

/** rtcConfig for Trystero: STUN first (a direct path is always tried first), TURN after. */
export function iceConfig({ turn = [], relayOnly = false, stun = DEFAULT_ICE_SERVERS } = {}) {
  const turnServers = typeof turn === 'string' ? parseTurn(turn) : [...turn];
  if (relayOnly && turnServers.length === 0) throw new RlxError(STATUS.INVALID_ARG, 'relay-only mode needs a TURN server (?turn=url|user|credential)');
  const config = { iceServers: [...stun.map((s) => ({ ...s })), ...turnServers.map((s) => ({ ...s }))] };
  if (relayOnly) config.iceTransportPolicy = 'relay';
  return config;
}

// ---- Trystero ---------------------------------------------------------------------

export function checkTrysteroApi(mod) {
  if (!mod || (typeof mod !== 'object' && typeof mod !== 'function')) {
    throw new RlxError(STATUS.INVALID_ARG, `mesh module: expected an ES module, got ${mod === null ? 'null' : typeof mod}`);
  }
  const missing = [];
  if (typeof mod.joinRoom !== 'function') missing.push('joinRoom (a function)');
  if (mod.selfId !== undefined && typeof mod.selfId !== 'string') missing.push('selfId (a string)');
  if (missing.length) {
    throw new RlxError(STATUS.INVALID_ARG, `mesh module lacks ${missing.join(' and ')}; exports: [${Object.keys(mod).join(', ')}]. ` +
      'Is ?p2p= pointing at a Trystero build?');
  }
  return mod;
}

export async function loadTrystero(url = DEFAULT_TRYSTERO_URL) {
  let mod;
  try {
    mod = await import(url);
  } catch (err) {
    const hint = url === DEFAULT_TRYSTERO_URL ? ' (run `make web/vendor/trystero.js`)' : '';
    throw new RlxError(STATUS.INVALID_ARG, `could not load the mesh module ${url}${hint}: ${err?.message ?? err}`);
  }
  try {
    return checkTrysteroApi(mod);
  } catch (err) {
    throw new RlxError(STATUS.INVALID_ARG, `${url}: ${err.message}`);
  }
}

/** One action shape: { form, send(data, targets[]), onMessage(fn(data, peerId)) }. */
export function adaptAction(action, name = '?') {
  if (Array.isArray(action)) {
    const [send, get] = action;
    if (typeof send !== 'function' || typeof get !== 'function') {
      throw new RlxError(STATUS.INVALID_ARG, `makeAction('${name}') returned a tuple without [send, onMessage] functions`);
    }
    return { form: 'tuple', send: (data, targets) => send(data, targets), onMessage: (fn) => get((data, peerId) => fn(data, peerId)) };
  }
  if (action && typeof action === 'object' && typeof action.send === 'function' && 'onMessage' in action) {
    const wrap = (fn) => (data, ctx) => fn(data, typeof ctx === 'string' ? ctx : ctx?.peerId);
    return {
      form: 'object',
      // 0.25+: send(data, { target }); a bare second argument would be ignored (a broadcast).
      send: (data, targets) => action.send(data, { target: targets }),
      // 0.25+: an assignable property (an accessor); a plain function there would be a registrar.
      onMessage: (fn) => {
        if (!hasSetter(action, 'onMessage') && typeof action.onMessage === 'function') action.onMessage(wrap(fn));
        else action.onMessage = wrap(fn);
      },
    };
  }
  const got = action === null ? 'null' : Array.isArray(action) ? 'an array' : typeof action === 'object' ? `{${Object.keys(action).join(', ')}}` : typeof action;
  throw new RlxError(STATUS.INVALID_ARG, `makeAction('${name}') returned ${got}: expected { send, onMessage } (Trystero 0.25+) or [send, onMessage, onProgress]`);
}

function hasSetter(obj, key) {
  for (let o = obj; o; o = Object.getPrototypeOf(o)) {
    const d = Object.getOwnPropertyDescriptor(o, key);
    if (d) return typeof d.set === 'function';
  }
  return false;
}

function eventHook(room, key) {
  if (!(key in room)) return null;
  if (hasSetter(room, key)) return (fn) => { room[key] = fn; };
  if (typeof room[key] === 'function') return (fn) => room[key](fn);
  const d = Object.getOwnPropertyDescriptor(room, key);
  if (d && d.writable && (room[key] === null || room[key] === undefined)) return (fn) => { room[key] = fn; };
  return null;
}

/** One room shape over both Trystero APIs; throws an RlxError (INVALID_ARG) naming what is missing. */
export function adaptRoom(room) {
  if (!room || typeof room !== 'object') throw new RlxError(STATUS.INVALID_ARG, `joinRoom returned ${room === null ? 'null' : typeof room}, not a room`);
  const missing = [];
  if (typeof room.makeAction !== 'function') missing.push('makeAction (a function)');
  if (typeof room.leave !== 'function') missing.push('leave (a function)');
  const onJoin = eventHook(room, 'onPeerJoin');
  const onLeave = eventHook(room, 'onPeerLeave');
  if (!onJoin) missing.push('onPeerJoin (an assignable property or a function taking a callback)');
  if (!onLeave) missing.push('onPeerLeave (an assignable property or a function taking a callback)');
  if (missing.length) throw new RlxError(STATUS.INVALID_ARG, `the Trystero room lacks ${missing.join(', ')}; it has [${Object.keys(room).join(', ')}]`);
  return {
    events: hasSetter(room, 'onPeerJoin') || typeof room.onPeerJoin !== 'function' ? 'property' : 'function',
    action: (name) => adaptAction(room.makeAction(name), name),
    onPeerJoin: onJoin,
    onPeerLeave: onLeave,
    /** Map peerId -> RTCPeerConnection (or null where the API gives ids only). */
    peers: () => {
      const got = typeof room.getPeers === 'function' ? room.getPeers() : {};
      if (Array.isArray(got)) return new Map(got.map((id) => [id, null]));
      return new Map(Object.entries(got ?? {}).map(([id, pc]) => [id, pc && typeof pc.getStats === 'function' ? pc : null]));
    },
    leave: () => room.leave(),
  };
}

// ---- wire headers -------------------------------------------------------------------


function toArrayBuffer(data) {
  if (data instanceof ArrayBuffer) return data;
  if (ArrayBuffer.isView(data)) {
    if (data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer) return data.buffer;
    return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
  }
  return null;
}

// ---- handshake and messages ------------------------------------------------------------

/** Why two hellos cannot train together (neutral wording, shown on both sides), or null. */
export function helloMismatch(mine, remote, selfId = null, peerId = null) {
  const me = shortId(selfId);
  const them = shortId(peerId);
  if (!remote || typeof remote !== 'object') return 'malformed hello';
  // What the peer sent ends up in both sides' messages: short and printable only.
  const clip = (v) => (typeof v === 'string' ? v.replace(/[^\x20-\x7e]/g, '?').slice(0, 64) : v);
  const theirs = { ...remote, app: clip(remote.app), slug: clip(remote.slug) };
  if (theirs.app !== mine.app) return `another application: ${them} is ${JSON.stringify(theirs.app)}, ${me} is ${JSON.stringify(mine.app)}`;
  if (theirs.mesh !== mine.mesh) {
    return `mesh protocol mismatch: ${them} speaks mesh protocol ${theirs.mesh}, ${me} mesh protocol ${mine.mesh} (load both pages from the same site)`;
  }
  if (theirs.protocol !== mine.protocol) {
    return `protocol mismatch: ${them} speaks cluster protocol ${theirs.protocol}, ${me} protocol ${mine.protocol} (load both pages from the same site)`;
  }
  if (theirs.slug !== mine.slug) {
    const why = llmMismatch(mine.slug, theirs.slug);
    return `model mismatch: ${them} trains ${theirs.slug} (${theirs.paramCount} parameters), ${me} trains ${mine.slug} (${mine.paramCount} parameters)${why ? `: ${why}` : ''}`;
  }
  if (theirs.paramCount !== mine.paramCount) {
    return `parameter count mismatch in ${mine.slug}: ${them} has ${theirs.paramCount} parameters, ${me} has ${mine.paramCount} parameters (load both pages from the same site)`;
  }
  return null;
}

/**
 * The per-peer failure text: names the peer, says how many peers are connected,
 * and raises TURN only when none is (and the peer is not simply gone).
 */
export function failureMessage({ peerId, connected = 0, why = '', diagnosis = null }) {
  const count = connected === 0 ? 'no peer is connected'
    : `${connected} peer${connected === 1 ? ' is' : 's are'} connected and training goes on with ${connected === 1 ? 'it' : 'them'}`;
  let text = `could not connect to peer ${shortId(peerId)}${why ? ` (${why})` : ''}; ${count}`;
  if (diagnosis && diagnosis.case !== 'connected') text += `. ${diagnosis.message[0].toUpperCase()}${diagnosis.message.slice(1)}`;
  if (connected === 0 && diagnosis?.case !== 'peer-gone') {
    text += '. If the devices are on different networks, a TURN relay may be needed: add ' +
      '?turn=turn:HOST:3478|USER|CREDENTIAL to the join URL (tools/turn.py prints one)';
  }
  return text;
}

const duration = (ms) => (ms < 1000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 100) / 10} s`);

function emptyCounters() {
  return { sent: 0, received: 0, bytesOut: 0, bytesIn: 0, unicast: 0 };
}

// ---- the transport --------------------------------------------------------------------

export class MeshLink extends EventTarget {
  constructor({
    trystero, roomId, password = '', appId = APP_ID, relayUrls = [], rtcConfig = null, slug, paramCount,
    protocol = RANK_PROTOCOL, handshakeTimeoutMs = DEFAULT_HANDSHAKE_TIMEOUT_MS, helloRetryMs = 2000,
    trackAttempts = true, tracker = null, RTCPeerConnectionImpl = globalThis.RTCPeerConnection, preflight = null, onEvent = null, verifier = null,
  } = {}) {
    super();
    assertNotWorker('MeshLink');
    if (globalThis.isSecureContext === false) {
      throw new RlxError(STATUS.UNSUPPORTED, 'the mesh needs a secure context (https, or http://localhost): Trystero uses crypto.subtle; serve with tools/serve.py --tls');
    }
    checkTrysteroApi(trystero);
    if (typeof roomId !== 'string' || !roomId) throw new RlxError(STATUS.INVALID_ARG, 'MeshLink needs a roomId (a non-empty string)');
    if (typeof slug !== 'string' || !slug) throw new RlxError(STATUS.INVALID_ARG, 'MeshLink needs the model slug (the handshake compares it)');
    if (!Number.isSafeInteger(paramCount) || paramCount < 0) throw new RlxError(STATUS.INVALID_ARG, 'MeshLink needs paramCount (a non-negative integer)');
    if (!(handshakeTimeoutMs > 0)) throw new RlxError(STATUS.INVALID_ARG, 'handshakeTimeoutMs must be a positive number');
    this.roomId = roomId;
    this.selfId = trystero.selfId ?? null;
    this.hello = { t: 'hello', mesh: MESH_VERSION, protocol, app: appId, slug, paramCount };
    this.rtcConfig = rtcConfig ?? iceConfig();
    this.preflight = preflight;
    this.handshakeTimeoutMs = handshakeTimeoutMs;
    this.helloRetryMs = helloRetryMs;
    this.closed = false;
    this.stats = { ...emptyCounters(), dropped: { unaccepted: 0, malformed: 0, unverified: 0, duplicates: 0, noPeers: 0, sendErrors: 0, handlerErrors: 0 }, peers: {} };
    this._onEvent = onEvent;
    this._peers = new Map();
    this._rankToPeer = new Map();
    this._routeSeen = new Map(); // rank id -> when its route's peer last brought a new buffer of it
    this._seen = new SeenSet();
    this._verifier = verifier ?? new OnceVerifier(); // a flooded overlay brings copies: each (from, seq) is verified once
    this._chain = Promise.resolve();
    this._raw = new Set();
    this._reported = new Set();
    this._refusedReported = new Set();
    this._tracker = tracker ?? (trackAttempts && typeof RTCPeerConnectionImpl === 'function' ? trackPeerConnections(RTCPeerConnectionImpl) : null);

    const config = { appId, rtcConfig: this.rtcConfig };
    if (password) config.password = password;
    if (relayUrls.length) config.relayConfig = { urls: [...relayUrls] };
    if (this._tracker) config.rtcPolyfill = this._tracker.Impl;
    const room = trystero.joinRoom(config, roomId, { onJoinError: (e) => this._onJoinError(e), handshakeTimeoutMs });
    this._room = adaptRoom(room);
    this._hs = this._room.action(HS_ACTION);
    this._wire = this._room.action(WIRE_ACTION);
    this._hs.onMessage((data, peerId) => this._onHandshake(data, peerId));
    this._wire.onMessage((data, peerId) => this._onWire(data, peerId));
    this._room.onPeerJoin((peerId) => this._join(peerId));
    this._room.onPeerLeave((peerId) => this._leave(peerId));
  }

  get acceptedCount() {
    let n = 0;
    for (const st of this._peers.values()) if (st.state === 'accepted') n++;
    return n;
  }

  /** One row per peer known at the room level: { peerId, state, reason, side, rankIds, ageMs, ... }. */
  peers() {
    const t = Date.now();
    return [...this._peers.values()].map((st) => ({
      peerId: st.peerId,
      short: shortId(st.peerId),
      state: st.state,
      reason: st.reason,
      side: st.side,
      remoteReason: st.remoteReason,
      remote: st.remoteHello,
      rankIds: [...st.rankIds],
      ageMs: t - st.joinedAt,
      handshakeMs: st.acceptedAt ? st.acceptedAt - st.joinedAt : null,
      queued: st.queued,
    }));
  }

  /** True when rank `rankId` was seen (as a header's `from`) from a peer that is accepted now. */
  hasRank(rankId) {
    const peerId = this._rankToPeer.get(rankId);
    return Boolean(peerId && this._peers.get(peerId)?.state === 'accepted');
  }

  onRaw(fn) {
    this._raw.add(fn);
    return () => this._raw.delete(fn);
  }

  /**
   * Connections of this peer (see the top of the file): held = the
   * RTCPeerConnections Trystero holds for the room (every other peer),
   * accepted = those past the handshake, unicastPeers = those that got a
   * buffer addressed to one rank (a tree step's params and partials, a
   * newcomer's sync), unicast = how many each.
   */
  connections() {
    const unicast = {};
    for (const [id, c] of Object.entries(this.stats.peers)) if (c.unicast > 0 && this._peers.get(id)?.state === 'accepted') unicast[id] = c.unicast;
    return { held: this._room.peers().size, accepted: this.acceptedCount, unicastPeers: Object.keys(unicast).length, unicast };
  }

  /** The ids of the peers past the handshake. */
  acceptedPeers() {
    const out = [];
    for (const st of this._peers.values()) if (st.state === 'accepted') out.push(st.peerId);
    return out;
  }

  /** The RTCPeerConnection Trystero holds for peerId in this room (null: none, or an API that gives ids only). */
  connectionOf(peerId) {
    return this._room.peers().get(peerId) ?? null;
  }

  /** buf to those of peerIds that are accepted (in order per peer, as sendRaw); returns how many. */
  sendToPeers(buf, peerIds) {
    if (this.closed) return 0;
    if (!(buf instanceof ArrayBuffer) && !ArrayBuffer.isView(buf)) {
      this.stats.dropped.malformed++;
      return 0;
    }
    let n = 0;
    for (const id of peerIds) {
      const st = this._peers.get(id);
      if (st?.state !== 'accepted') continue;
      const c = this._counters(id);
      c.sent++;
      c.bytesOut += buf.byteLength;
      this.stats.sent++;
      this.stats.bytesOut += buf.byteLength;
      this._enqueue(st, buf);
      n++;
    }
    return n;
  }

  sendRaw(buf) {
    if (this.closed) return false;
    if (!(buf instanceof ArrayBuffer) && !ArrayBuffer.isView(buf)) {
      this.stats.dropped.malformed++;
      return false;
    }
    const accepted = [];
    for (const st of this._peers.values()) if (st.state === 'accepted') accepted.push(st.peerId);
    if (!accepted.length) {
      this.stats.dropped.noPeers++;
      return false;
    }
    let targets = accepted;
    let unicast = false;
    const to = peekHeader(buf)?.to;
    if (typeof to === 'string') {
      const peerId = this._rankToPeer.get(to);
      if (peerId && this._peers.get(peerId)?.state === 'accepted') {
        targets = [peerId];
        unicast = true;
      }
    }
    const n = buf.byteLength;
    for (const id of targets) {
      const c = this._counters(id);
      if (unicast) c.unicast++;
      c.sent++;
      c.bytesOut += n;
      this.stats.sent++;
      this.stats.bytesOut += n;
      this._enqueue(this._peers.get(id), buf);
    }
    return true;
  }

  /**
   * Trystero splits a buffer into 16 KiB chunks and reassembles it on the
   * other side, so a buffer of any size is one message; but concurrent sends
   * interleave their chunks (each waits for bufferedAmount to drain), so a
   * small buffer could overtake a large one. One queue per peer keeps each
   * peer's buffers in order (as a BroadcastChannel does) without a slow peer
   * holding up the others. A queued buffer must not change after sendRaw.
   */
  _enqueue(st, buf) {
    const go = () => (st.state === 'accepted' && !this.closed && this._peers.get(st.peerId) === st ? this._wire.send(buf, [st.peerId]) : null);
    let sending;
    if (st.queued === 0) {
      try {
        sending = Promise.resolve(go()); // idle: Trystero copies the bytes right now
      } catch (err) {
        sending = Promise.reject(err);
      }
    } else {
      sending = st.queue.then(go);
    }
    st.queued++;
    st.queue = sending.catch(() => { this.stats.dropped.sendErrors++; }).finally(() => { st.queued--; });
  }

  async diagnostics() {
    const pcs = this._room.peers();
    const t = Date.now();
    const peers = [];
    for (const st of this._peers.values()) {
      const pc = pcs.get(st.peerId) ?? null;
      let ice = null;
      if (pc) {
        try {
          ice = await peerIceStats(pc);
        } catch (err) {
          ice = { error: String(err?.message ?? err) };
        }
      }
      peers.push({
        peerId: st.peerId,
        short: shortId(st.peerId),
        handshake: { state: st.state, localOk: st.localOk, remoteOk: st.remoteOk, reason: st.reason, side: st.side, remoteReason: st.remoteReason },
        remote: st.remoteHello,
        rankIds: [...st.rankIds],
        ageMs: t - st.joinedAt,
        stats: { ...this._counters(st.peerId) },
        queued: st.queued, // buffers handed to sendRaw that Trystero has not finished sending
        connectionState: ice?.connectionState ?? null,
        iceConnectionState: ice?.iceConnectionState ?? null,
        selectedPair: ice?.selectedPair ?? null,
        localCandidates: ice?.localCandidates ?? null,
        remoteCandidates: ice?.remoteCandidates ?? null,
        bytesSent: ice?.bytesSent ?? null,
        bytesReceived: ice?.bytesReceived ?? null,
        iceError: ice?.error ?? null,
      });
    }
    const connectedPcs = new Set(pcs.values());
    const attempts = this._tracker ? this._tracker.records().filter((r) => !connectedPcs.has(r.pc) && r.remoteSetAt && !r.closedAt)
      .map(this._tracker.snapshot) : [];
    const d = { selfId: this.selfId, roomId: this.roomId, at: t, accepted: this.acceptedCount, peers, attempts, preflight: this.preflight };
    this._emit('diagnostics', d);
    return d;
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    for (const st of this._peers.values()) this._stopTimers(st);
    this._raw.clear();
    try {
      await this._room.leave();
    } catch {
      // leaving anyway
    }
  }

  // ---- internals ----

  _emit(type, detail) {
    if (this.closed && type !== 'diagnostics') return;
    this.dispatchEvent(new CustomEvent(type, { detail }));
    try {
      this._onEvent?.(type, detail);
    } catch {
      this.stats.dropped.handlerErrors++;
    }
  }

  _counters(peerId) {
    return (this.stats.peers[peerId] ??= emptyCounters());
  }

  _send(action, data, targets) {
    try {
      Promise.resolve(action.send(data, targets)).catch(() => this.stats.dropped.sendErrors++);
    } catch {
      this.stats.dropped.sendErrors++;
    }
  }

  _stopTimers(st) {
    clearTimeout(st.timer);
    clearInterval(st.retry);
    st.timer = st.retry = null;
  }

  _state(peerId, state) {
    const st = {
      peerId, state, joinedAt: Date.now(), acceptedAt: 0, localOk: false, remoteOk: false,
      remoteHello: null, reason: null, side: null, remoteReason: null, rankIds: new Set(), timer: null, retry: null,
      queue: Promise.resolve(), queued: 0,
    };
    this._peers.set(peerId, st);
    return st;
  }

  _join(peerId) {
    if (this.closed || typeof peerId !== 'string') return null;
    const known = this._peers.get(peerId);
    if (known) {
      if (known.state === 'abandoned') this._handshake(known); // Trystero connected it again: a new try
      return known;
    }
    const st = this._state(peerId, 'handshake');
    this._emit('peer-join', { peerId });
    this._handshake(st);
    return st;
  }

  /**
   * (Re)starts st's handshake: our hello now and every helloRetryMs, the
   * timeout after handshakeTimeoutMs. A failed try is not final: an
   * abandoned peer is tried again when it says hello or Trystero joins it
   * again (a tab that was busy or throttled, a connection that came back).
   */
  _handshake(st) {
    this._stopTimers(st);
    Object.assign(st, { state: 'handshake', localOk: false, remoteOk: false, remoteHello: null, reason: null });
    this._send(this._hs, { ...this.hello }, [st.peerId]);
    st.timer = setTimeout(() => this._timeout(st), this.handshakeTimeoutMs);
    this._helloEvery(st, this.helloRetryMs);
  }

  /** Our hello to st's peer every ms while st stays in the state it is in now. */
  _helloEvery(st, ms) {
    const state = st.state;
    st.retry = setInterval(() => {
      if (st.state === state && this._peers.get(st.peerId) === st) this._send(this._hs, { ...this.hello }, [st.peerId]);
    }, ms);
  }

  _leave(peerId) {
    const st = this._peers.get(peerId);
    if (!st) return;
    this._stopTimers(st);
    this._forgetRanks(st);
    this._peers.delete(peerId);
    this._emit('peer-leave', { peerId, state: st.state });
  }

  _forgetRanks(st) {
    for (const r of st.rankIds) if (this._rankToPeer.get(r) === st.peerId) this._rankToPeer.delete(r);
    st.rankIds.clear();
  }

  _onHandshake(data, peerId) {
    if (this.closed) return;
    if (!data || typeof data !== 'object' || typeof data.t !== 'string') {
      this.stats.dropped.malformed++;
      return;
    }
    const st = this._peers.get(peerId) ?? this._join(peerId); // a hello may beat onPeerJoin
    if (!st) return;
    if (st.state === 'abandoned') {
      if (data.t !== 'hello') return;
      this._handshake(st); // it answers after all: try again
    }
    if (data.t === 'hello') {
      if (st.state === 'refused') {
        if (st.side === 'local') this._send(this._hs, { t: 'refuse', reason: st.reason }, [peerId]);
        return;
      }
      const why = helloMismatch(this.hello, data, this.selfId, peerId);
      if (why) {
        this._send(this._hs, { t: 'refuse', reason: why }, [peerId]);
        this._refuse(st, why, 'local');
        return;
      }
      st.remoteHello = { mesh: data.mesh, protocol: data.protocol, app: data.app, slug: data.slug, paramCount: data.paramCount };
      st.localOk = true;
      this._send(this._hs, { t: 'accept' }, [peerId]);
      this._maybeAccept(st);
    } else if (data.t === 'accept') {
      st.remoteOk = true;
      this._maybeAccept(st);
    } else if (data.t === 'refuse') {
      const reason = String(data.reason ?? 'refused').slice(0, 500);
      if (st.state === 'refused') st.remoteReason ??= reason;
      else this._refuse(st, reason, 'remote');
    } else {
      this.stats.dropped.malformed++;
    }
  }

  _maybeAccept(st) {
    if (st.state !== 'handshake' || !st.localOk || !st.remoteOk) return;
    st.state = 'accepted';
    st.acceptedAt = Date.now();
    this._stopTimers(st);
    this._reported.delete(st.peerId); // a failure after this one is reported again
    this._emit('peer-accepted', { peerId: st.peerId, remote: st.remoteHello, ms: st.acceptedAt - st.joinedAt });
  }

  _refuse(st, reason, side) {
    if (st.state === 'refused') return;
    st.state = 'refused';
    st.reason = reason;
    st.side = side;
    if (side === 'remote') st.remoteReason = reason;
    this._stopTimers(st);
    this._forgetRanks(st);
    if (this._refusedReported.has(st.peerId)) return;
    this._refusedReported.add(st.peerId);
    this._emit('peer-refused', { peerId: st.peerId, reason, side });
  }

  /**
   * No handshake in time: abandoned (reported once) until it says hello
   * again, and our hello goes on every ABANDONED_HELLO_RETRIES retry periods
   * (both sides may have given up); no refusal, which would be final.
   */
  _timeout(st) {
    if (st.state !== 'handshake' || this._peers.get(st.peerId) !== st) return;
    st.state = 'abandoned';
    this._stopTimers(st);
    this._helloEvery(st, this.helloRetryMs * ABANDONED_HELLO_RETRIES);
    const s = duration(this.handshakeTimeoutMs);
    st.reason = `no handshake within ${s}`;
    this._fail(st.peerId, `it joined but finished no handshake within ${s}: gone, or a background tab too throttled to answer`, null, null);
  }

  _onJoinError(e) {
    if (this.closed) return;
    const peerId = typeof e?.peerId === 'string' ? e.peerId : null;
    const error = String(e?.error ?? e ?? 'join error');
    if (!peerId) return;
    // A wrong password shows when an offer or answer does not decrypt: final. Trystero's password check
    // on a connection shared with another room of this page ('overlapping room') also fails when its
    // messages cross a reconnection; every room of a page has one password, so that one is a failed try.
    if (/password/i.test(error) && !/overlapping/i.test(error)) {
      const st = this._peers.get(peerId) ?? this._state(peerId, 'handshake');
      this._refuse(st, `wrong room password: peer ${shortId(peerId)} uses another password for this room`, 'local');
      return;
    }
    const st = this._peers.get(peerId);
    if (st?.state === 'handshake') {
      st.state = 'abandoned';
      this._stopTimers(st);
    }
    const attempt = this._tracker?.unconnected()[0] ?? null;
    const diagnosis = classifyIce({ preflight: this.preflight, peer: attempt, iceServers: this.rtcConfig.iceServers });
    const why = /handshake|overlapping/i.test(error) ? error.replace(/^Trystero: /, '') : 'ICE never connected';
    this._fail(peerId, why, diagnosis, error);
  }

  _fail(peerId, why, diagnosis, error) {
    if (this._reported.has(peerId)) return;
    this._reported.add(peerId);
    const message = failureMessage({ peerId, connected: this.acceptedCount, why, diagnosis });
    this._emit('peer-failed', { peerId, message, case: diagnosis?.case ?? null, error });
  }

  _onWire(data, peerId) {
    if (this.closed) return;
    const st = this._peers.get(peerId);
    if (!st || st.state !== 'accepted') {
      this.stats.dropped.unaccepted++;
      return;
    }
    const buf = toArrayBuffer(data);
    if (!buf) {
      this.stats.dropped.malformed++;
      return;
    }
    const c = this._counters(peerId);
    c.received++;
    c.bytesIn += buf.byteLength;
    this.stats.received++;
    this.stats.bytesIn += buf.byteLength;
    const checked = this._verifier.check(buf); // started now, handled in arrival order
    this._chain = this._chain.then(() => checked).then((r) => {
      if (this.closed) return;
      if (!r.ok) {
        if (r.code === 'duplicate') this.stats.dropped.duplicates++;
        else this.stats.dropped.unverified++;
        return;
      }
      this._learnRank(r.header, st, peerId);
      const handlers = [...this._raw];
      handlers.forEach((fn, i) => {
        try {
          fn(i === handlers.length - 1 ? buf : markCopy(buf.slice(0), r.header), peerId); // the last may transfer it
        } catch {
          this.stats.dropped.handlerErrors++;
        }
      });
    });
  }

  /**
   * Unicast routing: rank `from` is reached through the peer that brought its
   * first verified buffer (a copy of a buffer met before teaches nothing, so
   * a peer replaying someone's signed buffers cannot draw its traffic); the
   * route moves only when that peer left or brought nothing from the rank
   * for ROUTE_STALE_MS.
   */
  _learnRank(h, st, peerId) {
    const from = h.from;
    const first = this._seen.first(h);
    const now = Date.now();
    const cur = this._rankToPeer.get(from);
    if (cur === peerId) {
      if (first) this._routeSeen.set(from, now);
      return;
    }
    const curLive = cur !== undefined && this._peers.get(cur)?.state === 'accepted' && now - (this._routeSeen.get(from) ?? 0) < ROUTE_STALE_MS;
    if (!first || curLive || st.state !== 'accepted') return;
    this._peers.get(cur)?.rankIds.delete(from);
    this._rankToPeer.set(from, peerId);
    this._routeSeen.set(from, now);
    st.rankIds.add(from);
    if (st.rankIds.size > MAX_RANKS_PER_PEER) {
      const oldest = st.rankIds.values().next().value;
      st.rankIds.delete(oldest);
      if (this._rankToPeer.get(oldest) === peerId) this._rankToPeer.delete(oldest);
    }
  }
}

/** The page's ICE preflight with this tab's configuration (see ice.js icePreflight). */
export function preflightFor(rtcConfig, opts = {}) {
  return icePreflight({ iceServers: rtcConfig.iceServers, iceTransportPolicy: rtcConfig.iceTransportPolicy ?? 'all', ...opts });
}
