// llm_silu_mul.wgsl - y = silu(g) * y elementwise, in place: swiglu_q over
// more rows of x than llm_swiglu_q.wgsl takes, g and y its gate and up
// products (two llm_matmul_q.wgsl dispatches; src/webgpu/lower_swiglu_q.c).
//
// Bindings: 0 g, 1 y, 2 uniform.  Uniform words: 0 count.

//!include _llm_silu.wgsl

@group(0) @binding(0) var<storage, read> g: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> U: array<vec4<u32>, 1>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  if (i < U[0].x) { y[i] = silu(g[i]) * y[i]; }
}
