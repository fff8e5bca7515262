/* gemm.c - C = op(A) . op(B) (+ C).  Portable reference path; the packed
 * SIMD paths replace it. */
#include "kernels.h"

const char *rlx_gemm_path(void) { return "portable"; }

rlx_status rlx_gemm(const rlx_gemm_args *g, rlx_scratch *scratch) {
  (void)scratch;
  for (int32_t i = 0; i < g->M; i++) {
    float *c = g->C + (size_t)i * g->ldc;
    if (!g->accumulate)
      for (int32_t j = 0; j < g->N; j++) c[j] = 0.0f;
    for (int32_t k = 0; k < g->K; k++) {
      float a = g->trans_a ? g->A[(size_t)k * g->lda + i] : g->A[(size_t)i * g->lda + k];
      for (int32_t j = 0; j < g->N; j++) {
        float b = g->trans_b ? g->B[(size_t)j * g->ldb + k] : g->B[(size_t)k * g->ldb + j];
        c[j] += a * b;
      }
    }
  }
  return RLX_OK;
}
