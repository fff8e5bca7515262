// llm_gpu_steps.js - what loadGguf's GPU backends share (./llm_webgpu.js,
// ./llm_webgl.js): a GGUF model loaded by a GPU build of the language-model
// module, whose step sessions (64, 16, 4 and 1 tokens, compiled for the
// device with their params bound to the model's weights and KV cache) run
// on the GPU through the backend's executor, all of them on one set of GPU
// weights and caches.  eval() runs ids in steps of those sizes (largest
// first) at the model's position, reads back only the last step's logits
// and hands them to the module (rlx_llm_set_logits), whose generator
// samples them as it does the CPU's: stop strings, sampling and streamed
// text are the CPU path's.
//
// A backend extends LlmGpuSteps with:
//   compile(k)             -> the C session of step k (0 with rlx_last_error)
//   session(fn, ptr)       -> its executor (./executor.js) on the shared weights and caches
//   gpuError(fn, err)      -> the RlxError for a failure of the GPU (reason 'unavailable', ...)
//   freeShared()           frees the shared weights and caches
import { RlxError } from './loader.js';
import { STATUS } from './constants.js';

/** An RlxError for a GPU API that cannot run the model here (api: 'WebGPU' | 'WebGL2'); reason 'unavailable' (or the executor's). */
export function gpuUnavailable(api, fn, why, reason = 'unavailable') {
  const err = new RlxError(STATUS.UNSUPPORTED, `${fn}: ${api} cannot run the model here: ${why}`);
  err.reason = reason;
  return err;
}

/** The step plans of one model on one GPU (see the top of this file). */
export class LlmGpuSteps {
  /** mod: the LlmModule of the GPU build; handle: the model; info: the model's info (nCtx, nVocab). */
  constructor(mod, handle, info) {
    this.mod = mod;
    this.handle = handle;
    this.nCtx = info.nCtx;
    this.nVocab = info.nVocab;
    this.sizes = [];
    for (let k = 0; mod.call('rlx_llm_step_tokens', k) > 0; k++) this.sizes.push(mod.call('rlx_llm_step_tokens', k));
    this.steps = this.sizes.map(() => null); // Promise of the executor per step size, made on first use
    this.sessions = [];                      // the executors made
    this.pointers = [];                      // the C sessions, freed with the model
  }

  /** The executor of step k (compiled and prepared on first use). */
  step(fn, k) {
    if (!this.steps[k]) {
      const ptr = this.compile(k) >>> 0;
      if (!ptr) this.mod.check(STATUS.UNSUPPORTED, `${fn}: compiling the ${this.sizes[k]}-token step: `);
      this.pointers.push(ptr);
      this.steps[k] = (async () => {
        try {
          const s = this.session(fn, ptr);
          this.sessions.push(s); // freed with the others even if prepare fails
          return await s.prepare();
        } catch (err) {
          throw this.gpuError(fn, err);
        }
      })();
      this.steps[k].catch(() => { this.steps[k] = null; });
    }
    return this.steps[k];
  }

  /** Compiles and prepares the decoding step now (uploads the weights): load time, not the first token's. */
  async warm(fn) {
    await this.step(fn, this.sizes.length - 1);
  }

  /**
   * Runs step k on ids (exactly its size) at position pos, which must leave
   * the step inside the context: a position outside it is refused here,
   * before anything runs (the cache append would write nothing for it).
   * Resolves to the logits when read, else null.
   */
  async runStep(fn, k, ids, pos, read) {
    const size = this.sizes[k];
    if (!Number.isInteger(pos) || pos < 0 || pos > this.nCtx - size) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: pos must be an integer from 0 to ${this.nCtx - size} ` +
        `(a ${size}-token step in a context of ${this.nCtx}), got ${pos}`);
    }
    if (ids.length !== size) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: ids must hold ${size} token ids for the ${size}-token step, got ${ids.length}`);
    }
    const s = await this.step(fn, k);
    try {
      const out = await s.run({ ids: Int32Array.from(ids), pos: Int32Array.of(pos) }, { read });
      return read ? out[0] : null;
    } catch (err) {
      throw this.gpuError(fn, err);
    }
  }

  /**
   * Evaluates ids at the model's position in steps of the compiled sizes
   * (largest first), hands the last logits to the module (which advances
   * the position) and returns them (a Float32Array of nVocab).
   */
  async eval(fn, ids) {
    const m = this.mod;
    const pos0 = m.call('rlx_llm_position', this.handle);
    const n = ids.length;
    if (n > this.nCtx - pos0) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${n} tokens at position ${pos0} do not fit the context of ${this.nCtx} tokens`);
    }
    let done = 0;
    let logits = null;
    while (done < n) {
      const k = this.sizes.findIndex((size) => size <= n - done);
      const size = this.sizes[k];
      const last = done + size === n; // only the last step's logits are read back
      const out = await this.runStep(fn, k, ids.slice(done, done + size), pos0 + done, last);
      if (last) logits = out;
      done += size;
    }
    m.scoped((t) => {
      const p = t.alloc(4 * this.nVocab);
      new Float32Array(m.memory.buffer, p, this.nVocab).set(logits.subarray(0, this.nVocab));
      m.check(m.call('rlx_llm_set_logits', this.handle, p, n), `${fn}: `);
    });
    return logits;
  }

  /**
   * Frees the executors, the shared weights and caches and the C sessions
   * (before the model; never while a step runs: GgufModel waits for its
   * eval or generation to end).
   */
  free() {
    for (const s of this.sessions) s.free();
    this.sessions = [];
    this.steps = this.sizes.map(() => null);
    this.freeShared();
    if (!this.mod.dead) for (const p of this.pointers) this.mod.call('rlx_llm_session_free', p);
    this.pointers = [];
  }
}
