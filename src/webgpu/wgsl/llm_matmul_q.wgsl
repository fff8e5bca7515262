// llm_matmul_q.wgsl - x[M, K] . W^T -> y[M, N] for prompt steps (M > 4),
// W GGUF-typed as in llm_matvec_q.wgsl.  Tiles of TM x TN outputs per
// workgroup, K in steps of TK: the x tile and the dequantized W tile (one
// chunk of 8 values per thread, each weight byte decoded once per tile
// row) go to workgroup memory, then every thread accumulates 2 x 4 outputs.
//
// NORM 1 (_llm_norm.wgsl): first 8 threads per row of the tile sum the
// row's squares; the x tile is x times g, and each output is scaled by its
// row's factor at the end.
//
// Bindings: 0 x, 1 w (u32 words), 2 acc or g (_llm_acc.wgsl), 3 y, 4
// uniform.  Uniform words: 0 N, 1 K, 2 M, 3 row stride (bytes), 4 tiles
// along N, 5 the norm's eps (f32 bits).

//!include _llm_quant.wgsl
//!include _llm_acc.wgsl
//!include _llm_norm.wgsl

const TM: u32 = 32u;
const TN: u32 = 64u;
const TK: u32 = 32u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> xt: array<f32, 1024>; // [TM][TK]
var<workgroup> wt: array<f32, 2048>; // [TK][TN]
var<workgroup> rs: array<f32, 256>;   // NORM: [TM][8] partial sums of squares

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let N = U[0].x;
  let K = U[0].y;
  let M = U[0].z;
  let stride = U[0].w;
  let g = wid.x + wid.y * nwg.x;
  let n0 = (g % U[1].x) * TN;
  let m0 = (g / U[1].x) * TM;
  let tx = li % 16u; // outputs n0 + 4 tx .. + 4
  let ty = li / 16u; // outputs m0 + 2 ty, + 1
  let wr = li / 4u;  // the W row this thread decodes
  let wc = li % 4u;  // its chunk within the TK step
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  if (NORM == 1u) {
    let m = m0 + li / 8u;
    var s = 0.0;
    if (m < M) {
      for (var k = li % 8u; k < K; k += 8u) { s += x[m * K + k] * x[m * K + k]; }
    }
    rs[li] = s;
  }
  for (var k0 = 0u; k0 < K; k0 += TK) {
    for (var r = 0u; r < 4u; r++) {
      let i = li + 256u * r;
      let m = m0 + i / TK;
      let k = k0 + i % TK;
      var v = select(0.0, x[min(m * K + k, M * K - 1u)], m < M && k < K);
      if (NORM == 1u) { v *= acc_in[min(k, K - 1u)]; }
      xt[i] = v;
    }
    var q = Q8(vec4<f32>(0.0), vec4<f32>(0.0));
    if (n0 + wr < N) { q = deq8((n0 + wr) * stride, k0 / 8u + wc, K); }
    for (var j = 0u; j < 4u; j++) {
      wt[(8u * wc + j) * TN + wr] = q.a[j];
      wt[(8u * wc + 4u + j) * TN + wr] = q.b[j];
    }
    workgroupBarrier();
    // (min: a bound the compiler cannot unroll; unrolled, this loop costs
    // SwiftShader seconds to compile.  Past K the tiles hold zeros.)
    for (var kk = 0u; kk < min(TK, K); kk++) {
      let a0 = xt[(2u * ty) * TK + kk];
      let a1 = xt[(2u * ty + 1u) * TK + kk];
      let b = vec4<f32>(wt[kk * TN + 4u * tx], wt[kk * TN + 4u * tx + 1u], wt[kk * TN + 4u * tx + 2u],
                        wt[kk * TN + 4u * tx + 3u]);
      acc0 += a0 * b;
      acc1 += a1 * b;
    }
    workgroupBarrier();
  }
  if (NORM == 1u) { // rs was written before the loop's barriers
    var s0 = 0.0;
    var s1 = 0.0;
    for (var p = 0u; p < 8u; p++) {
      s0 += rs[16u * ty + p];
      s1 += rs[16u * ty + 8u + p];
    }
    acc0 *= norm_scale(s0, K, bitcast<f32>(U[1].y));
    acc1 *= norm_scale(s1, K, bitcast<f32>(U[1].y));
  }
  for (var j = 0u; j < 4u; j++) {
    let n = n0 + 4u * tx + j;
    let m = m0 + 2u * ty;
    if (n < N && m < M) { y[m * N + n] = with_acc(m * N + n, acc0[j]); }
    if (n < N && m + 1u < M) { y[(m + 1u) * N + n] = with_acc((m + 1u) * N + n, acc1[j]); }
  }
}
