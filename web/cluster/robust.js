// robust.js - a step's aggregate when a peer may send garbage: per-bucket
// norm clipping, a coordinate-wise robust mean, and the bookkeeping that
// excludes a peer which keeps sending rejected or outlying buckets.
//
//   const { grad, loss, samples, verdicts } = aggregate(buckets, paramCount,
//     { rule: 'trimmed', clip: 3, clipMax: 0, trim: 0.2 });
//
// Clipping: a bucket whose L2 norm exceeds clip x the median bucket norm of
// the step (clip > 0) or clipMax (> 0) is scaled down to that limit before it
// is combined. A bucket over `outlier` x the median (clip when it is on,
// else 10) is an outlier.
// Rules:
//   mean     the sample-weighted mean (as reduce.js weightedMean, after clipping)
//   trimmed  per coordinate: drop the k lowest and k highest values, average
//            the rest (k = max(1, floor(trim * n)) when n >= 3, else 0)
//   median   per coordinate: the median (the mean of the two middle values
//            for an even count)
// The robust rules weigh buckets equally (a peer could lie about its sample
// count); the reported loss takes the same rule over the buckets' losses.
//
// Direction: a sign-flipped bucket has a normal norm, so the robust rules
// also give each bucket's cosine with the coordinate-wise median of the
// OTHER buckets of the step (verdict.cos; leaving itself out matters: a
// bucket is always aligned with a center it is part of). One step says
// little: honest mini-batch buckets of mnist-mlp at batch 16 have a mean
// cosine of about +0.1 with a third of the steps below 0, a flipped one about
// -0.3. PeerGuard therefore keeps a running mean per peer (bias-corrected
// EMA, 0.02: about the last 50 steps) and, from 20 buckets on, calls a bucket
// an outlier while that mean is below minCos (-0.1).
//
// PeerGuard counts, per peer, the buckets in a row that were rejected
// (NaN / Infinity values or scales) or outliers; at `strikes` in a row the
// peer is excluded with a reason, and a good bucket resets its count. The
// leader leaves excluded ranks out of its steps and lists them (with the
// reason) on its params broadcasts, so every rank's roster can say why.
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export const RULES = Object.freeze(['mean', 'trimmed', 'median']);
export const DEFAULT_ROBUST = Object.freeze({ rule: 'mean', clip: 0, clipMax: 0, trim: 0.2, outlier: 10, minCos: -0.1, alpha: 0.02, minObs: 20, strikes: 5 });

/** Whether settings ask for anything beyond the plain mean (and so for a PeerGuard). */
export function robustOn(s) {
  return !!s && ((s.agg !== undefined && s.agg !== 'mean') || s.clip > 0 || s.clipMax > 0);
}

function norm(g) {
  let s = 0;
  for (let i = 0; i < g.length; i++) s += g[i] * g[i];
  return Math.sqrt(s);
}

