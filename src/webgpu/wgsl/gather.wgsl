// gather.wgsl - embedding lookup: table[V, D], ids[...] -> y[..., D],
// y[i, :] = table[ids[i], :], a zero row for an id outside [0, V) (the GPU
// does not raise the CPU's bad-index error).  f32 ids are truncated toward
// zero as the CPU does (NaN and infinities are invalid).
// Bindings: 0 table, 1 ids (read), 2 y (write), 3 uniform.
// Overrides: IDS_I32 (1: ids hold int32 bits), VEC (1: D is a multiple of
// 4, one vec4 per thread; 0: one element per thread).
// Uniform words: n (= numel y), D, V.
@group(0) @binding(0) var<storage, read> table: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> ids: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> u: array<vec4<u32>, 1>;

override IDS_I32: u32 = 0u;
override VEC: u32 = 0u;

//!include _gather_id.wgsl

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  let n = u[0].x;
  let d = u[0].y;
  let i = t * select(1u, 4u, VEC == 1u);
  if (i >= n) { return; }
  let id = id_at(i / d);
  let valid = id >= 0 && u32(id) < u[0].z;
  let src = u32(max(id, 0)) * d + i % d;
  if (VEC == 1u) {
    var v = vec4<f32>(0.0);
    if (valid) { v = table[src / 4u]; }
    y[t] = v;
  } else {
    var v = 0.0;
    if (valid) { v = table[src / 4u][src % 4u]; }
    y[i / 4u][i % 4u] = v;
  }
}
