// gguf-store.js - one GGUF file kept in this browser's Origin Private File
// System (navigator.storage.getDirectory(), folder rlx-gguf; each function
// takes another folder as its last argument: ADAPTER_FOLDER keeps one LoRA
// adapter beside the model), so that a page
// can offer it again after a reload without the file being picked again.
// keep(file) streams the file into OPFS through createWritable (chunk by
// chunk, no second copy in memory; the new file appears only when complete)
// in place of the one kept before; kept() hands it back as a File that
// loadGguf reads like a picked one; forget() deletes it; usage() is what
// this site stores and may store (runtime/opfs.js: what it shares with
// the cache of downloads, runtime/llm_cache.js).  Failures (no OPFS, the quota exceeded,
// storage refused) come back as { ok: false, reason } with a plain reason.
//
//   const r = await keep(file, (written) => ...);  // { ok: true } | { ok: false, reason }
//   const { file, reason } = await kept();         // file: File | null

import { folder, reasonOf, removeAll, serialQueue, usage, writable } from './runtime/opfs.js';

const FOLDER = 'rlx-gguf';
/** Where finetune.html keeps the adapter it trained and generate.html finds it. */
export const ADAPTER_FOLDER = 'rlx-lora';
const serial = serialQueue(); // one store operation at a time
const failed = (err) => ({ ok: false, reason: reasonOf(err) });

export { usage };

/** The kept file ({ file: File }), none ({ file: null }), or why there can be none ({ file: null, reason }). */
export function kept(name = FOLDER) {
  return serial(async () => {
    try {
      const dir = await folder(false, name);
      for await (const handle of dir.values()) {
        if (handle.kind === 'file') return { file: await handle.getFile() };
      }
      return { file: null };
    } catch (err) {
      return err?.name === 'NotFoundError' ? { file: null } : { file: null, reason: failed(err).reason };
    }
  });
}

/** Streams file into OPFS in place of the file kept before; onWritten(bytes) as it goes. */
export function keep(file, onWritten = undefined, name = FOLDER) {
  return serial(async () => {
    let dir;
    try {
      dir = await folder(true, name);
      await removeAll(dir);
    } catch (err) {
      return failed(err);
    }
    const room = await usage();
    if (room && file.size > room.quota - room.usage) {
      return { ok: false, reason: `the storage quota this browser gives this site is exceeded (${file.size} bytes to keep, ${room.quota - room.usage} free)` };
    }
    try {
      const handle = await dir.getFileHandle(file.name, { create: true });
      const out = await writable(handle);
      let written = 0;
      const count = new TransformStream({
        transform(chunk, controller) {
          written += chunk.byteLength;
          onWritten?.(written);
          controller.enqueue(chunk);
        },
      });
      await file.stream().pipeThrough(count).pipeTo(out);
      return { ok: true };
    } catch (err) {
      await dir.removeEntry(file.name).catch(() => {});
      return failed(err);
    }
  });
}

/** Deletes the kept file: { ok: true } or { ok: false, reason }. */
export function forget(name = FOLDER) {
  return serial(async () => {
    try {
      await removeAll(await folder(false, name));
      return { ok: true };
    } catch (err) {
      return err?.name === 'NotFoundError' ? { ok: true } : failed(err);
    }
  });
}
