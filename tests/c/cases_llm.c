/* cases_llm.c - op cases for the quantized language-model ops: matmul_q,
 * gather_q and swiglu_q for every GGUF weight type, rope's offset input
 * and adjacent-pairs mode, and attention_kv (references in ref_llm.c).
 * Parameter layouts (c->p):
 *   matmul_q      {qtype, N, K, trans, extra words of w, x rank, x dims...}
 *                 (MMQ_ACC: with the acc input, y's shape)
 *   gather_q      {qtype, V, K, ids dtype (1 = i32), ids rank, ids dims...}
 *   swiglu_q      {qtype, N, K, x rank, x dims...}
 *   rope_ext      {theta, pos_offset, mode, offset (< 0: no offset input),
 *                  inverse, x rank, x dims...}
 *   attention_kv  {Hq, Hkv, S, D, Dv, C, pos, scale * 1000}
 *                 (AKV_ROPE: then rope mode, theta)
 *   MMQ_NORM / SWQ_NORM: matmul_q's / swiglu_q's layout, with norm (eps
 *                 1e-5) and its weight "g" [K] as the last input
 * Quantized weights are uniform values in [-1, 1) quantized with
 * rlx_gguf_quantize; caches are filled with random values (a prefilled
 * cache: positions before pos act as earlier tokens). */
#include <stdlib.h>
#include <string.h>

#include "../../src/ir/attrs.h"
#include "op_case.h"
#include "rlx_gguf.h"

void ref_matmul_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_gather_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_swiglu_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_rope_ext_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_kv_case(const op_case *c, const op_inputs *in, double *expect);
void ref_matmul_q_norm_case(const op_case *c, const op_inputs *in, double *expect);
void ref_swiglu_q_norm_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_kv_rope_case(const op_case *c, const op_inputs *in, double *expect);

/* i32 words holding rows of cols values of qtype (rounded up). */
int32_t opcase_table_words(int32_t qtype, int32_t rows, int32_t cols) {
  uint64_t row = 0;
  rlx_gguf_row_bytes((rlx_gguf_type)qtype, cols, &row);
  return (int32_t)((row * (uint64_t)rows + 3) / 4);
}

/* rows x cols uniform values quantized into data (n words; the rest zero). */
void opcase_fill_table(int32_t qtype, int32_t rows, int32_t cols, float *data, size_t n, unsigned seed) {
  size_t count = (size_t)rows * (size_t)cols;
  float *v = (float *)calloc(count, sizeof(float));
  memset(data, 0, n * sizeof(float));
  if (!v) return;
  for (size_t i = 0; i < count; i++) v[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
  rlx_gguf_quantize((rlx_gguf_type)qtype, v, (int64_t)count, data, n * sizeof(float));
  free(v);
}

static rlx_node build_matmul_q(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]) + c->p[4];
  rlx_node x = rlx_input(g, "x", c->p[5], &c->p[6], RLX_F32);
  rlx_node w = rlx_input(g, "w", 1, &words, RLX_I32);
  return rlx_matmul_q(g, x, w, c->p[0], c->p[1], c->p[2], c->p[3]);
}

/* matmul_q with its acc input "acc" [..., out] (y = x W^T + acc). */
static rlx_node build_matmul_q_acc(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]) + c->p[4], dims[RLX_MAX_RANK];
  memcpy(dims, &c->p[6], (size_t)c->p[5] * sizeof(int32_t));
  dims[c->p[5] - 1] = c->p[3] ? c->p[2] : c->p[1];
  rlx_node in[3] = {rlx_input(g, "x", c->p[5], &c->p[6], RLX_F32), rlx_input(g, "w", 1, &words, RLX_I32),
                    rlx_input(g, "acc", c->p[5], dims, RLX_F32)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = c->p[1],
                  [RLX_IATTR_QTABLE_COLS] = c->p[2], [RLX_IATTR_QMATMUL_TRANS] = c->p[3]};
  return rlx_op_node(g, RLX_OP_MATMUL_Q, in, 3, at, (int32_t)(sizeof at / sizeof at[0]), NULL, 0);
}

static void fill_matmul_q(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k == 1) {
    opcase_fill_table(c->p[0], c->p[1], c->p[2], data, n, seed);
    return;
  }
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
}

