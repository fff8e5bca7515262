// scale_sim.js - the cluster at 10 to 1,000 ranks, in Node, on simulated
// time: the real protocol.js Rank (election, heartbeats, joining, quorum,
// version checks, the star or tree.js's aggregation tree) over simulated
// links, on one VirtualClock (clock.js), with churn. bench/cluster_scale.mjs
// prints the table; tests/node/cluster_scale.test.mjs runs it small.
//
// The links (SimNet) model what a WebRTC peer has: an uplink and a downlink
// of a given rate, one copy per recipient (a broadcast costs n - 1 copies, as
// mesh.js sends it), a one-way latency of (sender's access + receiver's
// access + jitter), and packet loss, which on a reliable data channel shows
// as a retransmission (the message arrives an RTO later), not as a lost
// message. Messages without a payload (heartbeats, need, bye, halt: a few
// hundred bytes) do not queue behind payloads: on a real data channel they
// would (one ordered channel per peer), so a leader whose uplink is
// backlogged with params (the star at 1,000 ranks) would also look silent and
// be taken over; the simulation leaves that out and so flatters the star.
// A message's size is its wire.js size: 4 + the JSON header
// (padded to 4) + 4 bytes a payload value. Deliveries due in one millisecond
// run together (one VirtualClock timer a millisecond), which keeps a
// 1,000-rank run, a million heartbeat deliveries a simulated second, within
// minutes. Rank ids are 36 characters long like the page's randomUUID()s,
// so headers (members, tree slices, partial ids) weigh what they would.
//
// runScale() runs one cohort through: boot (the founder, then everyone
// joining over a second), a steady window (steps/s, the leader's egress per
// step, the links each rank's data path used), churn (joins, silent
// departures, goodbyes, an inner rank - or, in a star, a follower - crashing
// in the middle of a step), a leader crash (time until the new leader
// resolves a step), and the end: every live rank holds the same parameter
// bytes, checked word by word. For the tree it also counts the connections
// each peer would hold in the partial mesh of a WebRTC room (meshCensus:
// overlay.js over the live ranks; the simulated links themselves carry
// heartbeats all-to-all, where partial_mesh.js floods them over the overlay).
import { VirtualClock } from './clock.js';
import { Rank } from './protocol.js';
import { rng, taskWeights } from './sim.js';
import { overlayEdges, connected } from './overlay.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

/**
 * The partial mesh (overlay.js) the live ranks would hold in a WebRTC room:
 * the most links a peer holds, their mean, how many of the data path's
 * peer pairs (dataPeers) are not links (a tree step over the overlay it was
 * laid out from uses links only), and whether the overlay stays one
 * component after each single death (checked for up to 200 ranks).
 */
export function meshCensus(ranks, leaderId, fanout) {
  const ids = ranks.map((r) => r.id);
  const edges = overlayEdges(ids, { leader: leaderId, fanout });
  let max = 0;
  let sum = 0;
  let offOverlay = 0;
  for (const r of ranks) {
    const nb = edges.get(r.id);
    max = Math.max(max, nb.size);
    sum += nb.size;
    for (const p of r.bus.stats.dataPeers) if (edges.has(p) && !nb.has(p)) offOverlay++;
  }
  const survives = ids.length > 200 ? null : ids.every((id) => connected(edges, id));
  return { maxLinks: max, meanLinks: sum / Math.max(1, ids.length), dataOffOverlay: offOverlay, survivesOneDeath: survives };
}

/** The links of the table in docs/cluster.md: 100 Mbit/s up and down, 5-25 ms access latency each way, 0.1% packet loss. */
export const DEFAULT_LINK = Object.freeze({ upMbps: 100, downMbps: 100, accessMs: [5, 25], jitterMs: 2, packetLoss: 0.001, mtu: 1200, rtoMs: 200 });

const HEADER_PAD = (n) => (n + 3) & ~3;

/** Bytes of msg on the wire (wire.js layout), without encoding it. */
export function wireBytes(msg) {
  const { payload, ...header } = msg;
  const json = JSON.stringify(header);
  return 4 + HEADER_PAD(json.length) + (payload ? payload.byteLength : 0);
}

const DATA_TYPES = new Set(['params', 'grad']);

/** Per-endpoint counters: messages and bytes out/in, by type, and the peers the data path used. */
function emptyStats() {
  return { sent: 0, received: 0, bytesOut: 0, bytesIn: 0, dataOut: 0, byType: {}, dataPeers: new Set() };
}

/** Simulated WebRTC-like links between endpoints (a bus.js bus each). */
export class SimNet {
  constructor({ clock, link = DEFAULT_LINK, seed = 1 } = {}) {
    this.clock = clock;
    this.link = { ...DEFAULT_LINK, ...link };
    this.endpoints = new Map();
    this.rand = rng(seed);
    this._due = new Map(); // ms -> [[endpoint, msg, bytes]]
    this.stats = { copies: 0, retransmitted: 0, vanished: 0 };
  }

