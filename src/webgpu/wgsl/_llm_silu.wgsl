// _llm_silu.wgsl - silu(v) = v * sigmoid(v) for the swiglu_q kernels
// (llm_swiglu_q.wgsl, llm_silu_mul.wgsl), the sigmoid from e = exp(-|v|)
// as the CPU's sigmoid_stable (src/cpu/fast_math.h; WGSL's exp in place of
// its polynomial), so it never overflows.

fn silu(v: f32) -> f32 {
  let e = exp(-abs(v));
  return v * select(e / (1.0 + e), 1.0 / (1.0 + e), v >= 0.0);
}
