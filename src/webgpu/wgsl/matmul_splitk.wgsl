// matmul_splitk.wgsl - sums the partial products of a split-K GEMM
// (matmul.wgsl with S > 1): out[i] = sum over s < S of part[s*L + i], the
// splits added in order.  One thread per output element.
// Uniform words: 0 L (elements), 1 S (splits).

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 1>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  let L = u[0].x;
  if (i >= L) { return; }
  var s = 0.0;
  for (var k = 0u; k < u[0].y; k++) { s += part[k * L + i]; }
  out[i] = s;
}
