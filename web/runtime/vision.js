// vision.js - the vision models of rlx_web.wasm: their catalogue
// (list_vision_models, vision_model_info), WebGraph bound to the live
// instance, and VisionBench, which runs one model's forward, gradients, SGD
// step and benchmark on a backend given as a parameter ('cpu' in wasm,
// 'webgpu', 'webgl'); the SDK's VisionModel and ../pkg/rlx_web.js's
// VisionBench (forward_cpu, grads_webgpu, ...) are built on it.
import { RlxError } from './loader.js';
import { WebGraph as GraphBase } from './webgraph.js';
import { SessionCache, splitFlat, concatF32, requireBackend } from './gpu_entry.js';
import { STATUS } from './constants.js';
import { live } from './instance.js';
import { MAX_BATCH, floats, int, finite, seed, labelList, rowsOf, str, onBackend } from './args.js';

/** Canonical slugs of the vision models. */
export function list_vision_models() {
  const rt = live();
  const n = rt.exports.rlx_vision_count();
  return Array.from({ length: n }, (_, i) => rt.cstring(rt.exports.rlx_vision_slug(i)));
}

let infoLayout = null; // [sizeof, offsets...] of rlx_vision_info, read once from wasm
const infoCache = new Map();

/** Metadata of a model by slug or alias. */
export function vision_model_info(slug) {
  const rt = live();
  str('vision_model_info', 'slug', slug);
  const cached = infoCache.get(slug);
  if (cached && cached.rt === rt) return structuredClone(cached.info);
  const e = rt.exports;
  if (!infoLayout) {
    infoLayout = rt.scoped((m) => {
      const n = e.rlx_vision_info_layout(0);
      const p = m.bytes(4 * n);
      e.rlx_vision_info_layout(p);
      return rt.readI32(p, n);
    });
  }
  const [size, oSlug, oTitle, oRank, oDims, oClasses, oNParams, oNames, oSizes, oRanks, oPDims, oInputLen,
    oFlatLen, oCpu, oWebgpu, oWebgl] = infoLayout;
  const info = rt.scoped((m) => {
    const p = m.bytes(size);
    rt.check(e.rlx_vision_info_get(m.str(slug), p));
    const i32 = (off) => rt.readI32(p + off, 1)[0];
    const u32 = (off) => i32(off) >>> 0;
    const nParams = i32(oNParams);
    const rank = i32(oRank);
    const paramRanks = rt.readI32(p + oRanks, nParams);
    return {
      slug: rt.cstring(u32(oSlug)),
      title: rt.cstring(u32(oTitle)),
      input_dims: Array.from(rt.readI32(p + oDims, rank)),
      num_classes: i32(oClasses),
      param_names: Array.from({ length: nParams }, (_, k) => rt.cstring(u32(oNames + 4 * k))),
      param_sizes: Array.from({ length: nParams }, (_, k) => u32(oSizes + 4 * k)),
      param_shapes: Array.from({ length: nParams }, (_, k) => Array.from(rt.readI32(p + oPDims + 16 * k, paramRanks[k]))),
      input_len: u32(oInputLen),
      param_flat_len: u32(oFlatLen),
      cpu_train: i32(oCpu) !== 0,
      webgpu_train: i32(oWebgpu) !== 0,
      webgl_train: i32(oWebgl) !== 0,
    };
  });
  infoCache.set(slug, { rt, info });
  return structuredClone(info);
}

/**
 * Forward, backward and SGD of one vision model on the CPU (synchronous),
 * WebGPU (Promises; after `await init_webgpu()`) or WebGL2 (synchronous;
 * it initialises itself on first use).  The GPU variants keep one compiled graph per
 * (batch, backend): a forward one and a training step (SGD inside the plan).

/**
 * A graph under construction (see ./webgraph.js): builders return
 * node ids; compile_forward / compile_backward compile it for a backend.
 */
export class WebGraph extends GraphBase {
  constructor() {
    super(live());
  }

  _visionParamNames(slug) {
    return vision_model_info(slug).param_names;
  }
}

