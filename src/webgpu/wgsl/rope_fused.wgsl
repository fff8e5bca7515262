// rope_fused.wgsl - rotary position embedding in one dispatch, for heads
// whose D/2 frequencies' constants fit in the uniform (D <= 128): rotates
// every [S, D] slice of x as rope_apply.wgsl does, each thread computing
// the cos/sin of its (position, frequency) as rope.wgsl does (the same
// exact-angle math, _rope_turns.wgsl), so the results are the table path's
// without the table.  One thread per (row, i) pair, neighbouring threads on
// neighbouring i.  PAIRS 1 (rope's mode 1) rotates the adjacent pairs
// (x[2i], x[2i + 1]) instead of (x[i], x[i + D/2]).
//
// OFFSET 1: the positions are shifted by off[0], read at run time; with
// OFFSET 0 binding 1 is any read-only buffer and is not read.
//
// Bindings: 0 x, 1 off (i32 [1]), 2 y, 3 uniform.
// Uniform words (rope.wgsl's layout with i0 = 0, n_i = D/2): 0 pairs
// (rows * D/2), 1 S, 2 D, 3 D/2, 4 pos0 (i32), 5 0, 6 D/2, 7 inverse; then
// 3 words (a, b, c as f32) per frequency.

override PAIRS: u32 = 0u;
override OFFSET: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> off: array<i32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> U: array<vec4<u32>, 50>;

fn u(i: u32) -> u32 { return U[i / 4u][i % 4u]; }

//!include _rope_turns.wgsl
//!include _rope_freqs.wgsl

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  if (t >= u(0u)) { return; }
  let half = u(3u);
  let row = t / half;
  let i = t % half;
  let cs = rope_cos_sin(row % u(1u), rope_freq(i));
  let k = row * u(2u) + select(i, 2u * i, PAIRS == 1u);
  let k2 = k + select(half, 1u, PAIRS == 1u);
  let x1 = x[k];
  let x2 = x[k2];
  y[k] = x1 * cs.x - x2 * cs.y;
  y[k2] = x2 * cs.x + x1 * cs.y;
}
