/* test_gguf.c - GGUF files and weight types (include/rlx_gguf.h).
 *
 * Weight types: the table's sizes are the format's; every half and bfloat16
 * bit pattern decodes as an independent decoder says and re-encodes to
 * itself; each block type dequantizes random blocks like a reference
 * decoder written here from the format description (a bit-position reader,
 * not the library's nibble loops); quantize -> dequantize stays within the
 * format's bound on several kinds of data; dot equals the dot of the
 * reference-dequantized row; bad arguments and unrepresentable values are
 * refused.
 * Files: a file with every metadata type (scalars, strings, arrays of each,
 * arrays of strings) and a tensor of every type written and read back from
 * memory (zero-copy), from a path and from a stream at an offset; a small
 * file cut at every byte, and hand-made hostile files (lying counts, huge
 * lengths, bad alignment, bad types, overflowing dims, offsets past the end
 * or overlapping, duplicate names, a tensor-data budget) each give an error
 * with a message, allocate little and leak nothing; every allocation of
 * open and of the writer fails in turn.  The header alone from a prefix
 * (rlx_gguf_open_head): more bytes asked for until it parses, the table
 * without data, reads refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_gguf.h"

/* ---- small helpers ------------------------------------------------------------ */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng_state >> 33);
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() >> 8) / 16777216.0f; }

/* The weight types as the format defines them (written out here, not read
 * from the library's table). */
typedef struct {
  rlx_gguf_type t;
  const char *name;
  int code, block, bytes;
} type_fact;
static const type_fact TYPES[] = {
    {RLX_GGUF_TYPE_F32, "f32", 0, 1, 4},       {RLX_GGUF_TYPE_F16, "f16", 1, 1, 2},
    {RLX_GGUF_TYPE_Q4_0, "q4_0", 2, 32, 18},   {RLX_GGUF_TYPE_Q4_1, "q4_1", 3, 32, 20},
    {RLX_GGUF_TYPE_Q5_0, "q5_0", 6, 32, 22},   {RLX_GGUF_TYPE_Q5_1, "q5_1", 7, 32, 24},
    {RLX_GGUF_TYPE_Q8_0, "q8_0", 8, 32, 34},   {RLX_GGUF_TYPE_Q4_K, "q4_K", 12, 256, 144},
    {RLX_GGUF_TYPE_Q5_K, "q5_K", 13, 256, 176}, {RLX_GGUF_TYPE_Q6_K, "q6_K", 14, 256, 210},
    {RLX_GGUF_TYPE_BF16, "bf16", 30, 1, 2},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

/* ---- an independent reference decoder --------------------------------------------- */
static double ref_half(const uint8_t *p) {
  unsigned h = p[0] | (unsigned)p[1] << 8, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, (int)e - 25);
  return (h >> 15) ? -v : v;
}
static double ref_bf16(const uint8_t *p) {
  unsigned h = p[0] | (unsigned)p[1] << 8, e = (h >> 7) & 255, m = h & 127;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, (int)e - 134);
  return (h >> 15) ? -v : v;
}
/* n bits starting at bit pos (bit 0 = least significant bit of byte 0). */
static unsigned bits(const uint8_t *p, unsigned pos, unsigned n) {
  unsigned v = 0;
  for (unsigned k = 0; k < n; k++) v |= ((p[(pos + k) / 8] >> ((pos + k) % 8)) & 1u) << k;
  return v;
}
/* The K-types' 6-bit scale (which = 0) or min (which = 1) of sub-block j:
 * sub-blocks 0-3 have them in the low 6 bits of bytes j and j + 4; 4-7 have
 * their low 4 bits in byte j + 4 (scale low nibble, min high nibble) and
 * their top 2 bits in the top bits of bytes j - 4 (scale) and j (min). */
static unsigned k_scale(const uint8_t *s, unsigned j, unsigned which) {
  if (j < 4) return bits(s, 8 * (j + 4 * which), 6);
  return bits(s, 8 * (j + 4) + 4 * which, 4) | bits(s, 8 * (j - 4 + 4 * which) + 6, 2) << 4;
}

/* Element e of a block of type t. */
static double ref_value(rlx_gguf_type t, const uint8_t *b, unsigned e) {
  switch (t) {
    case RLX_GGUF_TYPE_F32: { float f; memcpy(&f, b + 4 * e, 4); return f; }
    case RLX_GGUF_TYPE_F16: return ref_half(b + 2 * e);
    case RLX_GGUF_TYPE_BF16: return ref_bf16(b + 2 * e);
    case RLX_GGUF_TYPE_Q8_0: return ref_half(b) * (double)(int8_t)b[2 + e];
    case RLX_GGUF_TYPE_Q4_0: return ref_half(b) * ((int)bits(b + 2, 8 * (e % 16) + 4 * (e / 16), 4) - 8);
    case RLX_GGUF_TYPE_Q4_1:
      return ref_half(b) * bits(b + 4, 8 * (e % 16) + 4 * (e / 16), 4) + ref_half(b + 2);
    case RLX_GGUF_TYPE_Q5_0: {
      unsigned q = bits(b + 6, 8 * (e % 16) + 4 * (e / 16), 4) + 16 * bits(b + 2, e, 1);
      return ref_half(b) * ((int)q - 16);
    }
    case RLX_GGUF_TYPE_Q5_1: {
      unsigned q = bits(b + 8, 8 * (e % 16) + 4 * (e / 16), 4) + 16 * bits(b + 4, e, 1);
      return ref_half(b) * q + ref_half(b + 2);
    }
    case RLX_GGUF_TYPE_Q4_K: case RLX_GGUF_TYPE_Q5_K: {
      unsigned sub = e / 32, qs = t == RLX_GGUF_TYPE_Q4_K ? 16 : 48;
      unsigned q = bits(b + qs, 8 * (32 * (e / 64) + e % 32) + 4 * (sub % 2), 4);
      if (t == RLX_GGUF_TYPE_Q5_K) q += 16 * bits(b + 16, 8 * (e % 32) + sub, 1);
      return ref_half(b) * k_scale(b + 4, sub, 0) * q - ref_half(b + 2) * k_scale(b + 4, sub, 1);
    }
    case RLX_GGUF_TYPE_Q6_K: {
      unsigned h = e / 128, k = (e % 128) / 32, l = e % 32;
      unsigned lo = bits(b, 8 * (64 * h + 32 * (k % 2) + l) + 4 * (k / 2), 4);
      unsigned hi = bits(b + 128, 8 * (32 * h + l) + 2 * k, 2);
      return ref_half(b + 208) * (int8_t)b[192 + e / 16] * ((int)(lo | hi << 4) - 32);
    }
    default: fail_msg("no reference for type %d", (int)t); return 0;
  }
}

static const type_fact *fact(rlx_gguf_type t) {
  for (size_t i = 0; i < N_TYPES; i++)
    if (TYPES[i].t == t) return &TYPES[i];
  return NULL;
}

/* A random finite half with |x| in [2^lo, 2^hi), random sign when signed. */
static void put_half(uint8_t *p, int lo, int hi, int sign) {
  double v = ldexp(1.0 + uniform(0, 1), lo + (int)(rnd32() % (unsigned)(hi - lo)));
  if (sign && (rnd32() & 1)) v = -v;
  float f = (float)v;
  uint8_t q[2];
  assert_int_equal(rlx_gguf_quantize(RLX_GGUF_TYPE_F16, &f, 1, q, 2), RLX_OK);
  p[0] = q[0];
  p[1] = q[1];
}

/* Random blocks: random bytes with sane f16 scales where the format has them. */
static void random_blocks(rlx_gguf_type t, uint8_t *b, int nblocks) {
  int bytes = fact(t)->bytes;
  for (int i = 0; i < nblocks * bytes; i++) b[i] = (uint8_t)rnd32();
  for (int k = 0; k < nblocks; k++, b += bytes) switch (t) {
      case RLX_GGUF_TYPE_F32: { float f = uniform(-4, 4); memcpy(b, &f, 4); break; }
      case RLX_GGUF_TYPE_Q8_0: case RLX_GGUF_TYPE_Q4_0: case RLX_GGUF_TYPE_Q5_0: put_half(b, -12, 2, 1); break;
      case RLX_GGUF_TYPE_Q4_1: case RLX_GGUF_TYPE_Q5_1: put_half(b, -12, 2, 1); put_half(b + 2, -12, 2, 1); break;
      case RLX_GGUF_TYPE_Q4_K: case RLX_GGUF_TYPE_Q5_K: put_half(b, -16, -4, 0); put_half(b + 2, -16, -4, 0); break;
      case RLX_GGUF_TYPE_Q6_K: put_half(b + 208, -16, -6, 1); break;
      default: break; /* F16, BF16: any bits */
    }
}

