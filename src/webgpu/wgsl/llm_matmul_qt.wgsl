// llm_matmul_qt.wgsl - the transposed product of matmul_q: x[M, N] . W ->
// y[M, K], W GGUF-typed as in llm_matvec_q.wgsl: the input gradient of a
// frozen weight's product in fine-tuning (dx = dy W).  llm_matmul_q.wgsl's
// tiling with the roles of the weight's axes swapped: TM x TK outputs per
// workgroup, the sum over W's N rows in steps of TN; the x tile and the
// dequantized W tile (TN rows by TK columns, one chunk of 8 values per
// thread, each weight byte decoded once per tile row) go to workgroup
// memory, then every thread accumulates 2 x 4 outputs.
//
// Bindings: 0 x, 1 w (u32 words), 2 acc (_llm_acc.wgsl), 3 y, 4 uniform.
// Uniform words: 0 N, 1 K, 2 M, 3 row stride (bytes), 4 tiles along K.

//!include _llm_quant.wgsl
//!include _llm_acc.wgsl

const TM: u32 = 32u;
const TK: u32 = 64u;
const TN: u32 = 32u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> xt: array<f32, 1024>; // [TM][TN]
var<workgroup> wt: array<f32, 2048>; // [TN][TK]

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let N = U[0].x;
  let K = U[0].y;
  let M = U[0].z;
  let stride = U[0].w;
  let g = wid.x + wid.y * nwg.x;
  let k0 = (g % U[1].x) * TK;
  let m0 = (g / U[1].x) * TM;
  let tx = li % 16u; // outputs k0 + 4 tx .. + 4
  let ty = li / 16u; // outputs m0 + 2 ty, + 1
  let wr = li / 8u;  // the W row (within the TN step) this thread decodes
  let wc = li % 8u;  // its chunk of 8 columns within the TK tile
  var acc0 = vec4<f32>(0.0);
  var acc1 = vec4<f32>(0.0);
  for (var n0 = 0u; n0 < N; n0 += TN) {
    for (var r = 0u; r < 4u; r++) {
      let i = li + 256u * r;
      let m = m0 + i / TN;
      let n = n0 + i % TN;
      xt[i] = select(0.0, x[min(m * N + n, M * N - 1u)], m < M && n < N);
    }
    var q = Q8(vec4<f32>(0.0), vec4<f32>(0.0));
    if (n0 + wr < N) { q = deq8((n0 + wr) * stride, k0 / 8u + wc, K); }
    for (var j = 0u; j < 4u; j++) {
      wt[wr * TK + 8u * wc + j] = q.a[j];
      wt[wr * TK + 8u * wc + 4u + j] = q.b[j];
    }
    workgroupBarrier();
    // (min: a bound the compiler cannot unroll, as in llm_matmul_q.wgsl.
    // Past N the tiles hold zeros.)
    for (var nn = 0u; nn < min(TN, N); nn++) {
      let a0 = xt[(2u * ty) * TN + nn];
      let a1 = xt[(2u * ty + 1u) * TN + nn];
      let b = vec4<f32>(wt[nn * TK + 4u * tx], wt[nn * TK + 4u * tx + 1u], wt[nn * TK + 4u * tx + 2u],
                        wt[nn * TK + 4u * tx + 3u]);
      acc0 += a0 * b;
      acc1 += a1 * b;
    }
    workgroupBarrier();
  }
  for (var j = 0u; j < 4u; j++) {
    let k = k0 + 4u * tx + j;
    let m = m0 + 2u * ty;
    if (k < K && m < M) { y[m * K + k] = with_acc(m * K + k, acc0[j]); }
    if (k < K && m + 1u < M) { y[(m + 1u) * K + k] = with_acc((m + 1u) * K + k, acc1[j]); }
  }
}
