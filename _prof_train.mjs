// temporary: per-dispatch profile of a training step (deleted after use)
import { readFileSync } from 'node:fs';
import { WasiShim } from './web/runtime/wasi.js';
import { dawnDevice } from './tools/dawn_node.mjs';
import { createWebGpuSession } from './web/runtime/webgpu.js';
const { device } = await dawnDevice();
console.log('timestamp', device.features.has('timestamp-query'));
const module = await WebAssembly.compile(readFileSync('build/wasm-tests/opcases.wasm'));
const wasi = new WasiShim({});
const inst = await WebAssembly.instantiate(module, wasi.imports(module)); wasi.attach(inst); inst.exports._initialize?.();
const e = inst.exports;
const cstr = (p) => { const m = new Uint8Array(e.memory.buffer); let q = p; while (m[q]) q++; return new TextDecoder().decode(m.subarray(p, q)); };
const model = Number(process.argv[2] ?? 2), batch = Number(process.argv[3] ?? 4);
const h = e.gputrain_new(model, batch, 0.05);
let t = performance.now();
const gs = await createWebGpuSession(e, e.gputrain_gpu_session(h), device);
console.log(cstr(e.gputrain_model_name(model)), 'create', (performance.now() - t).toFixed(0), 'ms,', gs.plan.steps.length, 'dispatches,', gs.plan.pipelines.length, 'pipelines');
e.gputrain_cpu_step(h, 0);
for (let k = 0; k < e.gputrain_input_count(h); k++) {
  const len = e.gputrain_input_len(h, k) >>> 0, ptr = e.gputrain_input_data(h, k);
  gs.setInput(cstr(e.gputrain_input_name(h, k)), e.gputrain_input_i32(h, k) ? new Int32Array(e.memory.buffer, ptr, len).slice() : new Float32Array(e.memory.buffer, ptr, len).slice());
}
t = performance.now(); await gs.run(); console.log('run 1', (performance.now() - t).toFixed(0), 'ms');
t = performance.now(); await gs.run(); console.log('run 2', (performance.now() - t).toFixed(0), 'ms');
if (device.features.has('timestamp-query')) {
  const prof = await gs.profile();
  const by = new Map();
  for (const p of prof) { const x = by.get(p.key) ?? { n: 0, ms: 0, ops: new Set() }; x.n++; x.ms += p.ms; x.ops.add(p.op); by.set(p.key, x); }
  const rows = [...by].sort((a, b) => b[1].ms - a[1].ms);
  for (const [k, x] of rows.slice(0, 15)) console.log(`${x.ms.toFixed(1).padStart(9)} ms  x${x.n}  ${k}  (${[...x.ops].join(',')})`);
}
process.exit(0);
