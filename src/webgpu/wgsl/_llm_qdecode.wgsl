// _llm_qdecode.wgsl - GGUF-typed weight rows read in place (included by
// _llm_quant.wgsl and llm_swiglu_q.wgsl).  The weights are read through
//   fn wword(i: u32) -> u32
// which the includer defines: word i of the op's i32 words unchanged
// (include/rlx_ops.def matmul_q): N rows of K values of one type, row n at
// byte n * stride, blocks little-endian and at any 2-byte alignment (Q8_0
// blocks are 34 bytes).  QTYPE is the type as a sub-op code of the WTYPE
// family (include/rlx_subops.def; the lowering maps the GGUF code); the
// block layouts are those of include/rlx_gguf_types.def and
// src/models/gguf_quants.c.
//
// deq8(o, c, K): values 8c .. 8c + 7 of the row at byte o, as two vec4
// (values at or past K are 0).  Every chunk of 8 lies inside one block and
// one run of a shared scale, so a chunk reads its scale once.

override QTYPE: u32 = 0u;

struct Q8 { a: vec4<f32>, b: vec4<f32> }

fn wbyte(b: u32) -> u32 { return (wword(b >> 2u) >> ((b & 3u) * 8u)) & 255u; }
fn wsbyte(b: u32) -> f32 { return f32(bitcast<i32>(wbyte(b) << 24u) >> 24u); }
fn wu16(b: u32) -> u32 { return (wword(b >> 2u) >> ((b & 2u) * 8u)) & 0xffffu; } // b even
// The u32 at byte b (any alignment).
fn wu32(b: u32) -> u32 {
  let i = b >> 2u;
  let s = (b & 3u) * 8u;
  if (s == 0u) { return wword(i); }
  return (wword(i) >> s) | (wword(i + 1u) << (32u - s));
}
// An IEEE half, exactly (subnormals too, as rlx_f16_to_f32).
fn half(h: u32) -> f32 {
  let s = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 31u;
  let m = h & 1023u;
  if (e == 0u) { return bitcast<f32>(s | bitcast<u32>(f32(m) * 5.9604644775390625e-8)); }
  if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
  return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}
fn whalf(b: u32) -> f32 { return half(wu16(b)); }
// Byte k of v as a signed int8, and 4-bit / 2-bit fields of byte k.
fn sb(v: u32, k: u32) -> f32 { return f32(bitcast<i32>(v << (24u - 8u * k)) >> 24u); }
fn nib(v: u32, k: u32, shift: u32) -> f32 { return f32((v >> (8u * k + shift)) & 15u); }
fn nibu(v: u32, k: u32, shift: u32) -> u32 { return (v >> (8u * k + shift)) & 15u; }
fn bits2(v: u32, k: u32, shift: u32) -> u32 { return (v >> (8u * k + shift)) & 3u; }
// The 8 values of two words of nibbles (bytes 0..7) at shift, times d plus m.
fn nib8(v0: u32, v1: u32, shift: u32, d: f32, m: f32) -> Q8 {
  return Q8(vec4<f32>(nib(v0, 0u, shift), nib(v0, 1u, shift), nib(v0, 2u, shift), nib(v0, 3u, shift)) * d + m,
            vec4<f32>(nib(v1, 0u, shift), nib(v1, 1u, shift), nib(v1, 2u, shift), nib(v1, 3u, shift)) * d + m);
}
// Q5 codes: nibbles plus fifth bits hb (bit k: value k of the chunk).
fn q5_8(v0: u32, v1: u32, shift: u32, hb: u32, d: f32, m: f32) -> Q8 {
  let h = vec4<u32>(hb, hb >> 1u, hb >> 2u, hb >> 3u) & vec4<u32>(1u);
  let g = vec4<u32>(hb >> 4u, hb >> 5u, hb >> 6u, hb >> 7u) & vec4<u32>(1u);
  let a = vec4<u32>(nibu(v0, 0u, shift), nibu(v0, 1u, shift), nibu(v0, 2u, shift), nibu(v0, 3u, shift)) | (h << vec4<u32>(4u));
  let b = vec4<u32>(nibu(v1, 0u, shift), nibu(v1, 1u, shift), nibu(v1, 2u, shift), nibu(v1, 3u, shift)) | (g << vec4<u32>(4u));
  return Q8(vec4<f32>(a) * d + m, vec4<f32>(b) * d + m);
}
// Q4_K / Q5_K sub-block j's (scale, min) from the 12 scale bytes at s.
fn k4_scale(s: u32, j: u32) -> vec2<f32> {
  if (j < 4u) { return vec2<f32>(f32(wbyte(s + j) & 63u), f32(wbyte(s + j + 4u) & 63u)); }
  let x = wbyte(s + j + 4u);
  return vec2<f32>(f32((x & 15u) | ((wbyte(s + j - 4u) >> 6u) << 4u)), f32((x >> 4u) | ((wbyte(s + j) >> 6u) << 4u)));
}

