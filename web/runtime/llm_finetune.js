// llm_finetune.js - GgufModel.finetune(data, options): LoRA fine-tuning of a
// model loaded with loadGguf(source, { train: true }) (the training build
// of the module, rlx_llm_train.wasm: src/web_llm_train/exports.c over
// include/rlx_llm_train.h), run as `rlx finetune` (tools/cli_finetune.c)
// runs it: the same options and defaults, every option checked and the data
// read before the first step, the validation loss every evalEvery steps
// and after the last, progress after each step, a signal that stops after
// the current step and still returns the adapter, a loss that is not finite
// ending the run without one.  The result's adapter is llama.cpp's LoRA
// GGUF (f32), which loadGguf's options.lora, `rlx generate --lora` and
// llama.cpp load.
//
//   const model = await loadGguf(file, { train: true });
//   const r = await model.finetune('some text ...', { seq: 64, steps: 30, lr: 3e-3,
//     onProgress: ({ step, steps, loss, validLoss, tokensPerSecond, etaSeconds }) => ..., signal });
//   r.adapter;  // Uint8Array; r.losses, r.validLosses ([{ step, loss }]), r.steps, r.stopped
//
// Where the steps run is options.backend (default: the model's backend);
// BACKENDS below is the one place that maps it to a runner ({ step, eval,
// adapter, free }): 'cpu' runs them in the module, 'webgpu' and 'webgl' on
// the model's GPU (a model loaded with { train: true, backend: 'webgpu' |
// 'webgl' }: ./llm_finetune_webgpu.js, ./llm_finetune_webgl.js, with the
// whole step on the device and the loss read back).
import { RlxError, describe, optionsArg } from './loader.js';
import { seed as seedArg } from './args.js';
import { DATA_FORMAT, DATA_SPLIT, OPTIMIZER } from './constants.js';
import { STATUS, fail, functionOption, intOption, numberOption, now, yieldToEvents } from './llm_common.js';
import { SOURCE_KINDS, isSource, partArrays } from './llm_source.js';
import { loraArrays, readAdapters } from './llm_lora.js';
import { LlmFinetuneWebGpu } from './llm_finetune_webgpu.js';
import { LlmFinetuneWebGl } from './llm_finetune_webgl.js';

const OPTIMIZERS = ['adamw', 'sgd'];
const MAX_DATA = 1 << 30; // bytes of data

/** The run's defaults from the module (rlx_llm_finetune_defaults: `rlx finetune`'s). */
function defaults(m) {
  return m.scoped((t) => {
    const out = t.alloc(8 * 8), targets = t.alloc(4);
    m.call('rlx_llm_finetune_defaults', out, targets);
    const [rank, alpha, seq, batch, lr, seed, shuffle, validFraction] = m.f64(out, 8);
    return { rank, alpha, seq, batch, lr, seed, shuffle: !!shuffle, validFraction, targets: m.cstring(m.i32(targets, 1)[0]) };
  });
}

/** One data source as { bytes, format } (string or bytes: text; { text } or { jsonl }). */
function sourceArg(fn, what, v) {
  const bytesOf = (x) => (typeof x === 'string' ? new TextEncoder().encode(x)
    : x instanceof ArrayBuffer ? new Uint8Array(x)
      : ArrayBuffer.isView(x) ? new Uint8Array(x.buffer, x.byteOffset, x.byteLength) : null);
  let format = 'text', body = v;
  if (v && typeof v === 'object' && !ArrayBuffer.isView(v) && !(v instanceof ArrayBuffer)) {
    const keys = ['text', 'jsonl'].filter((k) => v[k] !== undefined);
    if (keys.length !== 1) throw fail(fn, `${what} must hold one of text or jsonl (a string or bytes), got ${describe(v)}`);
    format = keys[0];
    body = v[format];
    what = `${what}.${format}`;
  }
  const bytes = bytesOf(body);
  if (!bytes) throw fail(fn, `${what} must be a string or bytes (Uint8Array, ArrayBuffer), got ${describe(body)}`);
  if (bytes.length > MAX_DATA) throw fail(fn, `${what} has ${bytes.length} bytes; at most ${MAX_DATA}`);
  return { bytes, format, what };
}