/**
 * Forward, gradients, SGD step and benchmark of one vision model, each
 * taking the backend as its first argument: 'cpu' (synchronous), 'webgpu'
 * (a Promise, always; after `await init_webgpu()`) or 'webgl' (synchronous;
 * WebGL2 initialises itself on first use).  Errors name the entry point as
 * `VisionBench.<op>_<backend>` (VisionBench.grads_webgl, ...).  The GPU
 * backends keep one compiled graph per (batch, backend): a forward one, a
 * gradients one and a training step (SGD inside the plan).
 */
export class VisionBench {
  /** Throws on an unknown slug (the message lists the known ones). */
  constructor(slug) {
    this._info = vision_model_info(slug);
    this._slug = this._info.slug;
    this._freed = false;
    this._sessions = new SessionCache();
  }

  /** The runtime, or an error naming fn (the entry point, 'VisionBench.info') once freed. */
  _live(fn) {
    if (this._freed) throw new RlxError(STATUS.STATE, `${fn}: this VisionBench (${this._slug}) was freed`);
    return live();
  }

  get slug() { return this._slug; }

  /** A copy of the model's metadata. */
  info() {
    this._live('VisionBench.info');
    return structuredClone(this._info);
  }

  /** He-style uniform init from seed, biases zero: param_flat_len values. */
  init_params(seedValue) {
    const rt = this._live('VisionBench.init_params');
    const [lo, hi] = seed('VisionBench.init_params', seedValue);
    const len = this._info.param_flat_len;
    return rt.scoped((m) => {
      const p = m.bytes(4 * len);
      rt.check(rt.exports.rlx_vision_init_params(m.str(this._slug), lo, hi, p, len));
      return rt.readF32(p, len);
    });
  }

  /** Inputs uniform in [-1, 1) and labels in [0, num_classes) from seed. */
  synthetic_batch(seedValue, batch = 1) {
    const fn = 'VisionBench.synthetic_batch';
    const rt = this._live('VisionBench.synthetic_batch');
    const [lo, hi] = seed(fn, seedValue);
    int(fn, 'batch', batch, 1, MAX_BATCH);
    const xLen = batch * this._info.input_len;
    return rt.scoped((m) => {
      const x = m.bytes(4 * xLen);
      const labels = m.bytes(4 * batch);
      rt.check(rt.exports.rlx_vision_synthetic_batch(m.str(this._slug), lo, hi, batch, x, xLen, labels, batch));
      return { x: rt.readF32(x, xLen), labels: rt.readI32(labels, batch) };
    });
  }

  _batchOf(fn, x) {
    floats(fn, 'x', x);
    const batch = rowsOf(fn, 'x', x, this._info.input_len, `the input length of ${this._slug}`);
    return int(fn, 'batch (x.length / input_len)', batch, 1, MAX_BATCH);
  }

  /** Runs body(fn) for op on backend, fn naming the entry point; on WebGPU the result (or error) is a Promise. */
  _on(op, backend, body) {
    return onBackend(`VisionBench.${op}`, backend, () => body(`VisionBench.${op}_${backend}`));
  }

  /** Logits [batch, num_classes] for x [batch, ...input_dims]. */
  forward(backend, x, params) {
    return this._on('forward', backend, (fn) => (backend === 'cpu' ? this._forwardCpu(fn, x, params)
      : this._forwardGpu(fn, backend, x, params)));
  }

  /** One SGD step (on the device for a GPU): [loss (before the step), updated params...]. */
  train_step(backend, x, labels, params, lr) {
    return this._on('train_step', backend, (fn) => (backend === 'cpu' ? this._trainCpu(fn, x, labels, params, lr)
      : this._trainGpu(fn, backend, x, labels, params, lr)));
  }

  /**
   * Gradients of the mean softmax cross-entropy at params (no update):
   * [loss, dL/dparams... in the flat order of init_params]: 1 + param_flat_len values.
   */
  grads(backend, x, labels, params) {
    return this._on('grads', backend, (fn) => (backend === 'cpu' ? this._gradsCpu(fn, x, labels, params)
      : this._gradsGpu(fn, backend, x, labels, params)));
  }

