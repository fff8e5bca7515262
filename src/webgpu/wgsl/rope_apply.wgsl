// rope_apply.wgsl - rotates x[..., S, D] with the cos/sin table of
// rope.wgsl (in scratch; heads above 64 frequencies, the others run
// rope_fused.wgsl): for i < D/2,
//   y[i] = x[i] cos - x[i + D/2] sin,  y[i + D/2] = x[i + D/2] cos + x[i] sin
// (the expressions of src/cpu/k_rope.c); PAIRS 1 (rope's mode 1) rotates
// the adjacent pairs (x[2i], x[2i + 1]) instead.  One thread per (row, i)
// pair, neighbouring threads on neighbouring i.
//
// Uniform words: 0 pairs (rows * D/2), 1 S, 2 D, 3 D/2.

override PAIRS: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> table: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> U: array<vec4<u32>, 1>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  if (t >= U[0].x) { return; }
  let S = U[0].y;
  let D = U[0].z;
  let half = U[0].w;
  let row = t / half;
  let i = t % half;
  let tp = (row % S) * D + i;
  let c = table[tp];
  let s = table[tp + half];
  let k = row * D + select(i, 2u * i, PAIRS == 1u);
  let k2 = k + select(half, 1u, PAIRS == 1u);
  let x1 = x[k];
  let x2 = x[k2];
  y[k] = x1 * c - x2 * s;
  y[k2] = x2 * c + x1 * s;
}
