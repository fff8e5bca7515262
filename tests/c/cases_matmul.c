/* cases_matmul.c - op cases for matmul: plain 2-D products of odd sizes and
 * size-1 dims (M, N or K = 1), every transpose combination, batch dims that
 * broadcast on either side (incl. ranks that differ), the folded path (a
 * shared b under a batched a), and shapes large enough to cross the GEMM's
 * register and cache blocks (K > kc, M > mc, N > nc). */
#include "op_case.h"

void ref_matmul(const op_case *c, const op_inputs *in, double *expect);

/* p = {rank_a, a dims[5], rank_b, b dims[5], trans_a, trans_b, plain builder} */
static rlx_node build_matmul(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  rlx_node a = rlx_input(g, "a", p[0], p + 1, RLX_F32);
  rlx_node b = rlx_input(g, "b", p[6], p + 7, RLX_F32);
  if (p[14]) return rlx_matmul(g, a, b);
  return rlx_matmul_t(g, a, b, p[12], p[13]);
}

/* Shapes are the stored shapes of a and b (already transposed). */
#define A2(d0, d1) 2, d0, d1, 0, 0, 0
#define A3(d0, d1, d2) 3, d0, d1, d2, 0, 0
#define A4(d0, d1, d2, d3) 4, d0, d1, d2, d3, 0
#define A5(d0, d1, d2, d3, d4) 5, d0, d1, d2, d3, d4
#define MM(name, a, b, ta, tb) \
  {name, build_matmul, ref_matmul, NULL, {a, b, ta, tb, 0}, 0.0f, 0.0f, 0.0}
#define MM_PLAIN(name, a, b) \
  {name, build_matmul, ref_matmul, NULL, {a, b, 0, 0, 1}, 0.0f, 0.0f, 0.0}

const op_case rlx_cases_matmul[] = {
    /* 2-D, plain builder */
    MM_PLAIN("matmul_3x5_5x7", A2(3, 5), A2(5, 7)),
    MM_PLAIN("matmul_1x1_1x1", A2(1, 1), A2(1, 1)),
    MM_PLAIN("matmul_row_1x9_9x13", A2(1, 9), A2(9, 13)),
    MM_PLAIN("matmul_col_11x9_9x1", A2(11, 9), A2(9, 1)),
    MM_PLAIN("matmul_outer_7x1_1x6", A2(7, 1), A2(1, 6)),
    MM_PLAIN("matmul_dot_1x33_33x1", A2(1, 33), A2(33, 1)),
    MM_PLAIN("matmul_13x17_17x19", A2(13, 17), A2(17, 19)),
    MM_PLAIN("matmul_33x40_40x29", A2(33, 40), A2(40, 29)),
    /* transposes: a stored [K, M] with trans_a, b stored [N, K] with trans_b */
    MM("matmul_ta_11x6", A2(11, 6), A2(11, 9), 1, 0),
    MM("matmul_tb_6x11", A2(6, 11), A2(9, 11), 0, 1),
    MM("matmul_ta_tb_11x6", A2(11, 6), A2(9, 11), 1, 1),
    MM("matmul_nt_nt_flags0", A2(6, 11), A2(11, 9), 0, 0),
    MM("matmul_ta_19x23_19x21", A2(19, 23), A2(19, 21), 1, 0),
    MM("matmul_tb_23x19_21x19", A2(23, 19), A2(21, 19), 0, 1),
    MM("matmul_ta_tb_19x23_21x19", A2(19, 23), A2(21, 19), 1, 1),
    MM("matmul_ta_row_5x1", A2(5, 1), A2(5, 10), 1, 0),
    MM("matmul_tb_row_1x5", A2(1, 5), A2(10, 5), 0, 1),
    MM("matmul_tb_col_7x5_1x5", A2(7, 5), A2(1, 5), 0, 1),
    /* batch dims */
    MM_PLAIN("matmul_batch_2x3_4x5_x_5x6", A4(2, 3, 4, 5), A2(5, 6)),
    MM_PLAIN("matmul_batch_lead1_1x3x4x5_x_5x6", A4(1, 3, 4, 5), A2(5, 6)),
    MM_PLAIN("matmul_batch_same_2x3", A4(2, 3, 4, 5), A4(2, 3, 5, 6)),
    MM_PLAIN("matmul_batch_bcast_3x1_1x2", A4(3, 1, 4, 5), A4(1, 2, 5, 6)),
    MM_PLAIN("matmul_batch_a_shared_4x5_x_3x5x6", A2(4, 5), A3(3, 5, 6)),
    MM_PLAIN("matmul_batch_b_1x1_x_a_2x3", A4(2, 3, 4, 5), A4(1, 1, 5, 6)),
    MM_PLAIN("matmul_batch_rank5", A5(2, 1, 2, 3, 4), A4(3, 1, 4, 5)),
    MM_PLAIN("matmul_batch_all1", A3(1, 1, 1), A3(1, 1, 1)),
    MM_PLAIN("matmul_batch_rows_4x1x8_x_4x8x3", A3(4, 1, 8), A3(4, 8, 3)),
    MM_PLAIN("matmul_batch_cols_3x7x8_x_8x1", A3(3, 7, 8), A2(8, 1)),
    MM("matmul_batch_ta_shared_b", A3(3, 5, 4), A2(5, 6), 1, 0),
    MM("matmul_batch_tb_shared_b", A3(3, 4, 5), A2(6, 5), 0, 1),
    MM("matmul_batch_ta_tb_bcast", A4(2, 1, 9, 7), A4(1, 3, 5, 9), 1, 1),
    MM("matmul_batch_tb_attention", A4(2, 3, 10, 8), A4(2, 3, 12, 8), 0, 1),
    MM("matmul_batch_ta_a_shared", A2(5, 4), A3(2, 5, 6), 1, 0),
    /* across the GEMM's cache blocks (kc 256, mc 128-144, nc 768) */
    MM_PLAIN("matmul_big_k_20x300_300x37", A2(20, 300), A2(300, 37)),
    MM_PLAIN("matmul_fold_tall_3x50x9_9x33", A3(3, 50, 9), A2(9, 33)),
    MM_PLAIN("matmul_wide_n_5x16_16x800", A2(5, 16), A2(16, 800)),
    MM("matmul_big_ta_tb_300x21_23x300", A2(300, 21), A2(23, 300), 1, 1),
};
const int rlx_n_cases_matmul = (int)(sizeof rlx_cases_matmul / sizeof rlx_cases_matmul[0]);