static rlx_node build_gather_q(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]);
  rlx_node t = rlx_input(g, "table", 1, &words, RLX_I32);
  rlx_node ids = rlx_input(g, "ids", c->p[4], &c->p[5], c->p[3] ? RLX_I32 : RLX_F32);
  return rlx_gather_q(g, t, ids, c->p[0], c->p[1], c->p[2]);
}

static void fill_gather_q(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k == 0) {
    opcase_fill_table(c->p[0], c->p[1], c->p[2], data, n, seed);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int32_t id = (int32_t)opcase_uniform(seed, i, 0.0f, (float)c->p[1]);
    if (id >= c->p[1]) id = c->p[1] - 1;
    if (c->p[3])
      memcpy(&data[i], &id, sizeof id);
    else
      data[i] = (float)id;
  }
}

static rlx_node build_swiglu_q(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]);
  rlx_node x = rlx_input(g, "x", c->p[3], &c->p[4], RLX_F32);
  rlx_node gate = rlx_input(g, "w_gate", 1, &words, RLX_I32);
  rlx_node up = rlx_input(g, "w_up", 1, &words, RLX_I32);
  return rlx_swiglu_q(g, x, gate, up, c->p[0], c->p[1], c->p[2]);
}

static void fill_swiglu_q(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k >= 1) {
    opcase_fill_table(c->p[0], c->p[1], c->p[2], data, n, seed);
    return;
  }
  /* x in [-0.5, 0.5): silu(g) * u multiplies the rounding of one product
   * by the other; smaller products keep wasm and native within 1e-5 */
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -0.5f, 0.5f);
}

static rlx_node build_rope_ext(rlx_graph *g, const op_case *c) {
  rlx_node x = rlx_input(g, "x", c->p[5], &c->p[6], RLX_F32);
  rlx_node in[2] = {x, RLX_NO_NODE};
  if (c->p[3] >= 0) in[1] = rlx_input(g, "offset", 1, (int32_t[]){1}, RLX_I32);
  if (!c->p[4]) return rlx_rope_ext(g, x, in[1], (float)c->p[0], c->p[1], c->p[2]);
  float theta = (float)c->p[0];
  int32_t at[3] = {c->p[1], 1, c->p[2]};
  return rlx_op_node(g, RLX_OP_ROPE, in, c->p[3] >= 0 ? 2 : 1, at, 3, &theta, 1);
}

static void fill_rope_ext(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k == 1) {
    memcpy(data, &c->p[3], sizeof(int32_t));
    return;
  }
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
}

static rlx_node build_attention_kv(rlx_graph *g, const op_case *c) {
  int32_t hq = c->p[0], hkv = c->p[1], S = c->p[2], D = c->p[3], Dv = c->p[4], C = c->p[5];
  rlx_node q = rlx_input(g, "q", 3, (int32_t[]){hq, S, D}, RLX_F32);
  rlx_node k = rlx_input(g, "k", 3, (int32_t[]){hkv, S, D}, RLX_F32);
  rlx_node v = rlx_input(g, "v", 3, (int32_t[]){hkv, S, Dv}, RLX_F32);
  rlx_node kc = rlx_input(g, "k_cache", 3, (int32_t[]){hkv, C, D}, RLX_F32);
  rlx_node vc = rlx_input(g, "v_cache", 3, (int32_t[]){hkv, C, Dv}, RLX_F32);
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32);
  return rlx_attention_kv(g, q, k, v, kc, vc, pos, (float)(c->p[7] / 1000.0));
}

static void fill_attention_kv(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k == 5) {
    memcpy(data, &c->p[6], sizeof(int32_t));
    return;
  }
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
}

/* norm: the weight g[K] as the last input, eps 1e-5. */
static rlx_node build_matmul_q_norm(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]);
  rlx_node in[3] = {rlx_input(g, "x", c->p[5], &c->p[6], RLX_F32), rlx_input(g, "w", 1, &words, RLX_I32),
                    rlx_input(g, "g", 1, &c->p[2], RLX_F32)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = c->p[1],
                  [RLX_IATTR_QTABLE_COLS] = c->p[2], [RLX_IATTR_QMATMUL_TRANS] = 0, [RLX_IATTR_QMATMUL_XQ8] = 0,
                  [RLX_IATTR_QMATMUL_NORM] = 1};
  float eps[] = {[RLX_FATTR_QMATMUL_EPS] = 1e-5f};
  return rlx_op_node(g, RLX_OP_MATMUL_Q, in, 3, at, RLX_LEN(at), eps, RLX_LEN(eps));
}

