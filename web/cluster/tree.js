// tree.js - an aggregation tree for the step's data path, so a cohort can
// grow past the handful of ranks a star allows. In the star (protocol.js)
// the leader sends the params to every rank and receives every bucket:
// its egress per step is (n - 1) params messages. In a tree each node
// forwards the params to its <= k children and sends ONE partial up:
//
//   down: each node forwards the params it got from its parent to its <= k
//         children, then computes its own bucket;
//   up:   each node adds its own sample-weighted bucket to its children's
//         partial sums and sends ONE partial {sum_i s_i g_i, sum_i s_i, ids,
//         missing} to its parent; a child silent at the node's deadline is
//         left out and reported as missing.
//   root: mean = sum / samples, update, next step without the missing nodes
//         (the subtree below a dead node is laid out again under live ones).
//
// Every node's egress per step is at most k + 1 messages, whatever n is, and
// the root's is k. Because partials carry weighted SUMS (not means), the
// root's mean equals the flat sample-weighted mean up to f32 rounding of the
// partials (exactly, for data whose sums are exact in f32). Params travel
// down unchanged, so every node holds the root's bytes.
//
// Two implementations share that shape:
// - TreeRank / simulateTree: the data path alone over an InProcessHub, with a
//   complete k-ary layout (treeLayout), for the measurements of tree vs star.
// - LiveTree: the tree inside protocol.js's Rank (election, heartbeats,
//   joining, quorum, version checks and settings stay the Rank's). The
//   leader runs a step as a star up to policy.treeAbove ranks and as a tree
//   above it (policy.js topologyFor). Its layout is a pre-order split: a
//   node's subtree is a contiguous slice [node, ...descendants] of the
//   step's order [leader, ...members], cut into <= k contiguous child slices
//   of near-equal size (splitSubtree), so a params message carries only the
//   receiver's own slice (the leader's egress is k params + n ids, not k * n
//   ids) and the receiver's place in the order, which is its data shard.
//   Re-attachment: a node never sends params to a child it already holds
//   for silent (no heartbeat for 2.5 beats, or reported missing by an
//   earlier step): it sends them to that child's children instead, which
//   then answer it (a rank answers whoever sent it the step's params last).
//   A child whose partial is overdue at the node's first deadline (4x the
//   usual time its subtree takes, at least 250 ms a level below the node, at
//   most its share of the step deadline) is
//   re-attached the same way within the step: its children get the params
//   again from the node, and resend the partial they may have sent to the
//   dead one. A partial is the sample-weighted mean of its subtree's buckets
//   in f32 with their sample count (a leaf's is its bucket, bit for bit;
//   parents add samples * mean in f64), the ids it covers and the ranks its
//   sender gave up on; every aggregator drops a partial that overlaps what
//   it already holds, so nothing is counted twice. Partials travel in f32:
//   compress.js's encodings apply to the star's buckets, and robust.js's
//   rules, in a tree, see the root's few partials, not every bucket.
//   The leader marks a rank missing in two steps in a row (or silent) as a
//   suspect until it is heard again, so the next layout leaves it out.
import { realClock, VirtualClock } from './clock.js';
import { InProcessHub } from './bus.js';
import { sgd, paramsHash, copyF32 } from './reduce.js';
import { topologyFor } from './policy.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

/** Complete k-ary layout of `members` (members[0] is the root). */
export function treeLayout(members, fanout) {
  if (!Array.isArray(members) || members.length === 0) throw new RlxError(STATUS.INVALID_ARG, 'treeLayout needs members');
  if (!Number.isInteger(fanout) || fanout < 1) throw new RlxError(STATUS.INVALID_ARG, 'fanout must be a positive integer');
  const index = new Map(members.map((id, i) => [id, i]));
  const childrenAt = (i) => members.slice(fanout * i + 1, Math.min(members.length, fanout * i + 1 + fanout));
  let depth = 0;
  for (let last = 0; last < members.length - 1; last = fanout * last + fanout) depth++;
  return {
    root: members[0],
    depth,
    has: (id) => index.has(id),
    parentOf(id) {
      const i = index.get(id);
      return i > 0 ? members[Math.floor((i - 1) / fanout)] : null;
    },
    childrenOf(id) {
      const i = index.get(id);
      return i === undefined ? [] : childrenAt(i);
    },
    /** Levels of descendants below id (0 for a leaf). */
    heightOf(id) {
      let i = index.get(id);
      if (i === undefined) return 0;
      let h = 0;
      while (fanout * i + 1 < members.length) {
        i = fanout * i + 1;
        h++;
      }
      return h;
    },
  };
}

