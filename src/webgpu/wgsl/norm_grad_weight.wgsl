// norm_grad_weight.wgsl - partial weight gradients of RMS norm and layer
// norm: part[chunk * D + d] = sum over the chunk's rows of
// dy[row, d] ((x[row, d] - x0[row]) - moff[row]) r[row], with the row
// statistics (x0, moff, r) that norm_grad.wgsl (MODE 1) left in `stats`.  A workgroup of
// 256 threads covers DX neighbouring columns with 256 / DX threads each
// striding over the chunk's rows; those meet in a shared-memory tree.  The
// lowering (lower_norm.c) sums the chunks' partials with reduce.wgsl, or
// lets a single chunk write the output directly.
//
// Uniform words: 0 rows, 1 D, 2 rows per chunk, 3 column groups,
// 4 column groups * chunks.

override DX: u32 = 64u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> stats: array<f32>; // read only; writable because `part` may share the scratch buffer
@group(0) @binding(3) var<storage, read_write> part: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> sh: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let rows = U[0].x;
  let D = U[0].y;
  let per_chunk = U[0].z;
  let n_cg = U[0].w;
  let lin = wid.x + wid.y * nwg.x;
  if (lin >= U[1].x) { return; }
  let RY = WG / DX;
  let chunk = lin / n_cg;
  let d = (lin % n_cg) * DX + lid % DX;
  let ry = lid / DX;
  let valid = d < D;
  var acc = 0.0;
  if (valid) {
    let r1 = min(rows, (chunk + 1u) * per_chunk);
    for (var row = chunk * per_chunk + ry; row < r1; row += RY) {
      let k = row * D + d;
      acc += dy[k] * (((x[k] - stats[3u * row]) - stats[3u * row + 1u]) * stats[3u * row + 2u]);
    }
  }
  sh[lid] = acc;
  workgroupBarrier();
  for (var s = RY / 2u; s > 0u; s = s / 2u) {
    if (ry < s) { sh[lid] += sh[lid + s * DX]; }
    workgroupBarrier();
  }
  if (valid && ry == 0u) { part[chunk * D + d] = sh[lid]; }
}
