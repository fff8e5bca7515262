// _llm_acc.wgsl - matmul_q's optional third input, shared by its kernels:
// binding 2, acc (y = x W^T + acc, y's shape) read when ACC is 1, or the
// norm's weight g[K] with NORM 1 (_llm_norm.wgsl); with neither the
// lowering binds x there as a placeholder and it is not read.

override ACC: u32 = 0u;

@group(0) @binding(2) var<storage, read> acc_in: array<f32>;

// The norm's weight g[k0 .. k0 + 4) (clamped inside K).
fn norm_g4(k0: u32, K: u32) -> vec4<f32> {
  if (KFULL == 1u) { return vec4<f32>(acc_in[k0], acc_in[k0 + 1u], acc_in[k0 + 2u], acc_in[k0 + 3u]); }
  let e = K - 1u;
  return vec4<f32>(acc_in[min(k0, e)], acc_in[min(k0 + 1u, e)], acc_in[min(k0 + 2u, e)], acc_in[min(k0 + 3u, e)]);
}

// The output value at flat index i: the product v, plus acc when present.
fn with_acc(i: u32, v: f32) -> f32 {
  if (ACC == 1u) { return v + acc_in[i]; }
  return v;
}