/* ---- weight types ------------------------------------------------------------------ */
static void type_table_matches_the_format(void **state) {
  (void)state;
  for (size_t i = 0; i < N_TYPES; i++) {
    const type_fact *f = &TYPES[i];
    assert_int_equal((int)f->t, f->code);
    assert_string_equal(rlx_gguf_type_name(f->t), f->name);
    assert_int_equal(rlx_gguf_type_from_name(f->name), f->code);
    assert_int_equal(rlx_gguf_type_block_elems(f->t), f->block);
    assert_int_equal(rlx_gguf_type_block_bytes(f->t), f->bytes);
    uint64_t bytes = 0;
    assert_int_equal(rlx_gguf_row_bytes(f->t, 3 * f->block, &bytes), RLX_OK);
    assert_int_equal(bytes, 3u * (unsigned)f->bytes);
  }
  int unsupported[] = {4, 5, 9, 10, 11, 15, 16, 29, 31, 39, 40, 63, 64, 1000, -1};
  for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
    rlx_gguf_type t = (rlx_gguf_type)unsupported[i];
    assert_null(rlx_gguf_type_name(t));
    assert_int_equal(rlx_gguf_type_block_elems(t), 0);
    assert_int_equal(rlx_gguf_type_block_bytes(t), 0);
    uint64_t bytes;
    assert_int_equal(rlx_gguf_row_bytes(t, 32, &bytes), RLX_ERR_UNSUPPORTED);
  }
  assert_int_equal(rlx_gguf_type_from_name("q2_K"), -1);
  assert_int_equal(rlx_gguf_type_from_name(NULL), -1);
  assert_string_equal(rlx_gguf_vtype_name(RLX_GGUF_VAL_F64), "f64");
  assert_null(rlx_gguf_vtype_name((rlx_gguf_vtype)13));
}

/* Every half and bfloat16: decodes as ref_half / ref_bf16 says, and every
 * non-NaN value encodes back to the same bits (NaN stays NaN). */
static void half_and_bfloat16_every_bit_pattern(void **state) {
  (void)state;
  for (int which = 0; which < 2; which++) {
    rlx_gguf_type t = which ? RLX_GGUF_TYPE_BF16 : RLX_GGUF_TYPE_F16;
    uint8_t *all = malloc(65536 * 2), *back = malloc(65536 * 2);
    float *f = malloc(65536 * sizeof *f);
    for (unsigned h = 0; h < 65536; h++) {
      all[2 * h] = (uint8_t)h;
      all[2 * h + 1] = (uint8_t)(h >> 8);
    }
    assert_int_equal(rlx_gguf_dequantize(t, all, 65536 * 2, f, 65536), RLX_OK);
    assert_int_equal(rlx_gguf_quantize(t, f, 65536, back, 65536 * 2), RLX_OK);
    for (unsigned h = 0; h < 65536; h++) {
      double want = which ? ref_bf16(all + 2 * h) : ref_half(all + 2 * h);
      if (isnan(want)) {
        assert_true(isnan(f[h]));
        unsigned b = back[2 * h] | (unsigned)back[2 * h + 1] << 8;
        assert_true(which ? ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) : ((b & 0x7c00) == 0x7c00 && (b & 0x3ff)));
        continue;
      }
      if ((double)f[h] != want) fail_msg("%s 0x%04x: %.9g, want %.9g", which ? "bf16" : "f16", h, f[h], want);
      assert_memory_equal(back + 2 * h, all + 2 * h, 2);
    }
    free(all);
    free(back);
    free(f);
  }
  /* rounding: ties to even, overflow to inf, underflow to (signed) zero */
  struct { float in; unsigned f16; } cases[] = {
      {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 3 * 0x1p-11f, 0x3c02}, {65504.0f, 0x7bff}, {65519.0f, 0x7bff},
      {65520.0f, 0x7c00}, {-1e9f, 0xfc00}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001}, {-0x1p-26f, 0x8000},
      {0x1p-14f, 0x0400}, {0x1.ffcp-15f, 0x0400}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint8_t q[2];
    assert_int_equal(rlx_gguf_quantize(RLX_GGUF_TYPE_F16, &cases[i].in, 1, q, 2), RLX_OK);
    if ((unsigned)(q[0] | q[1] << 8) != cases[i].f16)
      fail_msg("f16(%a) = 0x%04x, want 0x%04x", cases[i].in, q[0] | q[1] << 8, cases[i].f16);
  }
}

/* Library dequantization of random blocks == the reference decoder. */
static void dequantize_matches_the_reference(void **state) {
  (void)state;
  enum { NB = 24 };
  for (size_t i = 0; i < N_TYPES; i++) {
    const type_fact *f = &TYPES[i];
    int n = NB * f->block;
    uint8_t *b = malloc((size_t)NB * f->bytes);
    float *out = malloc((size_t)n * sizeof *out);
    for (int round = 0; round < 20; round++) {
      random_blocks(f->t, b, NB);
      assert_int_equal(rlx_gguf_dequantize(f->t, b, (size_t)NB * f->bytes, out, n), RLX_OK);
      for (int k = 0; k < NB; k++) {
        const uint8_t *blk = b + (size_t)k * f->bytes;
        double scale = 0;
        for (int e = 0; e < f->block; e++) scale = fmax(scale, fabs(ref_value(f->t, blk, (unsigned)e)));
        for (int e = 0; e < f->block; e++) {
          double want = ref_value(f->t, blk, (unsigned)e), got = out[k * f->block + e];
          if (isnan(want) && isnan(got)) continue;
          double tol = f->block == 1 ? 0 : 4e-7 * scale; /* a float rounding or two per value */
          if (!(fabs(got - want) <= tol))
            fail_msg("%s block %d element %d: %.9g, want %.9g", f->name, k, e, got, want);
        }
      }
    }
    free(b);
    free(out);
  }
}

/* Data of one kind for quantization: 0 uniform [-1, 1], 1 heavy-tailed,
 * 2 positive, 3 negative, 4 tiny, 5 constant blocks, 6 large, 7 zero,
 * 8 sparse outliers. */
static void make_data(float *x, int n, int kind) {
  for (int i = 0; i < n; i++) {
    float u = uniform(-1, 1);
    switch (kind) {
      case 0: x[i] = u; break;
      case 1: x[i] = u * u * u * 30.0f; break;
      case 2: x[i] = 3.0f + u; break;
      case 3: x[i] = -7.0f + 0.1f * u; break;
      case 4: x[i] = u * 1e-6f; break;
      case 5: x[i] = (float)((i / 32) % 5) - 2.0f; break;
      case 6: x[i] = u * 6e4f; break;
      case 7: x[i] = 0.0f; break;
      default: x[i] = (rnd32() % 61 == 0) ? 100.0f * u : 0.01f * u; break;
    }
  }
}

/* The largest error quantizing block x (one block of t) may have. */
static double error_bound(rlx_gguf_type t, const float *x, int e) {
  const double H = 1.0 + 0x1p-9, TINY = 0x1p-23; /* f16 rounding up; subnormal spacing */
  double amax = 0, mn = x[0], mx = x[0];
  for (int i = 0; i < fact(t)->block; i++) {
    amax = fmax(amax, fabs(x[i]));
    mn = fmin(mn, x[i]);
    mx = fmax(mx, x[i]);
  }
  switch (t) {
    case RLX_GGUF_TYPE_F32: return 0;
    case RLX_GGUF_TYPE_F16: return fmax(fabs(x[e]) * 0x1p-11, 0x1p-25);
    case RLX_GGUF_TYPE_BF16: return fmax(fabs(x[e]) * 0x1p-8, 0x1p-134);
    case RLX_GGUF_TYPE_Q8_0: return 0.5 * (amax / 127 * H + TINY);
    case RLX_GGUF_TYPE_Q4_0: return amax / 8 * H + TINY;  /* the end opposite the max: one step */
    case RLX_GGUF_TYPE_Q5_0: return amax / 16 * H + TINY;
    case RLX_GGUF_TYPE_Q4_1: case RLX_GGUF_TYPE_Q5_1: {
      int levels = t == RLX_GGUF_TYPE_Q4_1 ? 15 : 31;
      return 0.5 * ((mx - mn + 0x1p-9 * amax) / levels * H + TINY) + 1e-7 * amax;
    }
    case RLX_GGUF_TYPE_Q4_K: case RLX_GGUF_TYPE_Q5_K: {
      int levels = t == RLX_GGUF_TYPE_Q4_K ? 15 : 31;
      double range[8], negmax = 0, smax = 0, sub_amax = 0;
      for (int j = 0; j < 8; j++) {
        double lo = x[32 * j], hi = x[32 * j];
        for (int l = 0; l < 32; l++) {
          lo = fmin(lo, x[32 * j + l]);
          hi = fmax(hi, x[32 * j + l]);
        }
        range[j] = hi - fmin(lo, 0);
        negmax = fmax(negmax, -fmin(lo, 0));
        if (j == e / 32) sub_amax = fmax(fabs(lo), fabs(hi));
      }
      double dmin = negmax / 63 * H + TINY;
      for (int j = 0; j < 8; j++) smax = fmax(smax, range[j] + dmin);
      double d = smax / levels / 63 * H + TINY;
      return 0.5 * ((range[e / 32] + dmin) / levels + d) * (1 + 1e-5) + 1e-6 * sub_amax;
    }
    case RLX_GGUF_TYPE_Q6_K: {
      double smax = 0, a = 0;
      for (int j = 0; j < 16; j++) {
        double m = 0;
        for (int l = 0; l < 16; l++) m = fmax(m, fabs(x[16 * j + l]));
        smax = fmax(smax, m / 31);
        if (j == e / 16) a = m;
      }
      double d = smax / 127 * H + TINY;
      return 0.5 * (a / 31 + d) * (1 + 1e-5) + 1e-6 * a;
    }
    default: fail_msg("no bound for %d", (int)t); return 0;
  }
}

