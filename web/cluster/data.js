// data.js - the training data of a tab-cluster rank: the Fashion-MNIST
// subset that `make` writes to web/data/ (format: tools/make_subset.c), or
// a synthetic set when the model does not take 28x28 images or the file is
// missing, and the per-step shard of it that one rank trains on.
//
//   const set = parseSubset(await (await fetch(url)).arrayBuffer());  // throws on a bad file
//   const set = syntheticSet(bench, 512, seed);                       // a VisionBench
//   const shards = new Shards(set, { seed: 1 });
//   const { x, labels } = shards.batch(step, index, count, batch);
//   const { accuracy, confusion } = await scoreSet(testSet, (x) => bench.forward('cpu', x, params));
//
// A set is { kind, source, count, inputLen, classes, sample(i, dst, at) ->
// label } (sample writes input i at dst[at..] and returns its label).  Shards shuffles the sample order once (seeded, so every rank
// holds the same permutation) and gives rank `index` of `count` the samples
// at positions index, index + count, index + 2 count, ...: the ranks of one
// step see disjoint samples, and a rank walks through its shard batch after
// batch as the steps go by (wrapping around at its end).
import { rng } from './sim.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const MAGIC = 0x44584c52; // "RLXD" read as a little-endian u32
const HEADER = 24;

/** The URL of a split of the subset, relative to this module (web/data/). */
export function subsetUrl(split = 'train') {
  return new URL(`../data/fashion-mnist-${split}.bin`, import.meta.url);
}

/** Whether the subset fits a model (28x28 grayscale, 784 values per sample, 10 classes). */
export function subsetFits(info) {
  return info.input_len === 784 && info.num_classes === 10;
}

/**
 * A subset file (ArrayBuffer or view) -> a set whose samples are the pixels
 * / 255 as f32.  Throws an RlxError (INVALID_ARG; UNSUPPORTED for another version) saying what is wrong with a bad file.
 */
