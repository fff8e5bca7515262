// llm_source.js - the bytes of a GGUF file for loadGguf, from a File or
// Blob (stream() or slices), a Response (its body reader), an ArrayBuffer or
// typed array, or a URL (an http(s) one downloaded by llm_download.js,
// through the OPFS cache of llm_cache.js where there is one; in Node a path
// or file: URL is read from disk): its size when known, its name, and its
// chunks as they arrive; readSource puts them in a buffer of the module.
// partSources lists the parts of a split model (x-00001-of-0000N.gguf).
import { RlxError, describe } from './loader.js';
import { STATUS, fail, isNode } from './llm_common.js';
import { download } from './llm_download.js';
import { hasOpfs } from './opfs.js';

const BLOB_SLICE = 8 << 20; // bytes per slice() of a Blob without stream()

export const SOURCE_KINDS = 'a URL or path, a File or Blob, a Response, an ArrayBuffer or a Uint8Array';

/** Whether v is one of SOURCE_KINDS. */
export const isSource = (v) => typeof v === 'string' || v instanceof URL || v instanceof ArrayBuffer || ArrayBuffer.isView(v) ||
  (typeof Blob === 'function' && v instanceof Blob) || (typeof Response === 'function' && v instanceof Response);

/**
 * { size (bytes, or null when unknown), chunks (async iterable of Uint8Array,
 * or of { at, data } from a download), name, cached? } of a source.
 * fetchOptions (an http(s) URL): { signal, retries, onEvent } of
 * llm_download.js, cache (true, the default where OPFS exists, or 'no':
 * llm_cache.js).
 */
export async function openSource(fn, source, fetchOptions = {}) {
  if (source instanceof ArrayBuffer) return { size: source.byteLength, chunks: [new Uint8Array(source)], name: 'bytes' };
  if (ArrayBuffer.isView(source)) {
    return { size: source.byteLength, chunks: [new Uint8Array(source.buffer, source.byteOffset, source.byteLength)], name: 'bytes' };
  }
  if (typeof Blob === 'function' && source instanceof Blob) {
    const name = typeof source.name === 'string' ? source.name : 'blob';
    return { size: source.size, chunks: blobChunks(source), name };
  }
  if (typeof Response === 'function' && source instanceof Response) return responseSource(fn, source, source.url || 'response');
  if (typeof source === 'string' || source instanceof URL) {
    const text = String(source);
    if (text === '') throw fail(fn, 'source is an empty string (give a URL, a path, a File or bytes)');
    const isFileUrl = source instanceof URL ? source.protocol === 'file:' : /^file:/i.test(text);
    if (isNode && (isFileUrl || !/^https?:/i.test(text))) return fileSource(fn, isFileUrl ? new URL(text) : text);
    return urlSource(fn, text, fetchOptions);
  }
  throw fail(fn, `source must be ${SOURCE_KINDS}, got ${describe(source)}`);
}

async function* blobChunks(blob) {
  if (typeof blob.stream === 'function') {
    yield* readerChunks(blob.stream().getReader());
    return;
  }
  for (let off = 0; off < blob.size; off += BLOB_SLICE) {
    yield new Uint8Array(await blob.slice(off, Math.min(off + BLOB_SLICE, blob.size)).arrayBuffer());
  }
}

async function* readerChunks(reader) {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      if (value?.length) yield value;
    }
  } finally {
    reader.releaseLock?.();
  }
}

/** loadGguf's download options checked: { cache, retries, signal } (an RlxError naming a bad one). */
export function fetchOptions(fn, o) {
  const { cache = true, retries, signal } = o;
  if (cache !== true && cache !== 'no') throw fail(fn, `options.cache must be true or 'no', got ${describe(cache)}`);
  if (retries !== undefined && !(Number.isInteger(retries) && retries >= 0 && retries <= 100)) {
    throw fail(fn, `options.retries must be an integer from 0 to 100, got ${describe(retries)}`);
  }
  if (signal !== undefined && !(signal && typeof signal === 'object' && typeof signal.aborted === 'boolean')) {
    throw fail(fn, `options.signal must be an AbortSignal, got ${describe(signal)}`);
  }
  return { cache, retries, signal };
}