static void quantize_error_within_the_format_bound(void **state) {
  (void)state;
  enum { N = 1024 };
  float x[N], y[N];
  uint8_t q[N * 4 + 16];
  for (size_t i = 0; i < N_TYPES; i++) {
    const type_fact *f = &TYPES[i];
    size_t bytes = (size_t)(N / f->block) * f->bytes;
    for (int kind = 0; kind < 9; kind++) {
      make_data(x, N, kind);
      memset(q, 0xAB, sizeof q);
      rlx_status st = rlx_gguf_quantize(f->t, x, N, q, bytes);
      if (st != RLX_OK) fail_msg("%s kind %d: %s", f->name, kind, rlx_last_error());
      assert_int_equal(q[bytes], 0xAB); /* wrote nothing past the row */
      assert_int_equal(rlx_gguf_dequantize(f->t, q, bytes, y, N), RLX_OK);
      for (int e = 0; e < N; e++) {
        int b0 = e / f->block * f->block;
        double bound = error_bound(f->t, x + b0, e - b0), err = fabs((double)y[e] - x[e]);
        if (!(err <= bound))
          fail_msg("%s kind %d element %d: %.9g -> %.9g, error %.3g past the bound %.3g", f->name, kind, e, x[e],
                   y[e], err, bound);
      }
      if (kind == 7) for (int e = 0; e < N; e++) assert_true(y[e] == 0.0f); /* zeros stay zeros */
    }
  }
}

/* dot(row, x) == sum of reference-dequantized row * x, within f32 rounding. */
static void dot_matches_the_dequantized_row(void **state) {
  (void)state;
  enum { N = 512 };
  float x[N], w[N];
  uint8_t q[N * 4];
  for (size_t i = 0; i < N_TYPES; i++) {
    const type_fact *f = &TYPES[i];
    size_t bytes = (size_t)(N / f->block) * f->bytes;
    for (int round = 0; round < 30; round++) {
      if (round < 10) {
        random_blocks(f->t, q, N / f->block);
        if (f->t == RLX_GGUF_TYPE_F16 || f->t == RLX_GGUF_TYPE_BF16) { /* finite values only */
          make_data(w, N, 0);
          rlx_gguf_quantize(f->t, w, N, q, bytes);
        }
      } else {
        make_data(w, N, round % 9);
        assert_int_equal(rlx_gguf_quantize(f->t, w, N, q, bytes), RLX_OK);
      }
      make_data(x, N, round % 2);
      double want = 0, mag = 0;
      for (int e = 0; e < N; e++) {
        double v = ref_value(f->t, q + (size_t)(e / f->block) * f->bytes, (unsigned)(e % f->block));
        want += v * x[e];
        mag += fabs(v * x[e]);
      }
      float got = -1;
      assert_int_equal(rlx_gguf_dot(f->t, q, bytes, x, N, &got), RLX_OK);
      if (!(fabs(got - want) <= 4e-6 * mag + 1e-30))
        fail_msg("%s round %d: dot %.9g, want %.9g (|terms| %.3g)", f->name, round, got, want, mag);
    }
  }
}

static void row_calls_refuse_bad_arguments(void **state) {
  (void)state;
  float x[256] = {0}, out;
  uint8_t q[1024] = {0};
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, q, sizeof q, x, 31), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, q, 17, x, 32), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, q, 18, x, -32), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, NULL, 18, x, 32), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, q, 18, NULL, 32), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dequantize((rlx_gguf_type)10, q, sizeof q, x, 256), RLX_ERR_UNSUPPORTED);
  assert_non_null(strstr(rlx_last_error(), "q2_K"));
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, NULL, 0, NULL, 0), RLX_OK);
  assert_int_equal(rlx_gguf_quantize(RLX_GGUF_TYPE_Q6_K, x, 256, q, 209), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dot(RLX_GGUF_TYPE_Q8_0, q, sizeof q, x, 32, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dot(RLX_GGUF_TYPE_Q8_0, q, sizeof q, x, 33, &out), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_dot(RLX_GGUF_TYPE_Q8_0, q, sizeof q, x, 0, &out), RLX_OK);
  assert_true(out == 0.0f);
  uint64_t bytes;
  assert_int_equal(rlx_gguf_row_bytes(RLX_GGUF_TYPE_F32, INT64_MAX, &bytes), RLX_ERR_INVALID_ARG); /* overflow */
  assert_int_equal(rlx_gguf_row_bytes(RLX_GGUF_TYPE_F32, 4, NULL), RLX_ERR_INVALID_ARG);
  /* non-finite values: refused by the block types, kept by the float types */
  float bad[3] = {NAN, INFINITY, -INFINITY};
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 256; i++) x[i] = 0.5f;
    x[77] = bad[k];
    for (size_t i = 0; i < N_TYPES; i++) {
      rlx_status st = rlx_gguf_quantize(TYPES[i].t, x, 256, q, sizeof q);
      assert_int_equal(st, TYPES[i].block > 1 ? RLX_ERR_NUMERIC : RLX_OK);
      if (st != RLX_OK) assert_non_null(strstr(rlx_last_error(), "value 77"));
    }
  }
  /* a scale past f16: refused, naming the block */
  for (int i = 0; i < 256; i++) x[i] = i == 100 ? 3e38f : 1.0f;
  for (size_t i = 0; i < N_TYPES; i++) {
    rlx_status st = rlx_gguf_quantize(TYPES[i].t, x, 256, q, sizeof q);
    assert_int_equal(st, TYPES[i].block > 1 ? RLX_ERR_NUMERIC : RLX_OK);
    if (st != RLX_OK) assert_non_null(strstr(rlx_last_error(), "f16"));
  }
}

/* ---- files: a byte builder for hand-made files ------------------------------------------- */
typedef struct {
  uint8_t *b;
  size_t n, cap;
} bytes_t;
static void put(bytes_t *s, const void *p, size_t n) {
  if (s->n + n > s->cap) {
    s->cap = (s->n + n) * 2 + 64;
    s->b = realloc(s->b, s->cap);
    assert_non_null(s->b);
  }
  memcpy(s->b + s->n, p, n);
  s->n += n;
}
static void p8(bytes_t *s, unsigned v) { uint8_t b = (uint8_t)v; put(s, &b, 1); }
static void p32(bytes_t *s, uint32_t v) { for (int k = 0; k < 4; k++) p8(s, (v >> (8 * k)) & 255); }
static void p64(bytes_t *s, uint64_t v) { for (int k = 0; k < 8; k++) p8(s, (unsigned)(v >> (8 * k)) & 255); }
static void pstr(bytes_t *s, const char *str) {
  p64(s, strlen(str));
  put(s, str, strlen(str));
}
static void header(bytes_t *s, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  s->n = 0;
  put(s, "GGUF", 4);
  p32(s, version);
  p64(s, n_tensors);
  p64(s, n_kv);
}
static void pad_to(bytes_t *s, size_t a) { while (s->n % a) p8(s, 0); }
static void zeros(bytes_t *s, size_t n) { for (size_t i = 0; i < n; i++) p8(s, 0); }
/* A tensor info with up to 4 dims. */
static void tinfo(bytes_t *s, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type, uint64_t off) {
  pstr(s, name);
  p32(s, n_dims);
  for (uint32_t k = 0; k < n_dims; k++) p64(s, dims[k]);
  p32(s, type);
  p64(s, off);
}

static char tmp_dir[] = "/tmp/rlx_test_gguf_XXXXXX";
static const char *tmp_path(const char *name) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  return path;
}
static const char *write_tmp(const char *name, const void *data, size_t n) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  return path;
}

/* Opens data from memory and as a file; both must fail with want (and a
 * message containing text, when given), allocate at most a small multiple
 * of the file (plus a fixed amount) and leave nothing behind. */
static void expect_refused(const bytes_t *s, uint64_t budget, rlx_status want, const char *text) {
  size_t live = check_alloc_live_bytes(), blocks = check_alloc_live_blocks();
  check_alloc_reset_peak();
  rlx_gguf *g = (rlx_gguf *)1;
  rlx_status st = rlx_gguf_open_memory(s->b, s->n, budget, &g);
  if (st != want) fail_msg("memory: status %d (%s), want %d", st, rlx_last_error(), want);
  assert_null(g);
  assert_true(strlen(rlx_last_error()) > 10);
  if (text && !strstr(rlx_last_error(), text)) fail_msg("message '%s' lacks '%s'", rlx_last_error(), text);
  const char *path = write_tmp("hostile.gguf", s->b, s->n);
  st = rlx_gguf_open_file(path, budget, &g);
  if (st != want) fail_msg("file: status %d (%s), want %d", st, rlx_last_error(), want);
  assert_null(g);
  assert_non_null(strstr(rlx_last_error(), "hostile.gguf"));
  if (text && !strstr(rlx_last_error(), text)) fail_msg("message '%s' lacks '%s'", rlx_last_error(), text);
  if (check_alloc_active()) {
    assert_true(check_alloc_peak_bytes() - live <= 16 * s->n + 8192);
    assert_int_equal(check_alloc_live_bytes(), live);
    assert_int_equal(check_alloc_live_blocks(), blocks);
  }
}

