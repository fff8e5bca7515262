// _llm_quant.glsl - GGUF-typed weights read in place from a words texture
// (included by llm_matmul_q.frag, llm_gather_q.frag and
// llm_swiglu_q.frag; C twin in src/webgl/ref_llm.c).  The weights are the
// i32 words of the op's table
// (include/rlx_ops.def matmul_q), uploaded unchanged into an RGBA32I
// texture, 4 words per texel (word i in component i % 4 of texel i / 4,
// row-major over a texture RLX_QTEX_W texels wide).  Bytes are
// little-endian within a word.  QT is the weight type (a WT row
// of include/rlx_subops.def); the block layouts are those of
// include/rlx_gguf_types.def and src/models/gguf_quants.c.
//
// The includer defines RLX_QTEX (a highp isampler2D) and RLX_QTEX_W, or
// RLX_QWORD and its own `uint rlx_word(int i)` (word i of the weights).
// Float types (RLX_QFLOAT): rlx_qfloat(o, e) is element e of the row at
// byte o.  Block types: a block of RLX_QBE values in RLX_QBB bytes; within
// it every run of 16 values shares one affine map, value = sc * code + mn:
// rlx_qgroup(ob, g) = (sc, mn) of the run starting at value g (g % 16 ==
// 0) of the block at byte ob, rlx_qcode(ob, e) = the integer code of value e.

#if !defined(RLX_QWORD)
uint rlx_word(int i) {
  ivec2 qr = rlx_divmod(i >> 2, RLX_QTEX_W);
  ivec4 t = texelFetch(RLX_QTEX, ivec2(qr.y, qr.x), 0);
  return uint(t[i & 3]);
}
#endif
uint rlx_byte(int b) { return (rlx_word(b >> 2) >> (8u * uint(b & 3))) & 255u; }
int rlx_sbyte(int b) { return int(rlx_byte(b) << 24) >> 24; } // an int8
uint rlx_u16(int b) { return (rlx_word(b >> 2) >> (8u * uint(b & 2))) & 65535u; } // b even
uint rlx_u32(int b) { // b even
  uint lo = rlx_word(b >> 2);
  return (b & 2) == 0 ? lo : (lo >> 16) | (rlx_word((b >> 2) + 1) << 16);
}
// An IEEE half, exactly (as rlx_f16_to_f32; no reliance on unpackHalf2x16's
// handling of subnormals).
float rlx_half(uint h) {
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 0u) {
    float v = float(m) * 5.9604644775390625e-8; // m 2^-24
    return s != 0u ? -v : v;
  }
  if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));
  return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}
float rlx_f16_at(int b) { return rlx_half(rlx_u16(b)); }

#if QT == OP_WT_F32 || QT == OP_WT_F16 || QT == OP_WT_BF16
#define RLX_QFLOAT 1
float rlx_qfloat(int o, int e) {
#if QT == OP_WT_F32
  return uintBitsToFloat(rlx_word((o >> 2) + e));
#elif QT == OP_WT_F16
  return rlx_f16_at(o + 2 * e);
#else
  return uintBitsToFloat(rlx_u16(o + 2 * e) << 16);
#endif
}
#else

#if QT == OP_WT_Q8_0
#define RLX_QBE 32
#define RLX_QBB 34
#elif QT == OP_WT_Q4_0
#define RLX_QBE 32
#define RLX_QBB 18
#elif QT == OP_WT_Q4_1
#define RLX_QBE 32
#define RLX_QBB 20
#elif QT == OP_WT_Q5_0
#define RLX_QBE 32
#define RLX_QBB 22
#elif QT == OP_WT_Q5_1
#define RLX_QBE 32
#define RLX_QBB 24
#elif QT == OP_WT_Q4_K
#define RLX_QBE 256
#define RLX_QBB 144
#elif QT == OP_WT_Q5_K
#define RLX_QBE 256
#define RLX_QBB 176
#else // OP_WT_Q6_K
#define RLX_QBE 256
#define RLX_QBB 210
#endif

