// llm_gpu_stream.js - a GGUF model streamed from its source to WebGPU
// buffers, never whole in wasm memory (loadGguf's backend 'webgpu', ./llm.js).
//
// Design.  The file is read once, in order.  Its first bytes are gathered
// until the module (rlx_llm_gpu.wasm) can parse the header from them
// (rlx_llm_open_head: metadata, tokenizer, tensor table; a header longer
// than what was gathered says how many bytes it needs, and more are read);
// the module keeps the metadata and tokenizer, no tensor data and no KV
// cache (src/models/llm_external.c).  Its step plans' weight params are
// bound to nothing there: rlx_llm_external lists every param the GPU must
// supply (each weight by file offset and size, 2-D ones in their GGUF type,
// 1-D ones f32; the KV caches as zeros).  The CPU side of a GPU step needs
// none of the weights (the embedding rows are gathered on the GPU, only the
// logits come back), so nothing of them is copied into wasm memory.
//
// Before any tensor data is read, every buffer is checked against the
// device's maxBufferSize and maxStorageBufferBindingSize (or a lower
// options.gpuBindingLimit): the kernels bind a weight whole, so a tensor
// over the binding size is refused, naming the tensor, its size and the
// limit (no split).  Then every buffer is created at once inside an
// 'out-of-memory' error scope: a model the GPU cannot hold is refused
// there, after the header only.  The rest of the file is then written
// chunk by chunk (device.queue.writeBuffer of the parts of each chunk that
// belong to a tensor, a tensor spanning chunks written piecewise, the 0-3
// bytes that break a 4-byte word kept for the next piece); every
// FLUSH_BYTES written the queue is drained, so what is staged stays
// bounded.  The buffers become WebGpuSession's sharedParams
// (./llm_webgpu.js): the step plans find their weights and caches there.
//
//   const { handle, shared, loaded } = await streamToWebGpu(fn, mod, src, device, { nCtx, progress, bindingLimit });
import { STATUS, fail } from './llm_common.js';
import { RlxError } from './loader.js';
import { webGpuUnavailable } from './llm_webgpu.js';

const FIRST_HEAD = 1 << 20;   // bytes tried for the header first (more when it says so)
const FLUSH_BYTES = 64 << 20; // bytes written to the queue between drains
const UNKNOWN_SIZE = 2 ** 53; // a source without a size: the tensors are checked when the stream ends

const round16 = (n) => Math.max(16, Math.ceil(n / 16) * 16);
const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/**
 * src's chunks as the file's bytes in order.  A download's pieces ({ at,
 * data }, llm_download.js: resumed with a range request, or through the
 * OPFS cache) continue where the last ended; one that begins the file again
 * (a server that could not resume) is refused: what came before it is on
 * the GPU already.
 */
async function* inOrder(fn, src) {
  let at = 0;
  for await (const piece of src.chunks) {
    const plain = ArrayBuffer.isView(piece);
    const chunk = plain ? piece : piece.data;
    if (!plain && piece.at !== at) {
      throw fail(fn, `${src.name.slice(0, 200)}: the download began again at byte ${piece.at} after ${at} bytes were ` +
        'streamed to the GPU; load it again, or with options.stream false');
    }
    at += chunk.length;
    yield chunk;
  }
}

/** One tensor's bytes written to its buffer as they come, in whole 4-byte words. */
class TensorWriter {
  constructor(queue, buffer) {
    this.queue = queue;
    this.buffer = buffer;
    this.written = 0;
    this.carry = new Uint8Array(4);
    this.carryN = 0;
  }

  write(piece) {
    let p = 0;
    if (this.carryN) {
      p = Math.min(4 - this.carryN, piece.length);
      this.carry.set(piece.subarray(0, p), this.carryN);
      this.carryN += p;
      if (this.carryN < 4) return;
      this.queue.writeBuffer(this.buffer, this.written, this.carry, 0, 4);
      this.written += 4;
      this.carryN = 0;
    }
    const whole = (piece.length - p) & ~3;
    if (whole) this.queue.writeBuffer(this.buffer, this.written, piece, p, whole);
    this.written += whole;
    this.carryN = piece.length - p - whole;
    this.carry.set(piece.subarray(p + whole), 0);
  }

