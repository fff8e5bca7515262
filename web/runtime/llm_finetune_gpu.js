// llm_finetune_gpu.js - what LoRA fine-tuning on the GPUs shares
// (./llm_finetune_webgpu.js, ./llm_finetune_webgl.js): a fine-tuning
// object of a GPU build of the training module (web/pkg/rlx_llm_train_gpu.wasm
// or rlx_llm_train_webgl.wasm: rlx_llm_train.wasm's exports plus
// src/web_llm_train_gpu/) whose training step and loss are compiled for the
// device (rlx_llm_finetune_compile) and run there by the backend's
// executor: the model's weights, the adapter pairs and the optimizer state
// live on the device; a step writes the windows, runs the plan (backward
// and optimizer included) and reads back the loss only.  The windows are
// checked and written by C (rlx_llm_finetune_windows: the CPU step's
// refusals); sessions are compiled per number of windows on first use.
// The C object's own pairs are not updated by device steps: readPairs()
// reads them from the device, syncToHost() writes them into the object
// (for rlx_llm_finetune_adapter or a CPU step after it); the optimizer
// state stays on the device.  grads() runs the loss and the pairs'
// gradients without an update, at pairs the caller gives (the cluster's
// ranks: web/cluster/task_llm.js applies the cohort's step itself).
//
// A backend extends LlmFinetuneGpu with:
//   compile(n, kind)         -> the C session (kind: FINETUNE_PLAN's step, loss or
//                              grads, rlx_llm_finetune_compile's train; 0 with rlx_last_error)
//   prepare(ptr, train, made) -> Promise of the session's prepared executor
//                              (./executor.js; made(executor) as soon as it exists)
//   adopt(next, last)        -> Promise: executor next given the pairs (and,
//                              for a step, the optimizer state) of the last
//                              step's executor, unless they share them (both
//                              backends share one set by param name: nothing)
//   gpuError(err)            -> the RlxError for a failure of the GPU
//   freeShared()             frees what the sessions share
import { RlxError } from './loader.js';
import { FINETUNE_PLAN, STATUS } from './constants.js';

/** What each FINETUNE_PLAN kind compiles, for messages. */
const PLAN_NAMES = { [FINETUNE_PLAN.loss]: 'loss', [FINETUNE_PLAN.step]: 'training step', [FINETUNE_PLAN.grads]: 'gradients' };

/** Fine-tuning steps of one object on one GPU (see the top of this file). */
export class LlmFinetuneGpu {
  /**
   * mod: the LlmModule of the GPU training build; ft: the fine-tuning
   * object (rlx_llm_finetune_new); seq: its tokens per window.
   */
  constructor(mod, ft, seq) {
    this.mod = mod;
    this.ft = ft;
    this.seq = seq;
    this.sessions = new Map(); // `${n}:${train}` -> Promise of the executor
    this.made = [];            // the executors made
    this.pointers = [];        // the C sessions, freed by free()
    this.lr = null;            // set by setLr, fed to every later step
    this.current = null;       // the executor of the last step: the newest pairs
    this.pairs = this.readPairInfo();
  }

  /** [{ name, aName, bName, nIn, nOut, rank }] of the object's pairs. */
  readPairInfo() {
    const m = this.mod;
    const n = m.call('rlx_llm_finetune_pair_count', this.ft);
    return m.scoped((t) => {
      const namePtr = t.alloc(4), out = t.alloc(48);
      const list = [];
      for (let i = 0; i < n; i++) {
        m.check(m.call('rlx_llm_finetune_pair', this.ft, i, namePtr, out), 'rlx_llm_finetune_pair: ');
        const name = m.cstring(m.i32(namePtr, 1)[0]);
        const [, nIn, nOut, rank] = m.f64(out, 6);
        list.push({ name, aName: `${name}.lora_a`, bName: `${name}.lora_b`, nIn, nOut, rank });
      }
      return list;
    });
  }