/** data: the training source, and options' validation source when it has one. */
function dataArg(fn, data) {
  if (data === undefined || data === null) throw fail(fn, `data must be a string, bytes, or { text | jsonl, valid? }, got ${describe(data)}`);
  const train = sourceArg(fn, 'data', data);
  const valid = data && typeof data === 'object' && data.valid !== undefined ? sourceArg(fn, 'data.valid', data.valid) : null;
  return { train, valid };
}

/** The checked options with the run's defaults filled in. */
export function finetuneOptions(fn, model, options, d) {
  const o = optionsArg(fn, options);
  const known = ['rank', 'alpha', 'targets', 'seq', 'batch', 'steps', 'lr', 'optimizer', 'seed', 'shuffle', 'validFraction',
    'evalEvery', 'adapterIn', 'onProgress', 'signal', 'backend'];
  for (const k of Object.keys(o)) if (!known.includes(k)) throw fail(fn, `options.${k} is not an option (known: ${known.join(', ')})`);
  const r = {};
  r.backend = o.backend ?? (Object.hasOwn(BACKENDS, model.info.backend) ? model.info.backend : 'cpu');
  if (typeof r.backend !== 'string' || !Object.hasOwn(BACKENDS, r.backend)) {
    throw fail(fn, `options.backend must be ${Object.keys(BACKENDS).map((b) => `'${b}'`).join(', ')}, got ${describe(o.backend)}`);
  }
  r.rank = intOption(fn, 'options.rank', o.rank, 1, 1 << 16, d.rank);
  r.alpha = numberOption(fn, 'options.alpha', o.alpha, (v) => v >= 0 && v <= 1e6, 'a number from 0 to 1e6', d.alpha);
  if (o.targets === undefined) r.targets = d.targets;
  else if (typeof o.targets === 'string' && o.targets.length > 0 && o.targets.length < 512) r.targets = o.targets;
  else if (Array.isArray(o.targets) && o.targets.length > 0 && o.targets.every((x) => typeof x === 'string' && x && !x.includes(','))) r.targets = o.targets.join(',');
  else throw fail(fn, `options.targets must be a comma-separated string or an array of names (attn_q, ..., or all), got ${describe(o.targets)}`);
  r.seq = intOption(fn, 'options.seq', o.seq, 2, 1 << 20, Math.min(d.seq, model.info.nCtxTrain));
  if (r.seq > model.info.nCtxTrain) throw fail(fn, `options.seq ${r.seq} is above the model's context (${model.info.nCtxTrain})`);
  r.batch = intOption(fn, 'options.batch', o.batch, 1, 4096, d.batch);
  r.steps = intOption(fn, 'options.steps', o.steps, 1, 1e9, 0); // 0: one pass, once the data is read
  r.lr = numberOption(fn, 'options.lr', o.lr, (v) => v >= 0 && v <= 10, 'a number from 0 to 10', d.lr);
  r.optimizer = o.optimizer ?? 'adamw';
  if (!OPTIMIZERS.includes(r.optimizer)) throw fail(fn, `options.optimizer must be ${OPTIMIZERS.map((x) => `'${x}'`).join(' or ')}, got ${describe(o.optimizer)}`);
  try {
    r.seed = seedArg(fn, o.seed ?? d.seed);
  } catch (err) {
    err.message = err.message.replace(`${fn}: seed`, `${fn}: options.seed`);
    throw err;
  }
  if (o.shuffle !== undefined && typeof o.shuffle !== 'boolean') throw fail(fn, `options.shuffle must be true or false, got ${describe(o.shuffle)}`);
  r.shuffle = o.shuffle ?? d.shuffle;
  r.validFraction = numberOption(fn, 'options.validFraction', o.validFraction, (v) => v >= 0 && v < 1, 'a number from 0 to below 1', d.validFraction);
  r.evalEvery = intOption(fn, 'options.evalEvery', o.evalEvery, 1, 1e9, 0); // 0: ten times a run
  if (o.adapterIn !== undefined && !isSource(o.adapterIn)) throw fail(fn, `options.adapterIn must be ${SOURCE_KINDS}, got ${describe(o.adapterIn)}`);
  r.adapterIn = o.adapterIn;
  r.onProgress = functionOption(fn, 'options.onProgress', o.onProgress);
  if (o.signal !== undefined && (o.signal === null || typeof o.signal !== 'object' || typeof o.signal.aborted !== 'boolean')) {
    throw fail(fn, `options.signal must be an AbortSignal, got ${describe(o.signal)}`);
  }
  r.signal = o.signal;
  return r;
}

