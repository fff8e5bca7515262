// opfs.js - what the stores in this browser's Origin Private File System
// share (navigator.storage.getDirectory()): a folder of it, one store
// operation at a time, a plain reason for a storage failure, and what the
// site stores.  web/gguf-store.js keeps a picked file with it,
// llm_cache.js the files downloaded by URL.

/** Whether this browser (or Worker) has an Origin Private File System. */
export const hasOpfs = () => typeof globalThis.navigator?.storage?.getDirectory === 'function';

/** fn() after every operation queued before it (one queue per store). */
export function serialQueue() {
  let queue = Promise.resolve();
  return (fn) => {
    const run = queue.then(fn);
    queue = run.catch(() => {});
    return run;
  };
}

/** A plain reason for a storage failure. */
export function reasonOf(err) {
  if (err?.plain) return err.message;
  if (err?.name === 'QuotaExceededError') return 'the storage quota this browser gives this site is exceeded';
  if (err?.name === 'SecurityError') return 'this browser does not allow storage here (a private window?)';
  return `storage failed: ${err?.message ?? err}`;
}

/** The folder `name` of the OPFS root (created when create). */
export async function folder(create, name) {
  if (!hasOpfs()) {
    throw Object.assign(new Error('this browser has no Origin Private File System (navigator.storage.getDirectory)'), { plain: true });
  }
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(name, { create });
}

/** A writable of handle (keepExistingData: the file's bytes stay until overwritten). */
export async function writable(handle, keepExistingData = false) {
  if (typeof handle.createWritable !== 'function') {
    throw Object.assign(new Error('this browser cannot write files into its Origin Private File System from here (no createWritable)'), { plain: true });
  }
  return handle.createWritable({ keepExistingData });
}

export async function removeAll(dir) {
  const names = [];
  for await (const name of dir.keys()) names.push(name);
  for (const name of names) await dir.removeEntry(name, { recursive: true });
}

/** { usage, quota } in bytes (the whole site's), or null where the browser does not say. */
export async function usage() {
  try {
    const e = await navigator.storage?.estimate?.();
    return e && Number.isFinite(e.usage) && Number.isFinite(e.quota) ? { usage: e.usage, quota: e.quota } : null;
  } catch {
    return null;
  }
}
