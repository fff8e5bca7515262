// task_llm.js - the cluster's LoRA fine-tuning task (task.js's interface):
// every rank opens the same base GGUF in the training build of the
// language-model module (rlx_llm_train.wasm, src/web_llm_train/exports.c)
// and cuts the same training text into windows of `seq` tokens; the
// cohort's parameters are the LoRA adapters, every pair's A then B in pair
// order, flattened. A bucket is the gradient of the mean loss (over scored
// tokens) of this rank's shard of the windows (data.js Shards, as the vision
// task shards images), weighted by its scored tokens, so the leader's
// sample-weighted mean is the gradient of the whole step's batch.
//
//   const task = await createLlmTask({ model: ggufBytes, text: textBytes, rank: 4, alpha: 8,
//     targets: 'attn_q,attn_v', seq: 32, seed: 1 });
//   task.slug            'lora:<base sha>:<text sha>:r4a8s32:qv' (the handshake's identity)
//   const p = task.initParams();
//   const { grads, loss, samples } = task.grads(p, { step, index, count, batch });
//   const bytes = task.adapter(p);  // llama.cpp's LoRA GGUF of p (f32)
//   task.firstComputeMs           the silence a first gradient may take (Rank's firstComputeMs)
//   task.free();
//
// Backends: the gradients run in the training module (loadGguf's train) of
// the backend asked for: the CPU (rlx_llm_finetune_grad), WebGPU or WebGL2
// (the GPU build's gradients plan, LlmFinetuneGpu.grads: the rank's params
// written to the device, the loss and the gradients read back); 'auto' is
// the CPU, and a GPU that cannot run here falls back to the CPU with the
// reason. As in the vision tasks, only gradients come from the device: the
// leader's mean and the optimizer step are the same host code on every
// rank, so a mixed cohort keeps bit-identical adapters.
import { loadGguf } from '../runtime/llm.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';
import { Shards } from './data.js';
import { llmSlug, sha256Hex } from './task_key.js';
import { LORA_DEFAULTS, LORA_TARGETS } from './settings.js';

// How long a rank's first gradient (plans compiled, seconds of compute on a
// real model) may keep it silent before its peers write it off (protocol.js
// firstComputeMs); later computes announce twice their last duration.
const FIRST_GRADS_MS = 60000;

// The loadGguf options a backend computes LoRA gradients with.
export const LLM_BACKENDS = Object.freeze(Object.fromEntries(['cpu', 'webgpu', 'webgl'].map((b) => [b, Object.freeze({ backend: b, train: true })])));
const GPU_STEPS = { // the GPU build's runner of each backend
  webgpu: async () => (await import('../runtime/llm_finetune_webgpu.js')).LlmFinetuneWebGpu,
  webgl: async () => (await import('../runtime/llm_finetune_webgl.js')).LlmFinetuneWebGl,
};

/** The backend LoRA gradients run on for a request: { backend, fallback } (see the top of the file). */
export function resolveLlmBackend(request = 'cpu') {
  const want = request === 'auto' ? 'cpu' : String(request);
  if (!(want in LLM_BACKENDS)) throw new RlxError(STATUS.INVALID_ARG, `backend must be auto, cpu, webgpu or webgl, got ${JSON.stringify(want)}`);
  return { requested: request, backend: want, fallback: null };
}

/**
 * Opens the model and the text and makes the adapters (see the top of the
 * file). model, text: bytes (ArrayBuffer or view); format: 'text' or 'jsonl';
 * seed: the adapters' initial A (every rank the same, so any rank may lead);
 * gpu: loadGguf's options.gpu (a GPUDevice or a GPU, where there is no
 * navigator.gpu).
 */
