// llm_cache.js - GGUF files downloaded by URL, kept in this browser's Origin
// Private File System (folder rlx-gguf-url; runtime/opfs.js) under their
// URL, for loadGguf's options.cache (default true where OPFS exists; 'no'
// skips it).  Each URL has a data file (written while it downloads) and a
// record { url, size, etag, lastModified, have, complete }: `have` bytes are
// in the data file, so a reload resumes the download from there
// (llm_download.js, If-Range with the recorded validator).  A complete file
// is validated before use: a HEAD answer's ETag / Last-Modified / size
// must match the record's (a changed file is downloaded again); when the
// server cannot be reached the kept file is used; its size and GGUF magic
// are checked here and its header by the library before the model is built.
//
//   const list = await cachedModels();  // [{ url, size, have, complete }]
//   await deleteCached(url);            // { ok: true } | { ok: false, reason }
import { download } from './llm_download.js';
import { folder, hasOpfs, reasonOf, serialQueue, writable } from './opfs.js';

export const CACHE_FOLDER = 'rlx-gguf-url';
// The partial file is committed (and its record written) every 16th of the
// file, at least every 64 KiB and at most every 8 MiB.
const commitBytes = (size) => Math.min(8 << 20, Math.max(64 << 10, Math.ceil((size ?? 0) / 16)));
const serial = serialQueue();

/** The names of a URL's files: a hash of it (the record keeps the URL itself). */
function keyOf(url) {
  let h1 = 0x811c9dc5, h2 = 0x01000193;
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  return `${h1.toString(16).padStart(8, '0')}${h2.toString(16).padStart(8, '0')}`;
}

async function readRecord(dir, key) {
  try {
    const file = await (await dir.getFileHandle(`${key}.json`)).getFile();
    return JSON.parse(await file.text());
  } catch {
    return null;
  }
}

async function writeRecord(dir, key, record) {
  const out = await writable(await dir.getFileHandle(`${key}.json`, { create: true }));
  await out.write(JSON.stringify(record));
  await out.close();
}

/** The bytes [0, end) of a kept File as { at, data } pieces. */
async function* readFile(file, end = file.size) {
  const reader = file.slice(0, end).stream().getReader();
  let at = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield { at, data: value };
      at += value.length;
    }
  } finally {
    reader.releaseLock?.();
  }
}

/** The URLs kept: [{ url, size, have, complete }] ([] where there is no OPFS). */
export function cachedModels() {
  return serial(async () => {
    if (!hasOpfs()) return [];
    let dir;
    try { dir = await folder(false, CACHE_FOLDER); } catch { return []; }
    const list = [];
    for await (const name of dir.keys()) {
      if (!name.endsWith('.json')) continue;
      const r = await readRecord(dir, name.slice(0, -5));
      if (r?.url) list.push({ url: r.url, size: r.size, have: r.have, complete: !!r.complete });
    }
    return list.sort((a, b) => a.url.localeCompare(b.url));
  });
}

/** Deletes what is kept of url: { ok: true } or { ok: false, reason }. */
export function deleteCached(url) {
  return serial(async () => {
    try {
      const dir = await folder(false, CACHE_FOLDER);
      const key = keyOf(String(url));
      for (const name of [`${key}.json`, `${key}.gguf`]) await dir.removeEntry(name).catch((e) => { if (e?.name !== 'NotFoundError') throw e; });
      return { ok: true };
    } catch (err) {
      return err?.name === 'NotFoundError' ? { ok: true } : { ok: false, reason: reasonOf(err) };
    }
  });
}

/** Whether the kept complete file is still the server's: true, false (changed), or null (no answer). */
async function stillValid(url, record, signal) {
  let response;
  try {
    response = await fetch(url, { method: 'HEAD', mode: 'cors', cache: 'no-store', signal });
    await response.arrayBuffer(); // no body: read to its end, so the request completes (not left aborted)
  } catch {
    return null;
  }
  if (!response.ok) return response.status === 404 || response.status === 410 ? false : null;
  const etag = response.headers.get('etag'), modified = response.headers.get('last-modified');
  const length = response.headers.get('content-length');
  if (length !== null && Number(length) !== record.size) return false;
  if (record.etag && etag) return etag === record.etag;
  if (record.lastModified && modified) return modified === record.lastModified;
  return length !== null; // the size alone: all the server says
}

/**
 * The source of url through the cache (llm_source.js's { size, chunks,
 * name, cached }), or null where there is no OPFS or it refuses to store.
 * options: llm_download.js's (signal, retries, onEvent).
 */
export async function cachedSource(fn, url, options) {
  let dir;
  try { dir = await folder(true, CACHE_FOLDER); } catch { return null; }
  const key = keyOf(url);
  let handle;
  try {
    handle = await dir.getFileHandle(`${key}.gguf`, { create: true });
    if (typeof handle.createWritable !== 'function') return null; // OPFS that a page cannot write (downloads are not cached)
  } catch {
    return null;
  }
  const record = await serial(() => readRecord(dir, key));
  if (record?.url === url && record.complete) {
    const valid = await stillValid(url, record, options.signal);
    const file = await handle.getFile().catch(() => null);
    const magic = file ? new Uint8Array(await file.slice(0, 4).arrayBuffer()) : null;
    const whole = file && file.size === record.size && String.fromCharCode(...magic) === 'GGUF';
    if (whole && valid !== false) {
      options.onEvent?.({ stage: 'cached', url, size: record.size, checked: valid === true });
      return { size: record.size, chunks: readFile(file), name: url, cached: true };
    }
    options.onEvent?.({ stage: 'stale', url, reason: !whole ? 'the kept file is damaged' : 'the server has another file now' });
  }
  const partial = record?.url === url && !record.complete && record.have > 0 ? record : null;
  const from = partial ? { at: partial.have, etag: partial.etag, lastModified: partial.lastModified } : undefined;
  const got = await download(fn, url, { ...options, from });
  const resumed = got.start; // partial.have when the server sent the rest, else 0
  const base = { url, size: got.size, etag: got.validator.etag, lastModified: got.validator.lastModified };
  return { size: got.size, name: url, cached: false, chunks: keepWhileReading(dir, key, handle, got, base, resumed) };
}

/** The bytes kept before (when resuming), then the download's, each written into the data file as it passes. */
async function* keepWhileReading(dir, key, handle, got, base, resumed) {
  let out = null, committed = 0, have = 0;
  const commit = async (complete) => {
    if (out) { await out.close(); out = null; }
    committed = have;
    await serial(() => writeRecord(dir, key, { ...base, have, complete }));
  };
  try {
    out = await writable(handle, resumed > 0);
    if (resumed > 0) {
      for await (const piece of readFile(await handle.getFile(), resumed)) yield piece;
      have = resumed;
    }
    for await (const piece of got.chunks) {
      if (piece.at === 0 && have > 0) { await out.truncate(0); have = 0; committed = 0; } // begun again
      await out.write({ type: 'write', position: piece.at, data: piece.data });
      have = piece.at + piece.data.length;
      yield piece;
      if (have - committed >= commitBytes(got.size)) {
        await commit(false);
        out = await writable(handle, true);
      }
    }
    await commit(got.size !== null && have === got.size);
  } finally {
    // Stopped early (an error, or the reader gave up): what was written stays, for a resume
    if (out) await commit(false).catch(() => {});
  }
}
