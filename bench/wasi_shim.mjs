// wasi_shim.mjs - just enough WASI (preview1) to run our wasi-reactor bench
// modules in Node: stdout/stderr writes, clocks, random, exit; every other
// import the module declares answers ENOSYS.
const ENOSYS = 52;

export async function loadWasi(bytes) {
  const module = await WebAssembly.compile(bytes);
  let memory;
  const view = () => new DataView(memory.buffer);
  const impl = {
    fd_write(fd, iovs, iovsLen, nwritten) {
      const dv = view();
      let total = 0, text = '';
      for (let i = 0; i < iovsLen; i++) {
        const ptr = dv.getUint32(iovs + 8 * i, true), len = dv.getUint32(iovs + 8 * i + 4, true);
        text += new TextDecoder().decode(new Uint8Array(memory.buffer, ptr, len));
        total += len;
      }
      if (fd === 1) process.stdout.write(text);
      else if (fd === 2) process.stderr.write(text);
      dv.setUint32(nwritten, total, true);
      return 0;
    },
    clock_time_get(id, precision, out) {
      view().setBigUint64(out, BigInt(Math.round(performance.now() * 1e6)), true);
      return 0;
    },
    random_get(buf, len) {
      crypto.getRandomValues(new Uint8Array(memory.buffer, buf, len));
      return 0;
    },
    environ_sizes_get(count, size) {
      view().setUint32(count, 0, true);
      view().setUint32(size, 0, true);
      return 0;
    },
    args_sizes_get(count, size) {
      view().setUint32(count, 0, true);
      view().setUint32(size, 0, true);
      return 0;
    },
    proc_exit(code) {
      throw new Error(`wasm called proc_exit(${code})`);
    },
  };
  const wasi = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === 'wasi_snapshot_preview1' && imp.kind === 'function') wasi[imp.name] = impl[imp.name] ?? (() => ENOSYS);
  }
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi });
  memory = instance.exports.memory;
  instance.exports._initialize?.();
  return { exports: instance.exports, memory };
}
