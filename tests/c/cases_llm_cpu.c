/* cases_llm_cpu.c - op cases that run on the CPU only: matmul_q and
 * swiglu_q with xq8 (x rounded to 8 bits per 32 values before the
 * product; the GPU backends refuse it), against a reference that rounds x
 * by the op's definition (include/rlx_ops.def) and then takes cases_llm.c's
 * references.  Up to 4 rows, int8 dot products for Q8_0 and Q4_0 where the
 * CPU has AVX2 (src/cpu/k_matmul_q_x86.c) and for Q4_0 in wasm
 * (k_matmul_q_wasm.c); otherwise the rounded x through the f32 paths.
 * Also matmul_q (plain and xq8) on weights whose f16 block scales are
 * subnormal, the weights scaled by 2^-14 and x by 2^14.
 * Parameters (c->p):
 *   matmul_q  {qtype, N, K, acc (1: an acc input of y's shape), x rank, x dims...}
 *             (MMQ_TINY: {qtype, N, K, xq8, x rank, x dims...})
 *   swiglu_q  {qtype, N, K, x rank, x dims...} */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/ir/attrs.h"
#include "op_case.h"
#include "rlx_gguf.h"

void ref_matmul_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_swiglu_q_case(const op_case *c, const op_inputs *in, double *expect);

static rlx_node build_matmul_q_xq8(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]), dims[RLX_MAX_RANK];
  memcpy(dims, &c->p[5], (size_t)c->p[4] * sizeof(int32_t));
  dims[c->p[4] - 1] = c->p[1];
  rlx_node in[3] = {rlx_input(g, "x", c->p[4], &c->p[5], RLX_F32), rlx_input(g, "w", 1, &words, RLX_I32),
                    c->p[3] ? rlx_input(g, "acc", c->p[4], dims, RLX_F32) : RLX_NO_NODE};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = c->p[1],
                  [RLX_IATTR_QTABLE_COLS] = c->p[2], [RLX_IATTR_QMATMUL_TRANS] = 0, [RLX_IATTR_QMATMUL_XQ8] = 1};
  return rlx_op_node(g, RLX_OP_MATMUL_Q, in, c->p[3] ? 3 : 2, at, RLX_LEN(at), NULL, 0);
}

static rlx_node build_swiglu_q_xq8(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]);
  rlx_node in[3] = {rlx_input(g, "x", c->p[3], &c->p[4], RLX_F32), rlx_input(g, "w_gate", 1, &words, RLX_I32),
                    rlx_input(g, "w_up", 1, &words, RLX_I32)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = c->p[1],
                  [RLX_IATTR_QTABLE_COLS] = c->p[2], [RLX_IATTR_QSWIGLU_XQ8] = 1};
  return rlx_op_node(g, RLX_OP_SWIGLU_Q, in, 3, at, RLX_LEN(at), NULL, 0);
}

/* Tables: uniform values in [-1, 1) quantized; x: uniform in [-2, 2) with
 * every fifth block scaled by 1e-3 and one block of zeros (scales far
 * apart, a = 0). */
static void fill_xq8(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k == 1 || (k == 2 && c->build == build_swiglu_q_xq8)) {
    opcase_fill_table(c->p[0], c->p[1], c->p[2], data, n, seed);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const size_t block = i / 32;
    data[i] = block == 2 ? 0.0f : opcase_uniform(seed, i, -2.0f, 2.0f) * (block % 5 == 4 ? 1e-3f : 1.0f);
  }
}

/* x rounded by the definition: per 32 values a = max |x|, q =
 * round-half-even(x * (127 / a)) in f32, x' = q * (a / 127). */
static float *round_x(const op_inputs *in, size_t n) {
  float *r = malloc(n * sizeof(float));
  for (size_t b = 0; r && b < n / 32; b++) {
    const float *x = in->data[0] + 32 * b;
    float a = 0.0f;
    for (int i = 0; i < 32; i++) a = fmaxf(a, fabsf(x[i]));
    const float inv = a > 0.0f ? 127.0f / a : 0.0f, d = a / 127.0f;
    for (int i = 0; i < 32; i++) r[32 * b + (size_t)i] = nearbyintf(x[i] * inv) * d;
  }
  return r;
}

