// compute.js - one rank's gradient bucket: the raw wasm export
// rlx_vision_grads(slug, batch, x, labels, params, grads, loss) (src/web/
// exports.c) called through the loaded module's memory helpers
// (runtime() of ../pkg/rlx_web.js, a loader.js Rlx), and the backend a rank
// resolves to.
//
//   await init();
//   const g = new VisionGrads(runtime(), vision_model_info('mnist-cnn'));
//   const { grads, loss } = g.run(x, labels, params);   // grads: a fresh Float32Array
//   g.free();
//
// The wasm buffers (x, labels, params, grads, loss) are allocated once per
// batch size and reused, so a step costs three copies in and one out. The
// gradients are those of the MEAN loss over the batch, so buckets of
// different sizes combine by their sample-weighted mean (reduce.js).

/** Gradient buckets of one vision model on the wasm CPU executor. */
export class VisionGrads {
  /** rt: a loader.js Rlx (runtime()); info: vision_model_info(slug) of rlx_web.js. */
  constructor(rt, info) {
    if (!rt || typeof rt.exports?.rlx_vision_grads !== 'function') {
      throw new Error('this rlx_web.wasm has no rlx_vision_grads export: rebuild it (make wasm)');
    }
    if (!info || typeof info.slug !== 'string' || !(info.param_flat_len > 0) || !(info.input_len > 0)) {
      throw new TypeError('VisionGrads needs the vision_model_info of the model');
    }
    this.rt = rt;
    this.info = info;
    this.slug = this.info.slug;
    this.paramCount = this.info.param_flat_len;
    this.inputLen = this.info.input_len;
    this.batch = 0;
    this._slugPtr = rt.strIn(this.slug);
    this._params = rt.alloc(4 * this.paramCount);
    this._grads = rt.alloc(4 * this.paramCount);
    this._loss = rt.alloc(4);
    this._x = 0;
    this._labels = 0;
  }

  _ensureBatch(batch) {
    if (batch === this.batch) return;
    this.rt.free(this._x);
    this.rt.free(this._labels);
    this._x = 0;
    this._labels = 0;
    this.batch = 0;
    this._x = this.rt.alloc(4 * batch * this.inputLen);
    this._labels = this.rt.alloc(4 * batch);
    this.batch = batch;
  }

  /**
   * Gradients of the mean softmax cross-entropy of (x, labels) at params:
   * { grads: Float32Array(paramCount), loss, samples: batch }.  x holds
   * batch * input_len values, labels batch class ids (Int32Array).
   */
  run(x, labels, params) {
    if (this._slugPtr === 0) throw new Error('VisionGrads: used after free()');
    const batch = labels.length;
    if (!Number.isInteger(batch) || batch < 1) throw new Error('VisionGrads.run: labels is empty');
    if (x.length !== batch * this.inputLen) {
      throw new Error(`VisionGrads.run: x has ${x.length} values, expected ${batch} * ${this.inputLen}`);
    }
    if (params.length !== this.paramCount) {
      throw new Error(`VisionGrads.run: params has ${params.length} values, ${this.slug} has ${this.paramCount}`);
    }
    const rt = this.rt;
    this._ensureBatch(batch);
    rt.writeF32(this._x, x);
    rt.writeI32(this._labels, labels instanceof Int32Array ? labels : Int32Array.from(labels));
    rt.writeF32(this._params, params);
    rt.check(rt.exports.rlx_vision_grads(this._slugPtr, batch, this._x, this._labels, this._params, this._grads, this._loss));
    return { grads: rt.readF32(this._grads, this.paramCount), loss: rt.readF32(this._loss, 1)[0], samples: batch };
  }

  free() {
    const rt = this.rt;
    for (const p of [this._slugPtr, this._params, this._grads, this._loss, this._x, this._labels]) rt.free(p);
    this._slugPtr = this._params = this._grads = this._loss = this._x = this._labels = 0;
    this.batch = 0;
  }
}

const LABEL = { cpu: 'CPU', webgpu: 'WebGPU', webgl: 'WebGL2' };
export const CPU_ONLY_REASON = 'the vision gradient entry point (rlx_vision_grads) runs on the CPU executor only: ' +
  'the GPU executors are not wired into the vision entry points yet';

/**
 * The backend a rank of `slug` trains on for a request ('auto', 'cpu',
 * 'webgpu', 'webgl'), resolved with select_backend of rlx_web.js (`rlx` is
 * that module, after init()), and the reason for any fallback:
 * { requested, backend: 'cpu', selected, fallback, candidates }.
 *   selected  what select_backend chose for the training graph (or null when
 *             it refused an explicit request)
 *   fallback  why the rank does not run on what was asked for (null when
 *             the CPU was asked for, or 'auto' found nothing better)
 * The buckets come from rlx_vision_grads, which only runs on the CPU: a GPU
 * that select_backend picked is reported as a fallback, never claimed.
 * Asking for a GPU backend initialises it first (init_webgpu / init_webgl).
 */
export async function resolveBackend(rlx, slug, request, { batch = 1 } = {}) {
  const requested = rlx.parse_backend(String(request ?? 'auto'));
  if (requested === 'auto' || requested === 'webgpu') await rlx.init_webgpu();
  if (requested === 'auto' || requested === 'webgl') await rlx.init_webgl();
  let sel;
  try {
    sel = rlx.select_backend(slug, requested, { batch, training: true });
  } catch (err) {
    return { requested, backend: 'cpu', selected: null, fallback: String(err?.message ?? err), candidates: [] };
  }
  try {
    sel.compiled?.free?.();
  } catch {
    // a compiled graph that will not free is no reason to refuse the backend answer
  }
  const skipped = (sel.fallbacks ?? []).map((f) => `${LABEL[f.backend] ?? f.backend}: ${f.reason}`);
  let fallback = null;
  if (sel.backend !== 'cpu') {
    fallback = `select_backend chose ${LABEL[sel.backend] ?? sel.backend}, but ${CPU_ONLY_REASON}`;
  } else if (requested !== 'cpu' && skipped.length) {
    fallback = skipped.join('; ');
  }
  return { requested, backend: 'cpu', selected: sel.backend, fallback, candidates: sel.candidates ?? [] };
}