/* ---- the round trip ---------------------------------------------------------------------- */
#define N_ROWS 2
typedef struct {
  uint8_t *data[N_TYPES];
  uint64_t bytes[N_TYPES];
  float *values[N_TYPES];
} tensors_t;

static uint8_t u8v = 250;
static int8_t i8v = -128;
static uint16_t u16v = 65535;
static int16_t i16v = -32768;
static uint32_t u32v = 4000000000u;
static int32_t i32v = INT32_MIN;
static float f32v = -1.5e-30f;
static uint8_t boolv = 1;
static uint64_t u64v = UINT64_MAX;
static int64_t i64v = INT64_MIN;
static double f64v = 3.141592653589793;
static const char with_nul[] = {'a', 0, 'b'};
static const uint8_t a_u8[] = {0, 1, 255};
static const int8_t a_i8[] = {-128, 0, 127};
static const uint16_t a_u16[] = {1, 65535};
static const int16_t a_i16[] = {-32768, 32767, -1};
static const uint32_t a_u32[] = {7, 0xffffffffu};
static const int32_t a_i32[] = {INT32_MIN, INT32_MAX};
static const float a_f32[] = {0.25f, -0.0f, 1e38f};
static const uint8_t a_bool[] = {1, 0, 0, 1};
static const uint64_t a_u64[] = {UINT64_MAX, 0, 42};
static const int64_t a_i64[] = {INT64_MIN, -1};
static const double a_f64[] = {1e-300, -2.5};
static const char *const a_str[] = {"hello", "", "w\xc3\xb6rld", "token with spaces"};

/* The file of the round trip: every metadata kind, a tensor of every type
 * ([256, N_ROWS] from random values) and tensors of other shapes. */
static rlx_gguf_writer *make_writer(tensors_t *ts, uint32_t alignment) {
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string(w, "general.architecture", "llama", 5), RLX_OK);
  if (alignment) assert_int_equal(rlx_gguf_writer_set_alignment(w, alignment), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.u8", RLX_GGUF_VAL_U8, &u8v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.i8", RLX_GGUF_VAL_I8, &i8v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.u16", RLX_GGUF_VAL_U16, &u16v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.i16", RLX_GGUF_VAL_I16, &i16v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.u32", RLX_GGUF_VAL_U32, &u32v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.i32", RLX_GGUF_VAL_I32, &i32v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.f32", RLX_GGUF_VAL_F32, &f32v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.bool", RLX_GGUF_VAL_BOOL, &boolv), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.u64", RLX_GGUF_VAL_U64, &u64v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.i64", RLX_GGUF_VAL_I64, &i64v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "t.f64", RLX_GGUF_VAL_F64, &f64v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string(w, "t.empty", NULL, 0), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string(w, "t.nul", with_nul, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.u8", RLX_GGUF_VAL_U8, a_u8, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.i8", RLX_GGUF_VAL_I8, a_i8, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.u16", RLX_GGUF_VAL_U16, a_u16, 2), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.i16", RLX_GGUF_VAL_I16, a_i16, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.u32", RLX_GGUF_VAL_U32, a_u32, 2), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.i32", RLX_GGUF_VAL_I32, a_i32, 2), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.f32", RLX_GGUF_VAL_F32, a_f32, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.bool", RLX_GGUF_VAL_BOOL, a_bool, 4), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.u64", RLX_GGUF_VAL_U64, a_u64, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.i64", RLX_GGUF_VAL_I64, a_i64, 2), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.f64", RLX_GGUF_VAL_F64, a_f64, 2), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a.empty", RLX_GGUF_VAL_I32, NULL, 0), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string_array(w, "a.str", a_str, NULL, 4), RLX_OK);
  uint64_t lens[2] = {3, 0};
  const char *const nul_strs[2] = {with_nul, NULL};
  assert_int_equal(rlx_gguf_writer_add_string_array(w, "a.str_len", nul_strs, lens, 2), RLX_OK);
  for (size_t i = 0; i < N_TYPES; i++) {
    const type_fact *f = &TYPES[i];
    int n = 256 * N_ROWS;
    ts->values[i] = malloc(n * sizeof(float));
    make_data(ts->values[i], n, (int)i % 3);
    ts->bytes[i] = (uint64_t)(n / f->block) * f->bytes;
    ts->data[i] = malloc(ts->bytes[i]);
    assert_int_equal(rlx_gguf_quantize(f->t, ts->values[i], n, ts->data[i], ts->bytes[i]), RLX_OK);
    char name[32];
    snprintf(name, sizeof name, "blk.%s.weight", f->name);
    int64_t dims[2] = {256, N_ROWS};
    assert_int_equal(rlx_gguf_writer_add_tensor(w, name, f->t, 2, dims, ts->data[i], ts->bytes[i]), RLX_OK);
  }
  /* other ranks: a scalar, 1-D, 4-D (reusing values), and an empty tensor */
  int64_t d4[4] = {2, 2, 2, 2}, d1[1] = {64}, d0[2] = {8, 0};
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "scalar", RLX_GGUF_TYPE_F32, 0, NULL, ts->data[0], 4), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "vec.q8", RLX_GGUF_TYPE_Q8_0, 1, d1, ts->data[6], 68), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "four.d", RLX_GGUF_TYPE_F16, 4, d4, ts->data[1], 32), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "empty", RLX_GGUF_TYPE_F16, 2, d0, NULL, 0), RLX_OK);
  return w;
}

static void free_tensors(tensors_t *ts) {
  for (size_t i = 0; i < N_TYPES; i++) {
    free(ts->data[i]);
    free(ts->values[i]);
  }
}

static void expect_number(const rlx_gguf *g, const char *key, rlx_gguf_vtype t, double f, int64_t i, uint64_t u) {
  rlx_gguf_value v;
  assert_int_equal(rlx_gguf_get(g, key, &v), RLX_OK);
  assert_int_equal(v.type, t);
  if (v.f64 != f) fail_msg("%s: f64 %.17g, want %.17g", key, v.f64, f);
  assert_true(v.i64 == i);
  assert_true(v.u64 == u);
}

static void expect_array(const rlx_gguf *g, const char *key, rlx_gguf_vtype t, const void *values, size_t n,
                         size_t size) {
  rlx_gguf_value v;
  assert_int_equal(rlx_gguf_get(g, key, &v), RLX_OK);
  assert_int_equal(v.type, RLX_GGUF_VAL_ARRAY);
  assert_int_equal(v.elem_type, t);
  assert_int_equal(v.count, n);
  assert_non_null(v.data);
  if (n) assert_memory_equal(v.data, values, n * size);
}

