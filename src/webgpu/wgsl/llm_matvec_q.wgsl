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
// Bindings: 0 x, 1 w (u32 words), 2 acc (_llm_acc.wgsl), 3 y, 4 uniform.
// Uniform words: 0 N, 1 K, 2 M, 3 row stride (bytes), 4 chunks per row
// (ceil(K / 8)).

//!include _llm_quant.wgsl
//!include _llm_acc.wgsl

const TPR: u32 = 32u;
const RPW: u32 = 8u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> part: array<vec4<f32>, 256>; // [RPW][TPR]

// q . x[row, k0 .. k0 + 8) (x clamped inside its row: q is 0 past K).
fn dot8(q: Q8, row: u32, k0: u32, K: u32) -> f32 {
  let b = row * K;
  let e = K - 1u;
  let a = vec4<f32>(x[b + min(k0, e)], x[b + min(k0 + 1u, e)], x[b + min(k0 + 2u, e)], x[b + min(k0 + 3u, e)]);
  let c = vec4<f32>(x[b + min(k0 + 4u, e)], x[b + min(k0 + 5u, e)], x[b + min(k0 + 6u, e)], x[b + min(k0 + 7u, e)]);
  return dot(q.a, a) + dot(q.b, c);
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
  if (n < N) {
    let o = n * U[0].w;
    for (var c = t; c < nc; c += TPR) {
      let q = deq8(o, c, K);
      acc.x += dot8(q, 0u, 8u * c, K);
      if (M > 1u) { acc.y += dot8(q, 1u, 8u * c, K); }
      if (M > 2u) { acc.z += dot8(q, 2u, 8u * c, K); }
      if (M > 3u) { acc.w += dot8(q, 3u, 8u * c, K); }
    }
  }
  part[li] = acc;
  workgroupBarrier();
  if (li < RPW && n0 + li < N) {
    var s = vec4<f32>(0.0);
    for (var k = 0u; k < TPR; k++) { s += part[li * TPR + k]; }
    for (var m = 0u; m < M; m++) { y[m * N + n0 + li] = with_acc(m * N + n0 + li, s[m]); }
  }
}
