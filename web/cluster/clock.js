// clock.js - the time source the cluster code runs on: { now(), setTimeout(fn, ms),
// clearTimeout(id) }. realClock is the browser's / Node's; VirtualClock is a
// deterministic simulated one for tests and simulations (hundreds of ranks,
// minutes of protocol time, in well under a second); FreezableClock wraps a
// clock to model a suspended tab whose timers stop firing and then all fire
// late when it wakes up.
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const perf = globalThis.performance;

/** Wall-clock time and the host's timers. */
export const realClock = Object.freeze({
  now: () => perf.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (id) => globalThis.clearTimeout(id),
});

/** Lets pending promise continuations and immediate tasks run. */
function drainTasks() {
  return new Promise((resolve) => (typeof setImmediate === 'function' ? setImmediate(resolve) : globalThis.setTimeout(resolve, 0)));
}

/**
 * Simulated time. Timers only fire inside advance()/runUntil(); timers due at
 * the same instant run as one batch, after which pending microtasks and
 * immediate tasks (e.g. a compute that resolves "on a later task") drain
 * before time moves on.
 */
export class VirtualClock {
  constructor(start = 0) {
    this.t = start;
    this._heap = [];
    this._byId = new Map();
    this._seq = 0;
    this.fired = 0;
  }

  now() {
    return this.t;
  }

  setTimeout(fn, ms = 0) {
    const id = ++this._seq;
    const entry = { at: this.t + Math.max(0, Number(ms) || 0), seq: id, fn };
    this._byId.set(id, entry);
    this._push(entry);
    return id;
  }

  clearTimeout(id) {
    const entry = this._byId.get(id);
    if (entry) {
      entry.fn = null;
      this._byId.delete(id);
    }
  }

  /** Number of timers still scheduled. */
  get pending() {
    return this._byId.size;
  }

  /** Runs every timer due within the next `ms` of simulated time. */
  async advance(ms) {
    const end = this.t + Math.max(0, ms);
    await drainTasks();
    let sameInstant = 0;
    while (this._heap.length && this._heap[0].at <= end) {
      const at = this._heap[0].at;
      if (at === this.t && ++sameInstant > 100_000) {
        throw new RlxError(STATUS.STATE, `simulated time stuck at ${at} ms: timers keep rescheduling with no delay`);
      }
      if (at !== this.t) sameInstant = 0;
      this.t = at;
      while (this._heap.length && this._heap[0].at === at) {
        const entry = this._pop();
        if (!entry.fn) continue;
        this._byId.delete(entry.seq);
        const fn = entry.fn;
        entry.fn = null;
        this.fired++;
        fn();
      }
      await drainTasks();
      await drainTasks();
    }
    this.t = end;
  }

  /**
   * Advances in `stepMs` slices until predicate() holds; returns the
   * simulated time it took, or throws after `maxMs`.
   */
  async runUntil(predicate, maxMs = 60_000, stepMs = 10) {
    const start = this.t;
    while (!predicate()) {
      if (this.t - start >= maxMs) throw new RlxError(STATUS.STATE, `condition not reached within ${maxMs} ms of simulated time`);
      await this.advance(stepMs);
    }
    return this.t - start;
  }

  _push(entry) {
    const h = this._heap;
    h.push(entry);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  _pop() {
    const h = this._heap;
    const top = h[0];
    const last = h.pop();
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

function before(a, b) {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/**
 * A clock for one simulated tab: time keeps passing, but while frozen no
 * timer callback runs; on thaw() everything that came due runs at once, late,
 * in the order it was scheduled - what a browser does to a suspended tab.
 */
export class FreezableClock {
  constructor(base) {
    this.base = base;
    this.frozen = false;
    this._held = [];
  }

  now() {
    return this.base.now();
  }

  setTimeout(fn, ms) {
    const box = { fn, id: 0 };
    box.id = this.base.setTimeout(() => {
      if (!box.fn) return;
      if (this.frozen) this._held.push(box);
      else box.fn();
    }, ms);
    return box;
  }

  clearTimeout(box) {
    if (box) {
      box.fn = null;
      this.base.clearTimeout(box.id);
    }
  }

  freeze() {
    this.frozen = true;
  }

  thaw() {
    this.frozen = false;
    const held = this._held;
    this._held = [];
    for (const box of held) if (box.fn) box.fn();
  }
}
