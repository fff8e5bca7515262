// llm_matmul_qt.wgsl - the transposed product of matmul_q: x[M, N] . W ->
// y[M, K], W GGUF-typed as in llm_matvec_q.wgsl.  One thread per 8 outputs
// (a row of x, a chunk of W's columns) walks the N rows of W.  Language
// models never take this path (their products are x W^T); it exists so
// that every form of the op runs on WebGPU.
//
// Bindings: 0 x, 1 w (u32 words), 2 acc (_llm_acc.wgsl), 3 y, 4 uniform.
// Uniform words: 0 N, 1 K, 2 M, 3 row stride (bytes), 4 chunks per row
// (ceil(K / 8)).

//!include _llm_quant.wgsl
//!include _llm_acc.wgsl

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 2>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let N = U[0].x;
  let K = U[0].y;
  let M = U[0].z;
  let stride = U[0].w;
  let nc = U[1].x;
  let t = gid.x + gid.y * nwg.x * 64u;
  if (t >= M * nc) { return; }
  let m = t / nc;
  let c = t % nc;
  var a = vec4<f32>(0.0);
  var b = vec4<f32>(0.0);
  for (var n = 0u; n < N; n++) {
    let q = deq8(n * stride, c, K);
    let xv = x[m * N + n];
    a += xv * q.a;
    b += xv * q.b;
  }
  for (var j = 0u; j < 4u; j++) {
    let k = 8u * c + j;
    if (k < K) { y[m * K + k] = with_acc(m * K + k, a[j]); }
    if (k + 4u < K) { y[m * K + k + 4u] = with_acc(m * K + k + 4u, b[j]); }
  }
}