  connect(id) {
    const [lo, hi] = this.link.accessMs;
    const ep = new SimEndpoint(this, id, lo + this.rand() * (hi - lo));
    this.endpoints.set(id, ep);
    return ep;
  }

  _route(from, to, msg) {
    const env = Object.freeze({ ...msg, from: from.id, to: to ?? null });
    const bytes = wireBytes(env);
    const targets = [];
    if (to != null) {
      const ep = this.endpoints.get(to);
      if (ep && !ep.closed) targets.push(ep);
    } else {
      for (const ep of this.endpoints.values()) if (ep !== from && !ep.closed) targets.push(ep);
    }
    const L = this.link;
    const up = (L.upMbps * 1e6) / 8 / 1000; // bytes per ms
    const down = (L.downMbps * 1e6) / 8 / 1000;
    const packets = Math.max(1, Math.ceil(bytes / L.mtu));
    const pLost = 1 - (1 - L.packetLoss) ** packets;
    const now = this.clock.now();
    const data = DATA_TYPES.has(msg.type);
    const control = !msg.payload; // heartbeats and the like: see the top of the file
    for (const ep of targets) {
      let sentAt;
      if (control) {
        sentAt = now + bytes / up;
      } else {
        from.upFree = Math.max(now, from.upFree) + bytes / up;
        sentAt = from.upFree;
      }
      const s = from.stats;
      s.sent++;
      s.bytesOut += bytes;
      const t = (s.byType[msg.type] ??= { msgs: 0, bytes: 0 });
      t.msgs++;
      t.bytes += bytes;
      if (data) {
        s.dataOut += bytes;
        s.dataPeers.add(ep.id);
        ep.stats.dataPeers.add(from.id);
      }
      let arrival = sentAt + from.accessMs + ep.accessMs + this.rand() * L.jitterMs;
      if (pLost > 0 && this.rand() < pLost) {
        this.stats.retransmitted++;
        arrival += Math.max(L.rtoMs, 2 * (from.accessMs + ep.accessMs));
      }
      let at = arrival;
      if (!control) {
        at = Math.max(arrival, ep.downFree + bytes / down);
        ep.downFree = at;
      }
      this.stats.copies++;
      this._schedule(Math.ceil(at), ep, env, bytes);
    }
  }

  _schedule(ms, ep, env, bytes) {
    let list = this._due.get(ms);
    if (!list) {
      list = [];
      this._due.set(ms, list);
      this.clock.setTimeout(() => this._deliver(ms), ms - this.clock.now());
    }
    list.push([ep, env, bytes]);
  }

  _deliver(ms) {
    const list = this._due.get(ms);
    this._due.delete(ms);
    for (const [ep, env, bytes] of list) {
      if (ep.closed) {
        this.stats.vanished++;
        continue;
      }
      ep.stats.received++;
      ep.stats.bytesIn += bytes;
      for (const fn of ep.handlers) {
        try {
          fn(env);
        } catch (err) {
          ep.stats.handlerErrors = (ep.stats.handlerErrors ?? 0) + 1;
          ep.stats.lastError = String(err?.stack ?? err);
        }
      }
    }
  }
}

class SimEndpoint {
  constructor(net, id, accessMs) {
    this.net = net;
    this.id = id;
    this.accessMs = accessMs;
    this.upFree = 0;
    this.downFree = 0;
    this.closed = false;
    this.handlers = new Set();
    this.stats = emptyStats();
  }

  send(to, msg) {
    if (this.closed) return false;
    this.net._route(this, to, msg);
    return true;
  }

  onMessage(fn) {
    this.handlers.add(fn);
    return () => this.handlers.delete(fn);
  }

  close() {
    this.closed = true;
    this.handlers.clear();
  }
}

/** A 36-character id (like crypto.randomUUID()) that sorts by i. */
export function rankId(i) {
  return `${String(i).padStart(8, '0')}-0000-4000-8000-${String(i * 7919 % 1e12).padStart(12, '0')}`;
}

/**
 * One cohort of n ranks through boot, a steady window, churn, a leader crash
 * and the end (see the top of the file). topology: 'star' | 'tree' (the
 * policy's threshold forced either way). Returns the measurements.
 *   dim        parameters (5258: mnist-cnn)
 *   computeMs  a rank's compute time; each rank is 1-2x slower than that
 *   steady     steps in the measured window
 *   churn      false: skip joins, departures and the mid-step crash
 */