  /**
   * `steps` SGD steps on one synthetic batch (params and batch from seed),
   * all inside wasm or, on a GPU, with everything resident on the device:
   * [initial_loss, final_loss, steps_per_sec], where the losses are those of
   * the first and the last step (each before its update).
   */
  bench(backend, steps, seedValue, lr, batch = 1) {
    return this._on('bench', backend, (fn) => (backend === 'cpu' ? this._benchCpu(fn, steps, seedValue, lr, batch)
      : this._benchGpu(fn, backend, steps, seedValue, lr, batch)));
  }

  // ---- on the CPU (in wasm) ------------------------------------------------------------

  _forwardCpu(fn, x, params) {
    const rt = this._live(fn);
    const batch = this._batchOf(fn, x);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    const len = batch * this._info.num_classes;
    return rt.scoped((m) => {
      const out = m.bytes(4 * len);
      rt.check(rt.exports.rlx_vision_forward(m.str(this._slug), batch, m.f32(x), m.f32(params), out));
      return rt.readF32(out, len);
    });
  }

  _trainCpu(fn, x, labels, params, lr) {
    const rt = this._live(fn);
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    const len = this._info.param_flat_len;
    floats(fn, 'params', params, len, `param_flat_len of ${this._slug}`);
    finite(fn, 'lr', lr);
    return rt.scoped((m) => {
      const out = m.bytes(4 * (1 + len)); // loss, then the params updated in place
      rt.writeF32(out + 4, params);
      rt.check(rt.exports.rlx_vision_train_step(m.str(this._slug), batch, m.f32(x), m.i32(ids), out + 4, lr, out));
      return rt.readF32(out, 1 + len);
    });
  }

  _gradsCpu(fn, x, labels, params) {
    const rt = this._live(fn);
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    const len = this._info.param_flat_len;
    floats(fn, 'params', params, len, `param_flat_len of ${this._slug}`);
    return rt.scoped((m) => {
      const out = m.bytes(4 * (1 + len)); // loss, then the gradients
      rt.check(rt.exports.rlx_vision_grads(m.str(this._slug), batch, m.f32(x), m.i32(ids), m.f32(params), out + 4, out));
      return rt.readF32(out, 1 + len);
    });
  }

