// tree.js - an aggregation tree for the step's data path, so a cohort can
// grow past the handful of ranks a star allows. In the star (protocol.js)
// the leader sends the params to every rank and receives every bucket:
// its egress per step is (n - 1) params messages. Here the step's members
// (root first) are laid out as a complete k-ary tree:
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
// This is the data path only: election, heartbeats and joining stay as in
// protocol.js (the leader is the root); simulateTree() below runs it over an
// InProcessHub for the 100+-rank measurements.
import { realClock, VirtualClock } from './clock.js';
import { InProcessHub } from './bus.js';
import { sgd, paramsHash, copyF32 } from './reduce.js';

/** Complete k-ary layout of `members` (members[0] is the root). */
export function treeLayout(members, fanout) {
  if (!Array.isArray(members) || members.length === 0) throw new TypeError('treeLayout needs members');
  if (!Number.isInteger(fanout) || fanout < 1) throw new TypeError('fanout must be a positive integer');
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
    if (members[0] !== this.id) throw new Error('the root must be members[0]');
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
    if (clock.now() > 1e6) throw new Error('tree simulation did not finish');
  }
  const egress = ranks.map((r) => ({ id: r.id, msgs: r.stats.sentMsgs / steps, floats: r.stats.sentFloats / steps, perStepMax: r.stats.perStepMax }));
  return { root, ranks, egress, layout: treeLayout(ids, fanout), ms: clock.now() };
}
