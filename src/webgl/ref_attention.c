/* ref_attention.c - C twins of rope.frag (both rotations, an offset
 * input) and attention.frag: the same
 * integer and float formulas and loop orders, element by element, for the
 * reference executor (reference.c). */
#include <math.h>
#include <stdint.h>

#include "gl_plan.h"

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

/* ---- rope.frag ---- */

typedef struct {
  uint32_t x, y, z; /* bits 0-15, 16-31, 32-47 */
} limbs48;

static limbs48 limbs_at(const int32_t *u, int32_t at) {
  limbs48 l = {(uint32_t)u[at], (uint32_t)u[at + 1], (uint32_t)u[at + 2]};
  return l;
}

/* floor(a b / 2^48), as rlx_mul48 */
static limbs48 mul48(limbs48 a, limbs48 b) {
  uint32_t m = 0xffffu;
  uint32_t p00 = a.x * b.x, p01 = a.x * b.y, p02 = a.x * b.z;
  uint32_t p10 = a.y * b.x, p11 = a.y * b.y, p12 = a.y * b.z;
  uint32_t p20 = a.z * b.x, p21 = a.z * b.y, p22 = a.z * b.z;
  uint32_t c1 = (p00 >> 16) + (p01 & m) + (p10 & m);
  uint32_t c2 = (p01 >> 16) + (p10 >> 16) + (p02 & m) + (p11 & m) + (p20 & m) + (c1 >> 16);
  uint32_t c3 = (p02 >> 16) + (p11 >> 16) + (p20 >> 16) + (p12 & m) + (p21 & m) + (c2 >> 16);
  uint32_t c4 = (p12 >> 16) + (p21 >> 16) + (p22 & m) + (c3 >> 16);
  uint32_t c5 = (p22 >> 16) + (c4 >> 16);
  limbs48 r = {c3 & m, c4 & m, c5 & m};
  return r;
}

/* (cos, sin) of position s at frequency i, as rlx_cos_sin */
static void rope_cos_sin(const int32_t *u, int32_t offset, int32_t s, int32_t i, float *cs_out, float *sn_out) {
  limbs48 f = limbs_at(u, 4);
  for (int32_t k = 0; k < 13 && k < u[3]; k++)
    if (((i >> k) & 1) == 1) f = mul48(f, limbs_at(u, 7 + 3 * k));
  int32_t pos = u[2] + offset + s;
  uint32_t p = (uint32_t)(pos < 0 ? -pos : pos), m = 0xffffu;
  uint32_t p0 = p & m, p1 = p >> 16;
  uint32_t q00 = p0 * f.x, q01 = p0 * f.y, q10 = p1 * f.x;
  uint32_t c1 = (q00 >> 16) + (q01 & m) + (q10 & m);
  uint32_t c2 = (q01 >> 16) + (q10 >> 16) + ((p0 * f.z) & m) + ((p1 * f.y) & m) + (c1 >> 16);
  float t = (float)(c2 & m) / 65536.0f + (float)(c1 & m) / 4294967296.0f + (float)(q00 & m) / 281474976710656.0f;
  float q = floorf(4.0f * t + 0.5f);
  float x = (t - 0.25f * q) * 6.283185307179586f;
  float z = x * x;
  float sn = x + x * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
  float cs = 1.0f - 0.5f * z + z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
  float rc, rs;
  switch ((int32_t)q & 3) {
    case 0: rc = cs, rs = sn; break;
    case 1: rc = -sn, rs = cs; break;
    case 2: rc = -cs, rs = -sn; break;
    default: rc = sn, rs = -cs; break;
  }
  *cs_out = rc;
  *sn_out = pos < 0 ? -rs : rs;
}

/* PAIRS: adjacent pairs; OFFSET: the offset input, the pass's last (rope.frag). */
void rlx_glref_rope(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  int32_t mode = rlx_gl_define_value(a->pass, "MODE", 0), d = u[0], half = d / 2;
  int32_t pairs = rlx_gl_define_value(a->pass, "PAIRS", 0), offset = 0;
  if (rlx_gl_define_value(a->pass, "OFFSET", 0) && mode != 2)
    offset = (int32_t)floorf(a->in[a->pass->n_inputs - 1][0]);
  float sign = a->pass->floats[0];
  for (size_t n = 0; n < a->out_n; n++) {
    int32_t e = (int32_t)n, j = e % d, i = pairs && mode != 1 ? j >> 1 : j < half ? j : j - half;
    if (mode == 1) {
      float cs, sn;
      rope_cos_sin(u, offset, e / d, i, &cs, &sn);
      a->out[n] = j < half ? cs : sign * sn;
      continue;
    }
    int32_t s = (e / d) % u[1];
    float c, sn;
    if (mode == 0) {
      rope_cos_sin(u, offset, s, i, &c, &sn);
      sn = sign * sn;
    } else {
      c = a->in[1][s * d + i], sn = a->in[1][s * d + half + i];
    }
    const float *x = a->in[0];
    if (pairs)
      a->out[n] = (j & 1) == 0 ? x[e] * c - x[e + 1] * sn : x[e] * c + x[e - 1] * sn;
    else
      a->out[n] = j < half ? x[e] * c - x[e + half] * sn : x[e] * c + x[e - half] * sn;
  }
}

