// ice.js - what ICE gathered and chose, for the cluster page's mesh
// diagnostics (page side, main thread: RTCPeerConnection does not exist in a
// Worker, and nothing here may be imported into one to open connections).
//
//   await icePreflight({ iceServers, iceTransportPolicy, timeoutMs = 5000, RTCPeerConnectionImpl })
//     a throwaway RTCPeerConnection with one data channel: createOffer,
//     setLocalDescription, collect icecandidate events until gathering
//     completes or timeoutMs, read the SDP's a=candidate lines too, close it.
//     -> { host, srflx, relay, prflx        counts of distinct local candidates by type
//          reflexive: [addresses]           distinct srflx addresses (your public IP!)
//          relayed: [addresses]             distinct relay addresses
//          candidates: [parseCandidate()]   every distinct candidate
//          errors: [{ url, errorCode, errorText, address, port }]  icecandidateerror events
//          servers: { stun, turn }          URLs configured, by kind
//          complete                         gathering finished (false: timed out)
//          ms }
//   parseCandidate(line) -> { foundation, component, protocol, priority, address,
//     port, type, relatedAddress, relatedPort, tcpType } | null   ('candidate:...' or 'a=candidate:...')
//   candidatesFromSdp(sdp) -> [parsed]     the a=candidate lines of an SDP
//   countTypes(candidates) -> { host, srflx, relay, prflx, total }
//   await peerIceStats(pc) -> { connectionState, iceConnectionState, iceGatheringState,
//     signalingState, selectedPair: { local, remote, state, rttMs, bytesSent, bytesReceived } | null
//     (local/remote: { candidateType, protocol, address, port, relayProtocol }),
//     localCandidates, remoteCandidates (countTypes of getStats' candidates), bytesSent, bytesReceived }
//   trackPeerConnections(Base) -> { Impl, records(), recent(ms) }   Impl is a subclass of
//     Base (Trystero's rtcPolyfill) that counts, synchronously, the local candidates each
//     connection gathered and the remote ones it was given (addIceCandidate + remote SDP), so
//     an attempt that never connected can still be diagnosed after Trystero drops it.
//   classifyIce({ preflight, peer, iceServers }) -> { case, message, needsTurn }   the four causes of
//     "could not connect" (see the function), or 'connected' / 'unknown'.
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const TYPES = ['host', 'srflx', 'relay', 'prflx'];

function now() {
  return globalThis.performance?.now?.() ?? Date.now();
}

/** Throws in a Worker: the mesh is the page's job. */
export function assertNotWorker(what = 'WebRTC') {
  if (typeof globalThis.WorkerGlobalScope === 'function' && globalThis instanceof globalThis.WorkerGlobalScope) {
    throw new RlxError(STATUS.UNSUPPORTED, `${what} runs on the page (main thread): RTCPeerConnection does not exist in a Worker`);
  }
}

export function parseCandidate(line) {
  if (typeof line !== 'string') return null;
  const text = line.trim().replace(/^a=/, '').replace(/^candidate:/, '');
  const f = text.split(/\s+/);
  if (f.length < 8 || f[6] !== 'typ') return null;
  const c = {
    foundation: f[0],
    component: Number(f[1]),
    protocol: f[2].toLowerCase(),
    priority: Number(f[3]),
    address: f[4],
    port: Number(f[5]),
    type: f[7],
    relatedAddress: null,
    relatedPort: null,
    tcpType: null,
  };
  for (let i = 8; i + 1 < f.length; i += 2) {
    if (f[i] === 'raddr') c.relatedAddress = f[i + 1];
    else if (f[i] === 'rport') c.relatedPort = Number(f[i + 1]);
    else if (f[i] === 'tcptype') c.tcpType = f[i + 1];
  }
  return c;
}

export function candidatesFromSdp(sdp) {
  if (typeof sdp !== 'string') return [];
  return sdp.split(/\r?\n/).filter((l) => l.startsWith('a=candidate:')).map(parseCandidate).filter(Boolean);
}