/* Everything make_writer put in, read back through g. */
static void check_contents(rlx_gguf *g, const tensors_t *ts, uint32_t alignment, const uint8_t *file) {
  assert_int_equal(rlx_gguf_version(g), 3);
  assert_int_equal(rlx_gguf_alignment(g), alignment ? alignment : 32);
  assert_int_equal(rlx_gguf_kv_count(g), 28 + (alignment ? 1 : 0));
  const char *key;
  rlx_gguf_value v;
  assert_int_equal(rlx_gguf_kv(g, 0, &key, &v), RLX_OK);
  assert_string_equal(key, "general.architecture");
  assert_int_equal(v.type, RLX_GGUF_VAL_STRING);
  assert_string_equal(v.str, "llama");
  assert_int_equal(rlx_gguf_find_kv(g, "t.f64"), 11 + (alignment ? 1 : 0));
  assert_int_equal(rlx_gguf_find_kv(g, "t.f6"), -1);
  assert_int_equal(rlx_gguf_find_kv(g, "nope"), -1);
  expect_number(g, "t.u8", RLX_GGUF_VAL_U8, 250, 250, 250);
  expect_number(g, "t.i8", RLX_GGUF_VAL_I8, -128, -128, 0);
  expect_number(g, "t.u16", RLX_GGUF_VAL_U16, 65535, 65535, 65535);
  expect_number(g, "t.i16", RLX_GGUF_VAL_I16, -32768, -32768, 0);
  expect_number(g, "t.u32", RLX_GGUF_VAL_U32, 4e9, 4000000000, 4000000000u);
  expect_number(g, "t.i32", RLX_GGUF_VAL_I32, INT32_MIN, INT32_MIN, 0);
  expect_number(g, "t.f32", RLX_GGUF_VAL_F32, (double)-1.5e-30f, 0, 0);
  expect_number(g, "t.bool", RLX_GGUF_VAL_BOOL, 1, 1, 1);
  expect_number(g, "t.u64", RLX_GGUF_VAL_U64, (double)UINT64_MAX, INT64_MAX, UINT64_MAX);
  expect_number(g, "t.i64", RLX_GGUF_VAL_I64, (double)INT64_MIN, INT64_MIN, 0);
  expect_number(g, "t.f64", RLX_GGUF_VAL_F64, 3.141592653589793, 3, 3);
  assert_int_equal(rlx_gguf_get(g, "t.empty", &v), RLX_OK);
  assert_int_equal(v.count, 0);
  assert_string_equal(v.str, "");
  assert_int_equal(rlx_gguf_get(g, "t.nul", &v), RLX_OK);
  assert_int_equal(v.count, 3);
  assert_memory_equal(v.str, with_nul, 3);
  assert_int_equal(v.str[3], 0);
  expect_array(g, "a.u8", RLX_GGUF_VAL_U8, a_u8, 3, 1);
  expect_array(g, "a.i8", RLX_GGUF_VAL_I8, a_i8, 3, 1);
  expect_array(g, "a.u16", RLX_GGUF_VAL_U16, a_u16, 2, 2);
  expect_array(g, "a.i16", RLX_GGUF_VAL_I16, a_i16, 3, 2);
  expect_array(g, "a.u32", RLX_GGUF_VAL_U32, a_u32, 2, 4);
  expect_array(g, "a.i32", RLX_GGUF_VAL_I32, a_i32, 2, 4);
  expect_array(g, "a.f32", RLX_GGUF_VAL_F32, a_f32, 3, 4);
  expect_array(g, "a.bool", RLX_GGUF_VAL_BOOL, a_bool, 4, 1);
  expect_array(g, "a.u64", RLX_GGUF_VAL_U64, a_u64, 3, 8);
  expect_array(g, "a.i64", RLX_GGUF_VAL_I64, a_i64, 2, 8);
  expect_array(g, "a.f64", RLX_GGUF_VAL_F64, a_f64, 2, 8);
  expect_array(g, "a.empty", RLX_GGUF_VAL_I32, NULL, 0, 4);
  int64_t si = rlx_gguf_find_kv(g, "a.str");
  assert_true(si >= 0);
  assert_int_equal(rlx_gguf_kv(g, si, NULL, &v), RLX_OK);
  assert_int_equal(v.elem_type, RLX_GGUF_VAL_STRING);
  assert_int_equal(v.count, 4);
  assert_null(v.data);
  for (uint64_t i = 0; i < 4; i++) {
    const char *s;
    uint64_t len;
    assert_int_equal(rlx_gguf_array_string(g, si, i, &s, &len), RLX_OK);
    assert_int_equal(len, strlen(a_str[i]));
    assert_string_equal(s, a_str[i]);
  }
  const char *s;
  uint64_t len;
  assert_int_equal(rlx_gguf_array_string(g, si, 4, &s, &len), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_array_string(g, rlx_gguf_find_kv(g, "a.u8"), 0, &s, &len), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_array_string(g, rlx_gguf_find_kv(g, "a.str_len"), 0, &s, &len), RLX_OK);
  assert_int_equal(len, 3);
  assert_memory_equal(s, with_nul, 3);
  /* typed shortcuts */
  int64_t iv;
  double fv;
  assert_int_equal(rlx_gguf_get_int(g, "t.u32", &iv), RLX_OK);
  assert_true(iv == 4000000000);
  assert_int_equal(rlx_gguf_get_int(g, "t.bool", &iv), RLX_OK);
  assert_true(iv == 1);
  assert_int_equal(rlx_gguf_get_int(g, "t.u64", &iv), RLX_ERR_INVALID_ARG); /* past int64 */
  assert_int_equal(rlx_gguf_get_int(g, "t.f32", &iv), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_get_int(g, "missing", &iv), RLX_ERR_NOT_FOUND);
  assert_int_equal(rlx_gguf_get_float(g, "t.i16", &fv), RLX_OK);
  assert_true(fv == -32768.0);
  assert_int_equal(rlx_gguf_get_float(g, "a.f32", &fv), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_get_string(g, "general.architecture", &s, &len), RLX_OK);
  assert_int_equal(len, 5);
  assert_int_equal(rlx_gguf_get_string(g, "t.u8", &s, &len), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_kv(g, rlx_gguf_kv_count(g), &key, &v), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_kv(g, -1, &key, &v), RLX_ERR_INVALID_ARG);

  /* tensors */
  assert_int_equal(rlx_gguf_tensor_count(g), N_TYPES + 4);
  uint64_t data_bytes = 0, prev_end = rlx_gguf_data_offset(g);
  assert_int_equal(rlx_gguf_data_offset(g) % rlx_gguf_alignment(g), 0);
  for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
    rlx_gguf_tensor_info t;
    assert_int_equal(rlx_gguf_tensor(g, i, &t), RLX_OK);
    assert_int_equal(rlx_gguf_find_tensor(g, t.name), i);
    assert_int_equal(t.file_offset % rlx_gguf_alignment(g), 0);
    assert_true(t.file_offset >= prev_end);
    prev_end = t.file_offset + t.bytes;
    data_bytes += t.bytes;
    if (file) assert_ptr_equal(t.data, file + t.file_offset);
    else assert_null(t.data);
    uint8_t *copy = malloc(t.bytes + 1);
    float *f = malloc((size_t)t.n_elements * sizeof *f + 1), *want = malloc((size_t)t.n_elements * sizeof *f + 1);
    assert_int_equal(rlx_gguf_read_tensor(g, i, copy, t.bytes), RLX_OK);
    if (t.bytes) assert_int_equal(rlx_gguf_read_tensor(g, i, copy, t.bytes - 1), RLX_ERR_INVALID_ARG);
    assert_int_equal(rlx_gguf_read_tensor_f32(g, i, f, (size_t)t.n_elements), RLX_OK);
    assert_int_equal(rlx_gguf_read_tensor_f32(g, i, f, (size_t)t.n_elements + 1), RLX_ERR_INVALID_ARG);
    assert_int_equal(rlx_gguf_dequantize(t.type, copy, t.bytes, want, t.n_elements), RLX_OK);
    if (t.n_elements) assert_memory_equal(f, want, (size_t)t.n_elements * sizeof *f);
    if (i < (int64_t)N_TYPES) {
      const type_fact *tf = &TYPES[i];
      char name[32];
      snprintf(name, sizeof name, "blk.%s.weight", tf->name);
      assert_string_equal(t.name, name);
      assert_int_equal(t.type, tf->t);
      assert_int_equal(t.n_dims, 2);
      assert_true(t.dims[0] == 256 && t.dims[1] == N_ROWS && t.dims[2] == 1 && t.dims[3] == 1);
      assert_int_equal(t.n_elements, 256 * N_ROWS);
      assert_int_equal(t.bytes, ts->bytes[i]);
      assert_memory_equal(copy, ts->data[i], t.bytes);
    }
    free(copy);
    free(f);
    free(want);
  }
  assert_int_equal(rlx_gguf_data_bytes(g), data_bytes);
  rlx_gguf_tensor_info t;
  int64_t k = rlx_gguf_find_tensor(g, "scalar");
  assert_int_equal(rlx_gguf_tensor(g, k, &t), RLX_OK);
  assert_true(t.n_dims == 0 && t.n_elements == 1 && t.bytes == 4);
  k = rlx_gguf_find_tensor(g, "four.d");
  assert_int_equal(rlx_gguf_tensor(g, k, &t), RLX_OK);
  assert_true(t.n_dims == 4 && t.n_elements == 16 && t.bytes == 32 && t.dims[3] == 2);
  k = rlx_gguf_find_tensor(g, "empty");
  assert_int_equal(rlx_gguf_tensor(g, k, &t), RLX_OK);
  assert_true(t.n_dims == 2 && t.n_elements == 0 && t.bytes == 0 && t.dims[1] == 0);
  assert_int_equal(rlx_gguf_find_tensor(g, "blk.q4_0.weigh"), -1);
  assert_int_equal(rlx_gguf_tensor(g, rlx_gguf_tensor_count(g), &t), RLX_ERR_INVALID_ARG);
}

