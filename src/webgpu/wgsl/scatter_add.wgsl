// scatter_add.wgsl - the gradient of gather: ids[rows], dy[rows, D] ->
// y[V, D], y[v, :] = sum of dy[i, :] over the rows i with ids[i] == v, in
// row order (deterministic, no atomics).  Ids outside [0, V) contribute
// nothing; f32 ids are truncated toward zero (NaN, infinities invalid).
// One thread per output element; the workgroup stages the ids through
// workgroup memory 256 at a time.
// Bindings: 0 ids, 1 dy (read), 2 y (write), 3 uniform.
// Overrides: IDS_I32 (1: ids hold int32 bits).
// Uniform words: n (= V * D), D, rows.
@group(0) @binding(0) var<storage, read> ids: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> u: array<vec4<u32>, 1>;

override IDS_I32: u32 = 0u;

var<workgroup> chunk: array<i32, 256>;

fn id_at(i: u32) -> i32 {
  let v = ids[i];
  if (IDS_I32 == 1u) { return bitcast<i32>(v); }
  let bits = bitcast<u32>(v) & 0x7fffffffu;
  if (bits >= 0x7f800000u || !(v > -2147483648.0 && v < 2147483648.0)) { return -1; }
  return i32(v);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  let n = u[0].x;
  let d = u[0].y;
  let rows = u[0].z;
  let live = i < n;
  let v = i32(i / d);
  let col = i % d;
  var acc = 0.0;
  for (var base = 0u; base < rows; base += 256u) {
    workgroupBarrier();
    if (base + lid < rows) { chunk[lid] = id_at(base + lid); }
    workgroupBarrier();
    let count = min(256u, rows - base);
    if (live) {
      for (var k = 0u; k < count; k++) {
        if (chunk[k] == v) { acc += dy[(base + k) * d + col]; }
      }
    }
  }
  if (live) { y[i] = acc; }
}
