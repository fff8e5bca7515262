// policy.js - how the cluster's timing and quorum adapt to the number of live
// ranks, and which of two leadership claims wins. Pure functions, shared by
// protocol.js and the UI (which shows the policy in effect).

export const DEFAULT_POLICY = Object.freeze({
  heartbeatMs: 250, // period for a cohort of up to heartbeatRefPeers
  heartbeatRefPeers: 4,
  maxHeartbeatMs: 2000,
  dropBeats: 4, // a peer silent this many periods leaves the roster
  takeoverBeats: 3, // the leader silent this many periods is replaced
  collectMs: 1500, // longest a step waits for its quorum
  quorumFraction: 0.6,
  unanimousUpTo: 3,
});

/**
 * Timing and quorum for a cohort of n live ranks:
 *   quorum       buckets a step waits for: n up to 3 ranks, ceil(0.6 n) beyond
 *   heartbeatMs  beat period, stretched by sqrt(n / 4) (mesh beat traffic then
 *                grows as n^1.5 instead of n^2), capped at maxHeartbeatMs
 *   dropMs       silence after which a peer leaves the roster
 *   takeoverMs   leader silence after which a new leader is elected
 *   collectMs    deadline of one step; at it the step resolves with whatever
 *                arrived (never less than two beats)
 */
export function policyFor(n, overrides = {}) {
  const p = { ...DEFAULT_POLICY, ...overrides };
  const peers = Math.max(1, Math.floor(Number(n)) || 1);
  const quorum = peers <= p.unanimousUpTo ? peers : Math.min(peers, Math.ceil(p.quorumFraction * peers - 1e-9));
  const stretch = Math.max(1, Math.sqrt(peers / p.heartbeatRefPeers));
  const heartbeatMs = Math.round(Math.min(p.maxHeartbeatMs, p.heartbeatMs * stretch));
  return {
    peers,
    quorum,
    heartbeatMs,
    dropMs: p.dropBeats * heartbeatMs,
    takeoverMs: p.takeoverBeats * heartbeatMs,
    collectMs: Math.max(p.collectMs, 2 * heartbeatMs),
  };
}

/** a beats b when its term is higher, or equal with the lower id. */
export function claimBeats(a, b) {
  return a.term > b.term || (a.term === b.term && a.id < b.id);
}