/** A library refusal as an RlxError naming fn and the argument it concerns. */
function refused(m, status, fn, what) {
  return new RlxError(status, `${fn}: ${what}: ${m.lastError()}`, m.cstring(m.call('rlx_status_name', status)));
}

/** Reads the windows (rlx_llm_data_new): { data, info } or a refusal naming data or data.valid. */
function readData(fn, m, handle, src, o) {
  return m.scoped((t) => {
    const put = (s) => { const p = t.alloc(s.bytes.length + 1); m.u8(p, s.bytes.length).set(s.bytes); return p; };
    const out = t.alloc(4);
    const tp = put(src.train), vp = src.valid ? put(src.valid) : 0;
    const st = m.call('rlx_llm_data_new', handle, tp, src.train.bytes.length, DATA_FORMAT[src.train.format], vp,
      src.valid ? src.valid.bytes.length : 0, src.valid ? DATA_FORMAT[src.valid.format] : 0, o.seq, o.shuffle ? 1 : 0,
      o.seed[0], o.seed[1], o.validFraction, out);
    if (st < 0) throw refused(m, st, fn, /the validation data/.test(m.lastError()) && src.valid ? src.valid.what : src.train.what);
    const data = m.i32(out, 1)[0] >>> 0;
    const info = t.alloc(8 * 11);
    m.check(m.call('rlx_llm_data_info', data, info), `${fn}: `);
    const v = m.f64(info, 11);
    return { data, info: { seq: v[0], windows: [v[1], v[2]], scored: [v[3], v[4]], tokens: [v[5], v[6]], examples: [v[9], v[10]] } };
  });
}

// ---- the CPU runner: the steps in the module --------------------------------
class CpuRunner {
  /** The fine-tuning object on the model (or, with adapterIn, on a second handle of the same weights holding it). */
  static async create(fn, model, o) {
    const m = model.mod;
    const r = new this(m, model.handle, o.seq); // this: CpuRunner, or GpuRunner through super.create
    try {
      if (o.adapterIn !== undefined) await r.openWithAdapter(fn, model, o.adapterIn);
      m.scoped((t) => {
        const out = t.alloc(4);
        const st = m.call('rlx_llm_finetune_new', r.handle, o.rank, o.alpha, t.str(o.targets).ptr, o.seq, OPTIMIZER[o.optimizer],
          o.lr, o.seed[0], o.seed[1], out);
        if (st < 0) {
          const msg = m.lastError();
          throw refused(m, st, fn, /target/.test(msg) ? 'options.targets' : /rank/.test(msg) ? 'options.rank' : /alpha/.test(msg) ? 'options.alpha' : 'options');
        }
        r.ft = m.i32(out, 1)[0] >>> 0;
      });
      if (o.adapterIn !== undefined) {
        const st = m.call('rlx_llm_finetune_load_lora', r.ft, 0);
        if (st < 0) throw refused(m, st, fn, 'options.adapterIn (give the rank, alpha and targets it was trained with)');
      }
      r.ids = m.alloc(4 * o.batch * o.seq), r.tg = m.alloc(4 * o.batch * o.seq), r.mask = m.alloc(4 * o.batch * o.seq);
      r.loss = m.alloc(4);
      return r;
    } catch (err) {
      r.free();
      throw err;
    }
  }

  constructor(m, handle, seq) {
    this.m = m;
    this.seq = seq;
    this.handle = handle; // the model handle the fine-tuning object uses
    this.own = 0;         // a second handle (adapterIn), freed with the runner
    this.adapterBuf = 0;
    this.ft = this.ids = this.tg = this.mask = this.loss = 0;
  }