/**
 * One rank of the tree. The root is started with run(members); the others
 * only react. compute(params, version, ctx) -> {grads, loss, samples} (or a
 * Promise). hopMs bounds how long a node waits per level of its subtree.
 */
export class TreeRank {
  constructor({ bus, compute, params, fanout = 4, lr = 0.1, clock = realClock, hopMs = 200, onStep = null }) {
    this.id = bus.id;
    this.bus = bus;
    this.compute = compute;
    this.params = copyF32(params);
    this.paramCount = params.length;
    this.fanout = fanout;
    this.lr = lr;
    this.clock = clock;
    this.hopMs = hopMs;
    this.onStep = onStep;
    this.version = -1;
    this.step = 0;
    this.hash = paramsHash(this.params);
    this.pending = null; // the step this node is aggregating
    this.history = [];
    this.maxSteps = 0;
    this.stats = { sentMsgs: 0, sentFloats: 0, perStepMax: 0, stale: 0, late: 0, computeErrors: 0 };
    this._stepSent = 0;
    this._off = bus.onMessage((m) => this._onMessage(m));
  }

  /** Root only: run `steps` steps over `members` (root first). */
  run(members, steps) {
    if (members[0] !== this.id) throw new RlxError(STATUS.INVALID_ARG, 'the root must be members[0]');
    this.maxSteps = this.step + steps;
    if (this.version < 0) this.version = 0;
    this._down({ version: this.version, step: this.step, members, payload: this.params });
  }

  stop() {
    this._off?.();
    if (this.pending) this.clock.clearTimeout(this.pending.timer);
    this.pending = null;
    this.stopped = true;
  }

  _send(to, msg) {
    this.stats.sentMsgs++;
    this._stepSent++;
    this.stats.sentFloats += msg.payload?.length ?? 0;
    this.bus.send(to, msg);
  }

  _onMessage(m) {
    if (this.stopped) return;
    if (m.type === 'tdown') {
      this._down(m);
    } else if (m.type === 'tup') {
      const p = this.pending;
      if (!p || m.version !== p.version || !p.waiting.has(m.from)) {
        this.stats.stale++;
        return;
      }
      p.waiting.delete(m.from);
      this._absorb(p, m.samples, m.loss, m.payload, m.ids, true);
      for (const id of m.missing) p.missing.push(id);
      this._maybeFinish(p);
    }
  }

  /** Params from the parent (or the root's own start): adopt, forward, compute. */
  _down(m) {
    if (this.pending) {
      this.clock.clearTimeout(this.pending.timer);
      if (this.pending.version !== m.version) this.stats.late++;
    }
    this._stepSent = 0;
    if (m.from !== undefined) {
      this.params = copyF32(m.payload);
      this.hash = paramsHash(this.params);
    }
    this.version = m.version;
    this.step = m.step;
    this.stepHash = this.hash; // what this node computed on: the root's bytes
    const layout = treeLayout(m.members, this.fanout);
    const children = layout.childrenOf(this.id);
    for (const child of children) {
      this._send(child, { type: 'tdown', version: m.version, step: m.step, members: m.members, payload: this.params });
    }
    const p = {
      version: m.version,
      step: m.step,
      members: m.members,
      parent: layout.parentOf(this.id),
      waiting: new Set(children),
      ownDone: false,
      sum: new Float64Array(this.paramCount),
      samples: 0,
      loss: 0,
      ids: [],
      missing: [],
      timer: null,
      t0: this.clock.now(),
    };
    this.pending = p;
    // a node of height h waits up to (h + 1) hops for its subtree
    p.timer = this.clock.setTimeout(() => this._deadline(p), this.hopMs * (layout.heightOf(this.id) + 1));
    const params = this.params;
    Promise.resolve()
      .then(() => this.compute(params, m.version, { step: m.step }))
      .then(
        (r) => {
          if (this.pending !== p) return;
          p.ownDone = true;
          this._absorb(p, r.samples, r.loss, r.grads, [this.id], false);
          this._maybeFinish(p);
        },
        () => {
          this.stats.computeErrors++;
          if (this.pending !== p) return;
          p.ownDone = true;
          this._maybeFinish(p);
        },
      );
  }