static void write_then_read_every_type(void **state) {
  (void)state;
  uint32_t alignments[] = {0, 64, 1, 4096};
  for (size_t a = 0; a < sizeof alignments / sizeof *alignments; a++) {
    tensors_t ts;
    rlx_gguf_writer *w = make_writer(&ts, alignments[a]);
    uint64_t size;
    assert_int_equal(rlx_gguf_writer_size(w, &size), RLX_OK);
    /* from memory, zero-copy (an aligned buffer) */
    uint8_t *buf = aligned_alloc(4096, ((size_t)size + 4095) / 4096 * 4096);
    assert_int_equal(rlx_gguf_writer_write_memory(w, buf, (size_t)size - 1), RLX_ERR_INVALID_ARG);
    assert_int_equal(rlx_gguf_writer_write_memory(w, buf, (size_t)size), RLX_OK);
    assert_memory_equal(buf, "GGUF\3\0\0\0", 8);
    rlx_gguf *g;
    rlx_status st = rlx_gguf_open_memory(buf, (size_t)size, RLX_GGUF_NO_BUDGET, &g);
    if (st != RLX_OK) fail_msg("%s", rlx_last_error());
    check_contents(g, &ts, alignments[a], buf);
    rlx_gguf_tensor_info t;
    assert_int_equal(rlx_gguf_tensor(g, 0, &t), RLX_OK);
    assert_int_equal((uintptr_t)t.data % (alignments[a] ? alignments[a] : 32), 0);
    rlx_gguf_free(g);
    /* from a path */
    assert_int_equal(rlx_gguf_writer_write_file(w, tmp_path("rt.gguf")), RLX_OK);
    assert_int_equal(rlx_gguf_open_file(tmp_path("rt.gguf"), RLX_GGUF_NO_BUDGET, &g), RLX_OK);
    check_contents(g, &ts, alignments[a], NULL);
    rlx_gguf_free(g);
    /* from a stream that starts 7 bytes into the file */
    FILE *f = fopen(tmp_path("rt7.gguf"), "w+b");
    assert_non_null(f);
    fwrite("junk!!!", 1, 7, f);
    assert_int_equal(rlx_gguf_writer_write_stream(w, f), RLX_OK);
    fseek(f, 7, SEEK_SET);
    assert_int_equal(rlx_gguf_open_stream(f, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
    check_contents(g, &ts, alignments[a], NULL);
    rlx_gguf_free(g);
    fclose(f);
    /* the file is the bytes written to memory */
    FILE *r = fopen(tmp_path("rt.gguf"), "rb");
    uint8_t *disk = malloc((size_t)size + 1);
    assert_int_equal(fread(disk, 1, (size_t)size + 1, r), (size_t)size);
    fclose(r);
    assert_memory_equal(disk, buf, (size_t)size);
    free(disk);
    free(buf);
    rlx_gguf_writer_free(w);
    free_tensors(&ts);
  }
}

/* w's file in memory (malloc'd), its size at *size. */
static uint8_t *written(rlx_gguf_writer *w, uint64_t *size) {
  assert_int_equal(rlx_gguf_writer_size(w, size), RLX_OK);
  uint8_t *buf = malloc((size_t)*size);
  assert_int_equal(rlx_gguf_writer_write_memory(w, buf, (size_t)*size), RLX_OK);
  return buf;
}

/* rlx_gguf_open_head: the header from the file's first bytes alone.  A
 * prefix shorter than the header fails with need past it (following need
 * reaches the header's end), the header parsed from a prefix has the
 * memory open's metadata and tensor table (file offsets, no data), and its
 * tensors' reads are refused; a file size the tensors end past is refused. */
static void header_from_a_prefix(void **state) {
  (void)state;
  tensors_t ts;
  uint64_t size;
  rlx_gguf_writer *w = make_writer(&ts, 64);
  uint8_t *buf = written(w, &size);
  rlx_gguf *full, *g = NULL;
  assert_int_equal(rlx_gguf_open_memory(buf, (size_t)size, RLX_GGUF_NO_BUDGET, &full), RLX_OK);
  const uint64_t data = rlx_gguf_data_offset(full);
  uint64_t need = 0, n = 1;
  int steps = 0;
  while (rlx_gguf_open_head(buf, (size_t)n, size, &need, &g) != RLX_OK) {
    assert_null(g);
    if (need <= n || need > data) fail_msg("prefix %llu: need %llu (%s)", (unsigned long long)n, (unsigned long long)need, rlx_last_error());
    n = need;
    steps++;
  }
  assert_true(steps > 10 && n <= data);
  assert_int_equal(rlx_gguf_tensor_count(g), rlx_gguf_tensor_count(full));
  assert_int_equal(rlx_gguf_kv_count(g), rlx_gguf_kv_count(full));
  assert_int_equal(rlx_gguf_data_offset(g), data);
  for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
    rlx_gguf_tensor_info a, b;
    assert_int_equal(rlx_gguf_tensor(g, i, &a), RLX_OK);
    assert_int_equal(rlx_gguf_tensor(full, i, &b), RLX_OK);
    assert_string_equal(a.name, b.name);
    assert_null(a.data);
    assert_true(a.file_offset == b.file_offset && a.bytes == b.bytes && a.type == b.type);
    uint8_t one[4];
    if (a.bytes) assert_int_equal(rlx_gguf_read_tensor(g, i, one, 0), RLX_ERR_INVALID_ARG);
  }
  int64_t big = -1;
  for (int64_t i = 0; i < rlx_gguf_tensor_count(g) && big < 0; i++) {
    rlx_gguf_tensor_info a;
    assert_int_equal(rlx_gguf_tensor(g, i, &a), RLX_OK);
    if (a.bytes >= 4 && a.bytes <= 65536) big = i;
  }
  assert_true(big >= 0);
  uint8_t *dst = malloc(65536);
  assert_int_equal(rlx_gguf_read_tensor(g, big, dst, 65536), RLX_ERR_UNSUPPORTED);
  assert_non_null(strstr(rlx_last_error(), "not in memory"));
  free(dst);
  rlx_gguf_free(g);
  g = NULL;
  assert_int_equal(rlx_gguf_open_head(buf, (size_t)data, size - 1, &need, &g), RLX_ERR_INVALID_ARG);
  assert_null(g);
  assert_int_equal(need, 0);
  assert_non_null(strstr(rlx_last_error(), "end past the file"));
  assert_int_equal(rlx_gguf_open_head(buf, 0, size, &need, &g), RLX_ERR_INVALID_ARG);
  rlx_gguf_free(full);
  free(buf);
  rlx_gguf_writer_free(w);
  free_tensors(&ts);
}

static void version_2_is_read(void **state) {
  (void)state;
  bytes_t s = {0};
  header(&s, 2, 1, 1);
  pstr(&s, "general.name");
  p32(&s, RLX_GGUF_VAL_STRING);
  pstr(&s, "v2");
  uint64_t d[1] = {8};
  tinfo(&s, "w", 1, d, RLX_GGUF_TYPE_F32, 0);
  pad_to(&s, 32);
  zeros(&s, 32);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(s.b, s.n, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  assert_int_equal(rlx_gguf_version(g), 2);
  assert_int_equal(rlx_gguf_tensor_count(g), 1);
  rlx_gguf_free(g);
  /* no tensors, no padding: the file may end right after the metadata */
  header(&s, 3, 0, 0);
  assert_int_equal(rlx_gguf_open_memory(s.b, s.n, 0, &g), RLX_OK);
  assert_int_equal(rlx_gguf_kv_count(g), 0);
  rlx_gguf_free(g);
  free(s.b);
}

/* A small file, its last tensor ending on an alignment boundary: every
 * shorter prefix is refused, from memory and from a file. */
static void truncated_at_every_byte(void **state) {
  (void)state;
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string(w, "general.name", "tiny", 4), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "n", RLX_GGUF_VAL_U16, &u16v), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_array(w, "a", RLX_GGUF_VAL_F32, a_f32, 3), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string_array(w, "s", a_str, NULL, 2), RLX_OK);
  uint8_t q8[34] = {0}, f32[32] = {0};
  int64_t d32[1] = {32}, d8[1] = {8};
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "q", RLX_GGUF_TYPE_Q8_0, 1, d32, q8, 34), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "f", RLX_GGUF_TYPE_F32, 1, d8, f32, 32), RLX_OK);
  uint64_t size;
  assert_int_equal(rlx_gguf_writer_size(w, &size), RLX_OK);
  uint8_t *buf = malloc((size_t)size);
  assert_int_equal(rlx_gguf_writer_write_memory(w, buf, (size_t)size), RLX_OK);
  rlx_gguf_writer_free(w);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(buf, (size_t)size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  rlx_gguf_free(g);
  for (size_t n = 0; n < size; n++) {
    bytes_t s = {buf, n, n};
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, NULL);
  }
  free(buf);
}

