/* ref_llm.c - C twins of the language-model shaders: _llm_quant.glsl (GGUF
 * weights read from the words of a table), llm_matmul_q.frag, llm_gather_q.frag,
 * llm_swiglu_q.frag, llm_kv_write.frag and llm_attention_kv.frag, with the
 * same integer and float formulas and loop orders, for the reference
 * executor (reference.c).  A words texture is a float array holding the
 * table's i32 words bit for bit (reference.c uploads them so). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../core/subops.h"
#include "../cpu/kernels.h"
#include "gl_plan.h"

/* ---- _llm_quant.glsl ---- */

typedef struct {
  const float *w; /* the words */
  int32_t qt;     /* RLX_SUBOP_WT_* */
  int32_t be, bb; /* block values and bytes (block types) */
} qtab;

static uint32_t word(const qtab *t, int32_t i) {
  uint32_t v;
  memcpy(&v, &t->w[i], 4);
  return v;
}
static uint32_t byte_at(const qtab *t, int32_t b) { return (word(t, b >> 2) >> (8u * (uint32_t)(b & 3))) & 255u; }
static int32_t sbyte(const qtab *t, int32_t b) { return (int32_t)(int8_t)(uint8_t)byte_at(t, b); }
static uint32_t u16_at(const qtab *t, int32_t b) { return (word(t, b >> 2) >> (8u * (uint32_t)(b & 2))) & 65535u; }
static uint32_t u32_at(const qtab *t, int32_t b) {
  uint32_t lo = word(t, b >> 2);
  return (b & 2) == 0 ? lo : (lo >> 16) | (word(t, (b >> 2) + 1) << 16);
}
static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static float half_f(uint32_t h) {
  uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 0u) {
    float v = (float)m * 5.9604644775390625e-8f;
    return s ? -v : v;
  }
  if (e == 31u) return bits_f(s | 0x7f800000u | (m << 13));
  return bits_f(s | ((e + 112u) << 23) | (m << 13));
}
static float f16_at(const qtab *t, int32_t b) { return half_f(u16_at(t, b)); }

static int is_float(int32_t qt) { return qt == RLX_SUBOP_WT_F32 || qt == RLX_SUBOP_WT_F16 || qt == RLX_SUBOP_WT_BF16; }

static qtab qtab_of(const rlx_gl_pass *p, const float *words) {
  qtab t = {words, rlx_gl_define_value(p, "QT", RLX_SUBOP_WT_F32), 0, 0};
  rlx_wt_block(t.qt, &t.be, &t.bb);
  return t;
}

static float qfloat(const qtab *t, int32_t o, int32_t e) {
  switch (t->qt) {
    case RLX_SUBOP_WT_F32: return bits_f(word(t, (o >> 2) + e));
    case RLX_SUBOP_WT_F16: return f16_at(t, o + 2 * e);
    default: return bits_f(u16_at(t, o + 2 * e) << 16);
  }
}

static void k4_scale(const qtab *t, int32_t s, int32_t j, int32_t *sc, int32_t *m) {
  if (j < 4) {
    *sc = (int32_t)(byte_at(t, s + j) & 63u);
    *m = (int32_t)(byte_at(t, s + j + 4) & 63u);
    return;
  }
  uint32_t a = byte_at(t, s + j + 4), lo = byte_at(t, s + j - 4), hi = byte_at(t, s + j);
  *sc = (int32_t)((a & 15u) | ((lo >> 6) << 4));
  *m = (int32_t)((a >> 4) | ((hi >> 6) << 4));
}

/* (sc, mn) of the run of 16 values from value g of the block at byte ob. */
static void qgroup(const qtab *t, int32_t ob, int32_t g, float *sc, float *mn) {
  int32_t s, m;
  switch (t->qt) {
    case RLX_SUBOP_WT_Q4_1:
    case RLX_SUBOP_WT_Q5_1: *sc = f16_at(t, ob), *mn = f16_at(t, ob + 2); return;
    case RLX_SUBOP_WT_Q4_K:
    case RLX_SUBOP_WT_Q5_K:
      k4_scale(t, ob + 4, g >> 5, &s, &m);
      *sc = f16_at(t, ob) * (float)s;
      *mn = -(f16_at(t, ob + 2) * (float)m);
      return;
    case RLX_SUBOP_WT_Q6_K: {
      int32_t h = g >> 7, k = (g >> 5) & 3;
      *sc = f16_at(t, ob + 208) * (float)sbyte(t, ob + 192 + 8 * h + ((g >> 4) & 1) + 2 * k);
      *mn = 0.0f;
      return;
    }
    default: *sc = f16_at(t, ob), *mn = 0.0f; return; /* Q8_0, Q4_0, Q5_0 */
  }
}

