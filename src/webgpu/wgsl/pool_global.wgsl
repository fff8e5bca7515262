// pool_global.wgsl - global average pooling x[N,C,H,W] -> y[N,C]: one
// workgroup per plane, each thread summing a strided share of the plane,
// then a tree reduction in workgroup memory; the sum is divided by H*W.
// Uniform words: 0 planes, 1 H*W.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 1>;

var<workgroup> part: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let plane = wid.x + wid.y * nwg.x;
  let hw = u[0].y;
  var s = 0.0;
  if (plane < u[0].x) {
    let base = plane * hw;
    for (var i = lid; i < hw; i += 64u) { s += x[base + i]; }
  }
  part[lid] = s;
  workgroupBarrier();
  for (var step = 32u; step > 0u; step /= 2u) {
    if (lid < step) { part[lid] += part[lid + step]; }
    workgroupBarrier();
  }
  if (lid == 0u && plane < u[0].x) { y[plane] = part[0] / f32(hw); }
}
