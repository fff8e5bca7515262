// softmax_grad.wgsl - backward of softmax (OP_SOFTMAX) and log-softmax (OP_LOG_SOFTMAX)
// over any axis, from the forward output y and the incoming gradient dy:
//   softmax      dx = y * (dy - sum(dy * y))
//   log-softmax  dx = dy - exp(y) * sum(dy)
// Rows as in softmax.wgsl ([outer, n, inner] view, TPR threads per row,
// LANE_FAST layout); the row sum meets in a shared-memory tree.
//
// Uniform words: 0 rows (outer * inner), 1 n, 2 inner.

override OP: u32 = 0u;
override TPR: u32 = 256u;
override LANE_FAST: u32 = 1u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> yv: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> U: array<vec4<u32>, 1>;

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

  var s = 0.0;
  if (valid) {
    for (var j = lane; j < n; j += TPR) {
      let k = base + j * inner;
      if (OP == OP_SOFTMAX) {
        s += dy[k] * yv[k];
      } else {
        s += dy[k];
      }
    }
  }
  let slot = lane * RPW + rloc;
  ss[slot] = s;
  workgroupBarrier();
  for (var st = TPR / 2u; st > 0u; st = st / 2u) {
    if (lane < st) { ss[slot] += ss[slot + st * RPW]; }
    workgroupBarrier();
  }
  s = ss[rloc];
  if (!valid) { return; }
  for (var j = lane; j < n; j += TPR) {
    let k = base + j * inner;
    if (OP == OP_SOFTMAX) {
      dx[k] = yv[k] * (dy[k] - s);
    } else {
      dx[k] = dy[k] - exp(yv[k]) * s;
    }
  }
}