  finish() {
    if (!this.carryN) return;
    this.carry.fill(0, this.carryN);
    this.queue.writeBuffer(this.buffer, this.written, this.carry, 0, 4);
    this.written += 4;
    this.carryN = 0;
  }
}

/** The model from the first bytes of the file: { handle, chunks (read so far), loaded }. */
async function openHead(fn, mod, src, reader, nCtx, progress) {
  const chunks = [];
  let loaded = 0;
  let want = src.size === null ? FIRST_HEAD : Math.min(FIRST_HEAD, src.size);
  let ended = false;
  for (;;) {
    while (loaded < want && !ended) {
      const r = await reader.next();
      if ((ended = r.done)) break;
      chunks.push(r.value);
      loaded += r.value.length;
      progress(loaded);
    }
    if (loaded === 0) throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${src.name.slice(0, 200)} is empty (0 bytes), not a GGUF file`);
    const need = mod.scoped((t) => {
      const head = t.alloc(loaded);
      let off = 0;
      for (const c of chunks) { mod.u8(head + off, c.length).set(c); off += c.length; }
      const out = t.alloc(4);
      const needAt = t.alloc(8);
      mod.i32(out, 1)[0] = 0;
      const st = mod.call('rlx_llm_open_head', head, loaded, src.size ?? UNKNOWN_SIZE, nCtx, needAt, out);
      const more = mod.f64(needAt, 1)[0];
      if (st === 0) return { handle: mod.i32(out, 1)[0] >>> 0 };
      if (more > loaded && !ended) return { more }; // past the end: the check below says so
      mod.check(st, `${fn}: ${src.name.slice(0, 200)}: `);
      return null; // not reached
    });
    if (need.handle) return { handle: need.handle, chunks, loaded };
    want = Math.max(need.more, 2 * want);
    if (src.size !== null) want = Math.min(want, src.size);
  }
}

/** The params the GPU supplies for model handle: [{ name, bytes, offset, fileBytes }] (llm_external.c). */
export function externalParams(fn, mod, handle) {
  const n = mod.call('rlx_llm_external_count', handle);
  return mod.scoped((t) => {
    const out = t.alloc(24);
    const list = [];
    for (let i = 0; i < n; i++) {
      const name = mod.call('rlx_llm_external', handle, i, out) >>> 0;
      if (!name) mod.check(STATUS.INVALID_ARG, `${fn}: `);
      const [bytes, offset, fileBytes] = mod.f64(out, 3);
      list.push({ name: mod.cstring(name), bytes, offset, fileBytes });
    }
    return list;
  });
}

/** Refuses a param over the device's buffer or binding size (no split: a kernel binds a weight whole). */
function checkLimits(fn, device, params, bindingLimit) {
  const maxBuffer = device.limits?.maxBufferSize ?? 268435456;
  const deviceBinding = device.limits?.maxStorageBufferBindingSize ?? 134217728;
  const maxBinding = Math.min(deviceBinding, bindingLimit ?? Infinity);
  const what = bindingLimit !== undefined && bindingLimit < deviceBinding ? 'options.gpuBindingLimit' : 'the device\'s maxStorageBufferBindingSize';
  for (const p of params) {
    const size = round16(p.bytes);
    if (size > maxBinding || size > maxBuffer) {
      const [limit, name] = size > maxBinding ? [maxBinding, what] : [maxBuffer, 'the device\'s maxBufferSize'];
      throw webGpuUnavailable(fn, `tensor '${p.name}' takes ${size} bytes (${mib(size)}), more than ${name} of ${limit} bytes ` +
        `(${mib(limit)}); a kernel binds a weight whole, so it cannot be split: take a more quantized file`, 'limits');
    }
  }
}

/** Every param's buffer, made at once: a Map name -> GPUBuffer, or a refusal when the GPU cannot hold them. */
async function createBuffers(fn, device, params) {
  const shared = new Map();
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  for (const p of params) {
    shared.set(p.name, device.createBuffer({ label: `rlx ${p.name}`, size: round16(p.bytes),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST }));
  }
  const invalid = await device.popErrorScope();
  const oom = await device.popErrorScope();
  if (oom || invalid) {
    for (const b of shared.values()) b.destroy();
    const total = params.reduce((s, p) => s + round16(p.bytes), 0);
    throw webGpuUnavailable(fn, `the model's ${params.length} weights and caches take ${total} bytes (${mib(total)}), ` +
      `more than the GPU could allocate: ${(oom ?? invalid).message}`, oom ? 'limits' : 'gpu-error');
  }
  return shared;
}

