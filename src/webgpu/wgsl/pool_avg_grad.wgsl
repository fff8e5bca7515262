// pool_avg_grad.wgsl - the gradient of 2-D average pooling, as a gather:
// one thread per input cell adds dy / (kernel_h * kernel_w) of every window
// that contains it (clipped windows as in src/cpu/k_pool_grad.c, in the
// row-major order the CPU adds them).
// Uniform words: 0 input cells (planes*H*W), 1 H, 2 W, 3 OH, 4 OW,
// 5 kernel_h, 6 kernel_w, 7 stride_h, 8 stride_w, 9 pad_h, 10 pad_w,
// 11 1/(kernel_h*kernel_w) as f32 bits.

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read_write> dx: array<f32>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 3>;

fn window_range(i: u32, k: u32, s: u32, p: u32, n_out: u32) -> vec2<i32> {
  let t = i32(i + p) - i32(k) + 1;
  var lo = 0;
  if (t > 0) { lo = (t + i32(s) - 1) / i32(s); }
  let hi = min(i32((i + p) / s), i32(n_out) - 1);
  return vec2<i32>(lo, hi);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= u[0].x) { return; }
  let H = u[0].y;
  let W = u[0].z;
  let OH = u[0].w;
  let OW = u[1].x;
  let iw = i % W;
  let ih = (i / W) % H;
  let plane = i / (W * H);
  let rh = window_range(ih, u[1].y, u[1].w, u[2].y, OH);
  let rw = window_range(iw, u[1].z, u[2].x, u[2].z, OW);
  let inv = bitcast<f32>(u[2].w);
  var g = 0.0;
  for (var oh = rh.x; oh <= rh.y; oh++) {
    for (var ow = rw.x; ow <= rw.y; ow++) {
      g += dy[(plane * OH + u32(oh)) * OW + u32(ow)] * inv;
    }
  }
  dx[i] = g;
}
