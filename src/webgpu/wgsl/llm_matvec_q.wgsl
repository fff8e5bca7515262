// llm_matvec_q.wgsl - x[M, K] . W^T -> y[M, N] for a few rows of x (M <= 4:
// a decoded token, a short prompt step), W the N rows of K GGUF-typed
// values of matmul_q read in place (_llm_quant.wgsl).  Each workgroup owns
// RPW weight rows; the TPR threads of a row walk its chunks of 8 values
// (neighbouring threads on neighbouring bytes: a row's TPR threads read
// TPR consecutive chunks), dot each with the M rows of x, and leave their
// partial sums in workgroup memory; after one barrier a thread per row adds
// its row's TPR partials (no subgroups, one barrier: barriers are what a
// software GPU such as SwiftShader pays for most).  Every weight byte is
// read once per dispatch.
//
// NORM 1 (_llm_norm.wgsl): the 32 threads of a row group read all of x's
// rows once, so they also sum their squares; the adding thread scales its
// sums by the rows' factors.
//
// Bindings: 0 x, 1 w (u32 words), 2 acc or g (_llm_acc.wgsl), 3 y, 4
// uniform.  Uniform words: 0 N, 1 K, 2 M, 3 row stride (bytes), 4 chunks
// per row (ceil(K / 8)), 5 the norm's eps (f32 bits).

//!include _llm_quant.wgsl
//!include _llm_acc.wgsl
//!include _llm_norm.wgsl

const TPR: u32 = 32u;
const RPW: u32 = 8u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> part: array<vec4<f32>, 256>; // [RPW][TPR]
var<workgroup> pss: array<vec4<f32>, 256>;  // NORM: the threads' sums of squares

// (q . x[row, k0 .. k0 + 8), with NORM the squares of those x) (x
// clamped inside its row: q is 0 past K); x times g (ga, gb) with NORM.
fn dot8(q: Q8, row: u32, k0: u32, K: u32, ga: vec4<f32>, gb: vec4<f32>) -> vec2<f32> {
  let b = row * K;
  let e = K - 1u;
  let a = vec4<f32>(x[b + min(k0, e)], x[b + min(k0 + 1u, e)], x[b + min(k0 + 2u, e)], x[b + min(k0 + 3u, e)]);
  let c = vec4<f32>(x[b + min(k0 + 4u, e)], x[b + min(k0 + 5u, e)], x[b + min(k0 + 6u, e)], x[b + min(k0 + 7u, e)]);
  if (NORM == 1u) { return vec2<f32>(dot(q.a, a * ga) + dot(q.b, c * gb), norm_sq8(a, c, k0, K)); }
  return vec2<f32>(dot(q.a, a) + dot(q.b, c), 0.0);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let N = U[0].x;
  let K = U[0].y;
  let M = U[0].z;
  let nc = U[1].x;
  let r = li / TPR;
  let t = li % TPR;
  let n0 = (wid.x + wid.y * nwg.x) * RPW;
  let n = n0 + r;
  var acc = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0); // NORM: the squares of x's rows over this thread's chunks
  if (n < N) {
    let o = n * U[0].w;
    for (var c = t; c < nc; c += TPR) {
      let q = deq8(o, c, K);
      var ga = vec4<f32>(1.0);
      var gb = vec4<f32>(1.0);
      if (NORM == 1u) {
        ga = norm_g4(8u * c, K);
        gb = norm_g4(8u * c + 4u, K);
      }
      let d0 = dot8(q, 0u, 8u * c, K, ga, gb);
      acc.x += d0.x;
      ss.x += d0.y;
      if (M > 1u) {
        let d = dot8(q, 1u, 8u * c, K, ga, gb);
        acc.y += d.x;
        ss.y += d.y;
      }
      if (M > 2u) {
        let d = dot8(q, 2u, 8u * c, K, ga, gb);
        acc.z += d.x;
        ss.z += d.y;
      }
      if (M > 3u) {
        let d = dot8(q, 3u, 8u * c, K, ga, gb);
        acc.w += d.x;
        ss.w += d.y;
      }
    }
  }
  part[li] = acc;
  if (NORM == 1u) { pss[li] = ss; }
  workgroupBarrier();
  if (li < RPW && n0 + li < N) {
    var s = vec4<f32>(0.0);
    var sq = vec4<f32>(0.0);
    for (var k = 0u; k < TPR; k++) { s += part[li * TPR + k]; }
    if (NORM == 1u) {
      for (var k = 0u; k < TPR; k++) { sq += pss[li * TPR + k]; }
      for (var m = 0u; m < M; m++) { s[m] *= norm_scale(sq[m], K, bitcast<f32>(U[1].y)); }
    }
    for (var m = 0u; m < M; m++) { y[m * N + n0 + li] = with_acc(m * N + n0 + li, s[m]); }
  }
}
