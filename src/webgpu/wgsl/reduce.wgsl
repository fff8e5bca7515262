// reduce.wgsl - sum (OP_REDUCE_SUM) or max (OP_REDUCE_MAX) over any set of axes.
//
// The lowering (lower_reduce.c) merges the input dims into kept and reduced
// groups.  Output o is unravelled over the kept groups to a base offset,
// reduced index r over the reduced groups to an offset from it.  A
// workgroup of 256 threads covers OX consecutive outputs with RY = 256 / OX
// threads each: OX = 1 (one workgroup per output, coalesced when the
// reduced elements are contiguous), larger OX when the innermost group is
// kept (neighbouring threads read neighbouring outputs) or rows are short.
// Each thread strides over r, then the RY partials meet in shared memory
// (two rounds, see below).  Long reductions with few outputs are split into
// chunks (workgroups along a second index) whose partials land in scratch at
// out[chunk * n_out + o]; a second dispatch of this shader reduces them.
// Max propagates NaN (like src/cpu/k_reduce.c).  The sum is divided by
// `divisor` (1, or the element count for mean).
//
// Uniform words: 0 n_out, 1 R (reduced elements per output), 2 nk, 3 nr,
// 4..7 kept sizes and 8..11 their input strides (innermost first),
// 12..15 reduced sizes and 16..19 strides, 20 chunk_len, 21 output chunk
// stride (0: single pass), 22 divisor (f32 bits), 23 output workgroups,
// 24 chunks.

override OP: u32 = 0u;
override OX: u32 = 1u;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> U: array<vec4<u32>, 7>;

var<workgroup> sh: array<f32, 256>;

fn u(i: u32) -> u32 { return U[i / 4u][i % 4u]; }

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

// max that lets a NaN through
fn max_nan(m: f32, v: f32) -> f32 { return select(m, v, v > m || is_nan(v)); }

fn neg_inf() -> f32 {
  var bits = 0xff800000u; // a var: -inf must not be a const-expression
  return bitcast<f32>(bits);
}

fn combine(a: f32, b: f32) -> f32 {
  if (OP == OP_REDUCE_MAX) { return max_nan(a, b); }
  return a + b;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let n_out = u(0u);
  let R = u(1u);
  let nk = u(2u);
  let nr = u(3u);
  let n_og = u(23u);
  let lin = wid.x + wid.y * nwg.x;
  if (lin >= n_og * u(24u)) { return; }
  let chunk = lin / n_og;
  let RY = WG / OX;
  let ox = lid % OX;
  let ry = lid / OX;
  let o = (lin % n_og) * OX + ox;
  let valid = o < n_out;

  var acc = 0.0;
  if (OP == OP_REDUCE_MAX) { acc = neg_inf(); }
  if (valid) {
    var base = 0u;
    var rem = o;
    for (var g = 0u; g < nk; g++) {
      let s = u(4u + g);
      base += (rem % s) * u(8u + g);
      rem = rem / s;
    }
    let r0 = chunk * u(20u);
    let r1 = min(R, r0 + u(20u));
    if (nr <= 1u) {
      // one reduced group: offsets without div/mod, 4 loads in flight
      let st = select(0u, u(16u), nr == 1u);
      var r = r0 + ry;
      for (; r + 3u * RY < r1; r += 4u * RY) {
        let a0 = x[base + r * st];
        let a1 = x[base + (r + RY) * st];
        let a2 = x[base + (r + 2u * RY) * st];
        let a3 = x[base + (r + 3u * RY) * st];
        acc = combine(acc, combine(combine(a0, a1), combine(a2, a3)));
      }
      for (; r < r1; r += RY) { acc = combine(acc, x[base + r * st]); }
    } else {
      for (var r = r0 + ry; r < r1; r += RY) {
        var off = base;
        var rr = r;
        for (var g = 0u; g < nr; g++) {
          let s = u(12u + g);
          off += (rr % s) * u(16u + g);
          rr = rr / s;
        }
        acc = combine(acc, x[off]);
      }
    }
  }
  // The RY partials of an output meet in two rounds (at most two barriers:
  // CPU Vulkan drivers such as SwiftShader pay for every barrier with every
  // invocation, which made a log2(RY)-round tree slow there): RQ threads
  // combine 8 partials each, then one combines the RQ results.
  sh[lid] = acc;
  workgroupBarrier();
  var RQ = RY;
  if (RY >= 16u) {
    RQ = RY / 8u;
    if (ry < RQ) {
      var v = sh[lid];
      for (var j = 1u; j < 8u; j++) { v = combine(v, sh[lid + j * RQ * OX]); }
      sh[lid] = v;
    }
    workgroupBarrier();
  }
  if (ry == 0u && valid) {
    var v = sh[lid];
    for (var j = 1u; j < RQ; j++) { v = combine(v, sh[lid + j * OX]); }
    if (OP == OP_REDUCE_SUM) { v = v / bitcast<f32>(u(22u)); }
    y[chunk * u(21u) + o] = v;
  }
}