static rlx_node build_swiglu_q_norm(rlx_graph *g, const op_case *c) {
  int32_t words = opcase_table_words(c->p[0], c->p[1], c->p[2]);
  rlx_node in[4] = {rlx_input(g, "x", c->p[3], &c->p[4], RLX_F32), rlx_input(g, "w_gate", 1, &words, RLX_I32),
                    rlx_input(g, "w_up", 1, &words, RLX_I32), rlx_input(g, "g", 1, &c->p[2], RLX_F32)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = c->p[0], [RLX_IATTR_QTABLE_ROWS] = c->p[1],
                  [RLX_IATTR_QTABLE_COLS] = c->p[2], [RLX_IATTR_QSWIGLU_XQ8] = 0, [RLX_IATTR_QSWIGLU_NORM] = 1};
  float eps[] = {[RLX_FATTR_QSWIGLU_EPS] = 1e-5f};
  return rlx_op_node(g, RLX_OP_SWIGLU_Q, in, 4, at, RLX_LEN(at), eps, RLX_LEN(eps));
}

/* The tables as the plain cases; x uniform in [-2, 2) (a norm's input is
 * of any scale); g in [0.5, 1.5), for swiglu_q in [0.1, 0.4) (normed
 * values near fill_swiglu_q's x, for the same reason). */
static void fill_norm(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  const int swiglu = c->build == build_swiglu_q_norm, gk = swiglu ? 3 : 2;
  if (k > 0 && k < gk) {
    opcase_fill_table(c->p[0], c->p[1], c->p[2], data, n, seed);
    return;
  }
  const float lo = k < gk ? -2.0f : swiglu ? 0.1f : 0.5f, hi = k < gk ? 2.0f : swiglu ? 0.4f : 1.5f;
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, lo, hi);
}

static rlx_node build_attention_kv_rope(rlx_graph *g, const op_case *c) {
  int32_t hq = c->p[0], hkv = c->p[1], S = c->p[2], D = c->p[3], Dv = c->p[4], C = c->p[5];
  rlx_node in[6] = {rlx_input(g, "q", 3, (int32_t[]){hq, S, D}, RLX_F32), rlx_input(g, "k", 3, (int32_t[]){hkv, S, D}, RLX_F32),
                    rlx_input(g, "v", 3, (int32_t[]){hkv, S, Dv}, RLX_F32),
                    rlx_input(g, "k_cache", 3, (int32_t[]){hkv, C, D}, RLX_F32),
                    rlx_input(g, "v_cache", 3, (int32_t[]){hkv, C, Dv}, RLX_F32), rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32)};
  int32_t at[] = {[RLX_IATTR_ATTENTION_KV_ROPE] = c->p[8]};
  float f[] = {[RLX_FATTR_ATTENTION_KV_SCALE] = (float)(c->p[7] / 1000.0), [RLX_FATTR_ATTENTION_KV_THETA] = (float)c->p[9]};
  return rlx_op_node(g, RLX_OP_ATTENTION_KV, in, 6, at, RLX_LEN(at), f, RLX_LEN(f));
}

#define MMQ(name, qt, N, K, trans, extra, rank, ...) \
  {name, build_matmul_q, ref_matmul_q_case, fill_matmul_q, {qt, N, K, trans, extra, rank, __VA_ARGS__}, 0, 0, 1e-4}
#define MMQ_ACC(name, qt, N, K, trans, rank, ...) \
  {name, build_matmul_q_acc, ref_matmul_q_case, fill_matmul_q, {qt, N, K, trans, 0, rank, __VA_ARGS__}, 0, 0, 1e-4}
/* one type: a decoded token (the fused row path), a batch (the tiled GEMM
 * path) and the transposed product */