  _benchCpu(fn, steps, seedValue, lr, batch) {
    const rt = this._live(fn);
    int(fn, 'steps', steps, 1, 1e9);
    const [lo, hi] = seed(fn, seedValue);
    finite(fn, 'lr', lr);
    int(fn, 'batch', batch, 1, MAX_BATCH);
    const e = rt.exports;
    const info = this._info;
    return rt.scoped((m) => {
      const slug = m.str(this._slug);
      const xLen = batch * info.input_len;
      const x = m.bytes(4 * xLen);
      const labels = m.bytes(4 * batch);
      const params = m.bytes(4 * info.param_flat_len);
      const loss = m.bytes(4);
      rt.check(e.rlx_vision_init_params(slug, lo, hi, params, info.param_flat_len));
      rt.check(e.rlx_vision_synthetic_batch(slug, lo, hi, batch, x, xLen, labels, batch));
      let first = NaN;
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) {
        rt.check(e.rlx_vision_train_step(slug, batch, x, labels, params, lr, loss));
        if (i === 0) first = rt.readF32(loss, 1)[0];
      }
      const seconds = Math.max((performance.now() - t0) / 1000, 1e-9);
      return Float32Array.of(first, rt.readF32(loss, 1)[0], steps / seconds);
    });
  }

  // ---- on the GPU ------------------------------------------------------------------

  /** The cached forward or training graph of this model for (batch, backend), compiled on first use. */
  _gpu(fn, backend, kind, batch, work) {
    const rt = live();
    const build = () => {
      const g = new WebGraph();
      try {
        const m = g.add_vision(this._slug, batch);
        if (kind === 'forward') return g.compile_forward(m.logits, backend);
        if (kind === 'grads') return g.compile_backward(m.loss, m.params, backend);
        return g.compile_train(m.loss, m.params, { kind: 'sgd', lr: 0.01 }, backend);
      } finally {
        g.free();
      }
    };
    const key = `${kind}/${batch}/${backend}`;
    return backend === 'webgl' ? this._sessions.useSync(fn, rt, backend, key, build, work)
      : this._sessions.use(fn, rt, backend, key, build, work);
  }

  _feedParams(c, params) {
    const parts = splitFlat(params, this._info.param_sizes);
    this._info.param_names.forEach((name, k) => c.feed(name, parts[k]));
  }

  _forwardGpu(fn, backend, x, params) {
    this._live(fn);
    const batch = this._batchOf(fn, x);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    const feed = (c) => {
      this._feedParams(c, params);
      c.feed('x', x);
    };
    if (backend === 'webgl') return this._gpu(fn, backend, 'forward', batch, (c) => { feed(c); c.run(); return c.output(0); });
    return this._gpu(fn, backend, 'forward', batch, async (c) => { feed(c); await c.run(); return c.output(0); });
  }

  _trainGpu(fn, backend, x, labels, params, lr) {
    this._live(fn);
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    finite(fn, 'lr', lr);
    const names = this._info.param_names;
    const feed = (c) => {
      this._feedParams(c, params);
      c.set_lr(lr);
      c.feed('x', x);
      c.feed('labels', ids);
    };
    if (backend === 'webgl') {
      return this._gpu(fn, backend, 'train', batch, (c) => {
        feed(c);
        c.run();
        return concatF32([c.output(0)[0], ...names.map((n) => c.read_param(n))]);
      });
    }
    return this._gpu(fn, backend, 'train', batch, async (c) => {
      feed(c);
      await c.run();
      const loss = c.output(0)[0];
      return concatF32([loss, ...await Promise.all(names.map((n) => c.read_param(n)))]);
    });
  }

  _gradsGpu(fn, backend, x, labels, params) {
    this._live(fn);
    const batch = this._batchOf(fn, x);
    const ids = labelList(fn, labels, batch, this._info.num_classes);
    floats(fn, 'params', params, this._info.param_flat_len, `param_flat_len of ${this._slug}`);
    const n = this._info.param_names.length;
    const feed = (c) => {
      this._feedParams(c, params);
      c.feed('x', x);
      c.feed('labels', ids);
    };
    // outputs: [loss, dL/dp for every param in order]
    const gather = (c) => concatF32(Array.from({ length: n + 1 }, (_, k) => c.output(k)));
    if (backend === 'webgl') return this._gpu(fn, backend, 'grads', batch, (c) => { feed(c); c.run(); return gather(c); });
    return this._gpu(fn, backend, 'grads', batch, async (c) => { feed(c); await c.run(); return gather(c); });
  }

  /**
   * bench on a GPU: params and batch set once, then `steps` training
   * steps with everything on the device.  Nothing is allocated before the
   * backend is known to run here and the graph for this batch compiled (the
   * executor checks the device's limits): params and batch are made in feed().
   */
  _benchGpu(fn, backend, steps, seedValue, lr, batch) {
    const rt = this._live(fn);
    int(fn, 'steps', steps, 1, 1e9);
    seed(fn, seedValue);
    finite(fn, 'lr', lr);
    int(fn, 'batch', batch, 1, MAX_BATCH);
    requireBackend(fn, rt, backend);
    const feed = (c) => {
      const params = this.init_params(seedValue);
      const { x, labels } = this.synthetic_batch(seedValue, batch);
      this._feedParams(c, params);
      c.set_lr(lr);
      c.feed('x', x);
      c.feed('labels', labels);
    };
    const result = (first, last, t0) => Float32Array.of(first, last, steps / Math.max((performance.now() - t0) / 1000, 1e-9));
    if (backend === 'webgl') {
      return this._gpu(fn, backend, 'train', batch, (c) => {
        feed(c);
        let first = NaN;
        const t0 = performance.now();
        for (let i = 0; i < steps; i++) {
          c.run();
          if (i === 0) first = c.output(0)[0];
        }
        return result(first, c.output(0)[0], t0);
      });
    }
    return this._gpu(fn, backend, 'train', batch, async (c) => {
      feed(c);
      await c.prepare(); // pipelines and buffers before the clock starts
      let first = NaN;
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) {
        await c.run();
        if (i === 0) first = c.output(0)[0];
      }
      return result(first, c.output(0)[0], t0);
    });
  }

  /** Frees the GPU graphs and marks the handle unusable (the CPU sessions stay cached in C). */
  free() {
    this._sessions.clear();
    this._freed = true;
  }
}
