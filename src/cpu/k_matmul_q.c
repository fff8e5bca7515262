/* k_matmul_q.c - products with quantized weights (matmul_q) and row
 * lookups in a quantized table (gather_q).  W is N rows of K values of a
 * GGUF type, row after row (stride = the type's row bytes), read in place:
 * it is never expanded whole.
 *  - up to FUSED_MAX_M x rows, trans 0 (decoding a token, a short prompt
 *    step), a block type with fused SIMD rows on this CPU or build
 *    (k_matmul_q_x86.c: AVX2 + FMA, chosen at run time; k_matmul_q_wasm.c:
 *    SIMD128): each weight row is dotted with x straight from its blocks,
 *    16 KiB of weight rows at a time against every x row;
 *  - else one x row, trans 0: each weight row is decoded into a K-float
 *    buffer that stays in L1 and dotted with x (the float types, Q8_0,
 *    Q4_0), or goes through the type's portable fused dot (the others);
 *  - with xq8 (x rounded to 8 bits), Q8_0 or Q4_0, natively, where the
 *    first path does not take it (more x rows, or a CPU without the int8
 *    rows): the int8 tiles (k_q8_tile.c, k_q8_tile_x86.c), each y the same
 *    value as the int8 rows give, 16 KiB of weight rows at a time;
 *  - otherwise (a prompt, or trans 1): weight rows are dequantized a tile
 *    at a time (about 256 KiB) and the tile is multiplied with every x row
 *    by the GEMM, so each weight byte is decoded once per call.
 * With norm, x's rows are first normalized into the kernel's own buffer
 * by rms_norm's rows (k_norm.c), then take the paths above.  Every path
 * (trans 0) splits the weight rows, that is y's columns, over the thread
 * pool (src/core/pool.h) at the bounds of its own loop (chunks, tiles), so
 * each y value is the same dot product for any thread count; trans 1 sums
 * over tiles and threads each tile's GEMM instead. */
#include <math.h>
#include <string.h>

#include "../core/pool.h"
#include "../models/gguf_quants.h"
#include "kernels.h"
#include "matmul_q.h"

#define LANES 8

/* sum_i a[i] b[i] with LANES independent partial sums, so the compiler
 * vectorizes it without reassociating a single sum. */
static float dot_f32(const float *restrict a, const float *restrict b, size_t n) {
  float acc[LANES] = {0};
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) acc[l] += a[i + l] * b[i + l];
  float s = 0.0f;
  for (; i < n; i++) s += a[i] * b[i];
  for (int l = 0; l < LANES; l++) s += acc[l];
  return s;
}

static inline float half(uint16_t h) { return rlx_f16_fast(h); }

static void decode_f16(const uint8_t *restrict src, float *restrict dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = half((uint16_t)(src[2 * i] | (src[2 * i + 1] << 8)));
}

/* Q8_0 blocks: f16 d, 32 int8 q: x = d q */
static void decode_q8_0(const uint8_t *restrict src, float *restrict dst, size_t nb) {
  for (size_t b = 0; b < nb; b++, src += 34, dst += 32) {
    float d = half((uint16_t)(src[0] | (src[1] << 8)));
    const int8_t *q = (const int8_t *)(src + 2);
#pragma GCC unroll 8
    for (int j = 0; j < 32; j++) dst[j] = d * (float)q[j];
  }
}

/* Q4_0 blocks: f16 d, 16 bytes; byte j holds element j (low nibble) and
 * j + 16 (high): x = d (q - 8) */
static void decode_q4_0(const uint8_t *restrict src, float *restrict dst, size_t nb) {
  for (size_t b = 0; b < nb; b++, src += 18, dst += 32) {
    float d = half((uint16_t)(src[0] | (src[1] << 8)));
    const uint8_t *q = src + 2;
#pragma GCC unroll 8
    for (int j = 0; j < 16; j++) {
      dst[j] = d * (float)((int)(q[j] & 15) - 8);
      dst[j + 16] = d * (float)((int)(q[j] >> 4) - 8);
    }
  }
}

typedef rlx_qtable qtable;

/* One row of t (at src) as cols floats: the fast decoders above where a
 * type has one, else the type's table kernel. */