static int32_t qcode(const qtab *t, int32_t ob, int32_t e) {
  int32_t qt = t->qt;
  if (qt == RLX_SUBOP_WT_Q8_0) return sbyte(t, ob + 2 + e);
  if (qt == RLX_SUBOP_WT_Q4_K || qt == RLX_SUBOP_WT_Q5_K) {
    int32_t c = e >> 6, hi = (e >> 5) & 1, l = e & 31;
    uint32_t b = byte_at(t, ob + (qt == RLX_SUBOP_WT_Q4_K ? 16 : 48) + 32 * c + l), q = hi ? b >> 4 : b & 15u;
    if (qt == RLX_SUBOP_WT_Q5_K) q |= ((byte_at(t, ob + 16 + l) >> (uint32_t)(2 * c + hi)) & 1u) << 4;
    return (int32_t)q;
  }
  if (qt == RLX_SUBOP_WT_Q6_K) {
    int32_t h = e >> 7, k = (e >> 5) & 3, l = e & 31;
    uint32_t b = byte_at(t, ob + 64 * h + 32 * (k & 1) + l), lo = k >= 2 ? b >> 4 : b & 15u;
    uint32_t hb = (byte_at(t, ob + 128 + 32 * h + l) >> (uint32_t)(2 * k)) & 3u;
    return (int32_t)(lo | (hb << 4)) - 32;
  }
  /* Q4_0, Q4_1, Q5_0, Q5_1 */
  int32_t qs = qt == RLX_SUBOP_WT_Q4_0 ? 2 : qt == RLX_SUBOP_WT_Q4_1 ? 4 : qt == RLX_SUBOP_WT_Q5_0 ? 6 : 8;
  uint32_t b = byte_at(t, ob + qs + (e & 15)), q = e < 16 ? b & 15u : b >> 4;
  if (qt == RLX_SUBOP_WT_Q5_0) q |= ((u32_at(t, ob + 2) >> (uint32_t)e) & 1u) << 4;
  if (qt == RLX_SUBOP_WT_Q5_1) q |= ((u32_at(t, ob + 4) >> (uint32_t)e) & 1u) << 4;
  return qt == RLX_SUBOP_WT_Q4_0 ? (int32_t)q - 8 : qt == RLX_SUBOP_WT_Q5_0 ? (int32_t)q - 16 : (int32_t)q;
}

static float qvalue(const qtab *t, int32_t o, int32_t e) {
  if (is_float(t->qt)) return qfloat(t, o, e);
  int32_t ob = o + (e / t->be) * t->bb, eb = e % t->be;
  float sc, mn;
  qgroup(t, ob, eb & ~15, &sc, &mn);
  return sc * (float)qcode(t, ob, eb) + mn;
}

/* ---- llm_matmul_q.frag, llm_gather_q.frag ---- */

void rlx_glref_llm_matmul_q(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints, N = u[0], K = u[1], stride = u[3];
  const qtab t = qtab_of(a->pass, a->in[1]);
  const float *x = a->in[0];
  for (size_t i = 0; i < a->out_n; i++) {
    float acc = 0.0f;
    if (u[2] != 0) {
      int32_t m = (int32_t)i / K, k = (int32_t)i % K;
      for (int32_t n = 0; n < N; n++) acc += x[m * N + n] * qvalue(&t, n * stride, k);
      a->out[i] = acc;
      continue;
    }
    int32_t m = (int32_t)i / N, n = (int32_t)i % N, o = n * stride, xo = m * K;
    if (is_float(t.qt)) {
      for (int32_t k = 0; k < K; k++) acc += qfloat(&t, o, k) * x[xo + k];
    } else {
      for (int32_t g = 0; g < K; g += 16) {
        int32_t ob = o + (g / t.be) * t.bb, eb = g % t.be;
        float sc, mn, s = 0.0f, sx = 0.0f;
        qgroup(&t, ob, eb, &sc, &mn);
        for (int32_t j = 0; j < 16; j++) {
          float xv = x[xo + g + j];
          s += (float)qcode(&t, ob, eb + j) * xv;
          sx += xv;
        }
        acc += sc * s + mn * sx;
      }
    }
    a->out[i] = acc;
  }
  if (a->pass->n_inputs > 2) /* ACC 1 */
    for (size_t i = 0; i < a->out_n; i++) a->out[i] += a->in[2][i];
}

void rlx_glref_llm_gather_q(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const qtab t = qtab_of(a->pass, a->in[0]);
  for (size_t i = 0; i < a->out_n; i++) {
    int32_t id = rlx_gl_index(a->in[1][(int32_t)i / u[1]], u[0]);
    a->out[i] = id < 0 ? 0.0f : qvalue(&t, id * u[3], (int32_t)i % u[1]);
  }
}