static void with_rounded_x(const op_case *c, const op_inputs *in, double *expect,
                           void (*ref)(const op_case *, const op_inputs *, double *)) {
  op_inputs r = *in;
  const size_t n = ref_numel(in->rank[0], in->dims[0]);
  float *x = round_x(in, n);
  if (!x) return;
  r.data[0] = x;
  op_case plain = *c; /* cases_llm.c's parameter layout: {qtype, N, K, trans 0, ...} */
  plain.p[3] = 0;
  ref(&plain, &r, expect);
  free(x);
}
static void ref_matmul_q_xq8(const op_case *c, const op_inputs *in, double *expect) {
  with_rounded_x(c, in, expect, ref_matmul_q_case);
}
static void ref_swiglu_q_xq8(const op_case *c, const op_inputs *in, double *expect) {
  with_rounded_x(c, in, expect, ref_swiglu_q_case);
}

/* MMQ_TINY: weights uniform in [-2^-14, 2^-14) quantized (Q8_0's scales
 * about 4.8e-7, Q4_0's 7.6e-6: f16 subnormals), x uniform in [-2^14,
 * 2^14), so a scale decoded wrong (flushed, or the exponent off) moves y
 * by its own size.  K of 9 or 10 blocks: the wasm rows convert four
 * blocks' scales at once, then the pair and single tails one by one. */
static rlx_node build_matmul_q_tiny(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]);
  rlx_node in[2] = {rlx_input(g, "x", c->p[4], &c->p[5], RLX_F32), rlx_input(g, "w", 1, &words, RLX_I32)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = c->p[1],
                  [RLX_IATTR_QTABLE_COLS] = c->p[2], [RLX_IATTR_QMATMUL_TRANS] = 0, [RLX_IATTR_QMATMUL_XQ8] = c->p[3]};
  return rlx_op_node(g, RLX_OP_MATMUL_Q, in, 2, at, RLX_LEN(at), NULL, 0);
}
static void fill_tiny(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  const float tiny = 0x1p-14f;
  if (k == 0) {
    for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f) / tiny;
    return;
  }
  const size_t count = (size_t)c->p[1] * (size_t)c->p[2];
  float *v = malloc(count * sizeof(float));
  memset(data, 0, n * sizeof(float));
  if (!v) return;
  for (size_t i = 0; i < count; i++) v[i] = opcase_uniform(seed, i, -1.0f, 1.0f) * tiny;
  rlx_gguf_quantize((rlx_gguf_type)c->p[0], v, (int64_t)count, data, n * sizeof(float));
  free(v);
}
static void ref_matmul_q_tiny(const op_case *c, const op_inputs *in, double *expect) {
  op_case plain = *c; /* cases_llm.c's parameter layout: {qtype, N, K, trans 0, ...} */
  plain.p[3] = 0;
  if (c->p[3]) with_rounded_x(&plain, in, expect, ref_matmul_q_case);
  else ref_matmul_q_case(&plain, in, expect);
}

#define MMQ_TINY(name, qt, N, K, xq8, rank, ...) \
  {name, build_matmul_q_tiny, ref_matmul_q_tiny, fill_tiny, {qt, N, K, xq8, rank, __VA_ARGS__}, 0, 0, 1e-4}
#define MMQ8(name, qt, N, K, acc, rank, ...) \
  {name, build_matmul_q_xq8, ref_matmul_q_xq8, fill_xq8, {qt, N, K, acc, rank, __VA_ARGS__}, 0, 0, 1e-4}
#define SWQ8(name, qt, N, K, rank, ...) \
  {name, build_swiglu_q_xq8, ref_swiglu_q_xq8, fill_xq8, {qt, N, K, rank, __VA_ARGS__}, 0, 0, 1e-4}