static void decode_row(const qtable *t, const uint8_t *src, float *dst) {
  switch (t->wt->code) {
    case RLX_GGUF_TYPE_F16: decode_f16(src, dst, t->nblocks); break;
    case RLX_GGUF_TYPE_Q8_0: decode_q8_0(src, dst, t->nblocks); break;
    case RLX_GGUF_TYPE_Q4_0: decode_q4_0(src, dst, t->nblocks); break;
    default: t->wt->dequant(src, dst, (int64_t)t->nblocks);
  }
}

/* Types whose rows decode fast enough that decode + dot_f32 wins over the
 * table's fused dot (measured: the float types, Q8_0, Q4_0). */
static int fast_decode(const qtable *t) {
  uint32_t c = t->wt->code;
  return c == RLX_GGUF_TYPE_F32 || c == RLX_GGUF_TYPE_F16 || c == RLX_GGUF_TYPE_BF16 || c == RLX_GGUF_TYPE_Q8_0 ||
         c == RLX_GGUF_TYPE_Q4_0;
}

static qtable table_of(const rlx_node_t *n) {
  qtable t;
  t.wt = rlx_wtype_get((uint32_t)ATTR_I(n, QTABLE, QTYPE)); /* checked by the shape rule */
  t.rows = ATTR_I(n, QTABLE, ROWS);
  t.cols = ATTR_I(n, QTABLE, COLS);
  t.nblocks = (size_t)t.cols / (size_t)t.wt->block_elems;
  t.stride = t.nblocks * (size_t)t.wt->block_bytes;
  return t;
}

/* The fused SIMD rows of a type on this CPU or build, else NULL. */
static rlx_wt_rows_fn simd_rows(uint32_t code) {
  const rlx_wt_rows_set *s = rlx_wt_rows_avx2();
  if (!s) s = rlx_wt_rows_simd128();
  if (!s) return NULL;
  switch (code) {
    case RLX_GGUF_TYPE_Q8_0: return s->q8_0;
    case RLX_GGUF_TYPE_Q4_0: return s->q4_0;
    case RLX_GGUF_TYPE_Q4_1: return s->q4_1;
    case RLX_GGUF_TYPE_Q5_0: return s->q5_0;
    case RLX_GGUF_TYPE_Q5_1: return s->q5_1;
    case RLX_GGUF_TYPE_Q4_K: return s->q4_k;
    case RLX_GGUF_TYPE_Q5_K: return s->q5_k;
    case RLX_GGUF_TYPE_Q6_K: return s->q6_k;
    default: return NULL;
  }
}

/* The int8 SIMD rows of a type on this CPU or build, else NULL. */
static rlx_wt_rows8_fn simd_rows8(uint32_t code) {
  const rlx_wt_rows8_set *s = rlx_wt_rows8_avx2();
  if (!s) s = rlx_wt_rows8_simd128();
  if (!s) return NULL;
  return code == RLX_GGUF_TYPE_Q8_0 ? s->q8_0 : code == RLX_GGUF_TYPE_Q4_0 ? s->q4_0 : NULL;
}

int rlx_qtable_xq8(const rlx_node_t *n) {
  const int32_t slot = n->op == RLX_OP_SWIGLU_Q ? RLX_IATTR_QSWIGLU_XQ8 : RLX_IATTR_QMATMUL_XQ8;
  return n->n_iattr > slot && n->iattr[slot] != 0;
}

/* Per block of 32: a = max |x|, q = round-half-even(x 127 / a), d = a / 127
 * (the op's definition, include/rlx_ops.def).  xq8_scale gives 127 / a
 * (0 for a block of zeros), or -1 for a block holding NaN or an infinity,
 * whose codes are 0 and d NaN.  The loops are written so that compilers
 * vectorize them (rounding to an integer-valued float first; a prompt's
 * rows take only the rounded floats). */