export function countTypes(candidates) {
  const out = { host: 0, srflx: 0, relay: 0, prflx: 0, total: 0 };
  for (const c of candidates) {
    const t = c?.candidateType ?? c?.type; // getStats candidates: candidateType; parsed ones: type
    if (TYPES.includes(t)) out[t]++;
    out.total++;
  }
  return out;
}

const keyOf = (c) => `${c.protocol} ${c.address} ${c.port} ${c.type}`;

function countServers(iceServers = []) {
  const out = { stun: 0, turn: 0 };
  for (const s of iceServers) {
    for (const u of [].concat(s?.urls ?? [])) {
      if (/^stuns?:/i.test(u)) out.stun++;
      else if (/^turns?:/i.test(u)) out.turn++;
    }
  }
  return out;
}

export async function icePreflight({ iceServers = [], iceTransportPolicy = 'all', timeoutMs = 5000,
  RTCPeerConnectionImpl = globalThis.RTCPeerConnection } = {}) {
  assertNotWorker('the ICE preflight');
  if (typeof RTCPeerConnectionImpl !== 'function') throw new RlxError(STATUS.UNSUPPORTED, 'RTCPeerConnection is not available in this browser');
  const t0 = now();
  const seen = new Map();
  const errors = [];
  let complete = false;
  let timer = null;
  const add = (line) => {
    const c = parseCandidate(line);
    if (c && !seen.has(keyOf(c))) seen.set(keyOf(c), c);
  };
  const pc = new RTCPeerConnectionImpl({ iceServers, iceTransportPolicy });
  try {
    const done = new Promise((resolve) => {
      const finish = () => {
        complete = true;
        resolve();
      };
      pc.addEventListener('icecandidate', (ev) => (ev.candidate ? ev.candidate.candidate && add(ev.candidate.candidate) : finish()));
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && finish());
      pc.addEventListener('icecandidateerror', (ev) => errors.push({
        url: ev.url ?? null, errorCode: ev.errorCode ?? null, errorText: ev.errorText ?? '', address: ev.address ?? null, port: ev.port ?? null,
      }));
      timer = setTimeout(resolve, timeoutMs);
    });
    pc.createDataChannel('preflight');
    await pc.setLocalDescription(await pc.createOffer());
    await done;
    for (const c of candidatesFromSdp(pc.localDescription?.sdp)) if (!seen.has(keyOf(c))) seen.set(keyOf(c), c);
  } finally {
    clearTimeout(timer);
    pc.close();
  }
  const candidates = [...seen.values()];
  const counts = countTypes(candidates);
  const addresses = (type) => [...new Set(candidates.filter((c) => c.type === type).map((c) => c.address))];
  return {
    host: counts.host,
    srflx: counts.srflx,
    relay: counts.relay,
    prflx: counts.prflx,
    reflexive: addresses('srflx'),
    relayed: addresses('relay'),
    candidates,
    errors,
    servers: countServers(iceServers),
    complete,
    ms: Math.round(now() - t0),
  };
}

function candidateOf(s) {
  if (!s) return null;
  return {
    candidateType: s.candidateType ?? null,
    protocol: s.protocol ?? null,
    address: s.address ?? s.ip ?? null,
    port: s.port ?? null,
    relayProtocol: s.relayProtocol ?? null,
  };
}