const op_case rlx_cases_llm_cpu[] = {
    /* up to 4 rows: wasm's int8 rows (Q8_0, Q4_0); more: the f32 paths */
    MMQ8("matmul_q_xq8_q8_0_decode_1x192", RLX_GGUF_TYPE_Q8_0, 37, 192, 0, 2, 1, 192),
    MMQ8("matmul_q_xq8_q8_0_rows_4x96", RLX_GGUF_TYPE_Q8_0, 9, 96, 0, 2, 4, 96),
    MMQ8("matmul_q_xq8_q8_0_rows_5x64", RLX_GGUF_TYPE_Q8_0, 11, 64, 0, 2, 5, 64),
    MMQ8("matmul_q_xq8_q8_0_prompt_70x64", RLX_GGUF_TYPE_Q8_0, 20, 64, 0, 2, 70, 64),
    MMQ8("matmul_q_xq8_q4_0_decode_1x160", RLX_GGUF_TYPE_Q4_0, 33, 160, 0, 2, 1, 160),
    MMQ8("matmul_q_xq8_q4_0_batch_2x2x96", RLX_GGUF_TYPE_Q4_0, 21, 96, 0, 3, 2, 2, 96),
    MMQ8("matmul_q_xq8_q4_0_prompt_7x64", RLX_GGUF_TYPE_Q4_0, 13, 64, 0, 2, 7, 64),
    MMQ8("matmul_q_xq8_q4_K_decode_1x256", RLX_GGUF_TYPE_Q4_K, 17, 256, 0, 2, 1, 256),
    MMQ8("matmul_q_xq8_q6_K_rows_3x256", RLX_GGUF_TYPE_Q6_K, 5, 256, 0, 2, 3, 256),
    MMQ8("matmul_q_xq8_q5_1_rows_2x64", RLX_GGUF_TYPE_Q5_1, 9, 64, 0, 2, 2, 64),
    MMQ8("matmul_q_xq8_f16_decode_1x64", RLX_GGUF_TYPE_F16, 7, 64, 0, 2, 1, 64),
    MMQ8("matmul_q_xq8_acc_q8_0_decode_1x128", RLX_GGUF_TYPE_Q8_0, 19, 128, 1, 2, 1, 128),
    MMQ8("matmul_q_xq8_acc_q4_0_rows_3x64", RLX_GGUF_TYPE_Q4_0, 10, 64, 1, 2, 3, 64),
    SWQ8("swiglu_q_xq8_q8_0_decode_1x128", RLX_GGUF_TYPE_Q8_0, 24, 128, 2, 1, 128),
    SWQ8("swiglu_q_xq8_q4_0_rows_3x96", RLX_GGUF_TYPE_Q4_0, 17, 96, 2, 3, 96),
    SWQ8("swiglu_q_xq8_q4_K_rows_2x256", RLX_GGUF_TYPE_Q4_K, 6, 256, 2, 2, 256),
    SWQ8("swiglu_q_xq8_q8_0_prompt_9x64", RLX_GGUF_TYPE_Q8_0, 12, 64, 2, 9, 64),
    MMQ_TINY("matmul_q_tiny_scales_q8_0_decode_1x320", RLX_GGUF_TYPE_Q8_0, 13, 320, 0, 2, 1, 320),
    MMQ_TINY("matmul_q_tiny_scales_q8_0_rows_3x288", RLX_GGUF_TYPE_Q8_0, 6, 288, 0, 2, 3, 288),
    MMQ_TINY("matmul_q_tiny_scales_q4_0_decode_1x288", RLX_GGUF_TYPE_Q4_0, 11, 288, 0, 2, 1, 288),
    MMQ_TINY("matmul_q_tiny_scales_q4_1_decode_1x320", RLX_GGUF_TYPE_Q4_1, 9, 320, 0, 2, 1, 320),
    MMQ_TINY("matmul_q_tiny_scales_q5_0_decode_1x320", RLX_GGUF_TYPE_Q5_0, 7, 320, 0, 2, 1, 320),
    MMQ_TINY("matmul_q_tiny_scales_q5_1_decode_1x288", RLX_GGUF_TYPE_Q5_1, 5, 288, 0, 2, 1, 288),
    MMQ_TINY("matmul_q_tiny_scales_xq8_q8_0_decode_1x320", RLX_GGUF_TYPE_Q8_0, 13, 320, 1, 2, 1, 320),
    MMQ_TINY("matmul_q_tiny_scales_xq8_q4_0_decode_1x288", RLX_GGUF_TYPE_Q4_0, 11, 288, 1, 2, 1, 288),
};
const int rlx_n_cases_llm_cpu = sizeof rlx_cases_llm_cpu / sizeof rlx_cases_llm_cpu[0];