static void hostile_files_are_refused(void **state) {
  (void)state;
  bytes_t s = {0};
  uint64_t d8[1] = {8};
#define KV_U32(key, v) (pstr(&s, key), p32(&s, RLX_GGUF_VAL_U32), p32(&s, v))
  /* the header */
  s.n = 0;
  put(&s, "GGUL", 4);
  zeros(&s, 20);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "not a GGUF file");
  header(&s, 1, 0, 0);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_UNSUPPORTED, "version 1");
  header(&s, 4, 0, 0);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_UNSUPPORTED, "version 4");
  header(&s, 0x03000000u, 0, 0);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_UNSUPPORTED, "big-endian");
  /* lying counts */
  uint64_t huge[] = {1u << 20, (uint64_t)1 << 40, (uint64_t)1 << 63, UINT64_MAX};
  for (size_t i = 0; i < 4; i++) {
    header(&s, 3, 0, huge[i]);
    zeros(&s, 64);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "metadata entries cannot be right");
    header(&s, 3, huge[i], 0);
    zeros(&s, 64);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "tensors cannot be right");
  }
  header(&s, 3, 0, 2); /* 2 entries claimed, 1 present */
  KV_U32("a", 1);
  zeros(&s, 10);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "truncated");
  /* huge lengths */
  uint64_t lens[] = {65536, (uint64_t)1 << 40, (uint64_t)1 << 63, UINT64_MAX, UINT64_MAX - 7};
  for (size_t i = 0; i < 5; i++) {
    header(&s, 3, 0, 1);
    p64(&s, lens[i]); /* the key */
    zeros(&s, 40);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "key");
    header(&s, 3, 0, 1);
    pstr(&s, "k");
    p32(&s, RLX_GGUF_VAL_STRING);
    p64(&s, lens[i]); /* the value */
    zeros(&s, 40);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "'k'");
    for (uint32_t et = 0; et < 13; et++) {
      if (et == RLX_GGUF_VAL_ARRAY) continue;
      header(&s, 3, 0, 1);
      pstr(&s, "arr");
      p32(&s, RLX_GGUF_VAL_ARRAY);
      p32(&s, et);
      p64(&s, lens[i]); /* the array's length (count * 8 overflows for the largest) */
      zeros(&s, 40);
      expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "'arr'");
    }
    header(&s, 3, 0, 1); /* a string element's length */
    pstr(&s, "arr");
    p32(&s, RLX_GGUF_VAL_ARRAY);
    p32(&s, RLX_GGUF_VAL_STRING);
    p64(&s, 2);
    pstr(&s, "ok");
    p64(&s, lens[i]);
    zeros(&s, 40);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "'arr'");
    header(&s, 3, 1, 0); /* a tensor name */
    p64(&s, lens[i]);
    zeros(&s, 60);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "tensor 0");
  }
  /* types and values */
  header(&s, 3, 0, 1);
  pstr(&s, "k");
  p32(&s, 13);
  zeros(&s, 16);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "unknown value type 13");
  header(&s, 3, 0, 1);
  pstr(&s, "k");
  p32(&s, RLX_GGUF_VAL_ARRAY);
  p32(&s, 77);
  p64(&s, 1);
  zeros(&s, 16);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "unknown type 77");
  header(&s, 3, 0, 1);
  pstr(&s, "nest");
  p32(&s, RLX_GGUF_VAL_ARRAY);
  p32(&s, RLX_GGUF_VAL_ARRAY);
  p64(&s, 1);
  p32(&s, RLX_GGUF_VAL_U8);
  p64(&s, 1);
  p8(&s, 1);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_UNSUPPORTED, "array of arrays");
  header(&s, 3, 0, 1);
  pstr(&s, "b");
  p32(&s, RLX_GGUF_VAL_BOOL);
  p8(&s, 2);
  zeros(&s, 16);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "bool");
  header(&s, 3, 0, 1);
  pstr(&s, "bs");
  p32(&s, RLX_GGUF_VAL_ARRAY);
  p32(&s, RLX_GGUF_VAL_BOOL);
  p64(&s, 3);
  p8(&s, 0);
  p8(&s, 1);
  p8(&s, 255);
  zeros(&s, 16);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "bool element 2");
  header(&s, 3, 0, 2);
  KV_U32("same.key", 1);
  KV_U32("same.key", 2);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "repeats a key");
  /* alignment */
  uint32_t bad_align[] = {0, 3, 48, 0x80000001u};
  for (size_t i = 0; i < 4; i++) {
    header(&s, 3, 0, 1);
    KV_U32("general.alignment", bad_align[i]);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "not a power of two");
  }
  header(&s, 3, 0, 1);
  pstr(&s, "general.alignment");
  p32(&s, RLX_GGUF_VAL_U64);
  p64(&s, 32);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "not u32");
  header(&s, 3, 0, 1);
  pstr(&s, "general.alignment");
  p32(&s, RLX_GGUF_VAL_STRING);
  pstr(&s, "32");
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "not u32");
  /* a huge alignment that is a power of two: the data section starts past the end */
  header(&s, 3, 1, 1);
  KV_U32("general.alignment", 0x80000000u);
  tinfo(&s, "w", 1, d8, RLX_GGUF_TYPE_F32, 0);
  zeros(&s, 64);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "past the end");

  /* tensor infos; each file is otherwise valid: 64 bytes of data */
  struct {
    uint32_t n_dims;
    uint64_t dims[5];
    uint32_t type;
    uint64_t off;
    rlx_status want;
    const char *text;
  } bad[] = {
      {5, {1, 1, 1, 1, 1}, 0, 0, RLX_ERR_INVALID_ARG, "5 dims"},
      {3, {1u << 31, 1u << 31, 1u << 31}, 0, 0, RLX_ERR_INVALID_ARG, "2^63"},
      {1, {(uint64_t)1 << 63}, 0, 0, RLX_ERR_INVALID_ARG, "2^63"},
      {2, {(uint64_t)1 << 62, 2}, 0, 0, RLX_ERR_INVALID_ARG, "2^63"},
      {2, {(uint64_t)1 << 61, 2}, 0, 0, RLX_ERR_INVALID_ARG, "overflows"}, /* 2^62 values * 4 bytes */
      {1, {8}, 99, 0, RLX_ERR_INVALID_ARG, "unknown type 99"},
      {1, {8}, 4, 0, RLX_ERR_INVALID_ARG, "unknown type 4"},
      {1, {256}, 10, 0, RLX_ERR_UNSUPPORTED, "q2_K"},
      {1, {16}, RLX_GGUF_TYPE_Q4_0, 0, RLX_ERR_INVALID_ARG, "whole q4_0 blocks"},
      {1, {8}, 0, 16, RLX_ERR_INVALID_ARG, "not a multiple of the alignment"},
      {1, {8}, 0, 64, RLX_ERR_INVALID_ARG, "past the"},
      {1, {16}, 0, 32, RLX_ERR_INVALID_ARG, "past the"},
      {1, {8}, 0, UINT64_MAX - 31, RLX_ERR_INVALID_ARG, "past the"},
      {1, {(uint64_t)1 << 40}, 0, 0, RLX_ERR_INVALID_ARG, "past the"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    header(&s, 3, 1, 0);
    tinfo(&s, "w", bad[i].n_dims, bad[i].dims, bad[i].type, bad[i].off);
    pad_to(&s, 32);
    zeros(&s, 64);
    expect_refused(&s, RLX_GGUF_NO_BUDGET, bad[i].want, bad[i].text);
  }
  header(&s, 3, 1, 0);
  tinfo(&s, "0123456789012345678901234567890123456789012345678901234567890123456789", 1, d8, 0, 0);
  pad_to(&s, 32);
  zeros(&s, 64);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "at most 64");
  header(&s, 3, 2, 0); /* overlapping data */
  uint64_t d16[1] = {16};
  tinfo(&s, "a", 1, d16, 0, 0);
  tinfo(&s, "b", 1, d8, 0, 32);
  pad_to(&s, 32);
  zeros(&s, 96);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "overlap");
  header(&s, 3, 2, 0); /* the same offset */
  tinfo(&s, "a", 1, d8, 0, 32);
  tinfo(&s, "b", 1, d8, 0, 32);
  pad_to(&s, 32);
  zeros(&s, 96);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "overlap");
  header(&s, 3, 2, 0); /* duplicate names */
  tinfo(&s, "w", 1, d8, 0, 0);
  tinfo(&s, "w", 1, d8, 0, 32);
  pad_to(&s, 32);
  zeros(&s, 64);
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "repeats a tensor name");
  /* out of order but disjoint, and empty tensors anywhere: accepted */
  header(&s, 3, 3, 0);
  tinfo(&s, "b", 1, d8, 0, 32);
  tinfo(&s, "a", 1, d8, 0, 0);
  uint64_t d0[1] = {0};
  tinfo(&s, "e", 1, d0, 0, 32);
  pad_to(&s, 32);
  zeros(&s, 64);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(s.b, s.n, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  rlx_gguf_free(g);

  /* the budget: refused before any tensor data is touched or allocated */
  assert_int_equal(rlx_gguf_open_memory(s.b, s.n, 64, &g), RLX_OK);
  rlx_gguf_free(g);
  expect_refused(&s, 63, RLX_ERR_NO_MEMORY, "budget of 63 bytes");
  header(&s, 3, 2, 0); /* a 16 GiB tensor in a tiny file */
  uint64_t d4g[2] = {(uint64_t)1 << 30, 4};
  tinfo(&s, "big", 2, d4g, 0, 0);
  tinfo(&s, "small", 1, d8, 0, 0);
  pad_to(&s, 32);
  expect_refused(&s, RLX_GGUF_WASM32_DATA_BUDGET, RLX_ERR_NO_MEMORY, "wasm32");
  expect_refused(&s, RLX_GGUF_NO_BUDGET, RLX_ERR_INVALID_ARG, "past the");
  free(s.b);
#undef KV_U32
}

