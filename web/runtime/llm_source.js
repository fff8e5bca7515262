// llm_source.js - the bytes of a GGUF file for loadGguf, from a File or
// Blob (stream() or slices), a Response (its body reader), an ArrayBuffer or
// typed array, or a URL (fetched; in Node a path or file: URL is read from
// disk): its size when known, its name, and its chunks as they arrive.
import { RlxError, describe } from './loader.js';
import { STATUS, fail, isNode } from './llm_common.js';

const BLOB_SLICE = 8 << 20; // bytes per slice() of a Blob without stream()

export const SOURCE_KINDS = 'a URL or path, a File or Blob, a Response, an ArrayBuffer or a Uint8Array';

/** Whether v is one of SOURCE_KINDS. */
export const isSource = (v) => typeof v === 'string' || v instanceof URL || v instanceof ArrayBuffer || ArrayBuffer.isView(v) ||
  (typeof Blob === 'function' && v instanceof Blob) || (typeof Response === 'function' && v instanceof Response);

/** { size (bytes, or null when unknown), chunks (async iterable of Uint8Array), name } of a source. */
export async function openSource(fn, source) {
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
    let response;
    try {
      response = await fetch(source);
    } catch (err) {
      const e = new RlxError(STATUS.INVALID_ARG, `${fn}: cannot fetch ${text.slice(0, 200)}: ${err?.message ?? err}`, 'invalid argument');
      e.cause = err;
      throw e;
    }
    return responseSource(fn, response, text);
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
