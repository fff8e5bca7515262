// _llm_norm.wgsl - the optional norm of matmul_q and swiglu_q (NORM 1):
// each row of x is RMS-normalized with the weight g before the products,
// x' = x / sqrt(mean(x^2) + eps) * g.  The kernels multiply x by g as they
// read it, sum x^2 over the same reads, and scale each product by the
// row's factor at the end (it is constant along the row).

override NORM: u32 = 0u;

// The factor 1 / sqrt(ss / K + eps) of a row whose squares sum to ss.
fn norm_scale(ss: f32, K: u32, eps: f32) -> f32 { return 1.0 / sqrt(ss / f32(K) + eps); }

// 1 for the values k0 .. k0 + 4 inside K, 0 past it (clamped reads).
fn norm_live(k0: u32, K: u32) -> vec4<f32> {
  return select(vec4<f32>(0.0), vec4<f32>(1.0), vec4<u32>(k0, k0 + 1u, k0 + 2u, k0 + 3u) < vec4<u32>(K));
}

// The norm's weight g[k0 .. k0 + 4) (clamped inside K), from the
// includer's norm_weight(i).
fn norm_g4(k0: u32, K: u32) -> vec4<f32> {
  let e = K - 1u;
  return vec4<f32>(norm_weight(min(k0, e)), norm_weight(min(k0 + 1u, e)), norm_weight(min(k0 + 2u, e)),
                   norm_weight(min(k0 + 3u, e)));
}

// The squares of the 8 values (a, c) read at k0, those past K left out.
fn norm_sq8(a: vec4<f32>, c: vec4<f32>, k0: u32, K: u32) -> f32 {
  if (k0 + 8u <= K) { return dot(a, a) + dot(c, c); }
  let la = a * norm_live(k0, K);
  let lc = c * norm_live(k0 + 4u, K);
  return dot(la, la) + dot(lc, lc);
}