  /** Adds a bucket (weighted=false: raw grads) or a child's partial sum. */
  _absorb(p, samples, loss, vec, ids, weighted) {
    const w = weighted ? 1 : samples;
    for (let i = 0; i < this.paramCount; i++) p.sum[i] += w * vec[i];
    p.samples += samples;
    p.loss += weighted ? loss : samples * loss;
    for (const id of ids) p.ids.push(id);
  }

  _maybeFinish(p) {
    if (p.ownDone && p.waiting.size === 0) this._finish(p);
  }

  _deadline(p) {
    if (this.pending !== p) return;
    p.ownDone = true; // stop waiting for anything
    for (const id of p.waiting) p.missing.push(id);
    this._finish(p);
  }

  _finish(p) {
    this.clock.clearTimeout(p.timer);
    this.pending = null;
    if (p.parent !== null) {
      this._send(p.parent, { type: 'tup', version: p.version, samples: p.samples, loss: p.loss, ids: p.ids, missing: p.missing, payload: Float32Array.from(p.sum) });
      this.stats.perStepMax = Math.max(this.stats.perStepMax, this._stepSent);
      return;
    }
    // root: the sample-weighted mean over every bucket that reached it
    const mean = new Float32Array(this.paramCount);
    for (let i = 0; i < this.paramCount; i++) mean[i] = p.sum[i] / p.samples;
    this.stats.perStepMax = Math.max(this.stats.perStepMax, this._stepSent);
    const record = { step: p.step, version: p.version, loss: p.loss / p.samples, samples: p.samples, contributors: [...p.ids].sort(), missing: [...p.missing].sort(), mean, ms: this.clock.now() - p.t0 };
    this.history.push(record);
    this.params = sgd(this.params, mean, this.lr);
    this.hash = paramsHash(this.params);
    this.version = p.version + 1;
    this.step = p.step + 1;
    this.onStep?.(record);
    if (this.step < this.maxSteps) {
      // Next step without the nodes a parent waited for in vain; the subtree
      // below such a node was never reached, and is laid out again under
      // live parents.
      const gone = new Set(p.missing);
      const members = p.members.filter((id) => !gone.has(id));
      this._down({ version: this.version, step: this.step, members, payload: this.params });
    }
  }
}

/**
 * Runs an n-rank tree (or, with fanout = n - 1, the star) on simulated
 * time: returns the root, every rank, and per-rank egress per step.
 *   simulateTree({ n: 128, fanout: 4, dim: 16, steps: 5, compute: (id) => fn })
 */
export async function simulateTree({ n, fanout = 4, dim = 16, steps = 3, lr = 0.1, delayMs = 1, hopMs = 50, compute, params, kill = null } = {}) {
  const clock = new VirtualClock();
  const hub = new InProcessHub({ clock, delayMs });
  const ids = Array.from({ length: n }, (_, i) => `r${String(i).padStart(4, '0')}`);
  const start = params ?? new Float32Array(dim);
  const ranks = ids.map((id) => new TreeRank({ bus: hub.connect(id), compute: compute(id), params: start, fanout, lr, clock, hopMs }));
  const root = ranks[0];
  root.run(ids, steps);
  let killed = false;
  while (root.step < steps) {
    await clock.advance(1);
    if (kill && !killed && root.step >= kill.afterStep) {
      for (const id of kill.ids) ranks[ids.indexOf(id)].stop();
      killed = true;
    }
    if (clock.now() > 1e6) throw new RlxError(STATUS.STATE, 'tree simulation did not finish');
  }
  const egress = ranks.map((r) => ({ id: r.id, msgs: r.stats.sentMsgs / steps, floats: r.stats.sentFloats / steps, perStepMax: r.stats.perStepMax }));
  return { root, ranks, egress, layout: treeLayout(ids, fanout), ms: clock.now() };
}