export async function createLlmTask({
  model, text, rank = LORA_DEFAULTS.rank, alpha = LORA_DEFAULTS.alpha, targets = LORA_DEFAULTS.targets, seq = LORA_DEFAULTS.seq,
  seed = 1, format = 'text', backend = 'cpu', name = 'the base model', textName = 'the training text', trainWasm = undefined, gpu = undefined,
} = {}) {
  const bytesOf = (v, what) => {
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    throw new RlxError(STATUS.INVALID_ARG, `createLlmTask: ${what} must be bytes (an ArrayBuffer or a typed array)`);
  };
  const modelBytes = bytesOf(model, 'model');
  const textBytes = bytesOf(text, 'text');
  if (!textBytes.length) throw new RlxError(STATUS.INVALID_ARG, 'createLlmTask: the training text is empty');
  if (format !== 'text' && format !== 'jsonl') throw new RlxError(STATUS.INVALID_ARG, `createLlmTask: format must be text or jsonl, got ${JSON.stringify(format)}`);
  const resolved = resolveLlmBackend(backend);
  const [baseSha, dataSha] = await Promise.all([sha256Hex(modelBytes), sha256Hex(textBytes)]);
  let llm;
  try {
    llm = await loadGguf(modelBytes, { ...LLM_BACKENDS[resolved.backend], trainWasm, nCtx: seq, gpu });
  } catch (err) {
    if (resolved.backend === 'cpu' || err?.reason !== 'unavailable') throw err;
    Object.assign(resolved, { backend: 'cpu', fallback: `${err.message}; this rank computes its gradients on the CPU` });
    llm = await loadGguf(modelBytes, { ...LLM_BACKENDS.cpu, nCtx: seq });
  }
  const task = new LlmTask(llm, { rank, alpha, targets, seq, seed, format, textBytes });
  if (resolved.backend !== 'cpu') {
    try {
      task.gpu = new (await GPU_STEPS[resolved.backend]())(llm.mod, task.ft, llm.device, seq);
    } catch (err) {
      task.free();
      throw err;
    }
  }
  task.baseSha = baseSha;
  task.dataSha = dataSha;
  task.slug = llmSlug({ baseSha, dataSha, rank, alpha, seq, targets });
  task.data.source = `${textName}: ${task.data.source}`;
  task.title = `LoRA of ${name} (rank ${rank}, alpha ${alpha}, ${task.targetNames.join(', ')}, seq ${seq})`;
  task.backend = resolved.backend;
  task.requested = resolved.requested;
  task.fallback = resolved.fallback;
  task.firstComputeMs = FIRST_GRADS_MS;
  return task;
}

class LlmTask {
  constructor(llm, { rank, alpha, targets, seq, seed, format, textBytes }) {
    this.kind = 'llm';
    this.llm = llm;
    const m = llm.mod;
    this.m = m;
    this.seq = seq;
    this.gpu = null; // the GPU build's runner (LlmFinetuneGpu) where the gradients run on a GPU
    this.ft = 0;
    this.textData = 0;
    this.io = null; // { batch, ids, targets, mask, loss } in wasm memory, for the last batch size
    try {
      m.scoped((t) => {
        const out = t.alloc(4);
        const tg = t.str(String(targets));
        m.check(m.call('rlx_llm_finetune_new', llm.handle, rank, alpha, tg.ptr, seq, 0, 0, seed >>> 0, 0, out), 'fine-tuning: ');
        this.ft = m.i32(out, 1)[0] >>> 0;
        const buf = t.alloc(textBytes.length);
        m.u8(buf, textBytes.length).set(textBytes);
        m.check(m.call('rlx_llm_data_new', llm.handle, buf, textBytes.length, format === 'jsonl' ? 2 : 1, 0, 0, 0, seq, 0, 0, 0, 0, out), 'training text: ');
        this.textData = m.i32(out, 1)[0] >>> 0;
        const info = t.alloc(8 * 11);
        m.check(m.call('rlx_llm_data_info', this.textData, info));
        const d = m.f64(info, 11);
        this.windows = d[1];
        this.scoredTokens = d[3];
        const name = t.alloc(4), pi = t.alloc(8 * 6);
        this.pairs = [];
        let at = 0;
        for (let i = 0, n = m.call('rlx_llm_finetune_pair_count', this.ft); i < n; i++) {
          m.check(m.call('rlx_llm_finetune_pair', this.ft, i, name, pi));
          const [, nIn, nOut, r] = m.f64(pi, 6);
          // the name lives in the fine-tuning object: its pointer serves get/set_pair as it is
          const p = { namePtr: m.i32(name, 1)[0] >>> 0, a: r * nIn, b: nOut * r, at };
          p.name = m.cstring(p.namePtr);
          at += p.a + p.b;
          this.pairs.push(p);
        }
        this.paramCount = at;
      });
    } catch (err) {
      this.free();
      throw err;
    }
    if (this.windows < 1) {
      this.free();
      throw new RlxError(STATUS.INVALID_ARG, `the training text makes no window of ${seq} tokens: give more text or a shorter seq`);
    }
    const projs = new Set(this.pairs.map((p) => /\.([a-z_]+)\.weight$/.exec(p.name)?.[1]));
    this.targetNames = LORA_TARGETS.filter((k) => projs.has(k));
    this.shards = new Shards({ count: this.windows }, { seed });
    this.init = this._pairs('rlx_llm_finetune_get_pair'); // before any setParams
    this.data = { kind: 'text', source: `${this.windows} windows of ${seq} tokens (${this.scoredTokens} scored)`, count: this.windows, why: null };
  }

  _alive() {
    if (!this.ft) throw new RlxError(STATUS.STATE, 'the fine-tuning task was used after free()');
  }

  /** The adapters as they start (A from the seed, B zero): the cohort's first parameters. */
  initParams() {
    this._alive();
    return this.init.slice();
  }

