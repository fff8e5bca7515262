// norm.wgsl - RMS norm (OP_RMS_NORM) and layer norm (OP_LAYER_NORM) over the last axis:
//   rms    y = x / sqrt(mean(x^2) + eps) * w
//   layer  y = (x - mean) / sqrt(var + eps) * w + b   (biased variance)
// TPR threads (a power of two) share a row of D values; a workgroup of 256
// holds 256 / TPR rows.  Row sums meet in a shared-memory tree.  Layer
// norm takes two passes like src/cpu/k_norm.c: the mean, then the variance
// around it.  Both work around the row's first value x0 (the mean as
// x0 + moff, x - mean as (x - x0) - moff), so rows far from zero keep
// their digits.  For RMS norm `b` is an unused placeholder binding.
//
// Uniform words: 0 rows, 1 D, 2 eps (f32 bits).

override OP: u32 = 0u;
override TPR: u32 = 256u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
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

  if (OP == OP_RMS_NORM) {
    var ss = 0.0;
    if (valid) {
      var j = lane;
      for (; j + 3u * TPR < D; j += 4u * TPR) { // 4 loads in flight
        let v0 = x[base + j];
        let v1 = x[base + j + TPR];
        let v2 = x[base + j + 2u * TPR];
        let v3 = x[base + j + 3u * TPR];
        ss += (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3);
      }
      for (; j < D; j += TPR) { let v = x[base + j]; ss += v * v; }
    }
    ss = row_sum(ss, lid, lane);
    if (valid) {
      let inv = 1.0 / sqrt(ss / fd + eps);
      for (var j = lane; j < D; j += TPR) { y[base + j] = x[base + j] * inv * w[j]; }
    }
  } else {
    var x0 = 0.0;
    var s = 0.0;
    if (valid) {
      x0 = x[base];
      var j = lane;
      for (; j + 3u * TPR < D; j += 4u * TPR) {
        let v0 = x[base + j];
        let v1 = x[base + j + TPR];
        let v2 = x[base + j + 2u * TPR];
        let v3 = x[base + j + 3u * TPR];
        s += ((v0 - x0) + (v1 - x0)) + ((v2 - x0) + (v3 - x0));
      }
      for (; j < D; j += TPR) { s += x[base + j] - x0; }
    }
    s = row_sum(s, lid, lane);
    let moff = s / fd; // mean - x0: x - mean = (x - x0) - moff keeps the digits of offset rows
    var sq = 0.0;
    if (valid) {
      var j = lane;
      for (; j + 3u * TPR < D; j += 4u * TPR) {
        let c0 = (x[base + j] - x0) - moff;
        let c1 = (x[base + j + TPR] - x0) - moff;
        let c2 = (x[base + j + 2u * TPR] - x0) - moff;
        let c3 = (x[base + j + 3u * TPR] - x0) - moff;
        sq += (c0 * c0 + c1 * c1) + (c2 * c2 + c3 * c3);
      }
      for (; j < D; j += TPR) { let c = (x[base + j] - x0) - moff; sq += c * c; }
    }
    sq = row_sum(sq, lid, lane);
    if (valid) {
      let inv = 1.0 / sqrt(sq / fd + eps);
      for (var j = lane; j < D; j += TPR) { y[base + j] = (((x[base + j] - x0) - moff) * inv) * w[j] + b[j]; }
    }
  }
}