// ---- the tree inside the live protocol (protocol.js Rank) ------------------------

/**
 * Cuts a subtree [head, ...descendants] (head at position `at` of the step's
 * order) into <= k contiguous child subtrees of near-equal size:
 * [{ ids, at }], each ids[0] being the child.
 */
export function splitSubtree(ids, k, at = 0) {
  const rest = ids.length - 1;
  const parts = Math.min(k, rest);
  const out = [];
  let start = 1;
  for (let i = 0; i < parts; i++) {
    const size = Math.floor(rest / parts) + (i < rest % parts ? 1 : 0);
    out.push({ ids: ids.slice(start, start + size), at: at + start });
    start += size;
  }
  return out;
}

/** Levels below the head of a subtree of `size` ranks cut by splitSubtree (0: a leaf). */
export function subtreeHeight(size, k) {
  let h = 0;
  for (let m = size; m > 1; m = Math.ceil((m - 1) / k)) h++;
  return h;
}

const SILENT_BEATS = 2.5; // a peer this many beats silent is routed around (takeover is at 3, drop at 4)
const FIRST_FACTOR = 4; // the first deadline: this many times the usual time of the subtree
const MIN_FIRST_MS = 250; // a level: above a retransmission timeout (one lost packet is not a dead rank)
const EWMA = 0.25;
const TRANSPORT_KEYS = ['from', 'to', 'seq', 'term', 'model', 'pv', 'tree', 'members', 'lead', 'via'];

function strip(msg) {
  const out = { ...msg };
  for (const k of TRANSPORT_KEYS) delete out[k];
  return out;
}

/**
 * The tree side of one protocol.js Rank; protocol.js calls it at the points
 * of the step's data path (see the top of this file):
 *   leader:   startStep(c, msg) sends the params down (false: a star step,
 *             the caller broadcasts), accept(c, msg) takes a partial,
 *             ready(c) says the step may resolve, resolved(c) adds the
 *             tree's contributors and missing ranks to the step's record
 *   follower: onParams(msg) forwards and starts aggregating, takeOwn(bucket)
 *             adds this rank's bucket, onPartial(msg) a child's partial,
 *             shard(version) the data shard
 */
export class LiveTree {
  constructor(rank) {
    this.rank = rank;
    this.node = null; // this rank's part of the tree step in progress (not as the root)
    this.last = null; // what the last step looked like from here (status)
    this.ewma = new Map(); // subtree height -> smoothed ms from params to a complete subtree
    this.missedLast = new Set(); // root: the ranks the last step missed
    this.stats = { steps: 0, forwarded: 0, partials: 0, absorbed: 0, reattached: 0, resent: 0, missing: 0, late: 0, overlap: 0 };
  }

  /** The last step as seen from here ({ topology, fanout, depth, role, parent, children }), this rank's policy, counters. */
  status() {
    const policy = topologyFor(this.rank._liveCount(), this.rank.policyOverrides);
    return { ...(this.last ?? { topology: policy.topology }), policy, stats: { ...this.stats } };
  }

  /**
   * Should this follower ask the leader for the params, the leader's
   * heartbeat saying `leaderVersion`? In a star, whenever it is behind; in a
   * tree the params may still be a few hops away, so only once it stayed
   * behind, at the same version, for a whole beat.
   */
  behind(leaderVersion) {
    const r = this.rank;
    if (r.version >= leaderVersion) {
      this._behind = null;
      return false;
    }
    if (this.last?.topology !== 'tree') return true;
    const now = r.clock.now();
    if (!this._behind || this._behind.version !== r.version) {
      this._behind = { version: r.version, since: now };
      return false;
    }
    return now - this._behind.since >= r.policy.heartbeatMs;
  }

  /** The data shard of this rank in a tree step: its place in the step's order. */
  shard(version) {
    const n = this.node;
    return n && n.version === version ? { index: n.at, count: n.n } : null;
  }

  // ---- liveness ----

  _silent(id) {
    const r = this.rank;
    if (id === r.id) return false;
    if (r.suspects.has(id)) return true;
    const p = r.peers.get(id);
    if (!p) return false; // not heard yet (a newcomer): try it, the deadline covers a dead one
    return r.clock.now() - p.lastSeen > SILENT_BEATS * Math.max(r.policy.heartbeatMs, p.hbMs || 0);
  }

