// scatter_add.wgsl - the gradient of gather: ids[rows], dy[rows, D] ->
// y[V, D], y[v, :] = the sum of dy[i, :] over the rows i with ids[i] == v,
// in row order like the CPU (deterministic, no atomics).  Ids outside
// [0, V) contribute nothing; f32 ids are truncated toward zero (NaN and
// infinities are invalid).  Three dispatches (MODE):
//   0: first[v] = -1 for every v                       (one thread per v)
//   1: per row i with a valid id: next[i] = the next row with the same id
//      (or -1); the first row of each id sets first[id] = i
//      (one workgroup per row, its threads scanning the ids in parallel)
//   2: y[v, d] = sum over the list first[v] -> next[...]    (one per output)
// The lists live in the scratch: first[V] then next[rows] (i32).  Work is
// rows^2 for the lists (spread over rows workgroups) plus V * D + rows * D
// for the sums.
// Bindings: 0 ids, 1 dy (read), 2 y (write), 3 scratch (write), 4 uniform.
// Overrides: MODE, IDS_I32 (1: ids hold int32 bits).
// Uniform words: n (= V * D), D, rows, V.
@group(0) @binding(0) var<storage, read> ids: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> lists: array<i32>;
@group(0) @binding(4) var<uniform> u: array<vec4<u32>, 1>;

override MODE: u32 = 0u;
override IDS_I32: u32 = 0u;

var<workgroup> wg_next: atomic<u32>;
var<workgroup> wg_prev: atomic<u32>;

// The id of row i, or -1 when invalid (outside [0, V) included).
fn id_at(i: u32) -> i32 {
  let v = ids[i];
  var id = -1;
  if (IDS_I32 == 1u) {
    id = bitcast<i32>(v);
  } else {
    let bits = bitcast<u32>(v) & 0x7fffffffu;
    if (bits < 0x7f800000u && v > -2147483648.0 && v < 2147483648.0) { id = i32(v); }
  }
  if (id < 0 || u32(id) >= u[0].w) { return -1; }
  return id;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  let d = u[0].y;
  let rows = u[0].z;
  let v_count = u[0].w;
  if (MODE == 0u) {
    if (i < v_count) { lists[i] = -1; }
  } else if (MODE == 1u) {
    // One workgroup per row r: its threads scan the ids 256 apart and
    // combine with workgroup atomics (min and max are order-independent).
    let r = wid.x + wid.y * nwg.x;
    if (lid == 0u) {
      atomicStore(&wg_next, 0xffffffffu);
      atomicStore(&wg_prev, 0u);
    }
    workgroupBarrier();
    var id = -1;
    if (r < rows) { id = id_at(r); }
    if (id >= 0) {
      for (var j = lid; j < rows; j += 256u) {
        if (j != r && id_at(j) == id) {
          if (j < r) { atomicMax(&wg_prev, 1u); } else { atomicMin(&wg_next, j); }
        }
      }
    }
    workgroupBarrier();
    if (lid == 0u && id >= 0) {
      let next = atomicLoad(&wg_next);
      lists[v_count + r] = select(i32(next), -1, next == 0xffffffffu);
      if (atomicLoad(&wg_prev) == 0u) { lists[u32(id)] = i32(r); }
    }
  } else {
    if (i >= u[0].x) { return; }
    let col = i % d;
    var p = lists[i / d];
    var acc = 0.0;
    while (p >= 0) {
      acc += dy[u32(p) * d + col];
      p = lists[v_count + u32(p)];
    }
    y[i] = acc;
  }
}