  /** The executor of the step, the loss or the gradients (kind: FINETUNE_PLAN's) for n windows. */
  session(fn, n, kind) {
    const key = `${n}:${kind}`;
    if (!this.sessions.has(key)) {
      const ptr = this.compile(n, kind) >>> 0;
      if (!ptr) this.mod.check(STATUS.UNSUPPORTED, `${fn}: compiling the ${PLAN_NAMES[kind]} of ${n} windows: `);
      this.pointers.push(ptr);
      const p = (async () => {
        try {
          return await this.prepare(ptr, kind === FINETUNE_PLAN.step, (made) => this.made.push(made));
        } catch (err) {
          throw this.gpuError(err);
        }
      })();
      this.sessions.set(key, p);
      p.catch(() => this.sessions.delete(key));
    }
    return this.sessions.get(key);
  }

  /** The windows checked by C and written as the sessions take them: { n, feeds }. */
  feeds(fn, ids, targets, mask) {
    const m = this.mod, seq = this.seq;
    for (const [what, v] of [['ids', ids], ['targets', targets]]) {
      if (!(v instanceof Int32Array) && !Array.isArray(v)) throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${what} must be an Int32Array or an array of token ids`);
    }
    const count = ids.length;
    if (count === 0 || count % seq !== 0) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: ids must hold whole windows of ${seq} tokens, got ${count}`);
    }
    if (targets.length !== count) throw new RlxError(STATUS.INVALID_ARG, `${fn}: targets must hold ${count} ids (as ids), got ${targets.length}`);
    if (mask != null && (!(mask instanceof Float32Array || Array.isArray(mask)) || mask.length !== count)) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: mask must be a Float32Array or an array of ${count} weights (or null)`);
    }
    const n = count / seq;
    return m.scoped((t) => {
      const pIds = t.i32(ids), pTargets = t.i32(targets);
      let pMask = 0;
      if (mask != null) {
        pMask = t.alloc(4 * count);
        new Float32Array(m.memory.buffer, pMask, count).set(mask);
      }
      const fedTargets = t.alloc(4 * count), fedMask = t.alloc(4 * count);
      m.check(m.call('rlx_llm_finetune_windows', this.ft, pIds, pTargets, pMask, n, fedTargets, fedMask), `${fn}: `);
      return {
        n,
        feeds: {
          ids: Int32Array.from(ids),
          targets: m.i32(fedTargets, count).slice(),
          mask: new Float32Array(m.memory.buffer, fedMask, count).slice(),
        },
      };
    });
  }

  /**
   * One optimizer step on the device over the windows (ids, targets: whole
   * windows of seq ids; mask: their weights, or null for all 1): resolves
   * to the loss before the update (a number).
   */
  async step(ids, targets, mask = null) {
    const { n, feeds } = this.feeds('step', ids, targets, mask);
    const s = await this.session('step', n, FINETUNE_PLAN.step);
    if (this.lr !== null) feeds['rlx.lr'] = Float32Array.of(this.lr);
    try {
      if (this.current && this.current !== s) await this.adopt(s, this.current);
      this.current = s;
      const [loss] = await s.run(feeds);
      return loss[0];
    } catch (err) {
      throw this.gpuError(err);
    }
  }

  /** The loss of the windows with the current pairs, without an update: a number. */
  async eval(ids, targets, mask = null) {
    const { n, feeds } = this.feeds('eval', ids, targets, mask);
    const s = await this.session('eval', n, FINETUNE_PLAN.loss);
    try {
      if (this.current) await this.adopt(s, this.current);
      const [loss] = await s.run(feeds);
      return loss[0];
    } catch (err) {
      throw this.gpuError(err);
    }
  }

  /**
   * The loss and the pairs' gradients over the windows, without an update:
   * { loss, grads }.  params: every pair's A then B in pair order, flat (a
   * Float32Array), written to the device first (and left there); null: the
   * pairs as they are on the device.  grads: the same layout.
   */
  async grads(ids, targets, mask = null, params = null) {
    const { n, feeds } = this.feeds('grads', ids, targets, mask);
    const sizes = this.pairs.flatMap((p) => [p.rank * p.nIn, p.nOut * p.rank]);
    const total = sizes.reduce((a, b) => a + b, 0);
    if (params !== null && (!(params instanceof Float32Array) || params.length !== total)) {
      throw new RlxError(STATUS.INVALID_ARG, `grads: params must be a Float32Array of ${total} values (every pair's A then B), or null`);
    }
    const s = await this.session('grads', n, FINETUNE_PLAN.grads);
    if (s.inputs.some((x) => x.name === 'd_output')) feeds.d_output = Float32Array.of(1);
    if (params) {
      let at = 0;
      this.pairs.forEach((p, i) => {
        feeds[p.aName] = params.subarray(at, at += sizes[2 * i]);
        feeds[p.bName] = params.subarray(at, at += sizes[2 * i + 1]);
      });
    }
    try {
      if (this.current && this.current !== s) await this.adopt(s, this.current);
      this.current = s;
      const [loss, ...parts] = await s.run(feeds);
      const grads = new Float32Array(total);
      let at = 0;
      for (const g of parts) { grads.set(g, at); at += g.length; }
      return { loss: loss[0], grads };
    } catch (err) {
      throw this.gpuError(err);
    }
  }

  /** The learning rate of the next steps (finite, >= 0). */
  setLr(lr) {
    if (typeof lr !== 'number' || !Number.isFinite(lr) || lr < 0) {
      throw new RlxError(STATUS.INVALID_ARG, `setLr: lr must be a finite number >= 0, got ${lr}`);
    }
    this.lr = lr;
  }

  /**
   * The pairs as they are on the device: [{ name, a, b }] (Float32Arrays,
   * A [rank, nIn], B [nOut, rank]); before any step, the object's own.
   */
  async readPairs() {
    const s = this.current;
    const m = this.mod;
    const out = [];
    for (const p of this.pairs) {
      if (s) {
        try {
          out.push({ name: p.name, a: await s.readParam(p.aName), b: await s.readParam(p.bName) });
        } catch (err) {
          throw this.gpuError(err);
        }
        continue;
      }
      const na = p.rank * p.nIn, nb = p.nOut * p.rank;
      out.push(m.scoped((t) => {
        const a = t.alloc(4 * na), b = t.alloc(4 * nb);
        m.check(m.call('rlx_llm_finetune_get_pair', this.ft, t.str(p.name).ptr, a, na, b, nb), 'readPairs: ');
        return { name: p.name, a: new Float32Array(m.memory.buffer, a, na).slice(), b: new Float32Array(m.memory.buffer, b, nb).slice() };
      }));
    }
    return out;
  }

  /** Writes the device's pairs into the C object (rlx_llm_finetune_set_pair). */
  async syncToHost() {
    const m = this.mod;
    for (const { name, a, b } of await this.readPairs()) {
      m.scoped((t) => {
        const pa = t.alloc(4 * a.length), pb = t.alloc(4 * b.length);
        new Float32Array(m.memory.buffer, pa, a.length).set(a);
        new Float32Array(m.memory.buffer, pb, b.length).set(b);
        m.check(m.call('rlx_llm_finetune_set_pair', this.ft, t.str(name).ptr, pa, a.length, pb, b.length), 'syncToHost: ');
      });
    }
  }

  /** Frees the executors, what they share and the C sessions (before the fine-tuning object). */
  free() {
    for (const s of this.made) s.free();
    this.made = [];
    this.sessions.clear();
    this.freeShared();
    if (!this.mod.dead) for (const p of this.pointers) this.mod.call('rlx_llm_session_free', p);
    this.pointers = [];
  }
}