export async function peerIceStats(pc) {
  const report = await pc.getStats();
  const all = [];
  report.forEach((s) => all.push(s));
  const byId = new Map(all.map((s) => [s.id, s]));
  let pair = null;
  for (const s of all) if (s.type === 'transport' && s.selectedCandidatePairId) pair = byId.get(s.selectedCandidatePairId) ?? pair;
  if (!pair) pair = all.find((s) => s.type === 'candidate-pair' && (s.selected || (s.nominated && s.state === 'succeeded'))) ?? null;
  const transport = all.find((s) => s.type === 'transport');
  const local = all.filter((s) => s.type === 'local-candidate');
  const remote = all.filter((s) => s.type === 'remote-candidate');
  return {
    connectionState: pc.connectionState ?? null,
    iceConnectionState: pc.iceConnectionState ?? null,
    iceGatheringState: pc.iceGatheringState ?? null,
    signalingState: pc.signalingState ?? null,
    selectedPair: pair ? {
      local: candidateOf(byId.get(pair.localCandidateId)),
      remote: candidateOf(byId.get(pair.remoteCandidateId)),
      state: pair.state ?? null,
      rttMs: Number.isFinite(pair.currentRoundTripTime) ? Math.round(pair.currentRoundTripTime * 1000) : null,
      bytesSent: pair.bytesSent ?? null,
      bytesReceived: pair.bytesReceived ?? null,
    } : null,
    localCandidates: countTypes(local),
    remoteCandidates: countTypes(remote),
    bytesSent: transport?.bytesSent ?? pair?.bytesSent ?? null,
    bytesReceived: transport?.bytesReceived ?? pair?.bytesReceived ?? null,
  };
}

function bump(rec, side, line) {
  const c = parseCandidate(line);
  if (!c) return;
  const key = keyOf(c);
  if (rec.keys[side].has(key)) return;
  rec.keys[side].add(key);
  rec[side][c.type] = (rec[side][c.type] ?? 0) + 1;
  rec[side].total++;
}

export function trackPeerConnections(Base, { keepClosedMs = 120000 } = {}) {
  if (typeof Base !== 'function') throw new RlxError(STATUS.INVALID_ARG, 'trackPeerConnections needs an RTCPeerConnection constructor');
  const records = new Set();
  const prune = () => {
    const t = Date.now();
    for (const r of records) if (r.closedAt && t - r.closedAt > keepClosedMs) records.delete(r);
  };
  const zero = () => ({ host: 0, srflx: 0, relay: 0, prflx: 0, total: 0 });
  class TrackedRTCPeerConnection extends Base {
    constructor(config, ...rest) {
      super(config, ...rest);
      prune();
      const rec = {
        pc: this, created: Date.now(), local: zero(), remote: zero(), keys: { local: new Set(), remote: new Set() },
        remoteSetAt: 0, connected: false, closedAt: 0,
      };
      this._rlxRecord = rec;
      records.add(rec);
      this.addEventListener('icecandidate', (ev) => ev.candidate?.candidate && bump(rec, 'local', ev.candidate.candidate));
      this.addEventListener('connectionstatechange', () => {
        if (this.connectionState === 'connected') rec.connected = true;
        if (this.connectionState === 'closed' && !rec.closedAt) rec.closedAt = Date.now();
      });
    }

    addIceCandidate(candidate, ...rest) {
      const line = typeof candidate === 'string' ? candidate : candidate?.candidate;
      if (line) bump(this._rlxRecord, 'remote', line);
      return super.addIceCandidate(candidate, ...rest);
    }

    setRemoteDescription(desc, ...rest) {
      const rec = this._rlxRecord;
      if (desc?.sdp) {
        rec.remoteSetAt = Date.now();
        for (const line of desc.sdp.split(/\r?\n/)) if (line.startsWith('a=candidate:')) bump(rec, 'remote', line);
      }
      return super.setRemoteDescription(desc, ...rest);
    }

    close() {
      if (!this._rlxRecord.closedAt) this._rlxRecord.closedAt = Date.now();
      return super.close();
    }
  }
  const snapshot = (r) => ({
    ageMs: Date.now() - r.created,
    connectionState: r.pc.connectionState ?? null,
    iceConnectionState: r.pc.iceConnectionState ?? null,
    connected: r.connected,
    closed: Boolean(r.closedAt),
    remoteDescription: r.remoteSetAt > 0,
    localCandidates: { ...r.local },
    remoteCandidates: { ...r.remote },
  });
  return {
    Impl: TrackedRTCPeerConnection,
    /** Every tracked connection (the recently closed ones too), newest first. */
    records: () => {
      prune();
      return [...records].sort((a, b) => b.created - a.created);
    },
    snapshot,
    /** Attempts that got a remote description but never connected, latest answer first. */
    unconnected: () => [...records].filter((r) => r.remoteSetAt && !r.connected).sort((a, b) => b.remoteSetAt - a.remoteSetAt).map(snapshot),
  };
}

