// slice.wgsl - copies between a tensor viewed as [outer, row] and a window
// of a wider one.
//   MODE 0 (scatter; concat, one dispatch per input): for each x element
//     i = o * row + r:  y[o * dst_row + dst_off + r] = x[i]
//     uniform words: n (= numel x), row, dst_row, dst_off
//   MODE 1 (pad; narrow_grad): for each y element i = o * dst_row + r:
//     y[i] = x[o * cnt + r - lo] when lo <= r < lo + cnt, else 0
//     uniform words: n (= numel y), dst_row, lo, cnt
// Overrides: MODE, VEC (1: every row length and offset is a multiple of 4,
// so each thread copies one vec4; 0: one element per thread).
// Bindings: 0 x (read), 1 y (write), 2 uniform.
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 1>;

override MODE: u32 = 0u;
override VEC: u32 = 0u;

fn load(i: u32) -> f32 { return x[i / 4u][i % 4u]; }
fn store(i: u32, v: f32) { y[i / 4u][i % 4u] = v; }

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  let w = u[0];
  let per = select(1u, 4u, VEC == 1u);
  let i = t * per;
  if (i >= w.x) { return; }
  let o = i / w.y;
  let r = i % w.y;
  if (MODE == 0u) {
    let at = o * w.z + w.w + r;
    if (VEC == 1u) { y[at / 4u] = x[t]; } else { store(at, load(i)); }
  } else {
    let inside = r >= w.z && r < w.z + w.w;
    let src = o * w.w + r - w.z;
    if (VEC == 1u) {
      var v = vec4<f32>(0.0);
      if (inside) { v = x[src / 4u]; }
      y[t] = v;
    } else {
      var v = 0.0;
      if (inside) { v = load(src); }
      store(i, v);
    }
  }
}