static float xq8_scale(const float *restrict x, float *d) {
  float a = 0.0f, bad = 0.0f;
  for (int i = 0; i < 32; i++) {
    const float m = fabsf(x[i]);
    a = m > a ? m : a;
    bad += x[i] - x[i]; /* NaN for NaN or an infinity, else 0 */
  }
  if (bad != 0.0f) return *d = NAN, -1.0f; /* NaN != 0 */
  *d = a / 127.0f;
  return a > 0.0f ? 127.0f / a : 0.0f;
}
static void xq8_quantize(const float *x, size_t nblocks, int8_t *q, float *d, int32_t *s) {
  for (size_t b = 0; b < nblocks; b++, x += 32, q += 32) {
    const float inv = xq8_scale(x, &d[b]);
    int32_t sum = 0;
    for (int i = 0; i < 32; i++) {
      q[i] = inv < 0.0f ? 0 : (int8_t)rintf(x[i] * inv);
      sum += q[i];
    }
    s[b] = sum;
  }
}
void rlx_xq8_round(const float *x, size_t nblocks, float *out) {
  for (size_t b = 0; b < nblocks; b++, x += 32, out += 32) {
    float d;
    const float inv = xq8_scale(x, &d);
    if (inv < 0.0f) {
      for (int i = 0; i < 32; i++) out[i] = NAN;
      continue;
    }
    for (int i = 0; i < 32; i++) out[i] = rintf(x[i] * inv) * d; /* = (float)q d: q is integer-valued */
  }
}

void *rlx_xq8_codes_of(const float *x, size_t M, size_t K, size_t extra, rlx_scratch *s, rlx_xq8 *c) {
  const size_t nb = M * K / 32, codes = (M * K + 2 * nb * sizeof(float) + 63) & ~(size_t)63;
  unsigned char *mem = rlx_scratch_get(s, codes + extra);
  if (!mem) return NULL;
  c->q = (int8_t *)mem;
  c->d = (float *)(mem + M * K);
  c->s = (int32_t *)(c->d + nb);
  xq8_quantize(x, nb, c->q, c->d, c->s);
  return mem + codes;
}

/* Weight rows a chunk (about 16 KiB, so it stays in L1) at a time. */
static size_t fused_chunk(const qtable *t) { return t->stride >= FUSED_CHUNK_BYTES ? 1 : FUSED_CHUNK_BYTES / t->stride; }

/* One parallel loop of the fused paths: the table, x, the row function. */
typedef struct {
  const qtable *t;
  const uint8_t *w;
  size_t M;
  const float *x, *xsum;   /* rows_fn */
  rlx_wt_rows_fn rows_fn;
  const rlx_xq8 *c;        /* rows8_fn */
  rlx_wt_rows8_fn rows8_fn;
  float *y;
} fused_loop;

/* y[:, b .. e) over chunks of weight rows, each against every x row. */
static void fused_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  const fused_loop *f = ctx;
  const qtable *t = f->t;
  const size_t K = (size_t)t->cols, N = (size_t)t->rows, nb = K / 32, chunk = fused_chunk(t);
  for (size_t n0 = b; n0 < e; n0 += chunk) {
    const size_t rows = e - n0 < chunk ? e - n0 : chunk;
    for (size_t m = 0; m < f->M; m++)
      if (f->rows8_fn)
        f->rows8_fn(f->w + n0 * t->stride, t->stride, f->c->q + m * K, f->c->d + m * nb, f->c->s + m * nb,
                    (int64_t)t->nblocks, f->y + m * N + n0, rows);
      else
        f->rows_fn(f->w + n0 * t->stride, t->stride, f->x + m * K, f->xsum + m * nb, (int64_t)t->nblocks,
                   f->y + m * N + n0, rows);
  }
}

static void fused_rows(const fused_loop *f) {
  rlx_parallel_for((size_t)f->t->rows, fused_chunk(f->t), f->M * (size_t)f->t->cols, fused_range, (void *)f, NULL);
}

void rlx_qtable_rows(const rlx_qtable *t, rlx_wt_rows_fn fn, const uint8_t *w, const float *x, const float *xsum,
                     size_t M, float *y) {
  const fused_loop f = {t, w, M, x, xsum, fn, NULL, NULL, y};
  fused_rows(&f);
}

static void qtable_rows8(const rlx_qtable *t, rlx_wt_rows8_fn fn, const uint8_t *w, const rlx_xq8 *c, size_t M,
                         float *y) {
  const fused_loop f = {t, w, M, NULL, NULL, NULL, c, fn, y};
  fused_rows(&f);
}

#if RLX_Q8_TILES
/* The int8 tiles' loop: y[:, b .. e) a chunk of whole 4-row tiles (about
 * 16 KiB of weight rows) at a time against every x row. */
typedef struct {
  const qtable *t;
  const uint8_t *w;
  const rlx_xq8 *c;
  size_t M, chunk; /* chunk: weight rows a range holds (the parallel-for's grain) */
  rlx_q8_tile_fn fn;
  float *y;
} tile8_loop;