  _pairs(fn) {
    const m = this.m;
    const out = new Float32Array(this.paramCount);
    const max = Math.max(...this.pairs.map((p) => p.a + p.b));
    return m.scoped((t) => {
      const buf = t.alloc(4 * max);
      for (const p of this.pairs) {
        m.check(m.call(fn, this.ft, p.namePtr, buf, p.a, buf + 4 * p.a, p.b));
        out.set(new Float32Array(m.memory.buffer, buf, p.a + p.b), p.at);
      }
      return out;
    });
  }

  /** Puts params (the cohort's adapters) into the fine-tuning object. */
  setParams(params) {
    this._alive();
    const m = this.m;
    if (!(params instanceof Float32Array) || params.length !== this.paramCount) {
      throw new RlxError(STATUS.INVALID_ARG, `LoRA params must be a Float32Array of ${this.paramCount} values`);
    }
    const max = Math.max(...this.pairs.map((p) => p.a + p.b));
    m.scoped((t) => {
      const buf = t.alloc(4 * max);
      for (const p of this.pairs) {
        new Float32Array(m.memory.buffer, buf, p.a + p.b).set(params.subarray(p.at, p.at + p.a + p.b));
        m.check(m.call('rlx_llm_finetune_set_pair', this.ft, p.namePtr, buf, p.a, buf + 4 * p.a, p.b));
      }
    });
  }

  /** Window indices rank `index` of `count` trains on at `step` (data.js Shards). */
  indices(step, index, count, batch) {
    return this.shards.indices(step, index, count, batch);
  }

  /** { grads, loss, samples: scored tokens, backend } at params of the windows `indices` (a Promise on a GPU). */
  gradsOf(params, indices) {
    this._alive();
    if (!this.gpu) this.setParams(params);
    const m = this.m;
    const n = indices.length;
    const io = this._io(n);
    const len = this.seq;
    for (let k = 0; k < n; k++) {
      m.check(m.call('rlx_llm_data_windows', this.textData, 0, indices[k], 1, io.ids + 4 * k * len, io.targets + 4 * k * len, io.mask + 4 * k * len));
    }
    const mask = new Float32Array(m.memory.buffer, io.mask, n * len);
    let samples = 0;
    for (let i = 0; i < mask.length; i++) samples += mask[i];
    if (this.gpu) {
      if (!(params instanceof Float32Array) || params.length !== this.paramCount) {
        throw new RlxError(STATUS.INVALID_ARG, `LoRA params must be a Float32Array of ${this.paramCount} values`);
      }
      const count = n * len;
      return this.gpu.grads(m.i32(io.ids, count).slice(), m.i32(io.targets, count).slice(), mask.slice(), params)
        .then(({ grads, loss }) => ({ grads, loss, samples, backend: this.backend }));
    }
    m.check(m.call('rlx_llm_finetune_grad', this.ft, io.ids, io.targets, io.mask, n, io.loss), 'fine-tuning gradient: ');
    const loss = new Float32Array(m.memory.buffer, io.loss, 1)[0];
    return { grads: this._pairs('rlx_llm_finetune_get_grad'), loss, samples, backend: this.backend ?? 'cpu' };
  }

  /** task.js's grads: this rank's shard of the step. */
  grads(params, { step, index, count, batch }) {
    return this.gradsOf(params, this.indices(step, index, count, batch));
  }

  _io(batch) {
    if (this.io?.batch === batch) return this.io;
    this._freeIo();
    const m = this.m;
    const bytes = 4 * batch * this.seq;
    this.io = { batch, ids: m.alloc(bytes), targets: m.alloc(bytes), mask: m.alloc(bytes), loss: m.alloc(4) };
    return this.io;
  }

  _freeIo() {
    if (!this.io) return;
    for (const k of ['ids', 'targets', 'mask', 'loss']) this.m.free(this.io[k]);
    this.io = null;
  }

  /** llama.cpp's LoRA GGUF (f32) of params: a Uint8Array to save as adapter.gguf. */
  adapter(params) {
    this.setParams(params);
    const m = this.m;
    return m.scoped((t) => {
      const out = t.alloc(4), size = t.alloc(4);
      m.check(m.call('rlx_llm_finetune_adapter', this.ft, this.llm.handle, out, size), 'adapter: ');
      const p = m.i32(out, 1)[0] >>> 0;
      const bytes = m.u8(p, m.i32(size, 1)[0] >>> 0).slice();
      m.free(p);
      return bytes;
    });
  }

  free() {
    if (!this.llm) return;
    try {
      this.gpu?.free(); // before the fine-tuning object
      this.gpu = null;
      this._freeIo();
      if (this.ft) this.m.call('rlx_llm_finetune_free', this.ft);
      if (this.textData) this.m.call('rlx_llm_data_free', this.textData);
    } finally {
      this.ft = 0;
      this.textData = 0;
      this.llm.free();
      this.llm = null;
    }
  }
}
