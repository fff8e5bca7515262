// where.wgsl - y = a where cond != 0 (NaN counts as nonzero) else b, all
// three broadcast (numpy rules).
// Bindings: 0 cond, 1 a, 2 b (read), 3 y (write), 4 uniform.
// Overrides: VEC: 1 every operand periodic with a period of 1, n or a
// multiple of 4 (whole vec4s); 2 the innermost axis is a multiple of 4 long
// and each operand walks it with stride 1 or 0; 0 element by element.
// Uniform words: n, period cond, period a, period b (0: not periodic), rank,
// dims[8], strides cond[8], strides a[8], strides b[8] (the iteration with
// size-1 axes dropped and contiguous axes merged).
// Each thread writes 4 consecutive outputs (bindings are padded to 16 bytes).
@group(0) @binding(0) var<storage, read> c: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> u: array<vec4<u32>, 10>;

override VEC: u32 = 0u;

fn word(i: u32) -> u32 { return u[i / 4u][i % 4u]; }
fn nonzero(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }

fn load(k: u32, i: u32) -> f32 {
  switch k {
    case 0u: { return c[i / 4u][i % 4u]; }
    case 1u: { return a[i / 4u][i % 4u]; }
    default: { return b[i / 4u][i % 4u]; }
  }
}

fn load4(k: u32, i4: u32) -> vec4<f32> {
  switch k {
    case 0u: { return c[i4]; }
    case 1u: { return a[i4]; }
    default: { return b[i4]; }
  }
}

fn periodic4(k: u32, i4: u32, n: u32) -> vec4<f32> {
  let period = word(1u + k);
  if (period == 1u) { return vec4<f32>(load(k, 0u)); }
  if (period == n) { return load4(k, i4); }
  return load4(k, i4 % (period / 4u));
}

// Offset of output element i in operand k (broadcast strides).
fn offset(k: u32, i: u32) -> u32 {
  let rank = word(4u);
  var rest = i;
  var o = 0u;
  for (var d = i32(rank) - 1; d >= 0; d--) {
    let dim = word(5u + u32(d));
    o += (rest % dim) * word(13u + 8u * k + u32(d));
    rest = rest / dim;
  }
  return o;
}

fn index(k: u32, i: u32) -> u32 {
  let period = word(1u + k);
  if (period != 0u) { return i % period; }
  return offset(k, i);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let i4 = gid.x + gid.y * nwg.x * 256u;
  let n = word(0u);
  if (i4 * 4u >= n) { return; }
  if (VEC == 1u) {
    let cv = periodic4(0u, i4, n);
    let av = periodic4(1u, i4, n);
    let bv = periodic4(2u, i4, n);
    var r = bv;
    for (var k = 0u; k < 4u; k++) {
      if (nonzero(cv[k])) { r[k] = av[k]; }
    }
    y[i4] = r;
    return;
  }
  if (VEC == 2u) {
    let last = word(4u) - 1u;
    var v: array<vec4<f32>, 3>;
    for (var k = 0u; k < 3u; k++) {
      let o = offset(k, i4 * 4u);
      v[k] = vec4<f32>(load(k, o));
      if (word(13u + 8u * k + last) == 1u) { v[k] = load4(k, o / 4u); }
    }
    var r = v[2];
    for (var k = 0u; k < 4u; k++) {
      if (nonzero(v[0][k])) { r[k] = v[1][k]; }
    }
    y[i4] = r;
    return;
  }
  var r = vec4<f32>(0.0);
  for (var k = 0u; k < 4u; k++) {
    let i = i4 * 4u + k;
    if (i >= n) { break; }
    let cv = load(0u, index(0u, i));
    r[k] = select(load(2u, index(2u, i)), load(1u, index(1u, i)), nonzero(cv));
  }
  y[i4] = r;
}
