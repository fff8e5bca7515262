// grad_pointwise.wgsl - backward of the pointwise activations:
//   dx = dy * f'(x) for f = gelu (tanh approximation) or silu.
// Bindings: 0 x, 1 dy (read), 2 dx (write), 3 uniform.
// Overrides: OP (OP_GELU_GRAD, OP_SILU_GRAD; any other code gives NaN).  Uniform words: n.  One vec4 per thread.
// The derivatives are those of src/cpu/k_grad_pointwise.c: x clamped where
// f' has saturated, sigmoid and its slope from e = e^-|t| (no overflow).
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> dy: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dx: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> u: array<vec4<u32>, 1>;

override OP: u32 = 0u;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

// e^v as src/cpu/fast_math.h exp_poly.
fn exp_poly(v: f32) -> f32 {
  var xc = select(-104.0, v, v > -104.0);
  xc = select(89.0, xc, xc < 89.0);
  let n = round(xc * 1.44269504088896341);
  let r = (xc - n * 0.693359375) - n * -2.12194440e-4;
  var p = 1.9875691500e-4;
  p = p * r + 1.3981999507e-3;
  p = p * r + 8.3334519073e-3;
  p = p * r + 4.1665795894e-2;
  p = p * r + 1.6666665459e-1;
  p = p * r + 5.0000001201e-1;
  p = p * r * r + r + 1.0;
  let ni = i32(n);
  let n1 = i32(u32(ni + 150) >> 1u) - 75;
  let n2 = ni - n1;
  let res = p * bitcast<f32>(u32(n1 + 127) << 23u) * bitcast<f32>(u32(n2 + 127) << 23u);
  return select(res, v, is_nan(v));
}

// v clamped to [-limit, limit]; NaN passes through.
fn clamp_abs(v: f32, limit: f32) -> f32 {
  let lo = select(v, -limit, v < -limit);
  return select(lo, limit, lo > limit);
}

fn gelu_derivative(v: f32) -> f32 {
  let k2 = 2.0 * 0.7978845608028654;
  let c = 0.044715;
  let xv = clamp_abs(v, 20.0);
  let x2 = xv * xv;
  let t = k2 * (xv + c * x2 * xv);
  let e = exp_poly(-abs(t));
  let r = 1.0 / (1.0 + e);
  let s = select(e * r, r, t >= 0.0);
  let ds = e * r * r;
  return s + xv * ds * k2 * (1.0 + 3.0 * c * x2);
}

fn silu_derivative(v: f32) -> f32 {
  let xv = clamp_abs(v, 88.0);
  let e = exp_poly(-abs(xv));
  let r = 1.0 / (1.0 + e);
  let s = select(e * r, r, xv >= 0.0);
  return s + xv * (e * r * r);
}

fn deriv(v: f32) -> f32 {
  if (OP == OP_GELU_GRAD) { return gelu_derivative(v); }
  if (OP == OP_SILU_GRAD) { return silu_derivative(v); }
  var bits = 0x7fc00000u; // an unknown code: NaN, never another op's result
  return bitcast<f32>(bits);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i4 = gid.x + gid.y * nwg.x * 256u;
  if (i4 * 4u >= u[0].x) { return; }
  let v = x[i4];
  dx[i4] = dy[i4] * vec4<f32>(deriv(v.x), deriv(v.y), deriv(v.z), deriv(v.w));
}
