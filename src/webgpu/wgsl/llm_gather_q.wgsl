// llm_gather_q.wgsl - rows of a GGUF-typed table (gather_q): table V rows
// of K values (_llm_quant.wgsl), ids[...] -> y[..., K] = row ids[i]
// dequantized; an id outside [0, V) gives a zero row (the GPU does not
// raise the CPU's bad-index error).  f32 ids are truncated toward zero as
// the CPU does (NaN and infinities are invalid).  One thread per 8 values.
//
// Bindings: 0 table (u32 words), 1 ids, 2 y, 3 uniform.
// Overrides: IDS_I32 (1: ids hold int32 bits).
// Uniform words: 0 ids, 1 K, 2 V, 3 row stride (bytes), 4 chunks per row
// (ceil(K / 8)).

//!include _llm_quant.wgsl

override IDS_I32: u32 = 0u;

@group(0) @binding(0) var<storage, read> w: array<u32>;
@group(0) @binding(1) var<storage, read> ids: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> U: array<vec4<u32>, 2>;

//!include _gather_id.wgsl

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let K = U[0].y;
  let nc = U[1].x;
  let t = gid.x + gid.y * nwg.x * 64u;
  if (t >= U[0].x * nc) { return; }
  let i = t / nc;
  let c = t % nc;
  let id = id_at(i);
  var q = Q8(vec4<f32>(0.0), vec4<f32>(0.0));
  if (id >= 0 && u32(id) < U[0].z) { q = deq8(u32(id) * U[0].w, c, K); }
  for (var j = 0u; j < 4u; j++) {
    let k = 8u * c + j;
    if (k < K) { y[i * K + k] = q.a[j]; }
    if (k + 4u < K) { y[i * K + k + 4u] = q.b[j]; }
  }
}
