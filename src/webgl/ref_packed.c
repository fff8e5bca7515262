/* ref_packed.c - C twins of pack4.frag, matmul_packed.frag, unpack4.frag
 * (the packed matmul of lower_packed.c) and col2im.frag: the same index math
 * on the flat float arrays of packed textures (4 floats per texel, texel
 * (x, y) at 4 * (y * width + x)), and the same sums (dot products in
 * x, y, z, w order, added to 4 running sums; B_KN: the 4 products of a
 * lane in x, y, z, w order).  Operands read as they lie (lower_packed.c
 * rlx_gl_direct_operands) are flat arrays too. */
#include "gl_plan.h"

void rlx_glref_pack4(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t K = u[36], rt = u[37], per = u[38], rows = u[39], d0 = u[40], d1 = u[41], width = u[45];
  int32_t off[3];
  for (size_t i = 0; i < a->out_n; i++) {
    const int32_t t = (int32_t)(i / 4), x = t % width, y = t / width;
    const int32_t r = y * per + x / rt, k = (x % rt) * 4 + (int32_t)(i % 4);
    if (r >= rows || k >= K) {
      a->out[i] = 0.0f;
      continue;
    }
    const int32_t k0 = k % d0, k12 = k / d0;
    rlx_glref_iter(u, r, off);
    a->out[i] = a->in[0][off[0] + k0 * u[42] + (k12 % d1) * u[43] + (k12 / d1) * u[44]];
  }
}

void rlx_glref_matmul_packed(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t M = u[36], N = u[37], kt = rlx_gl_define_value(a->pass, "KT", u[38]), pa = u[39], pb = u[40], ort = u[41], oper = u[42], rows = u[43];
  const int32_t wa = u[44], wb = u[45], b_kn = rlx_gl_define_value(a->pass, "B_KN", 0);
  const float *A = a->in[0], *B = a->in[1];
  int32_t base[3];
  (void)oper; /* rows never wrap a line: texel t is row t / ort (packed or flat [rows, 4 * ort]) */
  for (size_t t = 0; t < a->out_n / 4; t++) {
    float *out = a->out + 4 * t;
    const int32_t r = (int32_t)(t / (size_t)ort), n = (int32_t)(t % (size_t)ort) * 4;
    if (r >= rows) {
      out[0] = out[1] = out[2] = out[3] = 0.0f;
      continue;
    }
    rlx_glref_iter(u, r / M, base);
    const float *ra = A + rlx_gl_packed_index(base[0] + r % M, 0, kt, pa, wa);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (b_kn) { /* B: [K, N] as it lies, texel (n / 4, k) = B[k, n..n+3] */
      for (int32_t k = 0; k < kt; k++) {
        const float *av = ra + 4 * k, *bv = B + (size_t)(4 * k) * (size_t)N + (size_t)n;
        for (int32_t j = 0; j < 4; j++)
          acc[j] += av[0] * bv[j] + av[1] * bv[N + j] + av[2] * bv[2 * N + j] + av[3] * bv[3 * N + j];
      }
      for (int32_t j = 0; j < 4; j++) out[j] = acc[j];
      continue;
    }
    const float *rb[4];
    for (int32_t j = 0; j < 4; j++) {
      const int32_t nj = n + j < N ? n + j : N - 1;
      rb[j] = B + rlx_gl_packed_index(base[1] + nj, 0, kt, pb, wb);
    }
    for (int32_t k = 0; k < kt; k++) {
      const float *av = ra + 4 * k;
      for (int32_t j = 0; j < 4; j++) {
        const float *bv = rb[j] + 4 * k;
        acc[j] += av[0] * bv[0] + av[1] * bv[1] + av[2] * bv[2] + av[3] * bv[3];
      }
    }
    for (int32_t j = 0; j < 4; j++) out[j] = (j == 0 || n + j < N) ? acc[j] : 0.0f;
  }
}