export function parseSubset(data, source = 'Fashion-MNIST subset') {
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (bytes.length < HEADER) throw new RlxError(STATUS.INVALID_ARG, `${source}: ${bytes.length} bytes, shorter than the ${HEADER}-byte header`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u32 = (k) => dv.getUint32(4 * k, true);
  if (u32(0) !== MAGIC) throw new RlxError(STATUS.INVALID_ARG, `${source}: not an RLXD file (bad magic)`);
  if (u32(1) !== 1) throw new RlxError(STATUS.UNSUPPORTED, `${source}: unsupported version ${u32(1)}`);
  const count = u32(2);
  const rows = u32(3);
  const cols = u32(4);
  const classes = u32(5);
  const inputLen = rows * cols;
  if (count === 0 || inputLen === 0 || classes === 0) throw new RlxError(STATUS.INVALID_ARG, `${source}: empty (count ${count}, ${rows}x${cols}, ${classes} classes)`);
  const want = HEADER + count * (inputLen + 1);
  if (bytes.length !== want) throw new RlxError(STATUS.INVALID_ARG, `${source}: ${bytes.length} bytes, expected ${want} for ${count} samples of ${rows}x${cols}`);
  const pixels = bytes.subarray(HEADER, HEADER + count * inputLen);
  const labels = bytes.subarray(HEADER + count * inputLen);
  for (let i = 0; i < count; i++) {
    if (labels[i] >= classes) throw new RlxError(STATUS.INVALID_ARG, `${source}: label ${labels[i]} of sample ${i} is not below ${classes}`);
  }
  return {
    kind: 'fashion-mnist',
    source,
    count,
    inputLen,
    classes,
    sample(i, dst, at) {
      const px = pixels.subarray(i * inputLen, (i + 1) * inputLen);
      for (let k = 0; k < inputLen; k++) dst[at + k] = px[k] / 255;
      return labels[i];
    },
  };
}

/** A split of the subset, fetched and parsed; throws an RlxError saying what is wrong (a missing file is NOT_FOUND: run make). */
export async function loadSubset(split, fetchImpl = globalThis.fetch) {
  const url = subsetUrl(split);
  const res = await fetchImpl(url);
  if (!res.ok) throw new RlxError(STATUS.NOT_FOUND, `the Fashion-MNIST ${split} subset (web/data/fashion-mnist-${split}.bin) answered ${res.status}: run make`);
  return parseSubset(await res.arrayBuffer(), `web/data/fashion-mnist-${split}.bin`);
}

/**
 * Scores one batch of logits[rows * classes] against labels: adds each row
 * to confusion[label][predicted] (when given) and returns { correct,
 * predicted: Int32Array of the argmax classes }.
 */
export function scoreBatch(logits, labels, classes, confusion = null) {
  const predicted = new Int32Array(labels.length);
  let correct = 0;
  for (let k = 0; k < labels.length; k++) {
    let best = 0;
    for (let c = 1; c < classes; c++) if (logits[k * classes + c] > logits[k * classes + best]) best = c;
    predicted[k] = best;
    if (confusion) confusion[labels[k]][best]++;
    if (best === labels[k]) correct++;
  }
  return { correct, predicted };
}

/**
 * Scores a whole set with forward(x) -> logits (or a Promise of them), in
 * batches of `batch` samples (a last partial batch is left out); stops
 * early once stop() is true.  Returns { accuracy, evaluated, confusion
 * (rows: true class), perClass, predicted: the classes of the first `keep`
 * samples }.
 */
export async function scoreSet(set, forward, { batch = 100, keep = 0, stop = () => false } = {}) {
  const { classes, inputLen } = set;
  const confusion = Array.from({ length: classes }, () => new Array(classes).fill(0));
  const x = new Float32Array(batch * inputLen);
  const labels = new Int32Array(batch);
  const predicted = new Int32Array(Math.min(keep, set.count));
  let correct = 0, evaluated = 0;
  for (let start = 0; start + batch <= set.count && !stop(); start += batch) {
    for (let k = 0; k < batch; k++) labels[k] = set.sample(start + k, x, k * inputLen);
    const scored = scoreBatch(await forward(x), labels, classes, confusion);
    correct += scored.correct;
    evaluated += batch;
    if (start < predicted.length) predicted.set(scored.predicted.subarray(0, predicted.length - start), start);
  }
  const perClass = confusion.map((row, c) => {
    const n = row.reduce((a, b) => a + b, 0);
    return n ? row[c] / n : NaN;
  });
  return { accuracy: evaluated ? correct / evaluated : NaN, evaluated, confusion, perClass, predicted };
}

/**
 * `count` synthetic samples of a model, from a VisionBench's seeded
 * synthetic_batch: each class c has a random pattern P_c (inputs uniform in
 * [-1, 1)), and sample i of label l_i = (seed + i) mod 10 is P_{l_i} plus
 * uniform noise of half that amplitude, so there is something to learn and
 * the loss falls within a few steps.
 */
export function syntheticSet(bench, count, seed, source = 'synthetic') {
  const info = bench.info();
  const inputLen = info.input_len;
  const classes = info.num_classes;
  const patterns = bench.synthetic_batch(seed, classes).x;
  const { x, labels } = bench.synthetic_batch(seed + 1, count);
  for (let i = 0; i < count; i++) {
    const p = labels[i] * inputLen;
    const at = i * inputLen;
    for (let k = 0; k < inputLen; k++) x[at + k] = patterns[p + k] + 0.5 * x[at + k];
  }
  return {
    kind: 'synthetic',
    source,
    count,
    inputLen,
    classes,
    sample(i, dst, at) {
      dst.set(x.subarray(i * inputLen, (i + 1) * inputLen), at);
      return labels[i];
    },
  };
}

/** The per-step shards of a set (see the top of this file). */
export class Shards {
  constructor(set, { seed = 1 } = {}) {
    this.set = set;
    const order = Int32Array.from({ length: set.count }, (_, i) => i);
    const r = rng(seed);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      const t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    this.order = order;
  }

  /** Samples in the shard of rank `index` of `count`. */
  shardSize(index, count) {
    const n = this.set.count;
    return index < n ? Math.floor((n - 1 - index) / count) + 1 : 0;
  }

  /** Indices (into the set) of the batch rank `index` of `count` trains on at `step`. */
  indices(step, index, count, batch) {
    if (!(count >= 1 && index >= 0 && index < count)) throw new RlxError(STATUS.INVALID_ARG, `rank index ${index} of ${count}`);
    // A cohort larger than the set: ranks beyond it share samples (index mod n).
    const n = this.set.count;
    const c = Math.min(count, n);
    const i = index % c;
    const size = this.shardSize(i, c);
    const out = new Int32Array(batch);
    const start = (step * batch) % size;
    for (let k = 0; k < batch; k++) out[k] = this.order[i + c * ((start + k) % size)];
    return out;
  }

  /** { x: Float32Array(batch * inputLen), labels: Int32Array(batch), indices }. */
  batch(step, index, count, batch) {
    const idx = this.indices(step, index, count, batch);
    const { inputLen } = this.set;
    const x = new Float32Array(batch * inputLen);
    const labels = new Int32Array(batch);
    for (let k = 0; k < batch; k++) labels[k] = this.set.sample(idx[k], x, k * inputLen);
    return { x, labels, indices: idx };
  }
}

/**
 * The set a rank of `info` trains on: the subset when it fits the model and
 * loads, else a synthetic one; `why` says why it is synthetic (null for the
 * subset).  fetchImpl defaults to globalThis.fetch.
 */
export async function loadTrainingSet(info, bench, { url = subsetUrl('train'), synthetic = 512, seed = 1, fetchImpl = globalThis.fetch } = {}) {
  let why;
  if (!subsetFits(info)) {
    why = `${info.slug} takes [${info.input_dims.join(', ')}] inputs; the Fashion-MNIST subset is 28x28 grayscale`;
  } else {
    try {
      const res = await fetchImpl(url);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const set = parseSubset(await res.arrayBuffer(), 'Fashion-MNIST subset (web/data/fashion-mnist-train.bin)');
      if (set.inputLen !== info.input_len || set.classes !== info.num_classes) throw new Error('it does not fit the model');
      return { set, why: null };
    } catch (err) {
      why = `the Fashion-MNIST subset could not be loaded (${String(url).replace(/^.*\/(data\/)/, 'web/$1')}: ${err?.message ?? err}; run make)`;
    }
  }
  return { set: syntheticSet(bench, synthetic, seed, `synthetic, ${synthetic} samples`), why };
}