function median(values) {
  const v = Float64Array.from(values).sort();
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** Number of values dropped at each end by the trimmed mean of n values. */
export function trimCount(n, trim = DEFAULT_ROBUST.trim) {
  if (n < 3) return 0;
  return Math.min(Math.floor((n - 1) / 2), Math.max(1, Math.floor(trim * n)));
}

/** The robust statistic of a sorted column. */
function central(col, rule, k) {
  const n = col.length;
  if (rule === 'median') {
    const m = n >> 1;
    return n % 2 ? col[m] : (col[m - 1] + col[m]) / 2;
  }
  let s = 0;
  for (let i = k; i < n - k; i++) s += col[i];
  return s / (n - 2 * k);
}

/** Sorts col ascending and applies the same moves to idx (insertion sort: n is a cohort). */
function sortSmall(col, idx) {
  for (let i = 1; i < col.length; i++) {
    const v = col[i];
    const t = idx[i];
    let j = i - 1;
    while (j >= 0 && col[j] > v) {
      col[j + 1] = col[j];
      idx[j + 1] = idx[j];
      j--;
    }
    col[j + 1] = v;
    idx[j + 1] = t;
  }
}

/** Median of the sorted column without its element at rank r. */
function medianWithout(col, r) {
  const m = col.length - 1;
  const at = (q) => (q < r ? col[q] : col[q + 1]);
  return m % 2 ? at((m - 1) >> 1) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

/**
 * buckets: [{from, grads, loss, samples}] (finite values). Returns
 * { grad: Float32Array, loss, samples, verdicts: [{from, norm, scale, outlier, cos?}] }
 * where scale is the clipping factor applied (1: none), outlier null or a
 * sentence, cos the leave-one-out cosine (robust rules, 3 buckets or more).
 */
export function aggregate(buckets, paramCount, opts = {}) {
  const { rule = 'mean', clip = 0, clipMax = 0, trim = DEFAULT_ROBUST.trim } = opts;
  const outlierAt = opts.outlier ?? (clip > 0 ? clip : DEFAULT_ROBUST.outlier);
  if (!RULES.includes(rule)) throw new RlxError(STATUS.INVALID_ARG, `aggregate: rule must be one of ${RULES.join(', ')}`);
  const n = buckets.length;
  if (n === 0) throw new RlxError(STATUS.INVALID_ARG, 'aggregate: no buckets');
  const norms = buckets.map((b) => norm(b.grads));
  const med = median(norms);
  let limit = Infinity;
  if (clip > 0) limit = clip * med;
  if (clipMax > 0) limit = Math.min(limit, clipMax);
  const verdicts = buckets.map((b, i) => {
    const scale = norms[i] > limit && norms[i] > 0 ? limit / norms[i] : 1;
    const outlier = norms[i] > outlierAt * med ? `bucket norm ${ratio(norms[i], med)} the median of the step` : null;
    return { from: b.from, norm: norms[i], scale, outlier };
  });
  const samples = buckets.reduce((s, b) => s + b.samples, 0);
  const acc = new Float64Array(paramCount);
  let loss;
  if (rule === 'mean') {
    let w = 0;
    loss = 0;
    buckets.forEach((b, i) => {
      const f = b.samples * verdicts[i].scale;
      const g = b.grads;
      for (let j = 0; j < paramCount; j++) acc[j] += f * g[j];
      w += b.samples;
      loss += b.samples * b.loss;
    });
    for (let j = 0; j < paramCount; j++) acc[j] /= w;
    loss /= w;
  } else {
    const k = trimCount(n, trim);
    const col = new Float64Array(n);
    const idx = new Int32Array(n);
    const scales = verdicts.map((v) => v.scale);
    const gs = buckets.map((b) => b.grads);
    const loo = n >= 3;
    const dot = new Float64Array(n); // bucket . median of the others
    const sq = new Float64Array(n); // |median of the others|^2
    for (let j = 0; j < paramCount; j++) {
      for (let i = 0; i < n; i++) {
        col[i] = scales[i] * gs[i][j];
        idx[i] = i;
      }
      sortSmall(col, idx);
      acc[j] = central(col, rule, k);
      if (loo) {
        for (let r = 0; r < n; r++) {
          const m = medianWithout(col, r);
          dot[idx[r]] += col[r] * m;
          sq[idx[r]] += m * m;
        }
      }
    }
    if (loo) {
      verdicts.forEach((v, i) => {
        const d = v.norm * v.scale * Math.sqrt(sq[i]);
        if (d > 0) v.cos = dot[i] / d;
      });
    }
    const losses = Float64Array.from(buckets, (b) => b.loss).sort();
    loss = central(losses, rule, k);
  }
  const grad = new Float32Array(paramCount);
  for (let j = 0; j < paramCount; j++) grad[j] = acc[j];
  return { grad, loss, samples, verdicts };
}

function ratio(a, b) {
  if (!(b > 0)) return 'above';
  const r = a / b;
  return `${r >= 1000 ? r.toExponential(1) : r.toFixed(1)}x`;
}

/** Strikes and exclusions of the peers of one leader (see the top of the file). */
export class PeerGuard {
  constructor({ strikes = DEFAULT_ROBUST.strikes, minCos = DEFAULT_ROBUST.minCos, alpha = DEFAULT_ROBUST.alpha, minObs = DEFAULT_ROBUST.minObs,
    what = 'buckets in a row rejected or outliers' } = {}) {
    this.strikes = strikes;
    this.what = what; // what the strikes count, for the reason
    this.minCos = minCos;
    this.alpha = alpha;
    this.minObs = minObs;
    this.count = new Map(); // id -> bad buckets in a row
    this.last = new Map(); // id -> the last reason
    this.align = new Map(); // id -> { ema, n }: running mean of the leave-one-out cosine
    this.excluded = new Map(); // id -> reason
  }

  /** What is wrong with one aggregate verdict of `from` ({outlier, cos}), or null. */
  verdict(v) {
    if (v.outlier) return v.outlier;
    if (typeof v.cos !== 'number' || !Number.isFinite(v.cos)) return null;
    const a = this.align.get(v.from) ?? { ema: 0, n: 0 };
    a.ema = (1 - this.alpha) * a.ema + this.alpha * v.cos;
    a.n++;
    this.align.set(v.from, a);
    const mean = a.ema / (1 - (1 - this.alpha) ** a.n);
    if (a.n >= this.minObs && mean < this.minCos) {
      return `buckets point away from the others' (mean cosine ${mean.toFixed(2)} over ${a.n} steps)`;
    }
    return null;
  }

  /** Running mean cosine of a peer's buckets with the others' (null before its first). */
  alignment(id) {
    const a = this.align.get(id);
    return a ? a.ema / (1 - (1 - this.alpha) ** a.n) : null;
  }

  /** Records one bucket of `from` at `step`: reason null (good) or why it was bad. Returns the exclusion reason when this excludes it. */
  judge(from, reason, step) {
    if (this.excluded.has(from)) return null;
    if (!reason) {
      this.count.delete(from);
      this.last.delete(from);
      return null;
    }
    const c = (this.count.get(from) ?? 0) + 1;
    this.count.set(from, c);
    this.last.set(from, reason);
    if (this.strikes > 0 && c >= this.strikes) {
      const why = `excluded at step ${step}: ${c} ${this.what} (last: ${reason})`;
      this.excluded.set(from, why);
      this.count.delete(from);
      return why;
    }
    return null;
  }

  isExcluded(id) {
    return this.excluded.has(id);
  }

  reasonFor(id) {
    return this.excluded.get(id) ?? null;
  }

  /** [{id, reason}] for a params broadcast. */
  list() {
    return [...this.excluded].map(([id, reason]) => ({ id, reason }));
  }

  /** Takes over the leader's list (a follower, or a rank that takes over). */
  adopt(list) {
    if (list.length === 0 && this.excluded.size === 0) return;
    this.excluded = new Map(list.map((e) => [e.id, e.reason]));
  }
}