const pluralCands = (n) => `${n} candidate${n === 1 ? '' : 's'}`;

/**
 * The cause of a peer that does not connect, from what was gathered:
 *   preflight: icePreflight() of this tab (or null); iceServers: this tab's configuration
 *   (tells whether STUN is configured when there is no preflight); peer: { connected, selectedPair,
 *   localCandidates, remoteCandidates } (countTypes shapes; peerIceStats or an attempt
 *   snapshot of trackPeerConnections). Cases, checked in this order:
 *   'connected'         a pair was selected / the connection is up
 *   'peer-gone'         no remote candidate ever arrived: the peer closed without leaving, or is
 *                       a background tab throttled too hard to finish ICE; nothing to fix
 *   'no-stun'           this side gathered host candidates only and has no STUN server
 *   'stun-unreachable'  STUN is configured but no srflx came back: UDP blocked; off-network
 *                       peers are unreachable from here
 *   'symmetric-nat'     srflx on both sides, still no pair: no direct path exists
 *   'unknown'           none of these (say what was seen)
 */
export function classifyIce({ preflight = null, peer = null, iceServers = null } = {}) {
  const local = peer?.localCandidates ?? null;
  const remote = peer?.remoteCandidates ?? null;
  if (peer && (peer.connected || peer.selectedPair || peer.connectionState === 'connected')) {
    return { case: 'connected', message: 'connected', needsTurn: false };
  }
  if (remote && remote.total === 0) {
    return {
      case: 'peer-gone',
      message: 'the peer sent no ICE candidates: it is gone (a tab closed without leaving stays advertised on the relays) ' +
        'or suspended (a background tab too throttled to finish ICE); nothing to fix here',
      needsTurn: false,
    };
  }
  const srflxHere = Math.max(preflight?.srflx ?? 0, local?.srflx ?? 0);
  const hostHere = Math.max(preflight?.host ?? 0, local?.host ?? 0);
  const stunConfigured = preflight?.servers ? preflight.servers.stun > 0 : iceServers ? countServers(iceServers).stun > 0 : null;
  if (srflxHere === 0 && (preflight?.relay ?? 0) === 0 && (local?.relay ?? 0) === 0 && hostHere > 0 && stunConfigured === false) {
    return {
      case: 'no-stun',
      message: `this tab gathered host candidates only (its LAN addresses) and has no STUN server, so peers on other networks cannot reach it`,
      needsTurn: false,
    };
  }
  if (preflight && stunConfigured && preflight.srflx === 0 && srflxHere === 0) {
    return {
      case: 'stun-unreachable',
      message: 'STUN is configured but unreachable (no srflx candidate: UDP is probably blocked), ' +
        'so this tab cannot be reached from another network',
      needsTurn: true,
    };
  }
  if (srflxHere > 0 && (remote?.srflx ?? 0) > 0) {
    return {
      case: 'symmetric-nat',
      message: 'both sides have public (srflx) addresses but no candidate pair connects: symmetric NAT at both ends, no direct path exists',
      needsTurn: true,
    };
  }
  const seen = [
    preflight ? `preflight host ${preflight.host}, srflx ${preflight.srflx}, relay ${preflight.relay}` : null,
    local ? `gathered ${pluralCands(local.total)}` : null,
    remote ? `received ${pluralCands(remote.total)} (srflx ${remote.srflx}, relay ${remote.relay})` : null,
  ].filter(Boolean).join('; ');
  return { case: 'unknown', message: `ICE did not complete${seen ? ` (${seen})` : ''}`, needsTurn: false };
}
