// policy.js - how the cluster's timing and quorum adapt to the number of live
// ranks, which topology a step's data path takes (topologyFor), which of
// two leadership claims wins, and the bounds a rank holds every sender to
// (BOUNDS, enforced by rules.js). Pure functions, shared by protocol.js and
// the UI (which shows the policy in effect).

export const DEFAULT_POLICY = Object.freeze({
  heartbeatMs: 250, // period for a cohort of up to heartbeatRefPeers
  heartbeatRefPeers: 4,
  maxHeartbeatMs: 2000,
  dropBeats: 4, // a peer silent this many periods leaves the roster
  takeoverBeats: 3, // the leader silent this many periods is replaced
  collectMs: 1500, // longest a step waits for its quorum
  quorumFraction: 0.6,
  unanimousUpTo: 3,
  // The step's data path: a star (the leader sends the params to every rank
  // and gets every bucket) up to treeAbove ranks, a fanout-ary aggregation
  // tree above (tree.js). treeAbove 0 forces the tree, Infinity the star.
  treeAbove: 16,
  fanout: 4,
  // The WebRTC room's connections (partial_mesh.js): a full mesh (every peer
  // connected to every other, Trystero's way) up to meshAbove peers, a
  // partial mesh above (the tree's links and a ring: at most fanout + 3
  // connections per peer, overlay.js). 0 forces the partial mesh.
  meshAbove: 16,
});

/**
 * What a rank accepts from any sender (rules.js): a message breaking one is
 * dropped and its sender struck; ruleStrikes strikes exclude it.
 *   termJump       a message's term may exceed the highest term this rank
 *                  holds by at most this (elections raise it by one; a
 *                  healed partition by a few); a rank not yet synchronised
 *                  with any leader takes the first leader's term
 *   maxVersion     largest parameter version a heartbeat may announce (a
 *                  takeover continues from it: headroom to 2^53 stays)
 *   maxPeers       peers a rank keeps; beyond it the longest silent goes
 *   controlBurst   heartbeats, need and bye of one sender: a burst of this many,
 *   controlPerBeat then this many per heartbeat period
 *   maxBusyMs      longest compute a heartbeat may announce (busyMs: a rank
 *                  about to block its thread on a long gradient, election.js)
 * Heartbeat periods (hbMs) lie in [1, hbMaxMs(overrides)]: the policy's own
 * largest period; bucket samples in [0, the largest batch x local steps
 * (settings.js LIMITS, SCALE_LIMITS) x the ranks a partial covers].
 */
export const BOUNDS = Object.freeze({
  termJump: 8,
  maxVersion: 2 ** 50,
  maxPeers: 4096,
  controlBurst: 32,
  controlPerBeat: 4,
  ruleStrikes: 8,
  maxBusyMs: 600000,
});

/** The longest heartbeat period a peer may announce under these overrides. */
export function hbMaxMs(overrides = {}) {
  return Math.max(DEFAULT_POLICY.maxHeartbeatMs, Number(overrides.maxHeartbeatMs) || 0, Number(overrides.heartbeatMs) || 0);
}

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

/**
 * The data path of a step among n ranks: { topology: 'star' | 'tree', fanout,
 * treeAbove }. The star costs the leader n - 1 params messages a step and
 * nothing else; the tree costs every rank at most fanout + 1 messages, but
 * a step crosses 2 * depth links instead of 2. bench/cluster_scale.mjs
 * measures both on simulated 100 Mbit/s links: in buckets per second the
 * tree (every bucket) is ahead of the star (the 60% quorum) from 10 ranks
 * on, in steps per second only past 100, and at 1,000 the star's leader
 * cannot send its copies within a step; on one browser's BroadcastChannel
 * (one post reaches every tab) the star costs the leader one post whatever
 * n is. The default of 16 keeps the tabs of a browser a star.
 */
export function topologyFor(n, overrides = {}) {
  const p = { ...DEFAULT_POLICY, ...overrides };
  const peers = Math.max(1, Math.floor(Number(n)) || 1);
  const fanout = Math.max(1, Math.floor(Number(p.fanout)) || DEFAULT_POLICY.fanout);
  const treeAbove = Number.isNaN(Number(p.treeAbove)) ? DEFAULT_POLICY.treeAbove : Math.max(0, Number(p.treeAbove));
  return { topology: peers > 1 && peers > treeAbove ? 'tree' : 'star', fanout, treeAbove };
}

export const FANOUT_LIMITS = Object.freeze([1, 64]);

/**
 * cluster.html's ?tree= and ?fanout= as policy overrides: tree '1' forces
 * the tree (treeAbove 0), '0' the star (treeAbove Infinity), '' or 'auto'
 * keeps the threshold; fanout a whole number from 1 to 64. Returns
 * { overrides, errors } (errors: plain sentences, as settings.js words them).
 */
export function topologyOverrides({ tree = '', fanout = '' } = {}) {
  const overrides = {};
  const errors = [];
  const t = tree === null || tree === undefined ? '' : String(tree);
  if (t === '1') overrides.treeAbove = 0;
  else if (t === '0') overrides.treeAbove = Infinity;
  else if (t !== '' && t !== 'auto') errors.push(`tree: ${JSON.stringify(t.slice(0, 32))} is not 1 (always a tree), 0 (always a star) or auto`);
  const f = fanout === null || fanout === undefined ? '' : String(fanout);
  if (f !== '') {
    const v = Number(f);
    const [lo, hi] = FANOUT_LIMITS;
    if (!Number.isInteger(v) || v < lo || v > hi || f.trim() === '') errors.push(`fanout: ${JSON.stringify(f.slice(0, 32))} is not a whole number from ${lo} to ${hi}`);
    else overrides.fanout = v;
  }
  return { overrides, errors };
}

/**
 * The room's connections among n peers: { mesh: 'full' | 'partial', meshAbove }
 * (partial above meshAbove peers; meshAbove 0 forces it, Infinity never).
 */
export function meshFor(n, overrides = {}) {
  const p = { ...DEFAULT_POLICY, ...overrides };
  const peers = Math.max(1, Math.floor(Number(n)) || 1);
  const meshAbove = Number.isNaN(Number(p.meshAbove)) ? DEFAULT_POLICY.meshAbove : Math.max(0, Number(p.meshAbove));
  return { mesh: peers > meshAbove ? 'partial' : 'full', meshAbove };
}

/**
 * cluster.html's ?mesh= as a policy override: 'partial' forces the partial
 * mesh (meshAbove 0), 'full' keeps every connection (Infinity), '' or 'auto'
 * the threshold. Returns { overrides, errors }.
 */
export function meshOverrides({ mesh = '' } = {}) {
  const m = mesh === null || mesh === undefined ? '' : String(mesh);
  if (m === 'partial') return { overrides: { meshAbove: 0 }, errors: [] };
  if (m === 'full') return { overrides: { meshAbove: Infinity }, errors: [] };
  if (m === '' || m === 'auto') return { overrides: {}, errors: [] };
  return { overrides: {}, errors: [`mesh: ${JSON.stringify(m.slice(0, 32))} is not partial, full or auto`] };
}

/** a beats b when its term is higher, or equal with the lower id. */
export function claimBeats(a, b) {
  return a.term > b.term || (a.term === b.term && a.id < b.id);
}