void rlx_glref_unpack4(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t rt = u[36], per = u[37], width = u[38];
  int32_t off[3];
  for (size_t i = 0; i < a->out_n; i++) {
    rlx_glref_iter(u, (int32_t)i, off);
    a->out[i] = a->in[0][rlx_gl_packed_index(off[0], off[1], rt, per, width)];
  }
}

void rlx_glref_col2im(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t C = u[1], H = u[2], W = u[3], OH = u[4], OW = u[5], KH = u[6], KW = u[7];
  const int32_t sh = u[8], sw = u[9], ph = u[10], pw = u[11], dh = u[12], dw = u[13], rt = u[14], per = u[15], width = u[16];
  for (size_t i = 0; i < a->out_n; i++) {
    const int32_t w = (int32_t)(i % (size_t)W), h = (int32_t)(i / (size_t)W % (size_t)H);
    const int32_t ch = (int32_t)(i / ((size_t)W * (size_t)H) % (size_t)C), n = (int32_t)(i / ((size_t)W * (size_t)H * (size_t)C));
    float acc = 0.0f;
    for (int32_t kh = 0; kh < KH; kh++) {
      const int32_t th = h + ph - kh * dh;
      if (th < 0 || th % sh != 0 || th / sh >= OH) continue;
      for (int32_t kw = 0; kw < KW; kw++) {
        const int32_t tw = w + pw - kw * dw;
        if (tw < 0 || tw % sw != 0 || tw / sw >= OW) continue;
        const int32_t row = (n * OH + th / sh) * OW + tw / sw, col = (ch * KH + kh) * KW + kw;
        acc += a->in[0][rlx_gl_packed_index(row, col, rt, per, width)];
      }
    }
    a->out[i] = acc;
  }
}

/* matmul_block4.frag: layer j, texel (x, y) (at 4 * ((j * h + y) * w + x),
 * w = N / 4, h = M / 4) = P[4y + j, 4x..4x+3]; A [M, K] or (A_KM) [K, M],
 * B [K, N], flat. */
void rlx_glref_matmul_block4(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t M = u[0], N = u[1], K = u[2], a_km = rlx_gl_define_value(a->pass, "A_KM", 0);
  const int32_t w = N / 4, h = M / 4;
  const float *A = a->in[0], *B = a->in[1];
  if ((size_t)16 * (size_t)w * (size_t)h > a->out_n) return;
  for (int32_t y = 0; y < h; y++)
    for (int32_t x = 0; x < w; x++)
      for (int32_t j = 0; j < 4; j++) {
        const int32_t m = 4 * y + j;
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int32_t k = 0; k < K; k += 4) {
          float av[4];
          for (int32_t i = 0; i < 4; i++) av[i] = a_km ? A[(size_t)(k + i) * (size_t)M + (size_t)m] : A[(size_t)m * (size_t)K + (size_t)(k + i)];
          for (int32_t c = 0; c < 4; c++) {
            const float *bv = B + (size_t)k * (size_t)N + (size_t)(4 * x + c);
            acc[c] += av[0] * bv[0] + av[1] * bv[N] + av[2] * bv[2 * N] + av[3] * bv[3 * N];
          }
        }
        float *out = a->out + 4 * (((size_t)j * (size_t)h + (size_t)y) * (size_t)w + (size_t)x);
        for (int32_t c = 0; c < 4; c++) out[c] = acc[c];
      }
}

/* unblock4.frag: texel t = row t / ort, texels t % ort, from layer row % 4. */
void rlx_glref_unblock4(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t M = u[0], ort = u[1], h = M / 4;
  for (size_t i = 0; i < a->out_n; i++) {
    const size_t t = i / 4;
    const int32_t r = (int32_t)(t / (size_t)ort), c = (int32_t)(t % (size_t)ort);
    a->out[i] = r < M ? a->in[0][4 * ((size_t)((r & 3) * h + (r >> 2)) * (size_t)ort + (size_t)c) + i % 4] : 0.0f;
  }
}