static size_t tile8_chunk(const qtable *t) {
  const size_t c = fused_chunk(t);
  return c < 4 ? 4 : c & ~(size_t)3;
}

static void tile8_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  const tile8_loop *l = ctx;
  const qtable *t = l->t;
  const size_t N = (size_t)t->rows, chunk = l->chunk;
  for (size_t n0 = b; n0 < e; n0 += chunk)
    l->fn(l->w + n0 * t->stride, t->stride, l->c->q, l->c->d, l->M, (int64_t)t->nblocks, l->y + n0, N,
          e - n0 < chunk ? e - n0 : chunk);
}

static void qtable_tiles8(const rlx_qtable *t, rlx_q8_tile_fn fn, const uint8_t *w, const rlx_xq8 *c, size_t M,
                          float *y) {
  const tile8_loop l = {t, w, c, M, tile8_chunk(t), fn, y};
  rlx_parallel_for((size_t)t->rows, l.chunk, M * (size_t)t->cols, tile8_range, (void *)&l, NULL);
}
#endif

rlx_xq8_path rlx_qtable_xq8_path(const rlx_qtable *t, size_t M) {
  rlx_xq8_path p = {M <= FUSED_MAX_M ? simd_rows8(t->wt->code) : NULL, NULL};
  if (!p.rows) p.tile = rlx_qtable_tile8(t->wt->code);
  return p;
}

void rlx_qtable_xq8_product(const rlx_qtable *t, rlx_xq8_path p, const uint8_t *w, const rlx_xq8 *c, size_t M,
                            float *y) {
  if (p.rows) qtable_rows8(t, p.rows, w, c, M, y);
#if RLX_Q8_TILES
  else qtable_tiles8(t, p.tile, w, c, M, y);
#endif
}

rlx_status rlx_qtable_rounded(const rlx_kargs *a, const float *x_in, size_t n,
                              rlx_status (*f)(const rlx_kargs *, const float *), const char *op) {
  rlx_scratch own = {NULL, 0};
  float *x = rlx_scratch_get(&own, n * sizeof(float));
  if (!x) return rlx_error(RLX_ERR_NO_MEMORY, "%s: no memory for x rounded to 8 bits (%zu values)", op, n);
  rlx_xq8_round(x_in, n / 32, x);
  const rlx_status st = f(a, x);
  rlx_scratch_release(&own);
  return st;
}

/* The helpers above, for the kernels of matmul_q.h. */
rlx_qtable rlx_qtable_of(const rlx_node_t *n) { return table_of(n); }
void rlx_qtable_decode_row(const rlx_qtable *t, const uint8_t *src, float *dst) { decode_row(t, src, dst); }
int rlx_qtable_fast_decode(const rlx_qtable *t) { return fast_decode(t); }
rlx_wt_rows_fn rlx_qtable_simd_rows(uint32_t code) { return simd_rows(code); }
float rlx_qdot_f32(const float *a, const float *b, size_t n) { return dot_f32(a, b, n); }

/* One x row against weight rows [b, e): decoded into ws and dotted, or
 * the type's fused dot. */
typedef struct {
  const qtable *t;
  const uint8_t *w;
  const float *x;
  float *y;
  int failed;
} row_loop;

static void row_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  row_loop *l = ctx;
  const qtable *t = l->t;
  const size_t K = (size_t)t->cols;
  if (!fast_decode(t)) { /* the type's fused dot beats decoding its blocks here */
    for (size_t n = b; n < e; n++) l->y[n] = t->wt->dot(l->w + n * t->stride, l->x, (int64_t)t->nblocks);
    return;
  }
  float *row = rlx_scratch_get(ws, K * sizeof(float));
  if (!row) {
    rlx_task_failed(&l->failed, 1);
    return;
  }
  for (size_t n = b; n < e; n++) {
    decode_row(t, l->w + n * t->stride, row);
    l->y[n] = dot_f32(row, l->x, K);
  }
}

/* Weight rows [b, e) (whole tiles) decoded a tile at a time into ws, each
 * tile times every x row by the GEMM (trans 0: y's columns of the tile;
 * trans 1: y += x's columns of the tile . tile, tiles in order). */