  /** Where a subtree's params go: its head, or (head silent) the heads of its child subtrees. */
  _targets(chunk, k, out, missing) {
    if (!this._silent(chunk.ids[0])) {
      out.push(chunk);
      return;
    }
    missing.add(chunk.ids[0]);
    if (chunk.ids.length > 1) this.stats.reattached++;
    for (const sub of splitSubtree(chunk.ids, k, chunk.at)) this._targets(sub, k, out, missing);
  }

  /** Sends the step's params to the heads of `chunks` (routing around silent ones); they join `s.waiting`. */
  _sendDown(s, chunks) {
    const out = [];
    for (const chunk of chunks) this._targets(chunk, s.k, out, s.missing);
    for (const t of out) {
      this.stats.forwarded++;
      s.waiting.set(t.ids[0], t);
      this.rank._send(t.ids[0], { ...s.base, lead: s.lead, tree: { root: s.root, k: s.k, n: s.n, at: t.at, ids: t.ids, depth: s.depth, ms: s.ms } });
    }
  }

  /** First deadline: re-attach the children of overdue inner children; true if any was. */
  _reattachOverdue(s) {
    let any = false;
    for (const [head, chunk] of [...s.waiting]) {
      if (chunk.ids.length < 2) continue;
      s.waiting.delete(head);
      s.missing.add(head);
      this.stats.reattached++;
      this._sendDown(s, splitSubtree(chunk.ids, s.k, chunk.at));
      any = true;
    }
    return any;
  }

  /** The first deadline of a node of `height`: nested, so a child's re-attachment fits in its parent's wait. */
  _firstMs(s, height, cap) {
    const e = this.ewma.get(height);
    return e ? Math.min(cap, Math.max(MIN_FIRST_MS * height, FIRST_FACTOR * e)) : cap;
  }

  _learn(height, ms) {
    const e = this.ewma.get(height);
    this.ewma.set(height, e ? e + EWMA * (ms - e) : ms);
  }

  // ---- leader (root) ----

  /** Starts a tree step (c: the Rank's collect, msg: the params it would broadcast); false: run it as a star. */
  startStep(c, msg) {
    const r = this.rank;
    const topo = topologyFor(c.members.size, r.policyOverrides);
    if (topo.topology !== 'tree') {
      this.last = { topology: 'star', fanout: topo.fanout, treeAbove: topo.treeAbove };
      return false;
    }
    const order = [r.id, ...[...c.members].filter((id) => id !== r.id).sort()];
    r.members = order; // shards: a rank's place in the order
    const depth = subtreeHeight(order.length, topo.fanout);
    const ms = r.policy.collectMs;
    const base = strip(msg);
    const { payload: _p, ...fields } = base;
    const s = {
      root: r.id, k: topo.fanout, n: order.length, depth, ms, base,
      // the leader's own params header, which every relay passes on unchanged (signed once: auth.js)
      lead: { ...fields, ...r._stamp(), from: r.id },
      waiting: new Map(), have: new Set(), missing: new Set(), t0: r.clock.now(), timer: null,
    };
    c.tree = s;
    this.stats.steps++;
    this._sendDown(s, splitSubtree(order, s.k, 0));
    const cap = (ms * depth) / (depth + 1);
    s.timer = r.clock.setTimeout(() => this._rootFirst(c), this._firstMs(s, depth, cap));
    this.last = { topology: 'tree', fanout: s.k, treeAbove: topo.treeAbove, depth, role: 'root', parent: null, children: s.waiting.size, version: c.version };
    return true;
  }

  _rootFirst(c) {
    const r = this.rank;
    if (r.collect !== c || r.stopped) return;
    if (this._reattachOverdue(c.tree)) return; // the step deadline (collectMs) is the last word
    const covered = c.tree.have.size + (c.buckets.has(r.id) ? 1 : 0);
    if (covered > 0 && covered >= r._needed(c)) r._resolve(c, true);
  }