async function urlSource(fn, url, { cache = true, ...options }) {
  if (cache === true && hasOpfs()) {
    const { cachedSource } = await import('./llm_cache.js');
    const kept = await cachedSource(fn, url, options);
    if (kept) return kept;
  }
  const got = await download(fn, url, options);
  return { size: got.size, chunks: got.chunks, name: url };
}

function responseSource(fn, response, name) {
  if (!response.ok) throw new RlxError(STATUS.NOT_FOUND, `${fn}: cannot fetch ${name.slice(0, 200)}: HTTP ${response.status}`, 'not found');
  if (!response.body) throw fail(fn, `the response for ${name.slice(0, 200)} has no body`);
  if (response.bodyUsed) throw fail(fn, 'the Response body was read already');
  // Content-Length counts the encoded bytes: only an unencoded body's is the file's size.
  const encoding = (response.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  const length = response.headers.get('content-length');
  const size = encoding === 'identity' && length !== null && /^\d+$/.test(length.trim()) ? Number(length) : null;
  return { size, chunks: readerChunks(response.body.getReader()), name };
}

async function fileSource(fn, path) {
  const fs = await import('node:fs');
  let stat;
  try {
    stat = await fs.promises.stat(path);
  } catch (err) {
    const e = new RlxError(STATUS.NOT_FOUND, `${fn}: cannot read ${String(path).slice(0, 200)}: ${err?.code ?? err?.message ?? err}`, 'not found');
    e.cause = err;
    throw e;
  }
  if (!stat.isFile()) throw fail(fn, `${String(path).slice(0, 200)} is not a file`);
  // The stream is opened when the first chunk is asked for (never for a refused file).
  const chunks = (async function* () { yield* fs.createReadStream(path, { highWaterMark: 4 << 20 }); })();
  return { size: stat.size, chunks, name: String(path) };
}

/**
 * Reads src (openSource's) into a buffer of mod (rlx_llm_buffer_new): { ptr,
 * size }.  A chunk is a Uint8Array (the next bytes) or { at, data } (bytes
 * at `at`: a download that resumed or began again, llm_download.js).
 * tooBig(bytes) is the error for more than budget bytes (before anything
 * is read when the size is known); onBytes(loaded) as they come, from 0.  The buffer is freed again on an error.
 */
export async function readSource(fn, mod, src, { budget, tooBig, onBytes }) {
  const empty = () => fail(fn, `${src.name.slice(0, 200)} is empty (0 bytes), not a GGUF file`);
  if (src.size !== null && src.size > budget) { await src.chunks.return?.(); throw tooBig(src.size); }
  if (src.size === 0) { await src.chunks.return?.(); throw empty(); }
  const alloc = (n) => {
    const p = mod.call('rlx_llm_buffer_new', n) >>> 0;
    if (!p) mod.check(STATUS.NO_MEMORY, `${fn}: `);
    return p;
  };
  let ptr = 0;
  let loaded = 0;
  onBytes(0);
  try {
    if (src.size !== null) {
      ptr = alloc(src.size);
      for await (const piece of src.chunks) {
        const plain = ArrayBuffer.isView(piece); // else { at, data }
        const at = plain ? loaded : piece.at, chunk = plain ? piece : piece.data;
        if (at + chunk.length > src.size) throw fail(fn, `${src.name.slice(0, 200)} sent more than the ${src.size} bytes it announced`);
        mod.u8(ptr + at, chunk.length).set(chunk);
        loaded = at + chunk.length;
        onBytes(loaded);
      }
      if (loaded !== src.size) throw fail(fn, `${src.name.slice(0, 200)} ended after ${loaded} of its ${src.size} bytes`);
      return { ptr, size: loaded };
    }
    // Size unknown (no Content-Length, or an encoded body): the chunks are
    // kept until the end, then copied once into the buffer.
    let chunks = [];
    for await (const piece of src.chunks) {
      const plain = ArrayBuffer.isView(piece);
      const chunk = plain ? piece : piece.data;
      if (!plain && piece.at === 0 && loaded > 0) { chunks = []; loaded = 0; } // begun again
      loaded += chunk.length;
      if (loaded > budget) throw tooBig(loaded);
      chunks.push(chunk);
      onBytes(loaded);
    }
    if (loaded === 0) throw empty();
    ptr = alloc(loaded);
    let off = 0;
    for (const chunk of chunks) { mod.u8(ptr + off, chunk.length).set(chunk); off += chunk.length; }
    return { ptr, size: loaded };
  } catch (err) {
    if (ptr && !mod.dead) mod.free(ptr);
    throw err;
  }
}

/** rlx_llm_open's part arguments (data pointers, sizes, count) for parts [{ ptr, size }], the arrays in t (mod.scoped's). */
export function partArrays(mod, t, parts) {
  const data = t.alloc(4 * parts.length), size = t.alloc(4 * parts.length);
  mod.i32(data, parts.length).set(parts.map((p) => p.ptr | 0));
  mod.i32(size, parts.length).set(parts.map((p) => p.size | 0));
  return [data, size, parts.length];
}

/** llama.cpp's gguf-split names: x-00001-of-00003.gguf is part 1 of 3. */
export const SPLIT_NAME = /-(\d{5})-of-(\d{5})\.gguf$/i;

/** Whether v is a list of sources (an Array or a FileList): the parts of a split model. */
export const isPartList = (v) => (Array.isArray(v) || (typeof FileList === 'function' && v instanceof FileList)) &&
  v.length > 0 && [...v].every(isSource);

/**
 * The sources of a model's parts, in order: a list's (Files named as
 * SPLIT_NAME sorted by part, a missing part refused by name), the N URLs or
 * paths that the first part's name says (x-00001-of-0000N.gguf), or [source].
 */
export function partSources(fn, source) {
  if (isPartList(source)) {
    const list = [...source];
    const named = list.map((s) => SPLIT_NAME.exec(typeof s === 'string' || s instanceof URL ? String(s) : s?.name ?? ''));
    if (list.length < 2 || !named.every(Boolean)) return list;
    const count = Number(named[0][2]);
    const byNo = new Map();
    for (const [i, m] of named.entries()) {
      const no = Number(m[1]);
      const name = typeof list[i] === 'string' ? list[i] : list[i].name ?? String(list[i]);
      if (Number(m[2]) !== count) throw fail(fn, `source: ${name.slice(0, 200)} is of a split in ${Number(m[2])} parts, the first named of ${count}`);
      if (byNo.has(no)) throw fail(fn, `source: part ${no} of ${count} is given twice`);
      byNo.set(no, list[i]);
    }
    for (let no = 1; no <= count; no++) if (!byNo.has(no)) throw fail(fn, `source: part ${no} of ${count} (-${String(no).padStart(5, '0')}-of-${named[0][2]}.gguf) is missing`);
    if (byNo.size !== count) throw fail(fn, `source: ${byNo.size} parts given of a split in ${count}`);
    return [...byNo.keys()].sort((a, b) => a - b).map((no) => byNo.get(no));
  }
  if (typeof source === 'string' || source instanceof URL) {
    const text = String(source);
    const m = SPLIT_NAME.exec(text.replace(/[?#].*$/, ''));
    if (m && Number(m[1]) === 1 && Number(m[2]) > 1) {
      return Array.from({ length: Number(m[2]) }, (_, k) => {
        const part = `-${String(k + 1).padStart(5, '0')}-of-${m[2]}.gguf`;
        return text.replace(/-(\d{5})-of-(\d{5})\.gguf(?=([?#].*)?$)/i, part);
      });
    }
  }
  return [source];
}