static void bad_calls_are_refused(void **state) {
  (void)state;
  rlx_gguf *g = NULL;
  uint8_t b[4] = {0};
  assert_int_equal(rlx_gguf_open_memory(b, 4, 0, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_open_memory(NULL, 4, 0, &g), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_open_memory(NULL, 0, 0, &g), RLX_ERR_INVALID_ARG); /* too short */
  assert_int_equal(rlx_gguf_open_file(NULL, 0, &g), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_open_file(tmp_path("does-not-exist.gguf"), 0, &g), RLX_ERR_NOT_FOUND);
  assert_int_equal(rlx_gguf_open_stream(NULL, 0, &g), RLX_ERR_INVALID_ARG);
  rlx_gguf_free(NULL);
  rlx_gguf_writer_free(NULL);
  assert_int_equal(rlx_gguf_kv_count(NULL), 0);
  assert_int_equal(rlx_gguf_find_kv(NULL, "a"), -1);
  assert_int_equal(rlx_gguf_find_tensor(NULL, "a"), -1);
  rlx_gguf_value v;
  assert_int_equal(rlx_gguf_get(NULL, "a", &v), RLX_ERR_INVALID_ARG);

  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  uint32_t one = 1, three = 3;
  int32_t i32 = 64;
  assert_int_equal(rlx_gguf_writer_set_alignment(w, 0), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_set_alignment(w, 24), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, "general.alignment", RLX_GGUF_VAL_I32, &i32), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, "general.alignment", RLX_GGUF_VAL_U32, &three), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, "k", RLX_GGUF_VAL_U32, &one), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "k", RLX_GGUF_VAL_U32, &one), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_string(w, "k", "x", 1), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, "s", RLX_GGUF_VAL_STRING, "x"), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, "s", (rlx_gguf_vtype)13, &one), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, "s", RLX_GGUF_VAL_U8, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add(w, NULL, RLX_GGUF_VAL_U8, &one), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_array(w, "arr", RLX_GGUF_VAL_ARRAY, &one, 1), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_array(w, "arr", RLX_GGUF_VAL_STRING, &one, 1), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_array(w, "arr", RLX_GGUF_VAL_U8, NULL, 1), RLX_ERR_INVALID_ARG);
  const char *strs[2] = {"a", NULL};
  assert_int_equal(rlx_gguf_writer_add_string_array(w, "sa", strs, NULL, 2), RLX_ERR_INVALID_ARG);
  /* alignment set twice: one entry, the last value */
  assert_int_equal(rlx_gguf_writer_set_alignment(w, 16), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add(w, "general.alignment", RLX_GGUF_VAL_U32, &(uint32_t){128}), RLX_OK);
  float f[32] = {0};
  int64_t d[2] = {32, 1}, bad_row[1] = {31}, neg[1] = {-1};
  char long_name[70];
  memset(long_name, 'n', 65);
  long_name[65] = 0;
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "t", RLX_GGUF_TYPE_F32, 2, d, f, 128), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "t", RLX_GGUF_TYPE_F32, 2, d, f, 128), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "u", RLX_GGUF_TYPE_F32, 2, d, f, 127), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "u", RLX_GGUF_TYPE_F32, 2, d, NULL, 128), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "u", RLX_GGUF_TYPE_Q4_0, 1, bad_row, f, 18), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "u", RLX_GGUF_TYPE_F32, 1, neg, f, 0), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "u", RLX_GGUF_TYPE_F32, 5, d, f, 128), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "u", (rlx_gguf_type)10, 1, d, f, 128), RLX_ERR_UNSUPPORTED);
  assert_int_equal(rlx_gguf_writer_add_tensor(w, long_name, RLX_GGUF_TYPE_F32, 2, d, f, 128), RLX_ERR_INVALID_ARG);
  long_name[64] = 0;
  assert_int_equal(rlx_gguf_writer_add_tensor(w, long_name, RLX_GGUF_TYPE_F32, 2, d, f, 128), RLX_OK);
  uint64_t size;
  assert_int_equal(rlx_gguf_writer_size(w, &size), RLX_OK);
  uint8_t *buf = malloc((size_t)size);
  assert_int_equal(rlx_gguf_writer_write_memory(w, buf, (size_t)size), RLX_OK);
  assert_int_equal(rlx_gguf_writer_write_memory(w, NULL, (size_t)size), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_gguf_open_memory(buf, (size_t)size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  assert_int_equal(rlx_gguf_alignment(g), 128);
  assert_int_equal(rlx_gguf_kv_count(g), 2);
  assert_int_equal(rlx_gguf_tensor_count(g), 2);
  assert_int_equal(rlx_gguf_find_tensor(g, long_name), 1);
  rlx_gguf_free(g);
  free(buf);
  rlx_gguf_writer_free(w);
}

/* Streamed reads never hold the quantized tensor whole. */
static void streamed_f32_reads_hold_a_chunk(void **state) {
  (void)state;
  enum { N = 1 << 20 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *want = malloc(N * sizeof *want);
  size_t qbytes = N / 32 * 18;
  uint8_t *q = malloc(qbytes);
  make_data(x, N, 0);
  assert_int_equal(rlx_gguf_quantize(RLX_GGUF_TYPE_Q4_0, x, N, q, qbytes), RLX_OK);
  assert_int_equal(rlx_gguf_dequantize(RLX_GGUF_TYPE_Q4_0, q, qbytes, want, N), RLX_OK);
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  int64_t d[2] = {4096, N / 4096};
  assert_int_equal(rlx_gguf_writer_add_tensor(w, "big", RLX_GGUF_TYPE_Q4_0, 2, d, q, qbytes), RLX_OK);
  assert_int_equal(rlx_gguf_writer_write_file(w, tmp_path("big.gguf")), RLX_OK);
  rlx_gguf_writer_free(w);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_file(tmp_path("big.gguf"), qbytes, &g), RLX_OK);
  size_t live = check_alloc_live_bytes();
  check_alloc_reset_peak();
  assert_int_equal(rlx_gguf_read_tensor_f32(g, 0, y, N), RLX_OK);
  if (check_alloc_active()) assert_true(check_alloc_peak_bytes() - live <= 65536);
  assert_memory_equal(y, want, N * sizeof *y);
  rlx_gguf_free(g);
  assert_int_equal(rlx_gguf_open_file(tmp_path("big.gguf"), qbytes - 1, &g), RLX_ERR_NO_MEMORY);
  free(x);
  free(y);
  free(want);
  free(q);
}

/* Every allocation of open (memory and file) and of building and writing a
 * file fails in turn: RLX_ERR_NO_MEMORY, nothing left behind. */
static void every_allocation_failure_is_clean(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  tensors_t ts;
  uint64_t size;
  rlx_gguf_writer *w = make_writer(&ts, 64);
  uint8_t *buf = written(w, &size);
  assert_int_equal(rlx_gguf_writer_write_file(w, tmp_path("oom.gguf")), RLX_OK);
  rlx_gguf_writer_free(w);
  size_t live = check_alloc_live_bytes();
  for (int mode = 0; mode < 3; mode++) {
    int done = 0;
    for (long n = 0; !done; n++) {
      check_alloc_fail_at(n, mode == 2);
      rlx_gguf *g = NULL;
      rlx_status st = mode == 1 ? rlx_gguf_open_file(tmp_path("oom.gguf"), RLX_GGUF_NO_BUDGET, &g)
                                : rlx_gguf_open_memory(buf, (size_t)size, RLX_GGUF_NO_BUDGET, &g);
      long refused = check_alloc_refused();
      check_alloc_fail_at(-1, 0);
      if (refused == 0) {
        assert_int_equal(st, RLX_OK);
        check_contents(g, &ts, 64, mode == 1 ? NULL : buf);
        done = 1;
      } else {
        if (st != RLX_ERR_NO_MEMORY) fail_msg("allocation %ld: status %d (%s)", n, st, rlx_last_error());
        assert_null(g);
      }
      rlx_gguf_free(g);
      assert_int_equal(check_alloc_live_bytes(), live);
    }
  }
  /* the writer: build the file with allocation n failing; the first refused
   * call reports RLX_ERR_NO_MEMORY and the writer stays usable */
  for (long n = 0;; n++) {
    check_alloc_fail_at(n, 0);
    rlx_gguf_writer *w2 = NULL;
    rlx_status st = rlx_gguf_writer_new(&w2);
    for (int k = 0; st == RLX_OK && k < 40; k++) {
      char key[16];
      snprintf(key, sizeof key, "key.%d", k);
      st = k % 3 == 0 ? rlx_gguf_writer_add_string(w2, key, "value", 5)
         : k % 3 == 1 ? rlx_gguf_writer_add_string_array(w2, key, a_str, NULL, 4)
                      : rlx_gguf_writer_add_tensor(w2, key, RLX_GGUF_TYPE_Q8_0, 1, (int64_t[]){32}, ts.data[6], 34);
    }
    long refused = check_alloc_refused();
    check_alloc_fail_at(-1, 0);
    if (refused) assert_int_equal(st, RLX_ERR_NO_MEMORY);
    else assert_int_equal(st, RLX_OK);
    if (w2 && refused) { /* still consistent: finish and read back */
      uint64_t sz;
      assert_int_equal(rlx_gguf_writer_size(w2, &sz), RLX_OK);
      uint8_t *b2 = malloc((size_t)sz);
      assert_int_equal(rlx_gguf_writer_write_memory(w2, b2, (size_t)sz), RLX_OK);
      rlx_gguf *g;
      assert_int_equal(rlx_gguf_open_memory(b2, (size_t)sz, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
      rlx_gguf_free(g);
      free(b2);
    }
    rlx_gguf_writer_free(w2);
    assert_int_equal(check_alloc_live_bytes(), live);
    if (!refused) break;
  }
  free(buf);
  free_tensors(&ts);
}

static int make_tmp_dir(void **state) {
  (void)state;
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static int remove_tmp_dir(void **state) {
  (void)state;
  const char *names[] = {"hostile.gguf", "rt.gguf", "rt7.gguf", "big.gguf", "oom.gguf"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) unlink(tmp_path(names[i]));
  return rmdir(tmp_dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(type_table_matches_the_format),
      cmocka_unit_test(half_and_bfloat16_every_bit_pattern),
      cmocka_unit_test(dequantize_matches_the_reference),
      cmocka_unit_test(quantize_error_within_the_format_bound),
      cmocka_unit_test(dot_matches_the_dequantized_row),
      cmocka_unit_test(row_calls_refuse_bad_arguments),
      cmocka_unit_test(write_then_read_every_type),
      cmocka_unit_test(version_2_is_read),
      cmocka_unit_test(header_from_a_prefix),
      cmocka_unit_test(truncated_at_every_byte),
      cmocka_unit_test(hostile_files_are_refused),
      cmocka_unit_test(bad_calls_are_refused),
      cmocka_unit_test(streamed_f32_reads_hold_a_chunk),
      cmocka_unit_test(every_allocation_failure_is_clean),
  };
  return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
