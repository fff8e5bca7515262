// adam_update.wgsl - the fused Adam / AdamW update of one param
// (include/rlx_ops.def adam_update; src/cpu/k_optim.c computes the same
// steps in the same order):
//   m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) (g g),
//   s = (m' / bias1) / (sqrt(v' / bias2) + eps) [+ wd p],  p' = p - lr s.
// Bindings: 0 p, 1 g (read), 2 m, 3 v (read_write: the moments are updated
// in place), 4 lr, 5 bias1, 6 bias2 (read, one value each), 7 p' (write),
// 8 uniform.  Uniform words: n, b1, 1 - b1, b2, 1 - b2, eps, wd (floats as
// bits).  One element per thread, 256 threads a workgroup, spilling into y.
@group(0) @binding(0) var<storage, read> p: array<f32>;
@group(0) @binding(1) var<storage, read> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> m: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@group(0) @binding(4) var<storage, read> lr: array<f32>;
@group(0) @binding(5) var<storage, read> bias1: array<f32>;
@group(0) @binding(6) var<storage, read> bias2: array<f32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;
@group(0) @binding(8) var<uniform> u: array<vec4<u32>, 2>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  let i = gid.x + gid.y * nw.x * 256u;
  if (i >= u[0][0]) { return; }
  let b1 = bitcast<f32>(u[0][1]);
  let c1 = bitcast<f32>(u[0][2]);
  let b2 = bitcast<f32>(u[0][3]);
  let c2 = bitcast<f32>(u[1][0]);
  let eps = bitcast<f32>(u[1][1]);
  let wd = bitcast<f32>(u[1][2]);
  let gi = g[i];
  let m2 = b1 * m[i] + c1 * gi;
  let v2 = b2 * v[i] + c2 * (gi * gi);
  var s = (m2 / bias1[0]) / (sqrt(v2 / bias2[0]) + eps);
  if (wd != 0.0) { s = s + wd * p[i]; }
  out[i] = p[i] - lr[0] * s;
  m[i] = m2;
  v[i] = v2;
}
