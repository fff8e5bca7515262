// pool_max_grad.wgsl - the gradient of 2-D max pooling, as a gather: one
// thread per input cell walks the windows that contain it (in the
// row-major order the CPU adds them), recomputes each window's source cell
// - its first NaN, else its first maximum, as in src/cpu/k_pool_grad.c -
// and adds that window's dy when the source is this cell.  No atomics.
// Uniform words: 0 input cells (planes*H*W), 1 H, 2 W, 3 OH, 4 OW,
// 5 kernel_h, 6 kernel_w, 7 stride_h, 8 stride_w, 9 pad_h, 10 pad_w.

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> u: array<vec4<u32>, 3>;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

// Output rows [lo, hi] whose window (start o*s - p, k cells) holds cell i.
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
  let kh = u[1].y;
  let kw = u[1].z;
  let sh = u[1].w;
  let sw = u[2].x;
  let ph = u[2].y;
  let pw = u[2].z;
  let iw = i % W;
  let ih = (i / W) % H;
  let plane = i / (W * H);
  let base = plane * H * W;
  let me = ih * W + iw;
  let rh = window_range(ih, kh, sh, ph, OH);
  let rw = window_range(iw, kw, sw, pw, OW);
  var g = 0.0;
  for (var oh = rh.x; oh <= rh.y; oh++) {
    let hs = oh * i32(sh) - i32(ph);
    let h0 = u32(max(hs, 0));
    let h1 = u32(min(hs + i32(kh), i32(H)));
    for (var ow = rw.x; ow <= rw.y; ow++) {
      let ws = ow * i32(sw) - i32(pw);
      let w0 = u32(max(ws, 0));
      let w1 = u32(min(ws + i32(kw), i32(W)));
      // the window's source: first NaN, else first maximum
      var best = h0 * W + w0;
      var m = x[base + best];
      var done = is_nan(m);
      for (var jh = h0; jh < h1 && !done; jh++) {
        for (var jw = w0; jw < w1; jw++) {
          let at = jh * W + jw;
          let v = x[base + at];
          if (is_nan(v)) { best = at; done = true; break; }
          if (v > m) { m = v; best = at; }
        }
      }
      if (best == me) { g += dy[(plane * OH + u32(oh)) * OW + u32(ow)]; }
    }
  }
  dx[i] = g;
}