/**
 * Streams source src (./llm_source.js) into the module mod (rlx_llm_gpu.wasm)
 * and device: resolves to { handle (the model), shared (Map param name ->
 * GPUBuffer, its weights and caches), loaded (bytes read) }.  options: nCtx,
 * progress(loaded), bindingLimit (bytes: a lower binding size than the
 * device's).  Throws an RlxError naming fn; frees what it made.
 */
export async function streamToWebGpu(fn, mod, src, device, { nCtx, progress, bindingLimit }) {
  const reader = inOrder(fn, src);
  let handle = 0;
  let shared = null;
  try {
    const head = await openHead(fn, mod, src, reader, nCtx, progress);
    handle = head.handle;
    const params = externalParams(fn, mod, handle);
    checkLimits(fn, device, params, bindingLimit);
    shared = await createBuffers(fn, device, params);
    const tensors = params.filter((p) => p.fileBytes > 0).sort((a, b) => a.offset - b.offset)
      .map((p) => ({ ...p, writer: new TensorWriter(device.queue, shared.get(p.name)) }));
    let j = 0; // the first tensor not yet whole
    let base = 0; // file offset of the chunk
    let sinceFlush = 0;
    const take = async (chunk) => {
      const end = base + chunk.length;
      while (j < tensors.length && tensors[j].offset < end) {
        const t = tensors[j];
        const from = Math.max(base, t.offset), to = Math.min(end, t.offset + t.fileBytes);
        if (to > from) t.writer.write(chunk.subarray(from - base, to - base));
        sinceFlush += Math.max(0, to - from);
        if (t.offset + t.fileBytes > end) break;
        t.writer.finish();
        j++;
      }
      base = end;
      if (sinceFlush >= FLUSH_BYTES) {
        sinceFlush = 0;
        await device.queue.onSubmittedWorkDone(); // what writeBuffer staged is on the GPU
      }
    };
    for (const chunk of head.chunks) await take(chunk);
    head.chunks.length = 0;
    for (;;) {
      const r = await reader.next();
      if (r.done) break;
      if (src.size !== null && base + r.value.length > src.size) {
        throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${src.name.slice(0, 200)} sent more than the ${src.size} bytes it announced`);
      }
      await take(r.value);
      progress(base);
    }
    if (j < tensors.length) {
      const t = tensors[j];
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${src.name.slice(0, 200)} ended after ${base} bytes; tensor '${t.name}' ` +
        `needs bytes up to ${t.offset + t.fileBytes}`);
    }
    if (src.size !== null && base !== src.size) {
      throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${src.name.slice(0, 200)} ended after ${base} of its ${src.size} bytes`);
    }
    await device.queue.onSubmittedWorkDone();
    progress(base, true);
    return { handle, shared, loaded: base };
  } catch (err) {
    await reader.return?.();
    if (shared) for (const b of shared.values()) b.destroy();
    if (handle && !mod.dead) mod.call('rlx_llm_free', handle);
    throw err;
  }
}