fn deq8_blocks(o: u32, c: u32) -> Q8 {
  if (QTYPE == OP_WT_Q8_0) { // 34 bytes: f16 d, 32 int8
    let ob = o + 34u * (c >> 2u);
    let d = whalf(ob);
    let v0 = wu32(ob + 2u + 8u * (c & 3u));
    let v1 = wu32(ob + 6u + 8u * (c & 3u));
    return Q8(vec4<f32>(sb(v0, 0u), sb(v0, 1u), sb(v0, 2u), sb(v0, 3u)) * d,
              vec4<f32>(sb(v1, 0u), sb(v1, 1u), sb(v1, 2u), sb(v1, 3u)) * d);
  }
  if (QTYPE == OP_WT_Q4_0 || QTYPE == OP_WT_Q4_1) { // 18 / 20 bytes: d[, m], 16 bytes of nibbles
    let q41 = QTYPE == OP_WT_Q4_1;
    let ob = o + select(18u, 20u, q41) * (c >> 2u);
    let d = whalf(ob);
    let qs = ob + select(2u, 4u, q41) + 8u * (c & 1u);
    let m = select(-8.0 * d, whalf(ob + 2u), q41);
    return nib8(wu32(qs), wu32(qs + 4u), 4u * ((c >> 1u) & 1u), d, m);
  }
  if (QTYPE == OP_WT_Q5_0 || QTYPE == OP_WT_Q5_1) { // 22 / 24 bytes: d[, m], u32 fifth bits, nibbles
    let q51 = QTYPE == OP_WT_Q5_1;
    let ob = o + select(22u, 24u, q51) * (c >> 2u);
    let d = whalf(ob);
    let qh = wu32(ob + select(2u, 4u, q51));
    let qs = ob + select(6u, 8u, q51) + 8u * (c & 1u);
    let m = select(-16.0 * d, whalf(ob + 2u), q51);
    return q5_8(wu32(qs), wu32(qs + 4u), 4u * ((c >> 1u) & 1u), (qh >> (8u * (c & 3u))) & 255u, d, m);
  }
  if (QTYPE == OP_WT_Q4_K || QTYPE == OP_WT_Q5_K) {
    // 144 / 176 bytes: d, dmin, 12 scale bytes, (Q5_K: 32 bytes of fifth
    // bits), 128 bytes of nibbles; sub-block j = e / 32 of value e
    let q5 = QTYPE == OP_WT_Q5_K;
    let ob = o + select(144u, 176u, q5) * (c >> 5u);
    let e0 = 8u * (c & 31u);
    let j = e0 >> 5u;
    let l0 = e0 & 31u;
    let sm = k4_scale(ob + 4u, j);
    let d = whalf(ob) * sm.x;
    let m = -whalf(ob + 2u) * sm.y;
    let qs = ob + select(16u, 48u, q5) + 32u * (j >> 1u) + l0;
    let shift = 4u * (j & 1u);
    if (!q5) { return nib8(wu32(qs), wu32(qs + 4u), shift, d, m); }
    let h0 = wu32(ob + 16u + l0);
    let h1 = wu32(ob + 20u + l0);
    var hb = 0u;
    for (var k = 0u; k < 4u; k++) {
      hb |= ((h0 >> (8u * k + j)) & 1u) << k;
      hb |= ((h1 >> (8u * k + j)) & 1u) << (k + 4u);
    }
    return q5_8(wu32(qs), wu32(qs + 4u), shift, hb, d, m);
  }
  // Q6_K, 210 bytes: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8
  // scales (one per 16 values), f16 d; value e = 128 h + 32 k + l
  let ob = o + 210u * (c >> 5u);
  let e0 = 8u * (c & 31u);
  let h = e0 >> 7u;
  let k = (e0 >> 5u) & 3u;
  let l0 = e0 & 31u;
  let ql = ob + 64u * h + 32u * (k & 1u) + l0;
  let qh = ob + 128u + 32u * h + l0;
  let d = whalf(ob + 208u) * wsbyte(ob + 192u + 8u * h + (l0 >> 4u) + 2u * k);
  let v0 = wu32(ql);
  let v1 = wu32(ql + 4u);
  let g0 = wu32(qh);
  let g1 = wu32(qh + 4u);
  let ls = 4u * (k >> 1u);
  let hs = 2u * k;
  let a = vec4<u32>(nibu(v0, 0u, ls) | (bits2(g0, 0u, hs) << 4u), nibu(v0, 1u, ls) | (bits2(g0, 1u, hs) << 4u),
                    nibu(v0, 2u, ls) | (bits2(g0, 2u, hs) << 4u), nibu(v0, 3u, ls) | (bits2(g0, 3u, hs) << 4u));
  let b = vec4<u32>(nibu(v1, 0u, ls) | (bits2(g1, 0u, hs) << 4u), nibu(v1, 1u, ls) | (bits2(g1, 1u, hs) << 4u),
                    nibu(v1, 2u, ls) | (bits2(g1, 2u, hs) << 4u), nibu(v1, 3u, ls) | (bits2(g1, 3u, hs) << 4u));
  return Q8((vec4<f32>(a) - 32.0) * d, (vec4<f32>(b) - 32.0) * d);
}

// Element e of a float-typed row at byte o (0 at or past K).
fn float_at(o: u32, e: u32, K: u32) -> f32 {
  if (e >= K) { return 0.0; }
  if (QTYPE == OP_WT_F32) { return bitcast<f32>(wword((o >> 2u) + e)); }
  let h = wu16(o + 2u * e);
  if (QTYPE == OP_WT_F16) { return half(h); }
  return bitcast<f32>(h << 16u); // BF16
}

fn deq8(o: u32, c: u32, K: u32) -> Q8 {
  let e = 8u * c;
  if (QTYPE == OP_WT_F32 || QTYPE == OP_WT_F16 || QTYPE == OP_WT_BF16) {
    return Q8(vec4<f32>(float_at(o, e, K), float_at(o, e + 1u, K), float_at(o, e + 2u, K), float_at(o, e + 3u, K)),
              vec4<f32>(float_at(o, e + 4u, K), float_at(o, e + 5u, K), float_at(o, e + 6u, K), float_at(o, e + 7u, K)));
  }
  if (e >= K) { return Q8(vec4<f32>(0.0), vec4<f32>(0.0)); }
  return deq8_blocks(o, c);
}
