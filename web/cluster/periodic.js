// periodic.js - periodic averaging (DiLoCo-style local SGD): instead of
// synchronising every step, each rank takes H optimizer steps of its own on
// its shard, starting from the cohort's parameters, and sends the change
// (params at the start - its params after H steps) as its bucket; the leader
// averages those deltas (any reduce / robust rule) and takes an OUTER step
// on them with heavy-ball or Nesterov momentum, then broadcasts the result.
// One round of the protocol is then H inner steps: sync traffic per sample
// falls by about H. Lockstep (H = 1, outer SGD with lr 1 and no momentum) is
// the same update as the plain protocol.
//
//   const local = new LocalSteps();                 // one per rank: keeps the inner optimizer's state
//   compute: (params, version, ctx) => local.run(params, {
//     H: 8, lr: 0.1, optimizer: 'sgd', step: ctx.step,
//     grads: (p, h) => bucketAt(p, ctx.step * 8 + h),  // {grads, loss, samples} or a Promise
//   }),
//   update: outerStep({ lr: 0.7, momentum: 0.9, nesterov: true }),
//
// Inner optimizers: 'sgd', 'momentum' (heavy ball 0.9) and 'adam' (0.9,
// 0.999, 1e-8, bias-corrected); their state lives on the rank's own copy and
// carries over from one round to the next. The outer momentum lives on the
// leader and starts from zero on a rank that takes over.
//
// syncModes() gives a Rank the compute and update of whichever mode the
// cohort's settings (sync, H, outerLr, outerMomentum, optimizer) say, read at
// every step, so a follower runs the leader's mode; collectMs() stretches the
// step deadline by H (a round computes H buckets).
import { sgd } from './reduce.js';
import { DEFAULT_POLICY } from './policy.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export const SYNC_MODES = Object.freeze(['lockstep', 'periodic']);
export const INNER_OPTIMIZERS = Object.freeze(['sgd', 'momentum', 'adam']);
export const DEFAULT_PERIODIC = Object.freeze({ H: 8, outerLr: 0.7, outerMomentum: 0.9, nesterov: true });

/** One rank's inner loop (see the top of the file). */
export class LocalSteps {
  constructor({ beta1 = 0.9, beta2 = 0.999, eps = 1e-8, momentum = 0.9 } = {}) {
    this.hyper = { beta1, beta2, eps, momentum };
    this.state = null; // { optimizer, n, m, v, t }
    this.lastLoss = null;
  }

  /**
   * H optimizer steps from params (not modified) -> { grads: params - local,
   * loss: mean loss of the steps, samples: their sum }. grads(p, h) gives
   * the bucket of inner step h at p; it may return a Promise.
   */
  async run(params, { H, lr, optimizer = 'sgd', grads }) {
    if (!Number.isInteger(H) || H < 1) throw new RlxError(STATUS.INVALID_ARG, 'LocalSteps: H must be a positive integer');
    if (!INNER_OPTIMIZERS.includes(optimizer)) throw new RlxError(STATUS.INVALID_ARG, `LocalSteps: optimizer must be one of ${INNER_OPTIMIZERS.join(', ')}`);
    const n = params.length;
    const local = Float32Array.from(params);
    const st = this._state(optimizer, n);
    let loss = 0;
    let samples = 0;
    for (let h = 0; h < H; h++) {
      let b = grads(local, h);
      if (b && typeof b.then === 'function') b = await b;
      const g = b.grads;
      if (!(g instanceof Float32Array) || g.length !== n) throw new RlxError(STATUS.INVALID_ARG, 'LocalSteps: grads must return a Float32Array of the model size');
      loss += b.loss * b.samples;
      samples += b.samples;
      this._apply(st, local, g, lr);
    }
    const delta = new Float32Array(n);
    for (let i = 0; i < n; i++) delta[i] = params[i] - local[i];
    this.lastLoss = loss / samples;
    return { grads: delta, loss: loss / samples, samples };
  }

