// rope.wgsl - the cos/sin table of rotary position embedding (NeoX
// layout): table[p * D + i] = cos(angle), table[p * D + D/2 + i] =
// sin(angle) (negated for the inverse rotation), angle = (pos0 + p) freq_i,
// for positions p < S and i < D/2.  rope_apply.wgsl then rotates every
// [S, D] slice with it, so the angle math runs S D/2 times, not once per
// element.
//
// The angle is never formed in f32 (_rope_turns.wgsl: exact per-frequency
// constants a, b, c; a few 1e-7 at any position < 2^31).  Heads of at most
// 64 frequencies skip the table (rope_fused.wgsl).  Each dispatch covers
// the n_i frequencies [i0, i0 + n_i) (64 fit in the uniform); FREQ_GPU 1
// (more than 7 * 64 frequencies) computes g_i = freq_i / (2 pi) in f32 on
// the GPU instead, which costs about p * 1e-7 radians.

// OFFSET 1: the positions are shifted by off[0], read at run time (rope's
// offset input: a language model's position); with OFFSET 0 binding 1 is
// any read-only buffer and is not read.
//
// Bindings: 0 table (scratch), 1 off (i32 [1]), 2 uniform.
// Uniform words: 0 threads (S * n_i), 1 S, 2 D, 3 D/2, 4 pos0 (i32),
// 5 i0, 6 n_i, 7 inverse; then 3 words (a, b, c as f32) per frequency, or
// with FREQ_GPU word 8 = -2 log2(theta) / D.

override FREQ_GPU: u32 = 0u;
override OFFSET: u32 = 0u;
const INV_2PI: f32 = 0.15915494309189535;

@group(0) @binding(0) var<storage, read_write> table: array<f32>;
@group(0) @binding(1) var<storage, read> off: array<i32>;
@group(0) @binding(2) var<uniform> U: array<vec4<u32>, 50>;

fn u(i: u32) -> u32 { return U[i / 4u][i % 4u]; }

// Top 12 significant bits of v (exact).
fn top12(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) & 0xfffff000u); }

//!include _rope_turns.wgsl
//!include _rope_freqs.wgsl

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  if (t >= u(0u)) { return; }
  let D = u(2u);
  let half = u(3u);
  let n_i = u(6u);
  let p = t / n_i;
  let ii = t % n_i;
  let i = u(5u) + ii;
  var f: vec3<f32>;
  if (FREQ_GPU == 1u) {
    let g = exp2(f32(i) * bitcast<f32>(u(8u))) * INV_2PI;
    f.x = top12(g);
    f.y = top12(g - f.x);
    f.z = (g - f.x) - f.y;
  } else {
    f = rope_freq(ii);
  }
  let cs = rope_cos_sin(p, f);
  table[p * D + i] = cs.x;
  table[p * D + half + i] = cs.y;
}
