// rope.wgsl - the cos/sin table of rotary position embedding (NeoX
// layout): table[p * D + i] = cos(angle), table[p * D + D/2 + i] =
// sin(angle) (negated for the inverse rotation), angle = (pos0 + p) freq_i,
// for positions p < S and i < D/2.  rope_apply.wgsl then rotates every
// [S, D] slice with it, so the angle math runs S D/2 times, not once per
// element.
//
// Precision: the angle is never formed in f32.  The lowering passes, per
// frequency, g_i = freq_i / (2 pi) (turns per position, computed in
// double as src/cpu/k_rope.c does) split into two 12-bit pieces a, b and a
// remainder c.  The position p splits into 12-bit pieces too, so every
// product p_k a and p_k b is exact in f32 and its fractional part exact;
// only p c (below 2^-24 of the angle) rounds.  The fractional turn t is
// accumulated mod 1, and cos/sin(2 pi t) come from an octant reduction and
// Cephes-style polynomials on [-pi/4, pi/4] (never the GPU's sin/cos, whose
// accuracy is unspecified).  Error: a few 1e-7 for any position < 2^31.
// Each dispatch covers the n_i frequencies [i0, i0 + n_i) (29 fit in the
// uniform); FREQ_GPU 1 (more than 7 * 29 frequencies) computes g_i in f32
// on the GPU instead, which costs about p * 1e-7 radians.
//
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
@group(0) @binding(2) var<uniform> U: array<vec4<u32>, 24>;

fn u(i: u32) -> u32 { return U[i / 4u][i % 4u]; }

// Top 12 significant bits of v (exact).
fn top12(v: f32) -> f32 { return bitcast<f32>(bitcast<u32>(v) & 0xfffff000u); }

// fract(p * (a + b + c)) for p < 2^31, a and b of 12 significant bits.
fn turns(p: u32, a: f32, b: f32, c: f32) -> f32 {
  let p0 = f32(p & 0xfffu);
  let p1 = f32((p >> 12u) & 0xfffu) * 4096.0;
  let p2 = f32(p >> 24u) * 16777216.0;
  var t = fract(p0 * a);
  t = fract(t + fract(p1 * a));
  t = fract(t + fract(p2 * a));
  t = fract(t + fract(p0 * b));
  t = fract(t + fract(p1 * b));
  t = fract(t + fract(p2 * b));
  t = fract(t + fract(f32(p) * c));
  return t;
}

// (cos, sin) of 2 pi t.
fn cos_sin_turns(t: f32) -> vec2<f32> {
  let q4 = t * 4.0;
  let q = round(q4);
  let xr = (q4 - q) * 1.5707963267948966; // [-pi/4, pi/4]
  let z = xr * xr;
  let sn = xr + xr * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let cs = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  let k = u32(i32(q)) & 3u;
  if (k == 0u) { return vec2<f32>(cs, sn); }
  if (k == 1u) { return vec2<f32>(-sn, cs); }
  if (k == 2u) { return vec2<f32>(-cs, -sn); }
  return vec2<f32>(sn, -cs);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  if (t >= u(0u)) { return; }
  let S = u(1u);
  let D = u(2u);
  let half = u(3u);
  let n_i = u(6u);
  let p = t / n_i;
  let ii = t % n_i;
  let i = u(5u) + ii;
  var pos = bitcast<i32>(u(4u)) + i32(p);
  if (OFFSET == 1u) { pos += off[0]; }
  var a: f32;
  var b: f32;
  var c: f32;
  if (FREQ_GPU == 1u) {
    let g = exp2(f32(i) * bitcast<f32>(u(8u))) * INV_2PI;
    a = top12(g);
    b = top12(g - a);
    c = (g - a) - b;
  } else {
    a = bitcast<f32>(u(8u + 3u * ii));
    b = bitcast<f32>(u(9u + 3u * ii));
    c = bitcast<f32>(u(10u + 3u * ii));
  }
  var cs = cos_sin_turns(turns(u32(abs(pos)), a, b, c));
  if ((pos < 0) != (u(7u) != 0u)) { cs.y = -cs.y; } // negative angle
  table[p * D + i] = cs.x;
  table[p * D + half + i] = cs.y;
}
