// softmax.wgsl - softmax (OP_SOFTMAX) or log-softmax (OP_LOG_SOFTMAX) over any axis.
//
// The tensor is viewed as [outer, n, inner] around the axis; a row is one
// (outer, inner) position and its n values lie `inner` apart.  TPR threads
// (a power of two) share a row and a workgroup of 256 holds 256 / TPR rows.
// LANE_FAST 1 puts a row's threads next to each other (contiguous rows,
// inner == 1); 0 puts neighbouring rows next to each other (inner > 1, so
// neighbouring threads still read neighbouring addresses).  Each thread
// keeps an online (max, sum of exp(x - max)) pair over its values; the
// pairs of a row merge in a shared-memory tree; a last pass writes
// exp(x - max) / sum, or (x - max) - log(sum).  -inf inputs contribute 0.
//
// Uniform words: 0 rows (outer * inner), 1 n, 2 inner.

override OP: u32 = 0u;
override TPR: u32 = 256u;
override LANE_FAST: u32 = 1u;
const WG: u32 = 256u;
const LOW: f32 = -3.402823e38; // below every finite input: the empty row's max

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> U: array<vec4<u32>, 1>;

var<workgroup> sm: array<f32, 256>;
var<workgroup> ss: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let rows = U[0].x;
  let n = U[0].y;
  let inner = U[0].z;
  let RPW = WG / TPR;
  let lin = wid.x + wid.y * nwg.x;
  if (lin * RPW >= rows) { return; }
  var lane = lid % TPR;
  var rloc = lid / TPR;
  if (LANE_FAST == 0u) {
    lane = lid / RPW;
    rloc = lid % RPW;
  }
  let row = lin * RPW + rloc;
  let valid = row < rows;
  let base = (row / inner) * n * inner + row % inner;

  var m = LOW;
  var s = 0.0;
  if (valid) {
    var j = lane;
    for (; j + 3u * TPR < n; j += 4u * TPR) { // 4 loads in flight, one rescale
      let v0 = x[base + j * inner];
      let v1 = x[base + (j + TPR) * inner];
      let v2 = x[base + (j + 2u * TPR) * inner];
      let v3 = x[base + (j + 3u * TPR) * inner];
      let mn = max(m, max(max(v0, v1), max(v2, v3)));
      s = s * exp(m - mn) + ((exp(v0 - mn) + exp(v1 - mn)) + (exp(v2 - mn) + exp(v3 - mn)));
      m = mn;
    }
    for (; j < n; j += TPR) {
      let v = x[base + j * inner];
      if (v > m) {
        s = s * exp(m - v) + 1.0;
        m = v;
      } else {
        s += exp(v - m);
      }
    }
  }
  let slot = lane * RPW + rloc;
  sm[slot] = m;
  ss[slot] = s;
  workgroupBarrier();
  for (var st = TPR / 2u; st > 0u; st = st / 2u) {
    if (lane < st) {
      let m1 = sm[slot];
      let m2 = sm[slot + st * RPW];
      let mm = max(m1, m2);
      ss[slot] = ss[slot] * exp(m1 - mm) + ss[slot + st * RPW] * exp(m2 - mm);
      sm[slot] = mm;
    }
    workgroupBarrier();
  }
  m = sm[rloc];
  s = ss[rloc];
  if (!valid) { return; }
  // y = exp(x - m) / s, or (x - m) - log(s), 4 loads in flight
  let inv = 1.0 / s;
  let ls = log(s);
  var j = lane;
  for (; j + 3u * TPR < n; j += 4u * TPR) {
    let k0 = base + j * inner;
    let st = TPR * inner;
    let v0 = x[k0];
    let v1 = x[k0 + st];
    let v2 = x[k0 + 2u * st];
    let v3 = x[k0 + 3u * st];
    if (OP == OP_SOFTMAX) {
      y[k0] = exp(v0 - m) * inv;
      y[k0 + st] = exp(v1 - m) * inv;
      y[k0 + 2u * st] = exp(v2 - m) * inv;
      y[k0 + 3u * st] = exp(v3 - m) * inv;
    } else {
      y[k0] = (v0 - m) - ls;
      y[k0 + st] = (v1 - m) - ls;
      y[k0 + 2u * st] = (v2 - m) - ls;
      y[k0 + 3u * st] = (v3 - m) - ls;
    }
  }
  for (; j < n; j += TPR) {
    let k = base + j * inner;
    if (OP == OP_SOFTMAX) {
      y[k] = exp(x[k] - m) * inv;
    } else {
      y[k] = (x[k] - m) - ls;
    }
  }
}
