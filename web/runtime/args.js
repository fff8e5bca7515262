// args.js - the argument checks of the runtime's entry points: each throws
// an RlxError (INVALID_ARG) whose message names the function, the argument
// and what was expected, before anything reaches wasm.
import { fail } from './loader.js';
import { BACKEND_ORDER } from './backends.js';

/** The largest batch an entry point takes. */
export const MAX_BATCH = 65536;

export { fail };

export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an Array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object') return `a ${v.constructor?.name ?? 'object'}`;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

/** A Float32Array or an Array of numbers, with an exact length when given. */
export function floats(fn, name, v, len, why) {
  if (v instanceof Float32Array) {
    // fine as it is
  } else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (typeof v[i] !== 'number') throw fail(fn, `${name}[${i}] is ${describe(v[i])}, not a number`);
    }
  } else {
    throw fail(fn, `${name} must be a Float32Array or an Array of numbers, got ${describe(v)}`);
  }
  if (v.length === 0) throw fail(fn, `${name} is empty`);
  if (len !== undefined && v.length !== len) {
    throw fail(fn, `${name} has ${v.length} values, expected ${len}${why ? ` (${why})` : ''}`);
  }
  return v;
}

/** An integer in [min, max]. */
export function int(fn, name, v, min = 1, max = 0x7fffffff) {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    const range = max === 0x7fffffff ? `>= ${min}` : `in [${min}, ${max}]`;
    throw fail(fn, `${name} must be an integer ${range}, got ${describe(v)}`);
  }
  return v;
}

export function finite(fn, name, v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw fail(fn, `${name} must be a finite number, got ${describe(v)}`);
  return v;
}

/** A 64-bit seed as [lo, hi] 32-bit halves: a safe integer >= 0 or a BigInt in [0, 2^64). */
export function seed(fn, v) {
  if (typeof v === 'bigint') {
    if (v < 0n || v >= 1n << 64n) throw fail(fn, `seed must be in [0, 2^64), got ${v}`);
    return [Number(v & 0xffffffffn) >>> 0, Number(v >> 32n) >>> 0];
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw fail(fn, `seed must be an integer in [0, 2^53) or a BigInt, got ${describe(v)}`);
  }
  return [v % 0x100000000 >>> 0, Math.floor(v / 0x100000000) >>> 0];
}

/** Integer class ids in [0, classes) from an Int32Array, a Float32Array or an Array. */
export function labelList(fn, v, batch, classes) {
  if (!(v instanceof Int32Array || v instanceof Float32Array || Array.isArray(v))) {
    throw fail(fn, `labels must be an Int32Array, a Float32Array or an Array of integers, got ${describe(v)}`);
  }
  if (v.length !== batch) throw fail(fn, `labels has ${v.length} values, expected ${batch} (one per sample)`);
  for (let i = 0; i < v.length; i++) {
    const l = v[i];
    if (typeof l !== 'number' || !Number.isInteger(l) || l < 0 || l >= classes) {
      throw fail(fn, `labels[${i}] is ${describe(l)}; labels must be integers in [0, ${classes})`);
    }
  }
  return v instanceof Int32Array ? v : Int32Array.from(v);
}

/** rows = length / per_row, which must divide exactly. */
export function rowsOf(fn, name, v, perRow, what) {
  if (v.length % perRow !== 0) {
    throw fail(fn, `${name} has ${v.length} values, not a multiple of ${what} (${perRow})`);
  }
  return v.length / perRow;
}

export function str(fn, name, v) {
  if (typeof v !== 'string') throw fail(fn, `${name} must be a string, got ${describe(v)}`);
  return v;
}

/**
 * Checks backend ('cpu' | 'webgpu' | 'webgl', as ./backends.js orders them)
 * and runs body(): its result as it is on the CPU and WebGL2 (synchronous),
 * a Promise of it (or of its error) on WebGPU.
 */
export function onBackend(fn, backend, body) {
  if (!BACKEND_ORDER.includes(backend)) {
    throw fail(fn, `backend must be ${BACKEND_ORDER.map((b) => `'${b}'`).join(', ')}, got ${describe(backend)}`);
  }
  return backend === 'webgpu' ? new Promise((resolve) => resolve(body())) : body();
}