  /** A second handle on the model's weights with adapterIn as its adapter 0 (rlx_llm_finetune_load_lora reads it there). */
  async openWithAdapter(fn, model, source) {
    const m = this.m;
    let read;
    try {
      read = await readAdapters(fn, m, [{ source, scale: 1 }]);
    } catch (err) {
      err.message = err.message.replace(`${fn}: options.lora[0]`, `${fn}: options.adapterIn`);
      throw err;
    }
    this.adapterBuf = read[0].ptr;
    m.scoped((t) => {
      const out = t.alloc(4);
      const st = m.call('rlx_llm_open', ...partArrays(m, t, model.parts), 1, 0, ...loraArrays(m, t, read, [{ scale: 1 }]), out);
      if (st < 0) throw refused(m, st, fn, `options.adapterIn (${read[0].name.slice(0, 200)})`);
      this.own = this.handle = m.i32(out, 1)[0] >>> 0;
    });
  }

  /** Windows first .. first + n - 1 of a split into the batch buffers; n - real of them masked out. */
  windows(data, split, first, n, real = n) {
    const m = this.m;
    m.check(m.call('rlx_llm_data_windows', data, split, first, n, this.ids, this.tg, this.mask), 'GgufModel.finetune: ');
    if (real < n) new Float32Array(m.memory.buffer, this.mask, n * this.seq).fill(0, real * this.seq);
  }

  run(name, n) {
    const m = this.m;
    const args = name === 'rlx_llm_finetune_eval' ? [this.loss, 0] : [this.loss];
    m.check(m.call(name, this.ft, this.ids, this.tg, this.mask, n, ...args), 'GgufModel.finetune: ');
    return new Float32Array(m.memory.buffer, this.loss, 1)[0];
  }

  step(n) { return this.run('rlx_llm_finetune_step', n); }
  eval(n) { return this.run('rlx_llm_finetune_eval', n); }
  maskSum(n) {
    let w = 0;
    for (const x of new Float32Array(this.m.memory.buffer, this.mask, n * this.seq)) w += x;
    return w;
  }

  /** The pairs as llama.cpp's LoRA GGUF (rlx_llm_finetune_adapter). */
  adapter() {
    const m = this.m;
    return m.scoped((t) => {
      const out = t.alloc(4), size = t.alloc(4);
      m.check(m.call('rlx_llm_finetune_adapter', this.ft, this.handle, out, size), 'GgufModel.finetune: writing the adapter: ');
      const p = m.i32(out, 1)[0] >>> 0, n = m.i32(size, 1)[0] >>> 0;
      const bytes = m.u8(p, n).slice();
      m.free(p);
      return bytes;
    });
  }

  free() {
    const m = this.m;
    if (m.dead) return;
    if (this.ft) m.call('rlx_llm_finetune_free', this.ft);
    if (this.own) m.call('rlx_llm_free', this.own);
    for (const p of [this.adapterBuf, this.ids, this.tg, this.mask, this.loss]) m.free(p);
    this.ft = this.own = this.adapterBuf = this.ids = this.tg = this.mask = this.loss = 0;
  }
}

// ---- the GPU runner: the steps on the model's GPU -----------------------------
// The CPU runner's fine-tuning object and windows, its steps run by an
// LlmFinetuneGpu; the pairs come back into the object for the adapter.
class GpuRunner extends CpuRunner {
  static async create(fn, model, o, api, Steps) {
    const m = model.mod;
    const exported = api === 'WebGPU' ? 'rlx_llm_finetune_webgpu' : 'rlx_llm_finetune_webgl';
    if (model.info.backend !== o.backend || typeof m.e[exported] !== 'function') {
      throw new RlxError(STATUS.UNSUPPORTED, `${fn}: options.backend '${o.backend}' needs the model loaded on ${api} with its ` +
        `training build: loadGguf(source, { train: true, backend: '${o.backend}' }) (this one is on '${model.info.backend}')`, 'unsupported');
    }
    const r = await super.create(fn, model, o);
    r.gpu = new Steps(m, r.ft, model.device, o.seq);
    return r;
  }

  batch(n) {
    const m = this.m, count = n * this.seq;
    return [m.i32(this.ids, count).slice(), m.i32(this.tg, count).slice(), new Float32Array(m.memory.buffer, this.mask, count).slice()];
  }

  step(n) { return this.gpu.step(...this.batch(n)); }
  eval(n) { return this.gpu.eval(...this.batch(n)); }

