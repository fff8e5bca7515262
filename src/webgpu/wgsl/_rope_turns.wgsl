// _rope_turns.wgsl - included by rope.wgsl, rope_fused.wgsl and
// llm_attention_kv.wgsl: cos and sin of a rotary angle (pos freq_i) that is
// never formed in f32.
//
// Precision: the lowering passes, per frequency, g_i = freq_i / (2 pi)
// (turns per position, computed in double as src/cpu/k_rope.c does) split
// into two 12-bit pieces a, b and a remainder c.  The position p splits
// into 12-bit pieces too, so every product p_k a and p_k b is exact in f32
// and its fractional part exact; only p c (below 2^-24 of the angle)
// rounds.  The fractional turn t is accumulated mod 1, and cos/sin(2 pi t)
// come from an octant reduction and Cephes-style polynomials on
// [-pi/4, pi/4] (never the GPU's sin/cos, whose accuracy is unspecified).
// Error: a few 1e-7 for any position < 2^31.

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
