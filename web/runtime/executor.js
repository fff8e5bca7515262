// executor.js - the one contract of the JS executors.  Every backend runs a
// session compiled by C (rlx_compile / rlx_compile_train) through an object
// with these members; ./cpu.js (the wasm CPU session), ./webgpu.js and
// ./webgl.js implement it by extending Executor, and CompiledGraph
// (./webgraph.js) only ever talks to this interface.
//
//   backend                 'cpu' | 'webgpu' | 'webgl'
//   inputs                  [{ name, count, dtype: 'f32' | 'i32' }] as the plan reads them
//   params                  [{ name, count }]
//   outputCount             number of outputs
//   prepare()               -> Promise<this>: creates what run() needs (GPU
//                           buffers, pipelines; nothing on cpu / webgl, which
//                           are ready when made); idempotent, run() calls it
//   setInput(name, data)    writes input `name` (sync; exact element count)
//   setParam(name, data)    writes param `name` (sync); writeParam is the same
//   feed(name, data)        an input or a param by name
//   run(feeds?)             -> Promise<Float32Array[]>: `feeds` ({ name: data },
//                           a Map or [name, data] pairs) are fed first, then one
//                           run; resolves to the outputs of that run
//   runSync(feeds?)         -> Float32Array[]: the same, synchronously; only on
//                           backends that can (cpu, webgl): test with
//                           `typeof ex.runSync === 'function'`
//   output(i)               -> Float32Array: output i of the last run
//   readParam(name)         -> Promise<Float32Array>: the param's current values
//   readParamSync(name)     -> Float32Array: where possible (cpu, webgl)
//   profile({ repeat })     -> Promise<ProfileRow[]>: one run (repeat times per
//                           step where the backend can), timed per step:
//                           { index, op, node, key, ms } (+ backend extras),
//                           in plan order; ms per step
//   free()                  releases what the executor holds; idempotent
//
// Data: a Float32Array, an Int32Array or an Array of numbers.  An i32 input
// takes an Int32Array as it is and anything else through int32Values(): the
// one rule for float -> int (that of rlx_session_set_input: truncation,
// NaN or outside the int32 range -> -1).  Bad names and lengths throw an
// RlxError whose `detail` is the message without the executor's label
// ("set_input: 'x' holds 6 values, got 2"); failures that mean "use another
// backend" are Errors with a `reason` (WebGpuUnavailableError,
// WebGlUnavailableError).  checkExecutor() lists what an object lacks.
import { RlxError } from './loader.js';
import { STATUS } from './constants.js';

/** The members of the contract (runSync / readParamSync are optional). */
export const EXECUTOR_MEMBERS = Object.freeze(['backend', 'inputs', 'params', 'outputCount', 'prepare', 'setInput',
  'setParam', 'writeParam', 'feed', 'run', 'output', 'readParam', 'profile', 'free']);

/** What `x` lacks of the contract: [] when it conforms. */
export function checkExecutor(x) {
  const missing = [];
  for (const m of EXECUTOR_MEMBERS) {
    const v = x?.[m];
    const fn = !['backend', 'inputs', 'params', 'outputCount'].includes(m);
    if (fn ? typeof v !== 'function' : v === undefined) missing.push(m);
  }
  if (x && !['cpu', 'webgpu', 'webgl'].includes(x.backend)) missing.push('backend (cpu | webgpu | webgl)');
  return missing;
}

/** i32 input values: an Int32Array as it is; floats truncated, NaN / out of int32 range -> -1 (as rlx_session_set_input). */
export function int32Values(data) {
  if (data instanceof Int32Array) return data;
  return Int32Array.from(data, (v) => {
    const f = Math.fround(v);
    return f > -2147483648 && f < 2147483648 ? Math.trunc(f) : -1;
  });
}

/** f32 values: a Float32Array as it is, anything else converted. */
export function float32Values(data) {
  return data instanceof Float32Array ? data : Float32Array.from(data);
}

/** An RlxError "label: detail" that keeps the detail for callers that relabel it (statusName: rlx_status_name's by default). */
export function executorError(status, label, detail, statusName = undefined) {
  const err = new RlxError(status, `${label}: ${detail}`, statusName);
  err.detail = detail;
  return err;
}