  /** A partial (or a direct bucket) for the root's step: false when it overlaps what the step holds. */
  accept(c, msg) {
    const s = c.tree;
    const ids = Array.isArray(msg.ids) ? msg.ids : [msg.from];
    if (!ids.includes(msg.from) || ids.some((id) => !c.members.has(id))) {
      this.rank.stats.dropped.rule++;
      this.rank.rules.strike(msg.from, `a partial for step ${c.step} naming ranks outside it`);
      return false;
    }
    if (ids.some((id) => s.have.has(id) || id === this.rank.id)) {
      this.stats.overlap++;
      this.rank.stats.dropped.duplicate++;
      return false;
    }
    for (const id of ids) s.have.add(id);
    for (const id of msg.missing ?? []) s.missing.add(id);
    s.waiting.delete(msg.from);
    this.stats.absorbed++;
    return true;
  }

  /** The root may resolve: its own bucket is in and every subtree has answered. */
  ready(c) {
    const r = this.rank;
    const s = c.tree;
    const own = c.buckets.has(r.id) || !r.computeWhenLeader || c.nonFinite.has(r.id);
    if (!own || s.waiting.size > 0) return false;
    this._learn(s.depth, r.clock.now() - s.t0);
    return true;
  }

  /** Fields the tree adds to a resolved step's record; the missing ranks become suspects. */
  resolved(c) {
    const s = c.tree;
    if (!s) return {};
    const r = this.rank;
    r.clock.clearTimeout(s.timer);
    const missing = new Set(s.missing);
    for (const head of s.waiting.keys()) missing.add(head);
    for (const id of [...missing]) if (s.have.has(id) || id === r.id) missing.delete(id);
    // Left out of the next layout (until heard again): a rank missed twice in
    // a row, or silent; one missed once was perhaps only late.
    for (const id of missing) if (this.missedLast.has(id) || this._silent(id)) r.suspects.add(id);
    this.missedLast = missing;
    this.stats.missing += missing.size;
    const contributors = [...s.have];
    if (c.buckets.has(r.id)) contributors.push(r.id);
    return { topology: 'tree', fanout: s.k, depth: s.depth, contributors: contributors.sort(), missing: [...missing].sort() };
  }

  // ---- inner nodes and leaves ----

  /** Params of a step reached this follower (before the Rank adopts them). */
  onParams(msg) {
    const r = this.rank;
    const t = msg.tree;
    if (!t) {
      if (msg.go) this.last = { topology: 'star' };
      return;
    }
    if (!msg.go || t.ids[0] !== r.id) return;
    const cur = this.node;
    if (cur && cur.term === msg.term && cur.version === msg.version) {
      // the same step again, from an ancestor that re-attached this subtree: answer it from now on
      if (cur.parent !== (msg.via ?? msg.from)) {
        cur.parent = msg.via ?? msg.from;
        if (cur.sent) {
          this.stats.resent++;
          r._send(cur.parent, cur.sent);
        }
      }
      return;
    }
    if (cur && cur.term === msg.term && cur.version > msg.version) return; // a late copy of an older step
    this._close(cur);
    const height = subtreeHeight(t.ids.length, t.k);
    const s = {
      root: t.root, k: t.k, n: t.n, at: t.at, ids: t.ids, depth: t.depth, ms: t.ms, height,
      version: msg.version, term: msg.term, step: msg.step, parent: msg.via ?? msg.from, base: strip(msg), lead: msg.lead,
      waiting: new Map(), have: new Set(), missing: new Set(), sum: null, single: null, samples: 0, loss: 0,
      // this rank's own bucket: computed already for this version (it went to the leader directly)?
      own: r._computedVersion === msg.version ? 'gone' : 'pending',
      sent: null, closed: false, t0: r.clock.now(), first: null, final: null,
    };
    this.node = s;
    this._sendDown(s, splitSubtree(t.ids, t.k, t.at));
    if (s.waiting.size) {
      const slot = t.ms / (t.depth + 1);
      s.first = r.clock.setTimeout(() => this._first(s), this._firstMs(s, height, slot * height));
      s.final = r.clock.setTimeout(() => this._finish(s, true), slot * (height + 0.5));
    }
    this.last = { topology: 'tree', fanout: t.k, depth: t.depth, role: s.waiting.size ? 'inner' : 'leaf', parent: s.parent, children: s.waiting.size, version: msg.version };
  }

