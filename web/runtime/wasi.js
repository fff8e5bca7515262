// wasi.js - a minimal wasi_snapshot_preview1 shim for RLX's wasm32-wasi
// reactor modules (no npm deps; works in a page, a Worker and Node 20).
//
// Only the imports the module actually declares are provided: the import
// object is built from WebAssembly.Module.imports(module).  fd_write goes to
// the console (line-buffered, stdout -> console.log, stderr -> console.error),
// fd_fdstat_get reports stdio as a character device (so libc line-buffers
// printf), proc_exit throws a WasiExit; every other call returns ENOSYS.
//
//   const wasi = new WasiShim();
//   const instance = await WebAssembly.instantiate(module, wasi.imports(module));
//   wasi.attach(instance);           // gives the shim the exported memory

const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_NOSYS = 52;
const FILETYPE_CHARACTER_DEVICE = 2;

/** bytes, copied when they are a view of shared memory (TextDecoder refuses those in browsers). */
export function unshared(bytes) {
  return bytes.buffer instanceof ArrayBuffer ? bytes : bytes.slice();
}

/** The UTF-8 C string at ptr of a wasm memory (shared or not). */
export function cstringAt(memory, ptr) {
  const mem = new Uint8Array(memory.buffer);
  let end = ptr >>> 0;
  while (end < mem.length && mem[end] !== 0) end++;
  return new TextDecoder().decode(unshared(mem.subarray(ptr >>> 0, end)));
}

/** Thrown by proc_exit (a reactor should never call it; abort() traps instead). */
export class WasiExit extends Error {
  constructor(code) {
    super(`wasm module called proc_exit(${code})`);
    this.name = 'WasiExit';
    this.code = code;
  }
}

export class WasiShim {
  /** @param {{stdout?: (line: string) => void, stderr?: (line: string) => void}} [opts] */
  constructor(opts = {}) {
    this.memory = null;
    this.sinks = { 1: opts.stdout ?? ((s) => console.log(s)), 2: opts.stderr ?? ((s) => console.error(s)) };
    this.pending = { 1: '', 2: '' };
    this.decoder = new TextDecoder();
  }

  /** Call once after instantiation, before any export runs (memory: an imported one). */
  attach(instance, memory = instance.exports.memory) {
    this.memory = memory;
  }

  view() {
    return new DataView(this.memory.buffer); // fresh: memory.grow detaches old buffers
  }

  // ---- the implemented calls ---------------------------------------------
  fd_write(fd, iovs, iovsLen, nwrittenPtr) {
    if (fd !== 1 && fd !== 2) return ERRNO_BADF;
    const dv = this.view();
    let total = 0;
    let text = '';
    for (let i = 0; i < iovsLen; i++) {
      const ptr = dv.getUint32(iovs + 8 * i, true);
      const len = dv.getUint32(iovs + 8 * i + 4, true);
      text += this.decoder.decode(unshared(new Uint8Array(this.memory.buffer, ptr, len)));
      total += len;
    }
    const lines = (this.pending[fd] + text).split('\n');
    this.pending[fd] = lines.pop();
    for (const line of lines) this.sinks[fd](line);
    dv.setUint32(nwrittenPtr, total, true);
    return ERRNO_SUCCESS;
  }

  fd_fdstat_get(fd, statPtr) {
    if (fd < 0 || fd > 2) return ERRNO_BADF;
    const dv = this.view();
    // struct fdstat { u8 filetype; u16 flags; u64 rights_base; u64 rights_inheriting } (24 bytes)
    for (let i = 0; i < 24; i++) dv.setUint8(statPtr + i, 0);
    dv.setUint8(statPtr, FILETYPE_CHARACTER_DEVICE);
    return ERRNO_SUCCESS;
  }

  proc_exit(code) {
    this.flush();
    throw new WasiExit(code);
  }

  /** Writes out any partial line still buffered. */
  flush() {
    for (const fd of [1, 2]) {
      if (this.pending[fd]) this.sinks[fd](this.pending[fd]);
      this.pending[fd] = '';
    }
  }

  /** The import object for `module`: our calls where implemented, ENOSYS otherwise. */
  imports(module) {
    const wasi = {};
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.module !== 'wasi_snapshot_preview1' || imp.kind !== 'function') continue;
      const impl = this[imp.name];
      wasi[imp.name] = typeof impl === 'function' && IMPLEMENTED.has(imp.name)
        ? impl.bind(this)
        : () => ERRNO_NOSYS;
    }
    return { wasi_snapshot_preview1: wasi };
  }
}

const IMPLEMENTED = new Set(['fd_write', 'fd_fdstat_get', 'proc_exit']);
