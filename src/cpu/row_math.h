/* row_math.h - row helpers of the softmax family (defined in k_softmax.c)
 * that other kernels share: attention (forward and backward) and the
 * softmax backward kernels. */
#ifndef RLX_CPU_ROW_MATH_H
#define RLX_CPU_ROW_MATH_H

#include <stddef.h>

/* Largest of x[0..n) (-inf when n is 0; NaNs are skipped). */
float rlx_cpu_row_max(const float *x, size_t n);

/* y[i] = exp(x[i] - shift) for i < n, returning the sum (in double); y may
 * be x.  Shift by the row max so that the exponentials cannot overflow. */
double rlx_cpu_exp_shift_sum(const float *x, float shift, float *y, size_t n);

#endif
