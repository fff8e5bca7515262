// temporary: streaming-bandwidth variants on the GPU (deleted after use)
import { dawnDevice } from './tools/dawn_node.mjs';
const { device } = await dawnDevice();
const N = 4096 * 4096; // floats
const mk = () => device.createBuffer({ size: N * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
const a = mk(), b = mk(), y = mk();
const variants = {
  vec4_wg256: [`@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>; @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>; @group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) { let i = g.x + g.y * nw.x * 256u; if (i < ${N / 4}u) { y[i] = a[i] + b[i]; } }`, N / 4 / 256],
  vec4_wg64: [`@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>; @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>; @group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) { let i = g.x + g.y * nw.x * 64u; if (i < ${N / 4}u) { y[i] = a[i] + b[i]; } }`, N / 4 / 64],
  vec4x4_grid: [`@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>; @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>; @group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) { let t = g.x + g.y * nw.x * 256u; let T = ${N / 16}u; for (var k = 0u; k < 4u; k++) { let i = t + k * T; if (i < ${N / 4}u) { y[i] = a[i] + b[i]; } } }`, N / 16 / 256],
  f32_wg256: [`@group(0) @binding(0) var<storage, read> a: array<f32>; @group(0) @binding(1) var<storage, read> b: array<f32>; @group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) { let i = g.x + g.y * nw.x * 256u; if (i < ${N}u) { y[i] = a[i] + b[i]; } }`, N / 256],
  copy_vec4: [`@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>; @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>; @group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) { let i = g.x + g.y * nw.x * 256u; if (i < ${N / 4}u) { y[i] = a[i]; } }`, N / 4 / 256],
};
for (const [name, [code, groups]] of Object.entries(variants)) {
  const p = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code }), entryPoint: 'main' } });
  const entries = name === 'copy_vec4' ? [{ binding: 0, resource: { buffer: a } }, { binding: 2, resource: { buffer: y } }] : [0, 1, 2].map((i) => ({ binding: i, resource: { buffer: [a, b, y][i] } }));
  const bg = device.createBindGroup({ layout: p.getBindGroupLayout(0), entries });
  const gx = Math.min(groups, 65535), gy = Math.ceil(groups / 65535);
  const run = async (reps) => { const enc = device.createCommandEncoder(); const pass = enc.beginComputePass(); pass.setPipeline(p); pass.setBindGroup(0, bg); for (let r = 0; r < reps; r++) pass.dispatchWorkgroups(gx, gy); pass.end(); device.queue.submit([enc.finish()]); await device.queue.onSubmittedWorkDone(); };
  await run(5);
  const t = performance.now(); await run(100); const ms = (performance.now() - t) / 100;
  const bytes = (name === 'copy_vec4' ? 2 : 3) * 4 * N;
  console.log(`${name.padEnd(14)} ${(ms * 1000).toFixed(1)} us  ${(bytes / ms / 1e6).toFixed(0)} GB/s  grid ${gx}x${gy}`);
}
process.exit(0);
