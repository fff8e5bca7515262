// demo-task.js - the MLP demo's task, deterministic from a seed so the page
// (demo.js) and the tests (tests/browser/) compute the same numbers: fit
// t = 0.8 sin(3x) + 0.2 x on ROWS points of [-1, 1] with relu(x W1 + b1) W2 + b2.
// Pure JS, no RLX import; works in a page, a Worker and Node.

export const ROWS = 64;
export const IN = 1;
export const HID = 32;
export const OUT = 1;
export const LR = 0.001;

export function target(x) {
  return 0.8 * Math.sin(3 * x) + 0.2 * x;
}

/** A small seeded PRNG (mulberry32): numbers in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Inputs, targets and initial params for a seed (He-style uniform init). */
export function makeTask(seed = 1) {
  const rand = prng(seed);
  const uniform = (n, bound) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * bound);
  const x = Float32Array.from({ length: ROWS }, (_, i) => -1 + (2 * i) / (ROWS - 1));
  const t = Float32Array.from(x, target);
  return {
    dims: [IN, HID, OUT],
    lr: LR,
    x,
    t,
    w1: uniform(IN * HID, Math.sqrt(6 / IN)),
    b1: uniform(HID, 0.5),
    w2: uniform(HID * OUT, Math.sqrt(6 / HID)),
    b2: new Float32Array(OUT),
  };
}

/** Splits the flat [w1, b1, w2, b2] returned by mlp_train_step. */
export function splitParams(flat) {
  const a = IN * HID;
  const b = a + HID;
  const c = b + HID * OUT;
  return { w1: flat.subarray(0, a), b1: flat.subarray(a, b), w2: flat.subarray(b, c), b2: flat.subarray(c) };
}
