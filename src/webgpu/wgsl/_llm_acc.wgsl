// _llm_acc.wgsl - matmul_q's optional acc input (y = x W^T + acc, y's
// shape), shared by its kernels: binding 2, read when ACC is 1 (with ACC 0
// the lowering binds x there as a placeholder and it is not read).

override ACC: u32 = 0u;

@group(0) @binding(2) var<storage, read> acc_in: array<f32>;

// The output value at flat index i: the product v, plus acc when present.
fn with_acc(i: u32, v: f32) -> f32 {
  if (ACC == 1u) { return v + acc_in[i]; }
  return v;
}
