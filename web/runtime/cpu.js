// cpu.js - the CPU executor: a session compiled for device 'cpu', run by the
// C executor inside wasm, behind the contract of ./executor.js.  Everything
// is synchronous (runSync, readParamSync); run() and readParam() are the
// Promise forms.
//
//   import { CpuExecutor } from './runtime/cpu.js';
//   const ex = new CpuExecutor(rlx, sessionPtr);       // rlx: the loader's Rlx
//   const [y] = ex.runSync({ x, w });                   // or: await ex.run({ x, w })
//   ex.readParamSync('w'); ex.free();
//
// The session belongs to whoever compiled it unless { owns: true }: free()
// then frees it too (CompiledGraph frees its session itself).
import { Executor, executorError } from './executor.js';
import { STATUS } from './constants.js';

export class CpuExecutor extends Executor {
  constructor(rt, ptr, { owns = false } = {}) {
    const e = rt.exports;
    if (!ptr) throw new TypeError('CpuExecutor: no session pointer');
    const inputs = Array.from({ length: e.rlx_session_input_count(ptr) }, (_, i) => rt.scoped((t) => {
      const dims = t.bytes(32);
      const rank = e.rlx_session_input_shape(ptr, i, dims);
      const count = Array.from(rt.readI32(dims, Math.max(rank, 0))).reduce((a, b) => a * b, 1);
      return { name: rt.cstring(e.rlx_session_input_name(ptr, i)), count, dtype: e.rlx_session_input_dtype(ptr, i) === 1 ? 'i32' : 'f32' };
    }));
    const params = Array.from({ length: e.rlx_session_param_count(ptr) }, (_, i) => ({
      name: rt.cstring(e.rlx_session_param_name(ptr, i)), count: e.rlx_session_param_len(ptr, i) >>> 0,
    }));
    super('cpu', { label: 'CPU session', inputs, params, outputCount: e.rlx_session_output_count(ptr) });
    this.rt = rt;
    this.ptr = ptr;
    this.owns = owns;
  }

  _checkLive() {
    if (!this.ptr) throw executorError(STATUS.STATE, this.label, 'already freed');
  }

  /** status < 0: an RlxError carrying the library's message. */
  _status(status) {
    if (status < 0) throw executorError(status, this.label, this.rt.lastError(), this.rt.statusName(status));
    return status;
  }

  _writeInput(i, values) {
    const { rt } = this;
    const e = rt.exports;
    const name = this.inputs[i].name;
    this._status(rt.scoped((t) => (values instanceof Int32Array
      ? e.rlx_session_set_input_i32(this.ptr, t.str(name), t.i32(values), values.length)
      : e.rlx_session_set_input(this.ptr, t.str(name), t.f32(values), values.length))));
  }

  _writeParam(i, values) {
    const { rt } = this;
    const name = this.params[i].name;
    this._status(rt.scoped((t) => rt.exports.rlx_session_set_param(this.ptr, t.str(name), t.f32(values), values.length)));
  }

  /** One run, synchronously: the outputs (copies). */
  runSync(feeds) {
    this._checkLive();
    this.feedAll(feeds);
    this._status(this.rt.exports.rlx_session_run(this.ptr));
    this.outputs = Array.from({ length: this.outputCount }, (_, i) => this._read(i));
    return this.outputs;
  }

  _read(i) {
    const { rt } = this;
    const len = rt.exports.rlx_session_output_len(this.ptr, i) >>> 0;
    return rt.scoped((t) => {
      const buf = t.bytes(4 * Math.max(len, 1));
      this._status(rt.exports.rlx_session_read_output(this.ptr, i, buf, len));
      return rt.readF32(buf, len);
    });
  }

  /** Output i of the last run (before any run: what the session holds). */
  output(i) {
    if (!this.outputs && Number.isInteger(i) && i >= 0 && i < this.outputCount) {
      this._checkLive();
      return this._read(i);
    }
    return super.output(i);
  }

  readParamSync(name) {
    this._checkLive();
    const p = this.params[this._index(this.params, 'param', name)];
    const { rt } = this;
    return rt.scoped((t) => {
      const buf = t.bytes(4 * Math.max(p.count, 1));
      this._status(rt.exports.rlx_session_get_param(this.ptr, t.str(name), buf, p.count));
      return rt.readF32(buf, p.count);
    });
  }

  /** The C executor runs the plan as one step here: one row, the whole run timed (ms per run). */
  profileSync({ repeat = 1 } = {}) {
    this._checkLive();
    const t0 = performance.now();
    for (let r = 0; r < repeat; r++) this.runSync();
    const ms = (performance.now() - t0) / repeat;
    return [{ index: 0, op: 'session', node: -1, key: 'cpu', ms, steps: this.rt.exports.rlx_session_step_count?.(this.ptr) ?? 0 }];
  }

  profile(opts) {
    try {
      return Promise.resolve(this.profileSync(opts));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  free() {
    if (!this.ptr) return;
    if (this.owns) this.rt.exports.rlx_session_free(this.ptr);
    this.ptr = 0;
    this.outputs = null;
  }
}