  async adapter() {
    await this.gpu.syncToHost();
    return super.adapter();
  }

  free() {
    this.gpu?.free();
    this.gpu = null;
    super.free();
  }
}

/** options.backend -> the runner that takes the steps (the one place a backend is chosen). */
const BACKENDS = {
  cpu: (fn, model, o) => CpuRunner.create(fn, model, o),
  webgpu: (fn, model, o) => GpuRunner.create(fn, model, o, 'WebGPU', LlmFinetuneWebGpu),
  webgl: (fn, model, o) => GpuRunner.create(fn, model, o, 'WebGL2', LlmFinetuneWebGl),
};

/** The mean loss over a split's windows, batch at a time (as `rlx finetune`'s validation). */
async function meanLoss(runner, data, split, n, batch) {
  let sum = 0, weight = 0;
  for (let first = 0; first < n; first += batch) {
    runner.windows(data, split, first, batch, Math.min(batch, n - first));
    const loss = await runner.eval(batch);
    const w = runner.maskSum(batch);
    sum += loss * w, weight += w;
  }
  return weight > 0 ? sum / weight : 0;
}

/** GgufModel.finetune (llm.js calls it with the model). */
export async function finetune(model, data, options) {
  const fn = 'GgufModel.finetune';
  model.live(fn);
  const m = model.mod;
  if (typeof m.e.rlx_llm_finetune_new !== 'function') {
    throw new RlxError(STATUS.STATE, `${fn}: this model was loaded without the training module; load it with loadGguf(source, { train: true })`, 'bad state');
  }
  if (model.training) throw new RlxError(STATUS.STATE, `${fn}: a fine-tuning is already running on this model`, 'bad state');
  const o = finetuneOptions(fn, model, options, defaults(m));
  const src = dataArg(fn, data);
  model.training = true;
  let runner = null, read = null;
  try {
    runner = await BACKENDS[o.backend](fn, model, o);
    read = readData(fn, m, runner.handle, src, o);
    const nTrain = read.info.windows[DATA_SPLIT.train], nValid = read.info.windows[DATA_SPLIT.valid];
    const steps = o.steps || Math.ceil(nTrain / o.batch);
    const every = o.evalEvery || (steps >= 10 ? Math.floor(steps / 10) : 1);
    const losses = [], validLosses = [];
    const t0 = now();
    let step = 0, validLoss = null;
    while (step < steps && !o.signal?.aborted && !model.freeLater) {
      runner.windows(read.data, DATA_SPLIT.train, step * o.batch, o.batch);
      const loss = await runner.step(o.batch);
      step++;
      if (!Number.isFinite(loss)) {
        throw new RlxError(STATUS.NUMERIC, `${fn}: the training loss is ${loss} at step ${step} (try a lower options.lr); no adapter made`, 'numeric error');
      }
      losses.push(loss);
      const stopping = step === steps || !!o.signal?.aborted;
      if (nValid > 0 && (step % every === 0 || stopping)) {
        validLoss = await meanLoss(runner, read.data, DATA_SPLIT.valid, nValid, o.batch);
        validLosses.push({ step, loss: validLoss });
      }
      const spent = (now() - t0) / 1000;
      o.onProgress?.({ step, steps, loss, validLoss, tokensPerSecond: spent > 0 ? (step * o.batch * o.seq) / spent : null,
        etaSeconds: (spent / step) * (steps - step) });
      await yieldToEvents(); // an abort, a Worker's stop message
    }
    if (model.freeLater) throw new RlxError(STATUS.STATE, `${fn}: the model was freed during the run`, 'bad state');
    if (nValid > 0 && step > 0 && validLosses.at(-1)?.step !== step) { // stopped between steps: the validation loss at the stop
      validLosses.push({ step, loss: await meanLoss(runner, read.data, DATA_SPLIT.valid, nValid, o.batch) });
    }
    return { adapter: await runner.adapter(), steps: step, losses, validLosses, stopped: step < steps };
  } finally {
    if (read && !m.dead) m.call('rlx_llm_data_free', read.data);
    runner?.free();
    model.training = false;
    if (model.freeLater && model.handle) model.release();
  }
}
