// softmax_ce.wgsl - softmax cross-entropy over the last axis: the loss
// (OP_CE_LOSS) logsumexp(logits) - logits[label] per row, or its gradient (OP_CE_GRAD)
// (softmax(logits) - onehot(label)) * dy.  Labels are f32 class ids, or
// i32 bit patterns when IDS_I32 is 1; a label outside [0, C) gives a zero
// loss / zero gradient row (like src/cpu/k_softmax.c; the GPU sets no
// flag).  TPR threads per row (contiguous rows) keep online (max, sum)
// pairs that merge in a shared-memory tree, as in softmax.wgsl.  In the
// forward, `dy` is an unused placeholder binding.
//
// Uniform words: 0 rows, 1 C.

override OP: u32 = 0u;
override TPR: u32 = 256u;
override IDS_I32: u32 = 0u;
const WG: u32 = 256u;
const LOW: f32 = -3.402823e38;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> labels: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<uniform> U: array<vec4<u32>, 1>;

var<workgroup> sm: array<f32, 256>;
var<workgroup> ss: array<f32, 256>;

// The class id of row r, or -1 when it is not a valid index into [0, C).
fn label_of(r: u32, C: u32) -> i32 {
  if (IDS_I32 == 1u) {
    let id = bitcast<i32>(labels[r]);
    if (id < 0 || id >= i32(C)) { return -1; }
    return id;
  }
  let v = labels[r];
  if (!(v > -1.0 && v < f32(C))) { return -1; } // truncation toward 0, as the CPU; NaN fails
  return i32(v);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let rows = U[0].x;
  let C = U[0].y;
  let RPW = WG / TPR;
  let lin = wid.x + wid.y * nwg.x;
  if (lin * RPW >= rows) { return; }
  let lane = lid % TPR;
  let rloc = lid / TPR;
  let row = lin * RPW + rloc;
  let valid = row < rows;
  let base = row * C;

  var m = LOW;
  var s = 0.0;
  if (valid) {
    var j = lane;
    for (; j + 3u * TPR < C; j += 4u * TPR) { // 4 loads in flight, one rescale
      let v0 = x[base + j];
      let v1 = x[base + j + TPR];
      let v2 = x[base + j + 2u * TPR];
      let v3 = x[base + j + 3u * TPR];
      let mn = max(m, max(max(v0, v1), max(v2, v3)));
      s = s * exp(m - mn) + ((exp(v0 - mn) + exp(v1 - mn)) + (exp(v2 - mn) + exp(v3 - mn)));
      m = mn;
    }
    for (; j < C; j += TPR) {
      let v = x[base + j];
      if (v > m) {
        s = s * exp(m - v) + 1.0;
        m = v;
      } else {
        s += exp(v - m);
      }
    }
  }
  sm[lid] = m;
  ss[lid] = s;
  workgroupBarrier();
  for (var st = TPR / 2u; st > 0u; st = st / 2u) {
    if (lane < st) {
      let m1 = sm[lid];
      let m2 = sm[lid + st];
      let mm = max(m1, m2);
      ss[lid] = ss[lid] * exp(m1 - mm) + ss[lid + st] * exp(m2 - mm);
      sm[lid] = mm;
    }
    workgroupBarrier();
  }
  if (!valid) { return; }
  m = sm[rloc * TPR];
  s = ss[rloc * TPR];
  let label = label_of(row, C);
  if (OP == OP_CE_LOSS) {
    if (lane == 0u) {
      var loss = 0.0;
      if (label >= 0) { loss = log(s) + (m - x[base + u32(label)]); }
      out[row] = loss;
    }
    return;
  }
  if (label < 0) {
    for (var j = lane; j < C; j += TPR) { out[base + j] = 0.0; }
    return;
  }
  let g = dy[row];
  let scale = g / s;
  for (var j = lane; j < C; j += TPR) {
    let e = exp(x[base + j] - m);
    if (j == u32(label)) {
      out[base + j] = (e - s) / s * g; // p - 1 without cancelling when p ~ 1
    } else {
      out[base + j] = e * scale;
    }
  }
}