/* ---- attention.frag ---- */

typedef struct {
  const int32_t *u;
  float scale;
  int mode, grad, mask_kind;
  const float *q, *k, *v, *dy, *mask, *stats;
} attn_pass;

static float exp_shifted(float t) { return isnan(t) ? NAN : (t < -104.0f ? 0.0f : expf(t)); }

static void key_range(const attn_pass *p, int32_t i, int32_t *lo, int32_t *hi) {
  int32_t sq = p->u[2], sk = p->u[3], kind = p->u[6];
  int32_t last = i + sk - sq, l = 0, h = sk;
  if (kind == 1 || kind == 2) {
    if (last + 1 < h) h = last + 1;
    if (kind == 2 && last - p->u[7] + 1 > l) l = last - p->u[7] + 1;
  }
  if (h < 0) h = 0;
  if (l > h) l = h;
  *lo = l, *hi = h;
}

static float score(const attn_pass *p, int32_t bh, int32_t b, int32_t h, int32_t i, int32_t j) {
  const int32_t *u = p->u;
  int32_t d = u[4], qo = (bh * u[2] + i) * d, ko = (bh * u[3] + j) * d;
  float acc = 0.0f;
  for (int32_t t = 0; t < d; t++) acc += p->q[qo + t] * p->k[ko + t];
  float s = acc * p->scale;
  if (p->mask && p->mask_kind == 3) {
    if (p->mask[b * u[3] + j] == 0.0f) s = -INFINITY;
  } else if (p->mask && p->mask_kind == 4) {
    s += p->mask[b * u[8] + h * u[9] + i * u[10] + j * u[11]];
  }
  return s;
}

static float dprob(const attn_pass *p, int32_t bh, int32_t i, int32_t j) {
  int32_t dv = p->u[5], yo = (bh * p->u[2] + i) * dv, vo = (bh * p->u[3] + j) * dv;
  float acc = 0.0f;
  for (int32_t t = 0; t < dv; t++) acc += p->dy[yo + t] * p->v[vo + t];
  return acc;
}

static float stats_value(const attn_pass *p, int32_t idx) {
  const int32_t *u = p->u;
  int32_t k = p->grad ? 3 : 2, r = idx / k, which = idx % k;
  int32_t bh = r / u[2], i = r % u[2], b = bh / u[1], h = bh % u[1], lo, hi;
  key_range(p, i, &lo, &hi);
  float m = -INFINITY;
  for (int32_t j = lo; j < hi; j++) {
    float s = score(p, bh, b, h, i, j);
    if (s > m) m = s;
  }
  if (which == 0) return m;
  float sum = 0.0f;
  for (int32_t j0 = lo; j0 < hi; j0 += 64) {
    int32_t j1 = min_i32(j0 + 64, hi);
    float part = 0.0f;
    for (int32_t j = j0; j < j1; j++) {
      float s = score(p, bh, b, h, i, j);
      part += exp_shifted(m > -INFINITY ? s - m : (isnan(s) ? NAN : -INFINITY));
    }
    sum += part;
  }
  if (which == 1) return sum;
  if (sum == 0.0f) return 0.0f;
  float inv = 1.0f / sum, delta = 0.0f;
  for (int32_t j0 = lo; j0 < hi; j0 += 64) {
    int32_t j1 = min_i32(j0 + 64, hi);
    float part = 0.0f;
    for (int32_t j = j0; j < j1; j++) part += exp_shifted(score(p, bh, b, h, i, j) - m) * inv * dprob(p, bh, i, j);
    delta += part;
  }
  return delta;
}

