// compute.js - one rank's gradient bucket on the backend it resolved to, and
// that resolution. Buckets come from VisionBench.grads(backend, ...) of
// ../runtime/vision.js (a Promise on webgpu): the gradients of the MEAN
// loss over the batch, so buckets of different sizes combine by their
// sample-weighted mean (reduce.js), whatever backend each rank runs on.
//
//   await init();                                   // ../runtime/instance.js
//   const r = await resolveBackend('mnist-cnn', 'auto', { batch: 32 });
//   const b = new Buckets(vision, 'mnist-cnn', r.backend, { onFallback });
//   const { grads, loss, samples } = await b.run(x, labels, params);
//   b.free();
//
// A GPU that fails mid-run (a lost device or context) is not retried
// forever: the rank moves to the CPU, calls onFallback(reason) so the roster
// can say so, and the bucket of that step is computed there.
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';
import { BACKEND_ORDER, BACKEND_LABEL as LABEL } from '../runtime/backends.js';
import { parse_backend, init_webgpu, init_webgl, select_backend } from '../runtime/select.js';

/** Gradient buckets of one vision model on one backend (cpu, webgpu or webgl). */
export class Buckets {
  /**
   * rlx: a module with VisionBench (../runtime/vision.js, or the
   * compatibility module ../pkg/rlx_web.js), after init(); backend: what
   * resolveBackend chose.
   */
  constructor(rlx, slug, backend = 'cpu', { onFallback = null } = {}) {
    if (!BACKEND_ORDER.includes(backend)) throw new RlxError(STATUS.INVALID_ARG, `Buckets: backend must be cpu, webgpu or webgl, got ${String(backend)}`);
    this.bench = new rlx.VisionBench(slug);
    this.info = this.bench.info();
    this.paramCount = this.info.param_flat_len;
    this.backend = backend;
    this.onFallback = onFallback;
  }

  /**
   * Gradients at params of (x, labels): { grads: Float32Array(paramCount),
   * loss, samples, backend }, directly on cpu and webgl, a Promise on webgpu.
   */
  run(x, labels, params) {
    if (!this.bench) throw new RlxError(STATUS.STATE, 'Buckets: used after free()');
    const backend = this.backend;
    let out;
    try {
      out = this.bench.grads(backend, x, labels, params);
    } catch (err) {
      return this._fallBack(err, x, labels, params);
    }
    if (out instanceof Promise) return out.then((o) => this._bucket(o, labels.length, backend), (err) => this._fallBack(err, x, labels, params));
    return this._bucket(out, labels.length, backend);
  }

  _bucket(out, samples, backend) {
    return { grads: out.subarray(1), loss: out[0], samples, backend };
  }

  _fallBack(err, x, labels, params) {
    if (this.backend === 'cpu' || !this.bench) throw err; // nothing to fall back to
    const reason = `${LABEL[this.backend]} failed during training (${String(err?.message ?? err)}); this rank moved to the CPU`;
    this.backend = 'cpu';
    try {
      this.onFallback?.(reason);
    } catch {
      // a UI hook that throws does not stop training
    }
    return this.run(x, labels, params);
  }

  free() {
    this.bench?.free();
    this.bench = null;
  }
}

/**
 * The backend a rank of `slug` trains on for a request ('auto', 'cpu',
 * 'webgpu', 'webgl'), with select_backend of ../runtime/select.js (after
 * init()): { requested, backend, fallback, candidates }.
 *   backend   what the training graph compiled for (the rank computes there)
 *   fallback  why it is not what was asked for (null when it is, or when
 *             'auto' found nothing to skip)
 * Asking for a GPU backend initialises it first (init_webgpu / init_webgl).
 * An explicit GPU request that cannot be met runs on the CPU with the reason.
 */
export async function resolveBackend(slug, request, { batch = 1 } = {}) {
  const requested = parse_backend(String(request ?? 'auto'));
  if (requested === 'auto' || requested === 'webgpu') await init_webgpu();
  if (requested === 'auto' || requested === 'webgl') await init_webgl();
  let sel;
  try {
    sel = select_backend(slug, requested, { batch, training: true });
  } catch (err) {
    return { requested, backend: 'cpu', fallback: String(err?.message ?? err), candidates: [] };
  }
  try {
    sel.compiled?.free?.();
  } catch {
    // a compiled graph that will not free is no reason to refuse the backend answer
  }
  const skipped = (sel.fallbacks ?? []).map((f) => `${LABEL[f.backend] ?? f.backend}: ${f.reason}`);
  const fallback = requested !== sel.backend && skipped.length ? skipped.join('; ') : null;
  return { requested, backend: sel.backend, fallback, candidates: sel.candidates ?? [] };
}