#define MMQ_TYPE(tname, qt, K)                                               \
  MMQ("matmul_q_" tname "_decode_1x" #K, qt, 24, K, 0, 0, 2, 1, K),           \
  MMQ("matmul_q_" tname "_batch_2x3x" #K, qt, 20, K, 0, 1, 3, 2, 3, K),       \
  MMQ("matmul_q_" tname "_trans_3x12_to_" #K, qt, 12, K, 1, 0, 2, 3, 12),     \
  MMQ("matmul_q_" tname "_trans_decode_1x9_to_" #K, qt, 9, K, 1, 0, 1, 9)
#define GQ(name, qt, V, K, i32, rank, ...) \
  {name, build_gather_q, ref_gather_q_case, fill_gather_q, {qt, V, K, i32, rank, __VA_ARGS__}, 0, 0, 0}
#define SWQ(name, qt, N, K, rank, ...) \
  {name, build_swiglu_q, ref_swiglu_q_case, fill_swiglu_q, {qt, N, K, rank, __VA_ARGS__}, 0, 0, 1e-4}
/* one type, N odd: a decoded token and a short prompt step (the fused rows
 * on the CPU, one llm_swiglu_q.wgsl dispatch on WebGPU) and a prompt (the
 * tiled GEMM; on WebGPU two llm_matmul_q.wgsl products and a combine) */
#define SWQ_TYPE(tname, qt, N, K)                                 \
  SWQ("swiglu_q_" tname "_decode_1x" #K "_to_" #N, qt, N, K, 2, 1, K), \
  SWQ("swiglu_q_" tname "_3x" #K "_to_" #N, qt, N, K, 2, 3, K),        \
  SWQ("swiglu_q_" tname "_prompt_70x" #K "_to_" #N, qt, N, K, 2, 70, K)
#define ROPE_EXT(name, theta, pos, mode, offset, inverse, rank, ...)                                    \
  {name, build_rope_ext, ref_rope_ext_case, fill_rope_ext, {theta, pos, mode, offset, inverse, rank, __VA_ARGS__}, \
   0, 0, 0}
#define MMQ_NORM(name, qt, N, K, rank, ...) \
  {name, build_matmul_q_norm, ref_matmul_q_norm_case, fill_norm, {qt, N, K, 0, 0, rank, __VA_ARGS__}, 0, 0, 1e-4}
#define SWQ_NORM(name, qt, N, K, rank, ...) \
  {name, build_swiglu_q_norm, ref_swiglu_q_norm_case, fill_norm, {qt, N, K, rank, __VA_ARGS__}, 0, 0, 1e-4}
#define AKV_ROPE(name, hq, hkv, S, D, Dv, C, pos, scale, mode, theta)                            \
  {name, build_attention_kv_rope, ref_attention_kv_rope_case, fill_attention_kv,                 \
   {hq, hkv, S, D, Dv, C, pos, scale, mode, theta}, 0, 0, 0}
#define AKV(name, hq, hkv, S, D, Dv, C, pos, scale) \
  {name, build_attention_kv, ref_attention_kv_case, fill_attention_kv, {hq, hkv, S, D, Dv, C, pos, scale}, 0, 0, 0}

const op_case rlx_cases_llm[] = {
    MMQ_TYPE("f32", RLX_GGUF_TYPE_F32, 40),
    MMQ_TYPE("f16", RLX_GGUF_TYPE_F16, 40),
    MMQ_TYPE("bf16", RLX_GGUF_TYPE_BF16, 40),
    MMQ_TYPE("q8_0", RLX_GGUF_TYPE_Q8_0, 96),
    MMQ_TYPE("q4_0", RLX_GGUF_TYPE_Q4_0, 96),
    MMQ_TYPE("q4_1", RLX_GGUF_TYPE_Q4_1, 64),
    MMQ_TYPE("q5_0", RLX_GGUF_TYPE_Q5_0, 64),
    MMQ_TYPE("q5_1", RLX_GGUF_TYPE_Q5_1, 96),
    MMQ_TYPE("q4_K", RLX_GGUF_TYPE_Q4_K, 256),
    MMQ_TYPE("q5_K", RLX_GGUF_TYPE_Q5_K, 256),
    MMQ_TYPE("q6_K", RLX_GGUF_TYPE_Q6_K, 512),
    /* more weight rows than one dequantized tile (65536 / K rows) */
    MMQ("matmul_q_q4_K_batch_tiles_3x300x256", RLX_GGUF_TYPE_Q4_K, 300, 256, 0, 0, 2, 3, 256),
    MMQ("matmul_q_q8_0_trans_tiles_2x2100_to_32", RLX_GGUF_TYPE_Q8_0, 2100, 32, 1, 0, 2, 2, 2100),
    /* the transposed product over several output tiles both ways (32 rows
     * by 64 columns on WebGPU), partial ones, and a float row whose length
     * is no multiple of 8 */
    MMQ("matmul_q_q4_0_trans_tiles_70x40_to_96", RLX_GGUF_TYPE_Q4_0, 40, 96, 1, 0, 2, 70, 40),
    MMQ("matmul_q_f32_trans_tiles_35x33_to_37", RLX_GGUF_TYPE_F32, 33, 37, 1, 0, 2, 35, 33),
    /* a few x rows (a short prompt step) through the fused rows: more
     * weight rows than one 16 KiB chunk, odd row counts */
    MMQ("matmul_q_q4_0_prompt_chunks_3x1000x32", RLX_GGUF_TYPE_Q4_0, 1000, 32, 0, 0, 2, 3, 32),
    MMQ("matmul_q_q6_K_prompt_4x7x256", RLX_GGUF_TYPE_Q6_K, 7, 256, 0, 0, 2, 4, 256),
    MMQ("matmul_q_q5_1_prompt_2x5x96", RLX_GGUF_TYPE_Q5_1, 5, 96, 0, 0, 3, 1, 2, 96),

    /* the acc input (a residual added in the same pass): the decode,
     * prompt-tile and transposed kernels */
    MMQ_ACC("matmul_q_acc_q8_0_decode_1x96", RLX_GGUF_TYPE_Q8_0, 20, 96, 0, 2, 1, 96),
    MMQ_ACC("matmul_q_acc_q4_K_prompt_6x256", RLX_GGUF_TYPE_Q4_K, 70, 256, 0, 2, 6, 256),
    MMQ_ACC("matmul_q_acc_q4_0_batch_2x3x64", RLX_GGUF_TYPE_Q4_0, 9, 64, 0, 3, 2, 3, 64),
    MMQ_ACC("matmul_q_acc_q6_K_trans_2x5_to_256", RLX_GGUF_TYPE_Q6_K, 5, 256, 1, 2, 2, 5),

    SWQ_TYPE("f32", RLX_GGUF_TYPE_F32, 23, 40),
    SWQ_TYPE("f16", RLX_GGUF_TYPE_F16, 23, 40),
    SWQ_TYPE("bf16", RLX_GGUF_TYPE_BF16, 23, 40),
    SWQ_TYPE("q8_0", RLX_GGUF_TYPE_Q8_0, 21, 96),
    SWQ_TYPE("q4_0", RLX_GGUF_TYPE_Q4_0, 21, 96),
    SWQ_TYPE("q4_1", RLX_GGUF_TYPE_Q4_1, 19, 64),
    SWQ_TYPE("q5_0", RLX_GGUF_TYPE_Q5_0, 19, 64),
    SWQ_TYPE("q5_1", RLX_GGUF_TYPE_Q5_1, 21, 96),
    SWQ_TYPE("q4_K", RLX_GGUF_TYPE_Q4_K, 13, 256),
    SWQ_TYPE("q5_K", RLX_GGUF_TYPE_Q5_K, 13, 256),
    SWQ_TYPE("q6_K", RLX_GGUF_TYPE_Q6_K, 9, 256),
    /* more rows than one fused chunk (16 KiB of both weights' rows), than
     * one dequantized tile (65536 / 2K rows of each), and x of rank 3 */
    SWQ("swiglu_q_q4_0_chunks_3x32_to_1001", RLX_GGUF_TYPE_Q4_0, 1001, 32, 2, 3, 32),
    SWQ("swiglu_q_q4_K_tiles_70x256_to_301", RLX_GGUF_TYPE_Q4_K, 301, 256, 2, 70, 256),
    SWQ("swiglu_q_q8_0_rank3_2x3x64_to_37", RLX_GGUF_TYPE_Q8_0, 37, 64, 3, 2, 3, 64),

    GQ("gather_q_q4_0_i32_ids_2x3", RLX_GGUF_TYPE_Q4_0, 11, 64, 1, 2, 2, 3),
    GQ("gather_q_q6_K_f32_ids_5", RLX_GGUF_TYPE_Q6_K, 7, 256, 0, 1, 5),
    GQ("gather_q_f16_i32_ids_4", RLX_GGUF_TYPE_F16, 9, 6, 1, 1, 4),
    GQ("gather_q_q5_K_i32_ids_scalar", RLX_GGUF_TYPE_Q5_K, 3, 256, 1, 0, 0),

    ROPE_EXT("rope_pairs_theta10000_pos0_2x5x8", 10000, 0, 1, -1, 0, 3, 2, 5, 8),
    ROPE_EXT("rope_pairs_theta500_pos3_odd_half_2x3x7x10", 500, 3, 1, -1, 0, 4, 2, 3, 7, 10),
    ROPE_EXT("rope_offset7_neox_theta10000_2x4x6", 10000, 0, 0, 7, 0, 3, 2, 4, 6),
    ROPE_EXT("rope_offset5_pos2_pairs_theta10000_3x6x8", 10000, 2, 1, 5, 0, 3, 3, 6, 8),
    ROPE_EXT("rope_offset4099_pairs_long_s_1x70x16", 10000, 0, 1, 4099, 0, 3, 1, 70, 16),
    ROPE_EXT("rope_inverse_offset3_pairs_theta500_2x4x6", 500, 1, 1, 3, 1, 3, 2, 4, 6),
    ROPE_EXT("rope_inverse_offset9_neox_theta10000_2x3x8", 10000, 0, 0, 9, 1, 3, 2, 3, 8),
    /* WebGPU rotates heads up to D = 128 (64 frequencies) in one dispatch
     * (src/webgpu/wgsl/rope_fused.wgsl): D = 128 at that capacity, D = 64
     * (a language model's head) at a large offset in both layouts and
     * inverted, and D = 130, one frequency above it (the table fallback). */
    ROPE_EXT("rope_head128_neox_pos2_theta10000_2x3x128", 10000, 2, 0, -1, 0, 3, 2, 3, 128),
    ROPE_EXT("rope_head128_inverse_offset37_pairs_theta500_2x2x128", 500, 0, 1, 37, 1, 3, 2, 2, 128),
    ROPE_EXT("rope_head64_offset4099_neox_theta10000_2x5x64", 10000, 0, 0, 4099, 0, 3, 2, 5, 64),
    ROPE_EXT("rope_head64_offset4099_pos3_pairs_theta10000_1x2x5x64", 10000, 3, 1, 4099, 0, 4, 1, 2, 5, 64),
    ROPE_EXT("rope_head64_inverse_offset4099_neox_theta10000_2x3x64", 10000, 0, 0, 4099, 1, 3, 2, 3, 64),
    ROPE_EXT("rope_head64_inverse_offset4099_pairs_theta10000_2x3x64", 10000, 0, 1, 4099, 1, 3, 2, 3, 64),
    ROPE_EXT("rope_head130_fallback_offset11_pairs_theta10000_1x3x130", 10000, 0, 1, 11, 0, 3, 1, 3, 130),
    ROPE_EXT("rope_head130_fallback_inverse_neox_pos5_theta10000_2x2x130", 10000, 5, 0, -1, 1, 3, 2, 2, 130),

    AKV("attention_kv_h2_s4_pos0_c8", 2, 2, 4, 8, 8, 8, 0, 0),
    AKV("attention_kv_gqa_h4_kv2_s3_pos0_c6", 4, 2, 3, 6, 6, 6, 0, 0),
    AKV("attention_kv_gqa_h6_kv2_prefilled_pos3_s4_c10", 6, 2, 4, 8, 5, 10, 3, 0),
    AKV("attention_kv_decode_s1_pos5_c9_scale0.4", 4, 1, 1, 7, 7, 9, 5, 400),
    AKV("attention_kv_rows_past_c_pos6_s4_c8", 2, 1, 4, 4, 6, 8, 6, 0),
    AKV("attention_kv_all_past_c_pos9_s2_c8", 2, 2, 2, 4, 4, 8, 9, 0),
    AKV("attention_kv_long_gqa_h8_kv2_pos40_s5_c64_d32", 8, 2, 5, 32, 32, 64, 40, 0),
    /* keys split over workgroups (WebGPU: ceil(C / 128) splits, at most
     * 128 / (S Hq), merged by a second dispatch) */
    AKV("attention_kv_splits_decode_gqa_h6_kv2_pos300_c384_d64", 6, 2, 1, 64, 64, 384, 300, 0),
    AKV("attention_kv_splits_prompt_s5_pos61_c320_d32", 4, 2, 5, 32, 32, 320, 61, 0),
    AKV("attention_kv_splits_d48_dv80_pos150_s2_c300", 3, 1, 2, 48, 80, 300, 150, 0),
    AKV("attention_kv_splits_d256_pos128_c257", 2, 1, 1, 256, 256, 257, 128, 0),
    AKV("attention_kv_splits_rows_past_c_pos318_s4_c320", 2, 2, 4, 16, 16, 320, 318, 0),
    AKV("attention_kv_splits_pos0_s1_c300", 4, 4, 1, 16, 16, 300, 0, 0),
    /* splits of several tiles of 32 keys (WebGPU: 64 query rows, 2
     * splits), 128 and 256 rows in one split (no merge), rows past C */
    AKV("attention_kv_tiles_s16_pos150_c300_d16", 4, 1, 16, 16, 16, 300, 150, 0),
    AKV("attention_kv_tiles_h8_kv2_s16_pos150_c160_d8", 8, 2, 16, 8, 8, 160, 150, 0),
    AKV("attention_kv_tiles_direct_h8_kv2_s32_pos150_c160_d8", 8, 2, 32, 8, 8, 160, 150, 0),
    /* SmolLM-135M's decode (WebGPU: 14 splits, 6 live at pos 160), and
     * splits of 4 tiles read from the caches only */
    AKV("attention_kv_decode_gqa_h9_kv3_pos160_c2048_d64", 9, 3, 1, 64, 64, 2048, 160, 0),
    AKV("attention_kv_splits_tiles_h9_kv3_pos1000_c1024_d64", 9, 3, 1, 64, 64, 1024, 1000, 0),

    /* norm (the rms_norm before a layer's products folded in): the
     * matrix-vector kernels (up to 4 rows) and the prompt path (on WebGPU
     * the norm into the scratch, then the tiled products) */
    MMQ_NORM("matmul_q_norm_q8_0_decode_1x96", RLX_GGUF_TYPE_Q8_0, 20, 96, 2, 1, 96),
    MMQ_NORM("matmul_q_norm_f16_4x40", RLX_GGUF_TYPE_F16, 9, 40, 2, 4, 40),
    MMQ_NORM("matmul_q_norm_q4_0_batch_2x3x64", RLX_GGUF_TYPE_Q4_0, 9, 64, 3, 2, 3, 64),
    MMQ_NORM("matmul_q_norm_q4_K_prompt_70x256", RLX_GGUF_TYPE_Q4_K, 13, 256, 2, 70, 256),
    SWQ_NORM("swiglu_q_norm_q8_0_decode_1x96_to_21", RLX_GGUF_TYPE_Q8_0, 21, 96, 2, 1, 96),
    SWQ_NORM("swiglu_q_norm_q4_0_3x96_to_21", RLX_GGUF_TYPE_Q4_0, 21, 96, 2, 3, 96),
    SWQ_NORM("swiglu_q_norm_q4_K_prompt_70x256_to_13", RLX_GGUF_TYPE_Q4_K, 13, 256, 2, 70, 256),
    /* rope (q and k rotated before the cache append and the scores), both
     * layouts: a decode with splits, a prompt, rows past C, a large pos */
    AKV_ROPE("attention_kv_rope_pairs_decode_h9_kv3_pos160_c2048_d64", 9, 3, 1, 64, 64, 2048, 160, 0, 2, 10000),
    AKV_ROPE("attention_kv_rope_neox_prompt_s5_pos61_c320_d32", 4, 2, 5, 32, 32, 320, 61, 0, 1, 10000),
    AKV_ROPE("attention_kv_rope_pairs_rows_past_c_pos6_s4_c8", 2, 1, 4, 4, 6, 8, 6, 0, 2, 500),
    AKV_ROPE("attention_kv_rope_neox_tiles_s16_pos150_c300_d16", 4, 1, 16, 16, 16, 300, 150, 0, 1, 10000),
    AKV_ROPE("attention_kv_rope_neox_pos4099_c4200_d64", 2, 1, 2, 64, 64, 4200, 4099, 0, 1, 1000000),
};
const int rlx_n_cases_llm = sizeof rlx_cases_llm / sizeof rlx_cases_llm[0];