static float forward_value(const attn_pass *p, int32_t idx) {
  const int32_t *u = p->u;
  int32_t dv = u[5], r = idx / dv, e = idx % dv;
  int32_t bh = r / u[2], i = r % u[2], b = bh / u[1], h = bh % u[1], lo, hi;
  float m = p->stats[2 * r], sum = p->stats[2 * r + 1];
  if (sum == 0.0f) return 0.0f;
  key_range(p, i, &lo, &hi);
  float acc = 0.0f;
  for (int32_t j0 = lo; j0 < hi; j0 += 64) {
    int32_t j1 = min_i32(j0 + 64, hi);
    float part = 0.0f;
    for (int32_t j = j0; j < j1; j++) part += exp_shifted(score(p, bh, b, h, i, j) - m) * p->v[(bh * u[3] + j) * dv + e];
    acc += part;
  }
  return acc * (1.0f / sum);
}

/* dS of query i, key j with the row's m, 1 / s and delta */
static float dscore(const attn_pass *p, int32_t bh, int32_t b, int32_t h, int32_t i, int32_t j, const float *st) {
  float prob = exp_shifted(score(p, bh, b, h, i, j) - st[0]) * st[1];
  return p->scale * prob * (dprob(p, bh, i, j) - st[2]);
}

static float grad_value(const attn_pass *p, int32_t idx) {
  const int32_t *u = p->u;
  int32_t heads = u[0] * u[1], sq = u[2], sk = u[3], d = u[4], dv = u[5];
  int32_t nq = heads * sq * d, nk = heads * sk * d;
  float acc = 0.0f;
  if (idx < nq) {
    int32_t r = idx / d, t = idx % d, bh = r / sq, i = r % sq, b = bh / u[1], h = bh % u[1], lo, hi;
    float sum = p->stats[3 * r + 1];
    if (sum == 0.0f) return 0.0f;
    float st[3] = {p->stats[3 * r], 1.0f / sum, p->stats[3 * r + 2]};
    key_range(p, i, &lo, &hi);
    for (int32_t j0 = lo; j0 < hi; j0 += 64) {
      int32_t j1 = min_i32(j0 + 64, hi);
      float part = 0.0f;
      for (int32_t j = j0; j < j1; j++) part += dscore(p, bh, b, h, i, j, st) * p->k[(bh * sk + j) * d + t];
      acc += part;
    }
    return acc;
  }
  int is_k = idx < nq + nk;
  int32_t width = is_k ? d : dv, rel = is_k ? idx - nq : idx - nq - nk;
  int32_t kr = rel / width, t = rel % width, bh = kr / sk, j = kr % sk, b = bh / u[1], h = bh % u[1];
  for (int32_t i0 = 0; i0 < sq; i0 += 64) {
    int32_t i1 = min_i32(i0 + 64, sq);
    float part = 0.0f;
    for (int32_t i = i0; i < i1; i++) {
      int32_t lo, hi, r = bh * sq + i;
      key_range(p, i, &lo, &hi);
      float sum = p->stats[3 * r + 1];
      if (j < lo || j >= hi || sum == 0.0f) continue;
      float st[3] = {p->stats[3 * r], 1.0f / sum, p->stats[3 * r + 2]};
      if (is_k) {
        part += dscore(p, bh, b, h, i, j, st) * p->q[r * d + t];
      } else {
        float prob = exp_shifted(score(p, bh, b, h, i, j) - st[0]) * st[1];
        part += prob * p->dy[r * dv + t];
      }
    }
    acc += part;
  }
  return acc;
}

void rlx_glref_attention(const rlx_glref_args *a) {
  attn_pass p = {0};
  p.u = a->pass->ints;
  p.scale = a->pass->floats[0];
  p.mode = rlx_gl_define_value(a->pass, "MODE", 0);
  p.grad = rlx_gl_define_value(a->pass, "GRAD", 0);
  p.mask_kind = rlx_gl_define_value(a->pass, "MASK", 0);
  int has_mask = rlx_gl_define_value(a->pass, "HAS_MASK", 0);
  int32_t at = 3;
  p.q = a->in[0], p.k = a->in[1], p.v = a->in[2];
  if (p.grad) p.dy = a->in[at++];
  if (has_mask) p.mask = a->in[at++];
  if (p.mode != 0) p.stats = a->in[at];
  for (size_t i = 0; i < a->out_n; i++) {
    int32_t idx = (int32_t)i;
    a->out[i] = p.mode == 0 ? stats_value(&p, idx) : p.mode == 1 ? forward_value(&p, idx) : grad_value(&p, idx);
  }
}
