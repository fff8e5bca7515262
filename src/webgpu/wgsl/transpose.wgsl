// transpose.wgsl - a permute whose innermost output axis L is not the
// input's innermost axis: 32 x 32 tiles through workgroup memory, so both
// the reads (along the input-contiguous output axis J) and the writes
// (along L) are coalesced.  The other output axes are batch axes, one per
// workgroup z (their offsets computed once per workgroup).
// Bindings: 0 x (read), 1 y (write), 2 uniform.
// Uniform words: rank, J, 0, 0, dims[8] (output, size-1 axes dropped and
// contiguous axes merged), input strides[8] per output axis, output
// strides[8].  Workgroups: (tiles along L, tiles along J, batch).
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 7>;

var<workgroup> tile: array<array<f32, 33>, 32>;

fn word(i: u32) -> u32 { return u[i / 4u][i % 4u]; }

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let rank = word(0u);
  let jax = word(1u);
  let lax = rank - 1u;
  // batch offsets: unravel wid.z over the axes other than J and L
  var rest = wid.z;
  var in_base = 0u;
  var out_base = 0u;
  for (var d = i32(lax) - 1; d >= 0; d--) {
    let ud = u32(d);
    if (ud == jax) { continue; }
    let dim = word(4u + ud);
    let c = rest % dim;
    rest = rest / dim;
    in_base += c * word(12u + ud);
    out_base += c * word(20u + ud);
  }
  let dim_j = word(4u + jax);
  let dim_l = word(4u + lax);
  let in_l = word(12u + lax);
  let out_j = word(20u + jax);
  let j0 = wid.y * 32u;
  let l0 = wid.x * 32u;
  for (var r = 0u; r < 32u; r += 8u) {
    let j = j0 + lid.x;
    let l = l0 + lid.y + r;
    if (j < dim_j && l < dim_l) { tile[lid.y + r][lid.x] = x[in_base + j + l * in_l]; }
  }
  workgroupBarrier();
  for (var r = 0u; r < 32u; r += 8u) {
    let l = l0 + lid.x;
    let j = j0 + lid.y + r;
    if (j < dim_j && l < dim_l) { y[out_base + j * out_j + l] = tile[lid.x][lid.y + r]; }
  }
}
