// unary.wgsl - elementwise unary ops, y = f(x), same shape.
// Bindings: 0 x (read), 1 y (write), 2 uniform.
// Overrides: OP (OP_NEG .. OP_SILU, the unary rows of include/rlx_ops.def;
// gelu is the tanh approximation).
// Uniform words: n.  Each thread does one vec4 (bindings are padded to 16
// bytes).  exp, tanh and sigmoid are the CPU's polynomial forms
// (src/cpu/fast_math.h), so results match it closely and the special
// values (NaN, +-inf, +-0, overflow) come out the same; NaN and infinities
// are tested on the bits, because WGSL does not promise IEEE comparisons.
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(2) var<uniform> u: array<vec4<u32>, 1>;

override OP: u32 = 0u;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) == 0x7f800000u; }
fn from_bits(bits: u32) -> f32 {
  var b = bits; // a runtime value: constant NaN / inf are WGSL errors
  return bitcast<f32>(b);
}
fn sign_bit(v: f32) -> bool { return (bitcast<u32>(v) & 0x80000000u) != 0u; }

// e^v: 2^n e^r, n = round(v / ln 2), Cephes polynomial (fast_math.h exp_poly).
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

fn sigmoid_stable(v: f32) -> f32 {
  let e = exp_poly(-abs(v));
  return select(e / (1.0 + e), 1.0 / (1.0 + e), v >= 0.0 || is_nan(v));
}

fn tanh_poly(v: f32) -> f32 {
  let ax = abs(v);
  let z = v * v;
  let small = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
               3.33332819422e-1) * z * ax + ax;
  let e = exp_poly(-2.0 * ax);
  let large = (1.0 - e) / (1.0 + e);
  let m = select(large, small, ax < 0.625);
  return select(m, -m, sign_bit(v));
}

fn f(v: f32) -> f32 {
  switch OP {
    case OP_NEG: { return bitcast<f32>(bitcast<u32>(v) ^ 0x80000000u); }
    case OP_ABS: { return bitcast<f32>(bitcast<u32>(v) & 0x7fffffffu); }
    case OP_EXP: { return exp_poly(v); }
    case OP_LOG: {
      if (is_nan(v) || v < 0.0) { return from_bits(0x7fc00000u); }
      if (v == 0.0) { return from_bits(0xff800000u); }
      if (is_inf(v)) { return v; }
      return log(v);
    }
    case OP_SQRT: {
      if (is_nan(v) || v < 0.0) { return from_bits(0x7fc00000u); }
      if (v == 0.0 || is_inf(v)) { return v; }
      return sqrt(v);
    }
    case OP_RSQRT: {
      if (is_nan(v) || v < 0.0) { return from_bits(0x7fc00000u); }
      if (v == 0.0) { return from_bits(select(0x7f800000u, 0xff800000u, sign_bit(v))); }
      if (is_inf(v)) { return 0.0; }
      return 1.0 / sqrt(v);
    }
    case OP_TANH: { return tanh_poly(v); }
    case OP_SIGMOID: { return sigmoid_stable(v); }
    case OP_RELU: { return select(v, 0.0, v < 0.0); }
    case OP_GELU: { return v * sigmoid_stable(2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v)); }
    case OP_SILU: { return v * sigmoid_stable(v); }
    default: { return from_bits(0x7fc00000u); } // an unknown code: NaN, never another op's result
  }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i4 = gid.x + gid.y * nwg.x * 256u;
  if (i4 * 4u >= u[0].x) { return; }
  let v = x[i4];
  if (OP == OP_NEG) { y[i4] = -v; return; }
  if (OP == OP_RELU) { y[i4] = select(v, vec4<f32>(0.0), v < vec4<f32>(0.0)); return; }
  y[i4] = vec4<f32>(f(v.x), f(v.y), f(v.z), f(v.w));
}
