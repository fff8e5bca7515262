// slice.wgsl - copies between a tensor viewed as [outer, row] and a window
// of a wider one.
//   MODE 0 (scatter; concat, one dispatch per input): for each x element
//     i = o * row + r:  y[o * dst_row + dst_off + r] = x[i]
//     uniform words: n (= numel x), row, dst_row, dst_off
//   MODE 1 (pad; narrow_grad): for each y element i = o * dst_row + r:
//     y[i] = x[o * cnt + r - lo] when lo <= r < lo + cnt, else 0
//     uniform words: n (= numel y), dst_row, lo, cnt
// Bindings: 0 x (read), 1 y (write), 2 uniform.  One element per thread.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 1>;

override MODE: u32 = 0u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * 256u;
  let w = u[0];
  if (i >= w.x) { return; }
  if (MODE == 0u) {
    let o = i / w.y;
    let r = i % w.y;
    y[o * w.z + w.w + r] = x[i];
  } else {
    let o = i / w.y;
    let r = i % w.y;
    var v = 0.0;
    if (r >= w.z && r < w.z + w.w) { v = x[o * w.w + r - w.z]; }
    y[i] = v;
  }
}