typedef struct {
  const qtable *t;
  const uint8_t *w;
  int trans;
  size_t tile, own;
  rlx_gemm_args full; /* the product of the largest tile */
  size_t gemm_bytes;
  int failed;         /* 1: no memory; else the GEMM's status */
} tile_loop;

static void tile_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  tile_loop *l = ctx;
  const qtable *t = l->t;
  const size_t K = (size_t)t->cols;
  unsigned char *mem = rlx_scratch_get(ws, l->own + l->gemm_bytes);
  if (!mem) {
    rlx_task_failed(&l->failed, RLX_ERR_NO_MEMORY);
    return;
  }
  float *wtile = (float *)mem;
  rlx_scratch gemm_scratch = {mem + l->own, l->gemm_bytes};
  for (size_t n0 = b; n0 < e; n0 += l->tile) {
    size_t rows = e - n0 < l->tile ? e - n0 : l->tile;
    for (size_t r = 0; r < rows; r++) decode_row(t, l->w + (n0 + r) * t->stride, wtile + r * K);
    rlx_gemm_args g = l->full;
    g.B = wtile;
    if (!l->trans) { /* y[:, n0 .. n0 + rows) = x . tile^T */
      g.N = (int32_t)rows;
      g.C += n0;
    } else {         /* y += x[:, n0 .. n0 + rows) . tile */
      g.K = (int32_t)rows;
      g.A += n0;
      g.accumulate = n0 > 0;
    }
    rlx_status st = rlx_gemm(&g, &gemm_scratch);
    if (st != RLX_OK) {
      rlx_task_failed(&l->failed, (int)st);
      return;
    }
  }
}

/* x[M, K] (trans 0) or x[M, N] (trans 1), w: N rows of K quantized values
 * -> y[M, N] = x W^T (trans 0) or y[M, K] = x W (trans 1). */
static rlx_status product(const rlx_kargs *a, const float *x) {
  const qtable t = table_of(a->node);
  const int trans = ATTR_I(a->node, QMATMUL, TRANS) != 0;
  const size_t N = (size_t)t.rows, K = (size_t)t.cols, in_dim = trans ? N : K;
  const size_t M = rlx_shape_numel(&a->in_node[0]->shape) / in_dim;
  const uint8_t *w = (const uint8_t *)a->in[1];
  float *y = a->out;

  rlx_wt_rows_fn rows_fn = trans ? NULL : simd_rows(t.wt->code);
  if (rows_fn && M <= FUSED_MAX_M) {
    /* per x row, its sums over each 32 values; then the fused rows */
    const size_t ns = K / 32;
    float *xsum = rlx_scratch_get(a->scratch, M * ns * sizeof(float));
    if (!xsum) return rlx_error(RLX_ERR_NO_MEMORY, "matmul_q: no memory for %zu sums", M * ns);
    for (size_t i = 0; i < M * ns; i++) {
      float s = 0.0f;
      for (int j = 0; j < 32; j++) s += x[32 * i + j];
      xsum[i] = s;
    }
    rlx_qtable_rows(&t, rows_fn, w, x, xsum, M, y);
    return RLX_OK;
  }

  if (!trans && M == 1) {
    row_loop l = {&t, w, x, y, 0};
    rlx_parallel_for(N, 1, K, row_range, &l, a->scratch);
    if (l.failed) return rlx_error(RLX_ERR_NO_MEMORY, "matmul_q: no memory for a row of %zu values", K);
    return RLX_OK;
  }

  size_t tile = TILE_FLOATS / K;
  if (tile < 8) tile = 8;
  if (tile > N) tile = N;
  /* The GEMM's scratch for the largest tile, after the tile itself. */
  rlx_gemm_args full = {(int32_t)M, trans ? (int32_t)K : (int32_t)tile, trans ? (int32_t)tile : (int32_t)K,
                        x, trans ? (int32_t)N : (int32_t)K, 0, NULL, (int32_t)K, !trans, y,
                        trans ? (int32_t)K : (int32_t)N, 0};
  tile_loop l = {&t, w, trans, tile, (tile * K * sizeof(float) + 63) & ~(size_t)63, full,
                 rlx_gemm_scratch_bytes(&full), 0};
  if (trans) tile_range(&l, 0, N, a->scratch); /* a sum over tiles: each tile's GEMM is threaded */
  else rlx_parallel_for(N, tile, M * K, tile_range, &l, a->scratch);
  if (l.failed == RLX_ERR_NO_MEMORY)
    return rlx_error(RLX_ERR_NO_MEMORY, "matmul_q: no memory for a %zu x %zu weight tile", tile, K);
  if (l.failed) return rlx_error((rlx_status)l.failed, "matmul_q: the product of a weight tile failed");
  return RLX_OK;
}

