// strided_copy.wgsl - y[i] = x[base + sum_d c_d * stride_d], where c is the
// coordinate of output element i: permute (permuted strides), expand
// (broadcast strides, 0 on expanded axes) and narrow (the input's strides,
// base at the start of the range).
// Bindings: 0 x (read), 1 y (write), 2 uniform.
// Overrides: VEC: 1 the innermost axis is a multiple of 4 long, read with
// stride 1 from a multiple-of-4 offset (vec4 loads); 2 the same axis is
// broadcast (stride 0); 0 element by element.
// Uniform words: n, base, rank, dims[8], strides[8] (size-1 axes dropped,
// contiguous axes merged).
// Each thread writes 4 consecutive outputs (one vec4; bindings are padded
// to 16 bytes).
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 5>;

override VEC: u32 = 0u;

fn word(i: u32) -> u32 { return u[i / 4u][i % 4u]; }

fn source(i: u32) -> u32 {
  let rank = word(2u);
  var rest = i;
  var o = word(1u);
  for (var d = i32(rank) - 1; d >= 0; d--) {
    let dim = word(3u + u32(d));
    o += (rest % dim) * word(11u + u32(d));
    rest = rest / dim;
  }
  return o;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i4 = gid.x + gid.y * nwg.x * 256u;
  let n = word(0u);
  if (i4 * 4u >= n) { return; }
  if (VEC == 1u) {
    y[i4] = x[source(i4 * 4u) / 4u];
    return;
  }
  if (VEC == 2u) {
    let s = source(i4 * 4u);
    y[i4] = vec4<f32>(x[s / 4u][s % 4u]);
    return;
  }
  var r = vec4<f32>(0.0);
  for (var k = 0u; k < 4u; k++) {
    let i = i4 * 4u + k;
    if (i >= n) { break; }
    let s = source(i);
    r[k] = x[s / 4u][s % 4u];
  }
  y[i4] = r;
}
