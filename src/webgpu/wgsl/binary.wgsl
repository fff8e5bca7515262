// binary.wgsl - broadcasting binary ops and comparisons:
//   y = a OP b, numpy broadcasting; comparisons give 1.0 / 0.0.
// Bindings: 0 a, 1 b (read), 2 y (write), 3 uniform.
// Overrides: OP (OP_ADD .. OP_GE, the binary rows of include/rlx_ops.def),
// VEC (1: both operands are periodic with a period of 1 or a multiple of 4,
// so every thread reads whole vec4s).
// Uniform words: n, period a, period b (0: not periodic), rank, dims[8],
// strides a[8], strides b[8] (broadcast strides over y's dims).
// Each thread writes 4 consecutive outputs (one vec4; bindings are padded
// to 16 bytes).  NaN rules follow the CPU kernels (src/cpu/k_elementwise.c):
// tested on the bits, because WGSL does not promise IEEE NaN comparisons.
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> u: array<vec4<u32>, 7>;

override OP: u32 = 0u;
override VEC: u32 = 0u;

fn word(i: u32) -> u32 { return u[i / 4u][i % 4u]; }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
// NaN and inf from runtime bits (a constant NaN or inf is a WGSL error).
fn nan() -> f32 {
  var bits = 0x7fc00000u;
  return bitcast<f32>(bits);
}
fn inf_with_sign(neg: bool) -> f32 {
  var bits = select(0x7f800000u, 0xff800000u, neg);
  return bitcast<f32>(bits);
}
fn sign_bit(x: f32) -> bool { return (bitcast<u32>(x) & 0x80000000u) != 0u; }
fn bool_f(c: bool) -> f32 { return select(0.0, 1.0, c); }

// x / y with IEEE results where WGSL leaves them open (zero or infinite divisor).
fn divide(x: f32, y: f32) -> f32 {
  if (is_nan(x) || is_nan(y)) { return nan(); }
  let neg = sign_bit(x) != sign_bit(y);
  if (y == 0.0) {
    if (x == 0.0) { return nan(); }
    return inf_with_sign(neg);
  }
  if (is_inf(y)) {
    if (is_inf(x)) { return nan(); }
    return select(0.0, -0.0, neg);
  }
  if (is_inf(x)) { return inf_with_sign(neg); }
  return x / y;
}

fn is_int(y: f32) -> bool { return !is_inf(y) && floor(y) == y; }
fn is_odd_int(y: f32) -> bool { return is_int(y) && abs(y) < 16777216.0 && (i32(abs(y)) & 1) == 1; }

// powf as C99 Annex F: the special cases, then |x|^y with the sign of an odd
// integer power of a negative base.
fn power(x: f32, y: f32) -> f32 {
  if (y == 0.0 || x == 1.0) { return 1.0; }
  if (is_nan(x) || is_nan(y)) { return nan(); }
  let ax = abs(x);
  if (is_inf(y)) {
    if (ax == 1.0) { return 1.0; }
    let big = (ax > 1.0) == (y > 0.0);
    return select(0.0, inf_with_sign(false), big);
  }
  let odd = is_odd_int(y);
  if (x == 0.0) {
    let neg = odd && sign_bit(x);
    if (y < 0.0) { return inf_with_sign(neg); }
    return select(0.0, -0.0, neg);
  }
  if (is_inf(x)) {
    let neg = odd && x < 0.0;
    if (y < 0.0) { return select(0.0, -0.0, neg); }
    return inf_with_sign(neg);
  }
  if (x < 0.0 && !is_int(y)) { return nan(); }
  let m = exp2(y * log2(ax));
  return select(m, -m, x < 0.0 && odd);
}

fn apply(x: f32, v: f32) -> f32 {
  let un = is_nan(x) || is_nan(v);
  switch OP {
    case OP_ADD: { return x + v; }
    case OP_SUB: { return x - v; }
    case OP_MUL: { return x * v; }
    case OP_DIV: { return divide(x, v); }
    case OP_MAX: { return select(v, x, x > v || is_nan(x)); }
    case OP_MIN: { return select(v, x, x < v || is_nan(x)); }
    case OP_POW: { return power(x, v); }
    case OP_EQ: { return bool_f(!un && x == v); }
    case OP_NE: { return bool_f(un || x != v); }
    case OP_LT: { return bool_f(!un && x < v); }
    case OP_LE: { return bool_f(!un && x <= v); }
    case OP_GT: { return bool_f(!un && x > v); }
    case OP_GE: { return bool_f(!un && x >= v); }
    default: { return nan(); } // an unknown code: NaN, never another op's result
  }
}

fn apply4(x: vec4<f32>, v: vec4<f32>) -> vec4<f32> {
  if (OP == OP_ADD) { return x + v; }
  if (OP == OP_SUB) { return x - v; }
  if (OP == OP_MUL) { return x * v; }
  return vec4<f32>(apply(x.x, v.x), apply(x.y, v.y), apply(x.z, v.z), apply(x.w, v.w));
}

fn load_a(i: u32) -> f32 { return a[i / 4u][i % 4u]; }
fn load_b(i: u32) -> f32 { return b[i / 4u][i % 4u]; }

// Offsets of output element i in a and b (broadcast strides).
fn offsets(i: u32) -> vec2<u32> {
  let rank = word(3u);
  var rest = i;
  var oa = 0u;
  var ob = 0u;
  for (var d = i32(rank) - 1; d >= 0; d--) {
    let dim = word(4u + u32(d));
    let c = rest % dim;
    rest = rest / dim;
    oa += c * word(12u + u32(d));
    ob += c * word(20u + u32(d));
  }
  return vec2<u32>(oa, ob);
}

// A vec4 of a periodic operand at output vec4 index i4 (period 1: a
// broadcast scalar; period n: a full operand; else a multiple of 4).
fn periodic4_a(i4: u32, period: u32, n: u32) -> vec4<f32> {
  if (period == 1u) { return vec4<f32>(a[0].x); }
  if (period == n) { return a[i4]; }
  return a[i4 % (period / 4u)];
}
fn periodic4_b(i4: u32, period: u32, n: u32) -> vec4<f32> {
  if (period == 1u) { return vec4<f32>(b[0].x); }
  if (period == n) { return b[i4]; }
  return b[i4 % (period / 4u)];
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i4 = gid.x + gid.y * nwg.x * 256u;
  let n = word(0u);
  if (i4 * 4u >= n) { return; }
  let pa = word(1u);
  let pb = word(2u);
  if (VEC == 1u) {
    y[i4] = apply4(periodic4_a(i4, pa, n), periodic4_b(i4, pb, n));
    return;
  }
  if (VEC == 2u) {
    let o = offsets(i4 * 4u);
    let last = word(3u) - 1u;
    var av = vec4<f32>(load_a(o.x));
    var bv = vec4<f32>(load_b(o.y));
    if (word(12u + last) == 1u) { av = a[o.x / 4u]; }
    if (word(20u + last) == 1u) { bv = b[o.y / 4u]; }
    y[i4] = apply4(av, bv);
    return;
  }
  var r = vec4<f32>(0.0);
  for (var k = 0u; k < 4u; k++) {
    let i = i4 * 4u + k;
    if (i >= n) { break; }
    var ia = 0u;
    var ib = 0u;
    if (pa == 0u || pb == 0u) {
      let o = offsets(i);
      ia = o.x;
      ib = o.y;
    }
    if (pa != 0u) { ia = i % pa; }
    if (pb != 0u) { ib = i % pb; }
    r[k] = apply(load_a(ia), load_b(ib));
  }
  y[i4] = r;
}