  /** This rank's own bucket {version, loss, samples, grads}; false: not a tree step here. */
  takeOwn(b) {
    const s = this.node;
    if (!s || s.version !== b.version) return false;
    if (s.own !== 'pending') return true;
    if (s.closed) {
      s.own = 'late'; // its partial went up without it
      this.stats.late++;
      return true;
    }
    s.own = 'in';
    this._absorb(s, [this.rank.id], b.samples, b.loss, b.grads, null);
    this._maybeFinish(s);
    return true;
  }

  /** A grad reached a follower: a child's partial (true) or not a tree message (false). */
  onPartial(msg) {
    const s = this.node;
    const r = this.rank;
    if (!s || !Array.isArray(msg.ids)) return false;
    if (msg.version !== s.version || msg.term !== s.term) {
      r.stats.dropped.stale++;
      return true;
    }
    if (s.closed) {
      this.stats.late++;
      r.stats.dropped.stale++;
      return true;
    }
    if (!(msg.payload instanceof Float32Array)) {
      r.stats.dropped.malformed++; // partials travel in f32
      return true;
    }
    if (!msg.ids.includes(msg.from) || msg.ids.some((id) => !s.ids.includes(id))) {
      r.stats.dropped.rule++;
      r.rules.strike(msg.from, 'a partial naming ranks outside this subtree');
      return true;
    }
    if (msg.ids.some((id) => s.have.has(id) || id === r.id)) {
      this.stats.overlap++;
      r.stats.dropped.duplicate++;
      return true;
    }
    this._absorb(s, msg.ids, msg.samples, msg.loss, msg.payload, msg.missing);
    s.waiting.delete(msg.from);
    this.stats.absorbed++;
    this._maybeFinish(s);
    return true;
  }

  _absorb(s, ids, samples, loss, vec, missing) {
    const n = vec.length;
    if (s.samples === 0 && ids.length === 1 && ids[0] === this.rank.id) {
      s.single = vec; // a leaf's partial is its bucket, bit for bit
    } else {
      if (!s.sum) {
        s.sum = new Float64Array(n);
        if (s.single) for (let i = 0; i < n; i++) s.sum[i] = s.samples * s.single[i];
        s.single = null;
      }
      for (let i = 0; i < n; i++) s.sum[i] += samples * vec[i];
    }
    s.samples += samples;
    s.loss += samples * loss;
    for (const id of ids) s.have.add(id);
    if (missing) for (const id of missing) s.missing.add(id);
  }

  _maybeFinish(s) {
    if (s.own !== 'pending' && s.waiting.size === 0) this._finish(s, false);
  }

  _first(s) {
    if (this.node !== s || s.closed || this.rank.stopped) return;
    if (!this._reattachOverdue(s)) this._finish(s, true); // only leaves overdue: go up without them
  }

  _close(s) {
    if (!s) return;
    const r = this.rank;
    r.clock.clearTimeout(s.first);
    r.clock.clearTimeout(s.final);
    if (!s.closed) {
      s.closed = true;
      this.stats.late++; // the next step came first
    }
  }

  _finish(s, short) {
    const r = this.rank;
    if (s.closed || this.node !== s || r.stopped) return;
    s.closed = true;
    r.clock.clearTimeout(s.first);
    r.clock.clearTimeout(s.final);
    for (const head of s.waiting.keys()) s.missing.add(head);
    if (!short && s.waiting.size === 0) this._learn(s.height, r.clock.now() - s.t0);
    if (s.samples === 0) return; // nothing to send: the parent's deadline reports this subtree
    let payload = s.single;
    if (!payload) {
      payload = new Float32Array(s.sum.length);
      for (let i = 0; i < payload.length; i++) payload[i] = s.sum[i] / s.samples;
    }
    const missing = [...s.missing].filter((id) => !s.have.has(id));
    // a sample-weighted MEAN with its weight: the parent adds samples * payload
    s.sent = { type: 'grad', version: s.version, step: s.step, loss: s.loss / s.samples, samples: s.samples, payload, ids: [...s.have], missing };
    this.stats.partials++;
    r._send(s.parent, s.sent);
  }
}
