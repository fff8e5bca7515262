// temporary: binary.wgsl vs a plain add (deleted after use)
import { readFileSync } from 'node:fs';
import { dawnDevice } from './tools/dawn_node.mjs';
const { device } = await dawnDevice();
const N = 4096 * 4096;
const mk = () => device.createBuffer({ size: N * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
const a = mk(), b = mk(), y = mk();
const ub = device.createBuffer({ size: 512, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
const words = new Uint32Array(128); words[0] = N; words[1] = N; words[2] = N; words[3] = 1; words[4] = N;
device.queue.writeBuffer(ub, 0, words);
const bin = readFileSync('src/webgpu/wgsl/binary.wgsl', 'utf8');
const plain = `@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>; @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>; @group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>; @group(0) @binding(3) var<uniform> u: array<vec4<u32>, 7>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) { let i = g.x + g.y * nw.x * 256u; if (i * 4u < u[0].x) { y[i] = a[i] + b[i]; } }`;
const simple = bin.replace(/fn main[\s\S]*$/, `fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i4 = gid.x + gid.y * nwg.x * 256u;
  if (i4 * 4u >= word(0u)) { return; }
  y[i4] = apply4(a[i4], b[i4]);
}`);
const noperiodic = bin.replace('y[i4] = apply4(periodic4_a(i4, pa, n), periodic4_b(i4, pb, n));', 'y[i4] = a[i4] + b[i4];');
for (const [name, code, consts] of [['plain+uniform', plain, {}], ['binary.wgsl', bin, { OP: 0, VEC: 1 }], ['binary simple main', simple, { OP: 0, VEC: 1 }], ['binary no periodic', noperiodic, { OP: 0, VEC: 1 }]]) {
  const layout = device.createBindGroupLayout({ entries: [0, 1, 2].map((i) => ({ binding: i, visibility: 4, buffer: { type: i < 2 ? 'read-only-storage' : 'storage' } })).concat([{ binding: 3, visibility: 4, buffer: { type: 'uniform' } }]) });
  const p = device.createComputePipeline({ layout: device.createPipelineLayout({ bindGroupLayouts: [layout] }), compute: { module: device.createShaderModule({ code }), entryPoint: 'main', constants: consts } });
  const bg = device.createBindGroup({ layout, entries: [a, b, y].map((buffer, i) => ({ binding: i, resource: { buffer } })).concat([{ binding: 3, resource: { buffer: ub, offset: 0, size: 384 } }]) });
  const run = async (reps) => { const enc = device.createCommandEncoder(); const pass = enc.beginComputePass(); pass.setPipeline(p); pass.setBindGroup(0, bg); for (let r = 0; r < reps; r++) pass.dispatchWorkgroups(16384); pass.end(); device.queue.submit([enc.finish()]); await device.queue.onSubmittedWorkDone(); };
  await run(5);
  const t = performance.now(); await run(100); const ms = (performance.now() - t) / 100;
  console.log(`${name.padEnd(20)} ${(ms * 1000).toFixed(1)} us  ${(12 * N / ms / 1e6).toFixed(0)} GB/s`);
}
process.exit(0);