/* ---- llm_swiglu_q.frag ---- */

/* x[0 .. K) . the row at byte o of t, summed as llm_matmul_q.frag's trans 0. */
static float qdot(const qtab *t, const float *x, int32_t o, int32_t K) {
  float acc = 0.0f;
  if (is_float(t->qt)) {
    for (int32_t k = 0; k < K; k++) acc += qfloat(t, o, k) * x[k];
    return acc;
  }
  for (int32_t g = 0; g < K; g += 16) {
    int32_t ob = o + (g / t->be) * t->bb, eb = g % t->be;
    float sc, mn, s = 0.0f, sx = 0.0f;
    qgroup(t, ob, eb, &sc, &mn);
    for (int32_t j = 0; j < 16; j++) {
      s += (float)qcode(t, ob, eb + j) * x[g + j];
      sx += x[g + j];
    }
    acc += sc * s + mn * sx;
  }
  return acc;
}

/* silu as unary.frag computes it: the CPU's expression (NaN passes). */
void rlx_glref_llm_swiglu_q(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints, N = u[0], K = u[1];
  const qtab gate = qtab_of(a->pass, a->in[1]), up = qtab_of(a->pass, a->in[2]);
  for (size_t i = 0; i < a->out_n; i++) {
    const float *x = a->in[0] + (size_t)((int32_t)i / N) * (size_t)K;
    const int32_t o = ((int32_t)i % N) * u[2];
    const float g = qdot(&gate, x, o, K);
    a->out[i] = isnan(g) ? g : rlx_cpu_unary_scalar(RLX_SUBOP_SILU, g) * qdot(&up, x, o, K);
  }
}

/* ---- llm_kv_write.frag, llm_attention_kv.frag ---- */

/* pos as the shaders read it (an integer stored as a float). */
static int32_t pos_of(const float *p) { return (int32_t)floorf(p[0]); }

/* Texels outside the new rows are left as they are (the shader discards them). */
void rlx_glref_llm_kv_write(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints, S = u[1], C = u[2], D = u[3], pos = pos_of(a->in[1]);
  for (size_t i = 0; i < a->out_n; i++) {
    int32_t row = (int32_t)i / D, e = (int32_t)i % D, h = row / C, s = row % C - pos;
    if (pos < 0 || s < 0 || s >= S) continue;
    a->out[i] = a->in[0][(h * S + s) * D + e];
  }
}

void rlx_glref_llm_attention_kv(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints, Hq = u[0], S = u[2], C = u[3], D = u[4], Dv = u[5], group = Hq / u[1];
  const int32_t mode = rlx_gl_define_value(a->pass, "MODE", 0);
  const int32_t pos = pos_of(a->in[mode == 2 ? 3 : mode == 1 ? 1 : 2]);
  const float *in0 = a->in[0];
  for (size_t ii = 0; ii < a->out_n; ii++) {
    int32_t i = (int32_t)ii;
    float v = 0.0f;
    if (mode == 0) {
      int32_t r = i / C, j = i % C, s = r / Hq, h = r % Hq;
      int32_t n = pos < 0 || pos + s >= C ? 0 : pos + s + 1;
      if (j < n) {
        int32_t qo = (h * S + s) * D, ko = ((h / group) * C + j) * D;
        float dot = 0.0f;
        for (int32_t t = 0; t < D; t++) dot += in0[qo + t] * a->in[1][ko + t];
        v = dot * a->pass->floats[0];
      }
    } else if (mode == 1) {
      int32_t r = i / 2, s = r / Hq, o = r * C;
      int32_t n = pos < 0 || pos + s >= C ? 0 : pos + s + 1;
      if (n > 0) {
        float m = in0[o];
        for (int32_t j = 1; j < n; j++) m = fmaxf(m, in0[o + j]);
        float sum = 0.0f;
        for (int32_t j = 0; j < n; j++) sum += expf(in0[o + j] - m);
        v = i % 2 == 0 ? m : sum;
      }
    } else {
      int32_t r = i / Dv, e = i % Dv, s = r / Hq, o = r * C;
      int32_t n = pos < 0 || pos + s >= C ? 0 : pos + s + 1;
      if (n > 0) {
        float m = a->in[1][2 * r], sum = a->in[1][2 * r + 1], acc = 0.0f;
        int32_t vo = ((r % Hq) / group) * C * Dv + e;
        for (int32_t j = 0; j < n; j++) acc += expf(in0[o + j] - m) * a->in[2][vo + j * Dv];
        v = acc * (1.0f / sum);
      }
    }
    a->out[ii] = v;
  }
}
