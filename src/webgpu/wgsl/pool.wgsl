// pool.wgsl - 2-D max (MODE 0) and average (MODE 1) pooling over NCHW, one
// thread per output cell.  Windows are clipped to the input as in
// src/cpu/k_pool.c: max pooling ignores padded cells (padding acts as
// -inf) and propagates NaN; average pooling counts padded cells as zeros
// and multiplies the window sum by 1 / (kernel_h * kernel_w).
// Uniform words: 0 outputs (planes*OH*OW), 1 H, 2 W, 3 OH, 4 OW,
// 5 kernel_h, 6 kernel_w, 7 stride_h, 8 stride_w, 9 pad_h, 10 pad_w,
// 11 1/(kernel_h*kernel_w) as f32 bits.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 3>;

override MODE: u32 = 0u;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = (wid.x + wid.y * nwg.x) * 256u + lid;
  if (i >= u[0].x) { return; }
  let H = u[0].y;
  let W = u[0].z;
  let OH = u[0].w;
  let OW = u[1].x;
  let ow = i % OW;
  let oh = (i / OW) % OH;
  let plane = i / (OW * OH);
  let hs = i32(oh * u[1].w) - i32(u[2].y);
  let ws = i32(ow * u[2].x) - i32(u[2].z);
  let h0 = u32(max(hs, 0));
  let h1 = u32(min(hs + i32(u[1].y), i32(H)));
  let w0 = u32(max(ws, 0));
  let w1 = u32(min(ws + i32(u[1].z), i32(W)));
  let base = plane * H * W;
  if (MODE == 0u) {
    var m = x[base + h0 * W + w0]; // windows are never empty
    for (var ih = h0; ih < h1; ih++) {
      for (var iw = w0; iw < w1; iw++) {
        let v = x[base + ih * W + iw];
        if (v > m || is_nan(v)) { m = v; }
      }
    }
    y[i] = m;
  } else {
    var s = 0.0;
    for (var ih = h0; ih < h1; ih++) {
      for (var iw = w0; iw < w1; iw++) { s += x[base + ih * W + iw]; }
    }
    y[i] = s * bitcast<f32>(u[2].w);
  }
}
