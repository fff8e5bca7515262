// norm_grad.wgsl - backward of RMS norm (OP_RMS_NORM) and layer norm (OP_LAYER_NORM) over
// the last axis.  With g = dy * w, centre = mean (layer) or 0 (RMS) and
// r = 1 / sqrt(mean((x - centre)^2) + eps), as in src/cpu/k_norm_grad.c:
//   dx = r g - [layer] r mean(g) - (x - centre) r^3 mean(g (x - centre))
// MODE 0 writes dx.  MODE 1 writes only the row statistics (x0, moff, r)
// to out[3 row ..] for the weight gradient (lower_norm.c), where centre =
// x0 + moff (x0 the row's first value; 0, 0 for RMS norm); there `w` and
// `dy` are unused placeholder bindings.  Rows as in norm.wgsl: TPR threads
// per row, sums in a shared-memory tree, x - centre formed as
// (x - x0) - moff so rows far from zero keep their digits.
//
// Uniform words: 0 rows, 1 D, 2 eps (f32 bits).

override OP: u32 = 0u;
override MODE: u32 = 0u;
override TPR: u32 = 256u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 1>;

var<workgroup> sh: array<f32, 256>;

//!include _row_sum.wgsl

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let rows = U[0].x;
  let D = U[0].y;
  let eps = bitcast<f32>(U[0].z);
  let RPW = WG / TPR;
  let lin = wid.x + wid.y * nwg.x;
  if (lin * RPW >= rows) { return; }
  let lane = lid % TPR;
  let row = lin * RPW + lid / TPR;
  let valid = row < rows;
  let base = row * D;
  let fd = f32(D);

  // centre = x0 + moff; x - centre is formed as (x - x0) - moff
  var x0 = 0.0;
  var moff = 0.0;
  if (OP == OP_LAYER_NORM) {
    var s = 0.0;
    if (valid) {
      x0 = x[base];
      for (var j = lane; j < D; j += TPR) { s += x[base + j] - x0; }
    }
    s = row_sum(s, lid, lane);
    moff = s / fd;
  }
  var sq = 0.0;
  var sg = 0.0;
  var sgx = 0.0;
  if (valid) {
    for (var j = lane; j < D; j += TPR) {
      let c = (x[base + j] - x0) - moff;
      sq += c * c;
      if (MODE == 0u) {
        let g = dy[base + j] * w[j];
        sg += g;
        sgx += g * c;
      }
    }
  }
  sq = row_sum(sq, lid, lane);
  let r = 1.0 / sqrt(sq / fd + eps);
  if (MODE == 1u) {
    if (valid && lane == 0u) {
      out[3u * row] = x0;
      out[3u * row + 1u] = moff;
      out[3u * row + 2u] = r;
    }
  } else {
    sgx = row_sum(sgx, lid, lane);
    if (OP == OP_LAYER_NORM) { sg = row_sum(sg, lid, lane); }
    if (valid) {
      var shift = 0.0;
      if (OP == OP_LAYER_NORM) { shift = r * sg / fd; }
      let c3 = r * r * r * sgx / fd;
      for (var j = lane; j < D; j += TPR) {
        let g = dy[base + j] * w[j];
        out[base + j] = r * g - shift - ((x[base + j] - x0) - moff) * c3;
      }
    }
  }
}