/** [name, data] pairs of a feeds argument ({ name: data }, a Map or pairs); [] for nothing. */
function feedEntries(feeds) {
  if (feeds === undefined || feeds === null) return [];
  if (feeds instanceof Map || Array.isArray(feeds)) return [...feeds];
  if (typeof feeds === 'object') return Object.entries(feeds);
  throw new RlxError(STATUS.INVALID_ARG, `run: feeds must be an object { name: data }, a Map or [name, data] pairs, got ${typeof feeds}`);
}

/**
 * The shared half of every executor: lookup and length checks, the i32
 * rule, feeds, output(i), and the async forms of the sync fast paths.
 * Subclasses implement _checkLive(), _writeInput(i, values),
 * _writeParam(i, values), free(), profile() and either runSync() (then
 * run() and readParam() come from here) or run() and readParam().
 */
export class Executor {
  /** spec: { label, inputs: [{ name, count, dtype }], params: [{ name, count }], outputCount }. */
  constructor(backend, { label, inputs, params, outputCount }) {
    this.backend = backend;
    this.label = label;
    this.inputs = inputs.map((x) => ({ name: x.name, count: x.count, dtype: x.dtype === 'i32' ? 'i32' : 'f32' }));
    this.params = params.map((p) => ({ name: p.name, count: p.count }));
    this.outputCount = outputCount;
    this.outputs = null;
    this.inputSet = this.inputs.map(() => false);
  }

  _checkLive() {}

  _index(list, kind, name) {
    const i = list.findIndex((x) => x.name === name);
    if (i < 0) {
      throw executorError(STATUS.NOT_FOUND, this.label, `no ${kind} named '${name}' (${kind}s: ${list.map((x) => x.name).join(', ') || 'none'})`);
    }
    return i;
  }

  _length(kind, entry, data) {
    const n = data?.length;
    if (typeof n !== 'number' || n !== entry.count) {
      throw executorError(STATUS.INVALID_ARG, this.label, `set_${kind}: '${entry.name}' holds ${entry.count} values, got ${n ?? 'nothing'}`);
    }
  }

  /** Writes input `name`; i32 inputs through int32Values(). */
  setInput(name, data) {
    this._checkLive();
    const i = this._index(this.inputs, 'input', name);
    const inp = this.inputs[i];
    this._length('input', inp, data);
    this._writeInput(i, inp.dtype === 'i32' ? int32Values(data) : float32Values(data));
    this.inputSet[i] = true;
  }

  /** Writes param `name`. */
  setParam(name, data) {
    this._checkLive();
    const i = this._index(this.params, 'param', name);
    this._length('param', this.params[i], data);
    this._writeParam(i, float32Values(data));
  }

  writeParam(name, data) {
    this.setParam(name, data);
  }

  /** An input or a param by name. */
  feed(name, data) {
    if (this.params.some((p) => p.name === name)) this.setParam(name, data);
    else if (this.inputs.some((x) => x.name === name)) this.setInput(name, data);
    else {
      throw executorError(STATUS.NOT_FOUND, this.label, `no input or param named '${name}' (inputs: ${this.inputs.map((x) => x.name).join(', ') ||
        'none'}; params: ${this.params.map((p) => p.name).join(', ') || 'none'})`);
    }
  }

  /** Feeds every [name, data] of feeds (see run). */
  feedAll(feeds) {
    for (const [name, data] of feedEntries(feeds)) this.feed(name, data);
  }

  prepare() {
    return Promise.resolve(this);
  }

  /** One run: a Promise of the outputs (from runSync where the backend has it). */
  run(feeds) {
    try {
      return Promise.resolve(this.runSync(feeds));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** The param's current values: a Promise (from readParamSync where the backend has it). */
  readParam(name) {
    try {
      return Promise.resolve(this.readParamSync(name));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Output i of the last run (a Float32Array). */
  output(i) {
    if (!Number.isInteger(i) || i < 0 || i >= this.outputCount) {
      throw executorError(STATUS.NOT_FOUND, this.label, `output ${i} does not exist (${this.outputCount} outputs)`);
    }
    if (!this.outputs) throw executorError(STATUS.STATE, this.label, 'the graph has not run yet (await run() first)');
    return this.outputs[i];
  }
}