/* The product of x rounded to 8 bits (xq8): the int8 rows of its type
 * for a few x rows, the int8 tiles (native Q8_0, Q4_0) for more, else the
 * rounded x through the f32 paths. */
static rlx_status product_xq8(const rlx_kargs *a, const float *x_in) {
  const qtable t = table_of(a->node);
  const size_t K = (size_t)t.cols, M = rlx_shape_numel(&a->in_node[0]->shape) / K;
  const rlx_xq8_path p = rlx_qtable_xq8_path(&t, M);
  if (!p.rows && !p.tile) return rlx_qtable_rounded(a, x_in, M * K, product, "matmul_q");
  rlx_xq8 c;
  if (!rlx_xq8_codes_of(x_in, M, K, 0, a->scratch, &c))
    return rlx_error(RLX_ERR_NO_MEMORY, "matmul_q: no memory for %zu 8-bit codes", M * K);
  rlx_qtable_xq8_product(&t, p, (const uint8_t *)a->in[1], &c, M, a->out);
  return RLX_OK;
}

int rlx_qtable_norm(const rlx_node_t *n) {
  const int32_t slot = n->op == RLX_OP_SWIGLU_Q ? RLX_IATTR_QSWIGLU_NORM : RLX_IATTR_QMATMUL_NORM;
  return n->n_iattr > slot && n->iattr[slot] != 0;
}

const float *rlx_qtable_normed_x(const rlx_kargs *a, rlx_scratch *own) {
  const int swiglu = a->node->op == RLX_OP_SWIGLU_Q;
  const size_t K = (size_t)ATTR_I(a->node, QTABLE, COLS), M = rlx_shape_numel(&a->in_node[0]->shape) / K;
  float *x = rlx_scratch_get(own, M * K * sizeof(float));
  if (!x) return NULL;
  const double eps = swiglu ? ATTR_F(a->node, QSWIGLU, EPS) : ATTR_F(a->node, QMATMUL, EPS);
  rlx_rms_norm_rows(a->in[0], a->in[swiglu ? 3 : 2], eps, M, K, x);
  return x;
}

/* The product (of x normalized first with norm), then the optional
 * acc[y's shape] added. */
rlx_status rlx_cpu_matmul_q(const rlx_kargs *a) {
  rlx_scratch own = {NULL, 0};
  const int norm = rlx_qtable_norm(a->node);
  const float *x = norm ? rlx_qtable_normed_x(a, &own) : a->in[0];
  if (!x) return rlx_error(RLX_ERR_NO_MEMORY, "matmul_q: no memory for x normalized");
  rlx_status st = rlx_qtable_xq8(a->node) ? product_xq8(a, x) : product(a, x);
  rlx_scratch_release(&own);
  if (st != RLX_OK || norm || a->node->n_inputs < 3) return st;
  const size_t n = rlx_shape_numel(&a->node->shape);
  for (size_t i = 0; i < n; i++) a->out[i] += a->in[2][i];
  return RLX_OK;
}

/* table: V rows of K quantized values, ids[...] -> y[..., K]; a bad id
 * gives a zero row and sets RLX_KFLAG_BAD_INDEX. */
rlx_status rlx_cpu_gather_q(const rlx_kargs *a) {
  const qtable t = table_of(a->node);
  const uint8_t *table = (const uint8_t *)a->in[0];
  size_t n_ids = rlx_shape_numel(&a->in_node[1]->shape), K = (size_t)t.cols;
  for (size_t i = 0; i < n_ids; i++) {
    int64_t id = rlx_kindex(a, 1, i);
    float *dst = a->out + i * K;
    if (id < 0 || id >= t.rows) {
      memset(dst, 0, K * sizeof(float));
      *a->flags |= RLX_KFLAG_BAD_INDEX;
    } else {
      decode_row(&t, table + (size_t)id * t.stride, dst);
    }
  }
  return RLX_OK;
}
