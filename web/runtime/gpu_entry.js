// gpu_entry.js - the machinery behind the GPU paths of ./models.js (the
// MLP) and ./vision.js (VisionBench on 'webgpu' / 'webgl'): a check that
// the backend was initialized, a cache of compiled graphs keyed by shape
// and backend, one-at-a-time use of a WebGPU session (feeding and running
// are separate GPU calls, so two overlapping calls must not interleave), and
// errors that say why a GPU could not do the work, so a caller can fall back
// to the CPU.
//
// A compiled graph is rebuilt when the wasm instance or the GPU device
// changed (init_webgpu after a lost device), and dropped after any failure
// on the GPU (a lost device or context, an exceeded limit): the next call
// builds it again or reports why it cannot.
import { RlxError } from './loader.js';
import * as backends from './backends.js';
import { STATUS, STATUS_NAME } from './constants.js';

const LABEL = backends.BACKEND_LABEL;
/** The call that brings backend up again: `await init_webgpu()` / `await init_webgl()`. */
const initCall = (backend) => `await init_${backend}()`;

/** Whether init_webgpu ran (set by ./select.js); WebGL2 needs no init call. */
export const initTried = { webgpu: false, webgl: false };

/**
 * The runtime object of backend ({ device, executor } or { executor, canvas }),
 * or a clear error.  WebGPU needs `await init_webgpu()` first (reason
 * 'not-initialized'); WebGL2 initialises itself here (reason 'unavailable'
 * when it cannot).
 */
export function requireBackend(fn, rt, backend) {
  const gpu = backend === 'webgpu' ? backends.webgpuRuntime() : backends.webglRuntime(rt);
  if (gpu) return gpu;
  if (backend === 'webgpu' && !initTried.webgpu) {
    return fail(new RlxError(STATUS.STATE, `${fn}: ${LABEL[backend]} is not initialized: call \`${initCall(backend)}\` first ` +
      '(it resolves to true when the backend can run here)'), 'not-initialized');
  }
  const reason = backends.environment(rt)[backend].reason ?? `${LABEL[backend]} is not available here`;
  const hint = /lost/.test(reason) ? ` (\`${initCall(backend)}\` again may get a new one)` : '';
  return fail(new RlxError(STATUS.UNSUPPORTED, `${fn}: ${LABEL[backend]} cannot run here: ${reason}${hint}`),
    /lost/.test(reason) ? 'device-lost' : 'unavailable');
}

function fail(err, reason) {
  err.reason = reason;
  throw err;
}

/**
 * err (from compiling, feeding, running or reading back on backend) as an
 * RlxError "fn: <backend> ... : why".  `reason`: the executor's
 * ('device-lost', 'context-lost', 'limits', ...) or 'gpu-error'.
 */
export function gpuError(fn, backend, err) {
  if (err instanceof RlxError && err.message.startsWith(`${fn}:`)) return err;
  const message = err?.message ?? String(err);
  const status = err instanceof RlxError ? err.status : STATUS.UNSUPPORTED;
  const name = err instanceof RlxError ? err.statusName : STATUS_NAME[STATUS.UNSUPPORTED];
  const hint = err?.reason === 'context-lost' || err?.reason === 'device-lost'
    ? ` (\`${initCall(backend)}\` again gets a new ${backend === 'webgl' ? 'context' : 'device'})` : '';
  const wrapped = new RlxError(status, `${fn}: ${LABEL[backend]} could not run it: ${message}${hint}`, name);
  wrapped.reason = err?.reason ?? 'gpu-error';
  wrapped.cause = err;
  return wrapped;
}

/**
 * Compiled graphs by key, each with a queue so that uses of one graph never
 * overlap.  use() compiles on first use (build() returns a CompiledGraph for
 * the backend) and runs work(compiled): its value comes back as it is
 * (webgl: synchronously) or as a Promise (webgpu).
 */
export class SessionCache {
  constructor() {
    this.entries = new Map();
  }

  _entry(fn, rt, backend, key, build) {
    const gpu = requireBackend(fn, rt, backend);
    const token = backend === 'webgpu' ? gpu.device : gpu.canvas ?? gpu.executor;
    let entry = this.entries.get(key);
    if (entry && (entry.rt !== rt || entry.token !== token)) {
      this.drop(key);
      entry = null;
    }
    if (!entry) {
      let compiled;
      try {
        compiled = build();
      } catch (err) {
        throw gpuError(fn, backend, err);
      }
      entry = { rt, token, compiled, queue: Promise.resolve() };
      this.entries.set(key, entry);
    }
    return entry;
  }

  /** Synchronous use (webgl). */
  useSync(fn, rt, backend, key, build, work) {
    const entry = this._entry(fn, rt, backend, key, build);
    try {
      return work(entry.compiled);
    } catch (err) {
      if (this.entries.get(key) === entry) this.drop(key);
      throw gpuError(fn, backend, err);
    }
  }

  /** Asynchronous use (webgpu): one work() at a time per graph. */
  async use(fn, rt, backend, key, build, work) {
    const entry = this._entry(fn, rt, backend, key, build);
    const result = entry.queue.then(() => work(entry.compiled));
    entry.queue = result.then(() => {}, () => {});
    try {
      return await result;
    } catch (err) {
      if (this.entries.get(key) === entry) this.drop(key);
      throw gpuError(fn, backend, err);
    }
  }

  /** Frees one graph (after the uses queued on it). */
  drop(key) {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    entry.queue.then(() => entry.compiled.free());
  }

  /** Frees every graph. */
  clear() {
    for (const key of [...this.entries.keys()]) this.drop(key);
  }
}

/** Float32Array view of params split by sizes (in order). */
export function splitFlat(flat, sizes) {
  const f = flat instanceof Float32Array ? flat : Float32Array.from(flat);
  const parts = [];
  let at = 0;
  for (const n of sizes) {
    parts.push(f.subarray(at, at + n));
    at += n;
  }
  return parts;
}

/** Concatenates Float32Arrays (and numbers) into one. */
export function concatF32(parts) {
  const total = parts.reduce((n, p) => n + (typeof p === 'number' ? 1 : p.length), 0);
  const out = new Float32Array(total);
  let at = 0;
  for (const p of parts) {
    if (typeof p === 'number') out[at++] = p;
    else {
      out.set(p, at);
      at += p.length;
    }
  }
  return out;
}

/**
 * The MLP of the CPU entry points as a graph, compiled for backend:
 * y = relu(x W1 + b1) W2 + b2 ('forward', output y) or the gradients of
 * loss = sum (y - t)^2 ('grads', outputs [loss, dW1, db1, dW2, db2]).
 */
export function compileMlp(graph, kind, rows, inDim, hid, out, backend) {
  const g = graph;
  const x = g.input('x', [rows, inDim]);
  const w1 = g.param('w1', [inDim, hid]);
  const b1 = g.param('b1', [hid]);
  const w2 = g.param('w2', [hid, out]);
  const b2 = g.param('b2', [out]);
  const y = g.add(g.matmul(g.relu(g.add(g.matmul(x, w1), b1)), w2), b2);
  if (kind === 'forward') return g.compile_forward(y, backend);
  const t = g.input('t', [rows, out]);
  const d = g.sub(y, t);
  const loss = g.reduce_sum(g.mul(d, d), [0, 1]);
  return g.compile_backward(loss, [w1, b1, w2, b2], backend);
}
