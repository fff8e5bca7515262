// gpu_compare.mjs - the comparison of a GPU run with the CPU run of the same
// graph, shared by the WebGPU op-case tests in Node (tests/node/
// webgpu_ops.test.mjs, Dawn) and in Chromium (tests/browser/
// webgpu_ops.test.mjs); plain ES module, no Node APIs (it is also loaded by
// pages and Workers).
//
// A value matches when |gpu - cpu| <= tol * (1 + |cpu|); NaN only matches
// NaN and infinities must be exact.

// Tolerance per op family on |gpu - cpu| / (1 + |cpu|).  1e-4 unless a
// reason is written here.  Elementwise/layout: 1e-4 (exp/tanh/sigmoid use
// the CPU's polynomial; log/sqrt/pow use WGSL builtins, a few ulp; layout is
// exact).
export const DEFAULT_TOL = 1e-4;
export const TOLERANCE = {
  // pow: exp2(y log2|x|), the error of log2 grows with |y log2 x| (WGSL
  // promises 3 ulp outside [0.5, 2], an absolute 2^-21 inside).
  pow: 2e-4,
};

/** The tolerance of an op case whose output node is `op`. */
export function toleranceOf(op) {
  return TOLERANCE[op] ?? DEFAULT_TOL;
}

export function close(a, b, tol) {
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= tol * (1 + Math.abs(b));
}

/**
 * The worst mismatch of got against want at tolerance tol, or null when
 * every value matches: { index, got, want, err } (err is Infinity for a
 * NaN or infinity mismatch).
 */
export function worstMismatch(got, want, tol) {
  let worst = null;
  for (let k = 0; k < want.length; k++) {
    if (close(got[k], want[k], tol)) continue;
    const err = Number.isFinite(got[k] - want[k]) ? Math.abs(got[k] - want[k]) / (1 + Math.abs(want[k])) : Infinity;
    if (!worst || err > worst.err) worst = { index: k, got: got[k], want: want[k], err };
  }
  return worst;
}

/** The failure message for a mismatch found by worstMismatch. */
export function mismatchMessage(op, m, tol) {
  return `${op}: output ${m.index}: gpu ${m.got} vs cpu ${m.want} (err ${m.err.toExponential(3)} > ${tol})`;
}

/**
 * Why a WebGPU compile refused, when that refusal is allowed: { kind:
 * 'fused' } (refused by design: fused ops, since GPU plans are compiled
 * without fusion), { kind: 'pending', op, family } (the op is still listed in
 * src/webgpu/lower_pending_<family>.c; `pending` maps op name -> family), or
 * null (a real failure).
 */
export function allowedRefusal(status, message, pending) {
  if (status !== -6) return null;
  // fused ops (the language-model ops matmul_q, gather_q, attention_kv and rope's offset and mode 1 have
  // kernels: a refusal of theirs fails)
  if (/compiled without fusion/.test(message)) return { kind: 'fused' };
  const missing = /op (\w+) has no WebGPU kernel/.exec(message);
  if (missing && pending.has(missing[1])) return { kind: 'pending', op: missing[1], family: pending.get(missing[1]) };
  return null;
}

// Training parity: per step |gpu loss - cpu loss| <= TRAIN_TOL * (1 +
// |cpu loss|), and the same for every param after the last step.  Float sums
// in a different order (tiled GEMMs, split-K, tree reductions) drift a
// little over 20 SGD steps; 2e-3 leaves room for that, while a wrong kernel,
// a missed update or a stale input is off by far more from the first or
// second step on.
export const TRAIN_TOL = 2e-3;

// The vision models whose WebGPU training parity Chromium's page checks
// (tests/browser/train_gpu.test.mjs); Dawn in Node checks the others
// (tests/node/webgpu_ops.test.mjs). Both run web/runtime/webgpu.js on the
// same shaders; the convolution models are split between them.
export const WEBGPU_TRAIN_IN_CHROMIUM = Object.freeze(['mnist-cnn', 'resnet']);
