// _llm_acc.wgsl - matmul_q's optional third input, shared by its kernels:
// binding 2, acc (y = x W^T + acc, y's shape) read when ACC is 1, or the
// norm's weight g[K] with NORM 1 (_llm_norm.wgsl); with neither the
// lowering binds x there as a placeholder and it is not read.

override ACC: u32 = 0u;

@group(0) @binding(2) var<storage, read> acc_in: array<f32>;

// The norm's weight g[i] (_llm_norm.wgsl's norm_weight).
fn norm_weight(i: u32) -> f32 { return acc_in[i]; }

// The output value at flat index i: the product v, plus acc when present.
fn with_acc(i: u32, v: f32) -> f32 {
  if (ACC == 1u) { return v + acc_in[i]; }
  return v;
}
