// sim.js - stub ranks and simulated cohorts for testing the cluster protocol
// without a model or a browser: a least-squares task whose gradient every
// stub computes on its own shard (deterministic per rank and step), with
// synchronous, "later task" (like a WebGPU readback) or slow timed answers,
// and a helper that wires ranks to an InProcessHub on one VirtualClock.
import { VirtualClock, FreezableClock } from './clock.js';
import { InProcessHub } from './bus.js';
import { Rank } from './protocol.js';

/** Deterministic 32-bit PRNG (mulberry32) in [0, 1). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hashString(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Runs fn on a later macrotask (setImmediate in Node, a MessageChannel hop in a browser). */
function laterTask(fn) {
  if (typeof setImmediate === 'function') {
    setImmediate(fn);
    return;
  }
  const ch = new MessageChannel();
  ch.port1.onmessage = () => {
    ch.port1.close();
    fn();
  };
  ch.port2.postMessage(0);
}

/** The true weights of the least-squares task with `dim` features. */
export function taskWeights(dim, seed = 7) {
  const r = rng(seed);
  return Float64Array.from({ length: dim }, () => r() * 2 - 1);
}

/**
 * Gradient of 0.5 * mean((w.x - y)^2) over `batch` samples drawn from the
 * shard of `rankId` at `step` (so ranks see different data, repeatably).
 */
export function shardGradient(params, rankId, step, batch, { seed = 7 } = {}) {
  const dim = params.length;
  const w = taskWeights(dim, seed);
  const r = rng(hashString(rankId) ^ Math.imul(step + 1, 0x9e3779b1));
  const g = new Float64Array(dim);
  const x = new Float64Array(dim);
  let loss = 0;
  for (let s = 0; s < batch; s++) {
    let y = 0;
    let pred = 0;
    for (let i = 0; i < dim; i++) {
      x[i] = r() * 2 - 1;
      y += w[i] * x[i];
      pred += params[i] * x[i];
    }
    const err = pred - y;
    loss += 0.5 * err * err;
    for (let i = 0; i < dim; i++) g[i] += err * x[i];
  }
  const grads = new Float32Array(dim);
  for (let i = 0; i < dim; i++) grads[i] = g[i] / batch;
  return { grads, loss: loss / batch, samples: batch };
}

/**
 * A compute callback for a stub rank.
 *   mode 'sync'       returns the result directly (a CPU rank)
 *   mode 'immediate'  resolves on a later task via setImmediate (a WebGPU rank)
 *   mode 'timer'      resolves after delayMs on `clock` (a slow rank);
 *                     delayMs may be a function of the step
 * Records every call in .calls.
 */
export function stubCompute(rankId, { batch = 4, mode = 'sync', clock = null, delayMs = 0, seed = 7, result = null } = {}) {
  const calls = [];
  const fn = (params, version, ctx) => {
    calls.push({ version, step: ctx.step, index: ctx.index, count: ctx.count });
    const out = result ? result(params, version, ctx) : shardGradient(params, rankId, ctx.step, batch, { seed });
    if (mode === 'sync') return out;
    if (mode === 'immediate') return new Promise((resolve) => laterTask(() => resolve(out)));
    const ms = typeof delayMs === 'function' ? delayMs(ctx.step) : delayMs;
    return new Promise((resolve) => clock.setTimeout(() => resolve(out), ms));
  };
  fn.calls = calls;
  return fn;
}

/**
 * A simulated cohort on one VirtualClock:
 *   const sim = new SimCohort({ dim: 8, hub: { delayMs: 2 }, rank: { lr: 0.1 } });
 *   sim.add('a'); sim.add('b', { mode: 'immediate' });
 *   await sim.until(() => sim.leaders().length === 1);
 * Each added rank gets its own FreezableClock (sim.freeze(id) / sim.thaw(id)).
 */
export class SimCohort {
  constructor({ dim = 8, seed = 7, hub = {}, rank = {}, clock = new VirtualClock() } = {}) {
    this.dim = dim;
    this.seed = seed;
    this.clock = clock;
    this.hub = new InProcessHub({ clock, ...hub });
    this.rankDefaults = rank;
    this.ranks = new Map();
    this.clocks = new Map();
    this.events = [];
  }

  /** Initial params of a rank: a per-rank random start (only a founder's survives). */
  initialParams(id) {
    const r = rng(hashString(id) ^ this.seed);
    return Float32Array.from({ length: this.dim }, () => r() - 0.5);
  }

  add(id, { mode = 'sync', batch = 4, delayMs = 1, compute = null, result = null, start = true, ...opts } = {}) {
    const clock = new FreezableClock(this.clock);
    const bus = this.hub.connect(id, { clock });
    const fn = compute ?? stubCompute(id, { batch, mode, clock, delayMs, seed: this.seed, result });
    const rank = new Rank({
      bus,
      compute: fn,
      params: this.initialParams(id),
      clock,
      onEvent: (type, data) => this.events.push({ t: this.clock.now(), id, type, data }),
      minStepMs: 1, // simulated computes take no time; keep steps apart so time moves
      ...this.rankDefaults,
      ...opts,
    });
    this.ranks.set(id, rank);
    this.clocks.set(id, clock);
    if (start) rank.start();
    return rank;
  }

  get(id) {
    return this.ranks.get(id);
  }

  live() {
    return [...this.ranks.values()].filter((r) => !r.stopped);
  }

  leaders() {
    return this.live().filter((r) => r.role === 'leader');
  }

  leader() {
    const l = this.leaders();
    return l.length === 1 ? l[0] : null;
  }

  /** One leader, every other live rank a synced follower of it. */
  converged() {
    const leader = this.leader();
    if (!leader) return false;
    return this.live().every((r) => r === leader || (r.role === 'follower' && r.leaderId === leader.id));
  }

  /** converged(), no step in flight, and every rank holding the leader's version. */
  synced() {
    const leader = this.leader();
    return this.converged() && !leader.collect && this.live().every((r) => r.version === leader.version);
  }

  freeze(id) {
    this.clocks.get(id).freeze();
  }

  thaw(id) {
    this.clocks.get(id).thaw();
  }

  run(ms) {
    return this.clock.advance(ms);
  }

  until(predicate, maxMs = 60_000, stepMs = 10) {
    return this.clock.runUntil(predicate, maxMs, stepMs);
  }

  stopAll() {
    for (const r of this.ranks.values()) r.stop({ silent: true });
  }
}
