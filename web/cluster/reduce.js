// reduce.js - the numeric pieces of a step: the sample-weighted mean of the
// buckets that arrived (accumulated in f64, rounded to f32 once), plain SGD,
// a byte-exact Float32Array copy, a finiteness check, and the FNV-1a hash of
// a parameter vector that every rank reports so divergence is visible.

/** FNV-1a over the 32-bit words of a Float32Array, as 8 hex digits. */
export function paramsHash(arr) {
  const words = new Uint32Array(arr.buffer, arr.byteOffset, arr.length);
  let h = 0x811c9dc5;
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    h = Math.imul(h ^ (w & 0xff), 0x01000193);
    h = Math.imul(h ^ ((w >>> 8) & 0xff), 0x01000193);
    h = Math.imul(h ^ ((w >>> 16) & 0xff), 0x01000193);
    h = Math.imul(h ^ (w >>> 24), 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** Byte-exact copy (element-wise copies may canonicalise NaN bit patterns). */
export function copyF32(src) {
  const out = new Float32Array(src.length);
  new Uint8Array(out.buffer).set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength));
  return out;
}

/** True when no element is NaN or +-Infinity. */
export function allFinite(arr) {
  for (let i = 0; i < arr.length; i++) if (!Number.isFinite(arr[i])) return false;
  return true;
}

/** Sample-weighted mean of buckets {grads, loss, samples}, accumulated in f64. */
export function weightedMean(buckets, paramCount) {
  const acc = new Float64Array(paramCount);
  let samples = 0;
  let loss = 0;
  for (const b of buckets) {
    samples += b.samples;
    loss += b.samples * b.loss;
    const g = b.grads;
    for (let i = 0; i < paramCount; i++) acc[i] += b.samples * g[i];
  }
  const grad = new Float32Array(paramCount);
  for (let i = 0; i < paramCount; i++) grad[i] = acc[i] / samples;
  return { grad, loss: loss / samples, samples };
}

/** params - lr * grad, as a new array. */
export function sgd(params, grad, lr) {
  const out = new Float32Array(params.length);
  for (let i = 0; i < params.length; i++) out[i] = params[i] - lr * grad[i];
  return out;
}
