/* ref_fused.h - the naive references of ref_fused.c, shared by the fused op
 * cases (cases_fused.c) and the attention-block tests (test_transformer.c). */
#ifndef RLX_REF_FUSED_H
#define RLX_REF_FUSED_H

#include "op_case.h"

/* Shapes and settings of an attention block (see ref_attention_block). */
typedef struct {
  int32_t B, S, E, H, Dh, Eo;
  int32_t kind, window;          /* rlx_mask_kind; window for SLIDING */
  int32_t rope, pos, inverse;    /* RoPE on q and k (NeoX halves) */
  double theta, scale;           /* scale <= 0: 1/sqrt(Dh) */
  int32_t bias_rank;             /* BIAS: mask shape, broadcast to [B, H, S, S] */
  int32_t bias_dims[4];
} ref_attn_block;

/* x[B, S, E]; wq, wk, wv [E, H Dh] with row stride ldw (H Dh, or 3 H Dh for
 * column blocks of a packed weight); wo[H Dh, Eo]; mask: PADDING [B, S],
 * BIAS bias_dims.  out[B, S, Eo].  Rows that see no key give zeros. */
void ref_attention_block(const ref_attn_block *p, const float *x, const float *wq, const float *wk, const float *wv,
                         int32_t ldw, const float *wo, const float *mask, double *out);

void ref_fused_matmul_case(const op_case *c, const op_inputs *in, double *expect);
void ref_fused_attention_case(const op_case *c, const op_inputs *in, double *expect);

#endif