  _state(optimizer, n) {
    const s = this.state;
    if (s && s.optimizer === optimizer && s.n === n) return s;
    this.state = {
      optimizer,
      n,
      m: optimizer === 'sgd' ? null : new Float32Array(n),
      v: optimizer === 'adam' ? new Float32Array(n) : null,
      t: 0,
    };
    return this.state;
  }

  _apply(st, p, g, lr) {
    const n = p.length;
    if (st.optimizer === 'sgd') {
      for (let i = 0; i < n; i++) p[i] -= lr * g[i];
    } else if (st.optimizer === 'momentum') {
      const mu = this.hyper.momentum;
      const m = st.m;
      for (let i = 0; i < n; i++) {
        m[i] = mu * m[i] + g[i];
        p[i] -= lr * m[i];
      }
    } else {
      const { beta1, beta2, eps } = this.hyper;
      st.t++;
      const c1 = 1 - beta1 ** st.t;
      const c2 = 1 - beta2 ** st.t;
      const { m, v } = st;
      for (let i = 0; i < n; i++) {
        m[i] = beta1 * m[i] + (1 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
        p[i] -= (lr * (m[i] / c1)) / (Math.sqrt(v[i] / c2) + eps);
      }
    }
  }
}

/**
 * The leader's outer optimizer as a protocol.js `update`: with the averaged
 * delta d, v <- momentum v + d, then params - lr (d + momentum v) (Nesterov)
 * or params - lr v (heavy ball). Options may be functions, read every call
 * (the cohort's settings can change under a running leader).
 */
export function outerStep({ lr = DEFAULT_PERIODIC.outerLr, momentum = DEFAULT_PERIODIC.outerMomentum, nesterov = DEFAULT_PERIODIC.nesterov } = {}) {
  let v = null;
  const read = (x) => (typeof x === 'function' ? x() : x);
  const fn = (params, delta) => {
    const n = params.length;
    if (!v || v.length !== n) v = new Float32Array(n);
    const a = read(lr);
    const mu = read(momentum);
    const nes = read(nesterov);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      v[i] = mu * v[i] + delta[i];
      out[i] = params[i] - a * (nes ? delta[i] + mu * v[i] : v[i]);
    }
    return out;
  };
  fn.reset = () => {
    v = null;
  };
  return fn;
}

/**
 * compute / update for a protocol.js Rank in lockstep or periodic mode:
 *   settings()                the cohort's settings in force (rank.settings)
 *   lr()                      the cohort's learning rate (rank.lr): SGD's, or the inner one
 *   bucketAt(p, dataStep, ctx) one bucket {grads, loss, samples} (or a Promise) on this
 *                             rank's shard for data step dataStep (lockstep: the step;
 *                             periodic: step * H + h, so the local steps see new data)
 */
export function syncModes({ settings, lr, bucketAt }) {
  const local = new LocalSteps();
  const d = DEFAULT_PERIODIC;
  const outer = outerStep({ lr: () => settings().outerLr ?? d.outerLr, momentum: () => settings().outerMomentum ?? d.outerMomentum, nesterov: true });
  const periodic = () => settings().sync === 'periodic';
  return {
    compute(params, _version, ctx) {
      if (!periodic()) return bucketAt(params, ctx.step, ctx);
      const s = settings();
      const H = Number.isInteger(s.H) && s.H > 0 ? s.H : d.H;
      const optimizer = INNER_OPTIMIZERS.includes(s.optimizer) ? s.optimizer : 'sgd';
      return local.run(params, { H, lr: lr(), optimizer, grads: (p, h) => bucketAt(p, ctx.step * H + h, ctx) });
    },
    update: (params, grad, info) => (periodic() ? outer(params, grad) : sgd(params, grad, info.lr)),
    local,
    outer,
  };
}

/** The step deadline for the cohort's settings: H local steps take about H times one. */
export function collectMs(settings, base = DEFAULT_POLICY.collectMs) {
  return settings?.sync === 'periodic' && Number.isInteger(settings.H) ? base * Math.max(1, settings.H) : base;
}