export async function runScale({
  n, topology = 'tree', fanout = 4, dim = 5258, batch = 32, computeMs = 15, link = DEFAULT_LINK, seed = 1,
  steady = 10, churnSteps = 6, churn = true, leaderCrash = true, maxSimMs = 600_000, log = null,
} = {}) {
  const clock = new VirtualClock();
  const net = new SimNet({ clock, link, seed });
  const rand = rng(seed * 7 + 3);
  const policy = { treeAbove: topology === 'tree' ? 0 : Infinity, fanout };
  const ranks = new Map();
  const say = (text) => log?.(`[n=${n} ${topology} t=${(clock.now() / 1000).toFixed(1)}s] ${text}`);
  let next = 0;
  const start0 = new Float32Array(dim);
  const crashOnParams = new Set(); // ids that die right after they forwarded a step's params
  // The task: every rank pulls the params toward one target, each with its
  // own noise (a least-squares gradient params - target + noise, O(dim)).
  const target = Float32Array.from(taskWeights(dim, seed));
  const noise = Float32Array.from({ length: 8191 }, rng(seed + 11));
  const gradient = (params, i, step) => {
    const grads = new Float32Array(dim);
    const off = (i * 131 + step * 31) % noise.length;
    let loss = 0;
    for (let j = 0; j < dim; j++) {
      const d = params[j] - target[j];
      loss += d * d;
      grads[j] = d + 0.2 * (noise[(off + j) % noise.length] - 0.5);
    }
    return { grads, loss: loss / (2 * dim), samples: batch };
  };

  function add(minMembers) {
    const i = next++;
    const id = rankId(i);
    const bus = net.connect(id);
    const speed = 1 + rand();
    const rank = new Rank({
      id,
      bus,
      clock,
      params: start0,
      lr: 0.05,
      policy,
      minMembers,
      model: `sim/${dim}`,
      settings: { model: 'sim', batch, optimizer: 'sgd' },
      compute: (params, version, ctx) => {
        if (crashOnParams.has(id)) {
          crashOnParams.delete(id);
          rank.stop({ silent: true }); // the params went down already; the partial never goes up
          bus.close();
          return new Promise(() => {});
        }
        const r = gradient(params, i, ctx.step);
        return new Promise((resolve) => clock.setTimeout(() => resolve(r), computeMs * speed));
      },
    });
    ranks.set(id, rank);
    rank.start();
    return rank;
  }

  const live = () => [...ranks.values()].filter((r) => !r.stopped);
  const leaders = () => live().filter((r) => r.role === 'leader');
  const leader = () => {
    const l = leaders();
    return l.length === 1 ? l[0] : null;
  };
  const until = async (pred, what, maxMs = maxSimMs) => {
    const t0 = clock.now();
    while (!pred()) {
      if (clock.now() - t0 > maxMs) throw new RlxError(STATUS.STATE, `n=${n} ${topology}: ${what} not reached within ${maxMs} ms of simulated time`);
      await clock.advance(10);
    }
    return clock.now() - t0;
  };
  const kill = (r, { bye = false } = {}) => {
    r.stop({ silent: !bye });
    r.bus.close();
  };

  // ---- boot: the founder, then everyone else over a second
  const founder = add(n);
  await until(() => founder.role === 'leader', 'the founder leading', 5_000);
  for (let i = 1; i < n; i++) clock.setTimeout(() => add(n), (1000 * i) / n);
  await until(() => founder.step >= 1, 'the first step with every rank');
  for (const r of ranks.values()) r.minMembers = 1;
  const bootMs = clock.now();
  say(`booted, ${live().length} ranks, first step done`);
  await until(() => founder.step >= 3, 'warm-up');

  // ---- steady window
  const L = founder;
  const snap = () => ({ t: clock.now(), step: L.step, out: L.bus.stats.bytesOut, data: L.bus.stats.dataOut });
  for (const r of ranks.values()) r.bus.stats.dataPeers.clear();
  const a = snap();
  await until(() => L.step >= a.step + steady, 'the steady window');
  const b = snap();
  const steps = b.step - a.step;
  let maxLinks = 0;
  let maxLinksFollower = 0;
  for (const r of ranks.values()) {
    maxLinks = Math.max(maxLinks, r.bus.stats.dataPeers.size);
    if (r !== L) maxLinksFollower = Math.max(maxLinksFollower, r.bus.stats.dataPeers.size);
  }
  const window = L.history.slice(-steps);
  const result = {
    n,
    topology,
    fanout: topology === 'tree' ? fanout : null,
    dim,
    link: { ...net.link },
    bootMs,
    stepsPerSec: (steps * 1000) / (b.t - a.t),
    stepMs: (b.t - a.t) / steps,
    leaderBytesPerStep: (b.out - a.out) / steps,
    leaderDataBytesPerStep: (b.data - a.data) / steps,
    maxDataLinks: maxLinks,
    maxDataLinksFollower: maxLinksFollower,
    heartbeatLinks: live().length - 1,
    contributorsPerStep: window.reduce((s, h) => s + h.contributors.length, 0) / Math.max(1, window.length),
    depth: window.at(-1)?.depth ?? 1,
    // the connections a WebRTC peer holds: n - 1 in a full mesh; the partial mesh's below (the tree's layout)
    mesh: topology === 'tree' ? meshCensus(live(), L.id, fanout) : null,
  };
  say(`steady: ${result.stepsPerSec.toFixed(2)} steps/s, leader ${Math.round(result.leaderBytesPerStep)} B/step, links ${maxLinks}` +
    (result.mesh ? `, partial mesh ${result.mesh.maxLinks} connections per peer at most` : ''));

  // ---- churn: joins, silent departures, goodbyes, a crash in the middle of a step
  if (churn) {
    const s0 = L.step;
    const followers = () => live().filter((r) => r !== L);
    const pick = () => {
      const f = followers();
      return f[Math.floor(rand() * f.length)];
    };
    const joins = Math.max(1, Math.round(n / 20));
    const silent = Math.max(1, Math.round(n / 50));
    const byes = Math.max(1, Math.round(n / 100));
    // the rank that dies in the middle of a step: in a tree, the head of the root's first subtree
    const victim = rankId(1);
    crashOnParams.add(victim);
    for (let i = 0; i < joins; i++) clock.setTimeout(() => add(1), rand() * 2000);
    for (let i = 0; i < silent; i++) {
      clock.setTimeout(() => {
        const r = pick();
        if (r && r.id !== victim) kill(r);
      }, rand() * 2000);
    }
    for (let i = 0; i < byes; i++) {
      clock.setTimeout(() => {
        const r = pick();
        if (r && r.id !== victim) kill(r, { bye: true });
      }, rand() * 2000);
    }
    await until(() => L.step >= s0 + churnSteps && clock.now() > a.t + 2000, 'steps through churn');
    const during = L.history.filter((h) => h.step >= s0);
    const crashStep = during.find((h) => (h.missing ?? []).includes(victim) || !h.contributors.includes(victim));
    result.churn = {
      joins,
      silent,
      byes,
      steps: during.length,
      shortSteps: during.filter((h) => h.short).length,
      crashStep: crashStep ? { step: crashStep.step, contributors: crashStep.contributors.length, members: crashStep.members, missing: crashStep.missing ?? null, ms: crashStep.ms } : null,
      reattached: topology === 'tree' ? live().reduce((s, r) => s + r.status().tree.stats.reattached, 0) : 0,
    };
    say(`churn: ${during.length} steps, crash step ${JSON.stringify(result.churn.crashStep)}`);
  }

  // ---- the leader crashes (silently, between two steps' params going out and coming back)
  if (leaderCrash) {
    const stepAt = L.step;
    const t0 = clock.now();
    kill(L);
    let claimed = null;
    await until(() => {
      const l = leader();
      if (l && l !== L && claimed === null) claimed = clock.now() - t0;
      return l && l !== L && l.history.length > 0 && l.history.at(-1).step >= stepAt;
    }, 'a step under a new leader');
    const nl = leader();
    const first = nl.history[0];
    result.takeoverMs = claimed;
    result.recoveryMs = clock.now() - t0;
    result.recoveredAtStep = first.step;
    result.policyTakeoverMs = nl.policy.takeoverMs;
    say(`leader crash: new leader after ${claimed} ms, first step after ${result.recoveryMs} ms`);
  }

  // ---- the end: a few more steps, then every live rank holds the same bytes
  const end = leader() ?? (await until(() => leader(), 'one leader').then(leader));
  end.maxSteps = end.step + 3;
  await until(() => {
    const l = leader();
    if (!l || l.collect || l.step < end.maxSteps) return false;
    return live().every((r) => r === l || (r.role === 'follower' && r.leaderId === l.id && r.version === l.version));
  }, 'every live rank synced');
  const all = live();
  const ref = new Uint32Array(end.params.buffer);
  let identical = true;
  for (const r of all) {
    const w = new Uint32Array(r.params.buffer);
    if (r.hash !== end.hash || w.length !== ref.length || w.some((x, i) => x !== ref[i])) identical = false;
  }
  result.live = all.length;
  if (topology === 'tree') result.meshEnd = meshCensus(all, end.id, fanout); // after churn and a new leader
  result.bitIdentical = identical;
  result.finalStep = end.step;
  result.simMs = clock.now();
  result.copies = net.stats.copies;
  result.retransmitted = net.stats.retransmitted;
  result.handlerErrors = all.reduce((s, r) => s + r.stats.handlerErrors + (r.bus.stats.handlerErrors ?? 0), 0);
  for (const r of ranks.values()) r.stop({ silent: true });
  return result;
}