// Q4_K / Q5_K: 6-bit scale and min of sub-block j from the 12 bytes at s.
ivec2 rlx_k4_scale(int s, int j) {
  if (j < 4) return ivec2(int(rlx_byte(s + j) & 63u), int(rlx_byte(s + j + 4) & 63u));
  uint a = rlx_byte(s + j + 4), lo = rlx_byte(s + j - 4), hi = rlx_byte(s + j);
  return ivec2(int((a & 15u) | ((lo >> 6) << 4)), int((a >> 4) | ((hi >> 6) << 4)));
}

vec2 rlx_qgroup(int ob, int g) {
#if QT == OP_WT_Q8_0 || QT == OP_WT_Q4_0 || QT == OP_WT_Q5_0
  return vec2(rlx_f16_at(ob), 0.0);
#elif QT == OP_WT_Q4_1 || QT == OP_WT_Q5_1
  return vec2(rlx_f16_at(ob), rlx_f16_at(ob + 2));
#elif QT == OP_WT_Q4_K || QT == OP_WT_Q5_K
  ivec2 sm = rlx_k4_scale(ob + 4, g >> 5);
  return vec2(rlx_f16_at(ob) * float(sm.x), -(rlx_f16_at(ob + 2) * float(sm.y)));
#else // Q6_K: half h = g / 128, its run of 32 k = (g / 32) % 4, l / 16 = (g / 16) % 2
  int h = g >> 7, k = (g >> 5) & 3, s = 8 * h + ((g >> 4) & 1) + 2 * k;
  return vec2(rlx_f16_at(ob + 208) * float(rlx_sbyte(ob + 192 + s)), 0.0);
#endif
}

int rlx_qcode(int ob, int e) {
#if QT == OP_WT_Q8_0
  return rlx_sbyte(ob + 2 + e);
#elif QT == OP_WT_Q4_0 || QT == OP_WT_Q4_1 || QT == OP_WT_Q5_0 || QT == OP_WT_Q5_1
#if QT == OP_WT_Q4_0
  const int qs = 2;
#elif QT == OP_WT_Q4_1
  const int qs = 4;
#elif QT == OP_WT_Q5_0
  const int qs = 6;
#else
  const int qs = 8;
#endif
  uint b = rlx_byte(ob + qs + (e & 15)), q = e < 16 ? b & 15u : b >> 4;
#if QT == OP_WT_Q5_0
  q |= ((rlx_u32(ob + 2) >> uint(e)) & 1u) << 4;
#elif QT == OP_WT_Q5_1
  q |= ((rlx_u32(ob + 4) >> uint(e)) & 1u) << 4;
#endif
#if QT == OP_WT_Q4_0
  return int(q) - 8;
#elif QT == OP_WT_Q5_0
  return int(q) - 16;
#else
  return int(q);
#endif
#elif QT == OP_WT_Q4_K || QT == OP_WT_Q5_K
  int c = e >> 6, hi = (e >> 5) & 1, l = e & 31;
#if QT == OP_WT_Q4_K
  uint b = rlx_byte(ob + 16 + 32 * c + l);
#else
  uint b = rlx_byte(ob + 48 + 32 * c + l);
#endif
  uint q = hi == 1 ? b >> 4 : b & 15u;
#if QT == OP_WT_Q5_K
  q |= ((rlx_byte(ob + 16 + l) >> uint(2 * c + hi)) & 1u) << 4;
#endif
  return int(q);
#else // Q6_K
  int h = e >> 7, k = (e >> 5) & 3, l = e & 31;
  uint b = rlx_byte(ob + 64 * h + 32 * (k & 1) + l), lo = k >= 2 ? b >> 4 : b & 15u;
  uint hb = (rlx_byte(ob + 128 + 32 * h + l) >> uint(2 * k)) & 3u;
  return int(lo | (hb << 4)) - 32;
#endif
}
#endif

// Element e of the row at byte o, as the CPU dequantizes it.
float rlx_qvalue(int o, int e) {
#if defined(RLX_QFLOAT)
  return rlx_qfloat(o, e);
#else
  int ob = o + (e / RLX_QBE) * RLX_QBB, eb = e % RLX_QBE;
  vec2 sm = rlx_qgroup(ob, eb & ~15);
  return sm.x * float(rlx_qcode(ob, eb)) + sm.y;
#endif
}
