// llm_swiglu_q.wgsl - swiglu_q for a few rows of x (M <= 4: a decoded
// token, a short prompt step): y[m, n] = silu(x[m] . Wg[n]) * (x[m] .
// Wu[n]), Wg and Wu the two N x K tables of one GGUF type read in place
// (_llm_qdecode.wgsl), in one dispatch.  The layout of llm_matvec_q.wgsl:
// each workgroup owns RPW output rows; the TPR threads of a row walk its
// chunks of 8 values, decode the chunk of both weights, dot each with the M
// rows of x (read once for both), and leave their partial sums in
// workgroup memory; after one barrier a thread per row adds its row's
// partials and writes silu(g) * u.  Every weight byte is read once per
// dispatch.
//
// NORM 1 (_llm_norm.wgsl): x times g as it is read, its squares summed
// by each row group, the two sums scaled by the rows' factors before the
// combination (as llm_matvec_q.wgsl).
//
// Bindings: 0 x, 1 w_gate, 2 w_up (u32 words), 3 g (NORM; else x, not
// read), 4 y, 5 uniform.  Uniform words: 0 N, 1 K, 2 M, 3 row stride
// (bytes), 4 chunks per row (ceil(K / 8)), 5 the norm's eps (f32 bits).

//!include _llm_qdecode.wgsl
//!include _llm_silu.wgsl
//!include _llm_norm.wgsl

const TPR: u32 = 32u;
const RPW: u32 = 8u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> wg: array<u32>;
@group(0) @binding(2) var<storage, read> wu: array<u32>;
@group(0) @binding(3) var<storage, read> gn: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> U: array<vec4<u32>, 2>;

var<private> up: bool; // which table wword reads: the gate's or the up's

fn wword(i: u32) -> u32 {
  if (up) { return wu[i]; }
  return wg[i];
}

var<workgroup> part_g: array<vec4<f32>, 256>; // [RPW][TPR]
var<workgroup> part_u: array<vec4<f32>, 256>;
var<workgroup> pss: array<vec4<f32>, 256>; // NORM: the threads' sums of squares

fn norm_weight(i: u32) -> f32 { return gn[i]; }

// x[row, k0 .. k0 + 8) (clamped inside its row: the weights are 0 past K).
fn x8(row: u32, k0: u32, K: u32) -> Q8 {
  let b = row * K;
  let e = K - 1u;
  return Q8(vec4<f32>(x[b + min(k0, e)], x[b + min(k0 + 1u, e)], x[b + min(k0 + 2u, e)], x[b + min(k0 + 3u, e)]),
            vec4<f32>(x[b + min(k0 + 4u, e)], x[b + min(k0 + 5u, e)], x[b + min(k0 + 6u, e)], x[b + min(k0 + 7u, e)]));
}

fn dot8(q: Q8, v: Q8) -> f32 { return dot(q.a, v.a) + dot(q.b, v.b); }

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let N = U[0].x;
  let K = U[0].y;
  let M = U[0].z;
  let nc = U[1].x;
  let r = li / TPR;
  let t = li % TPR;
  let n0 = (wid.x + wid.y * nwg.x) * RPW;
  let n = n0 + r;
  var g = vec4<f32>(0.0);
  var u = vec4<f32>(0.0);
  var ss = vec4<f32>(0.0); // NORM: the squares of x's rows over this thread's chunks
  if (n < N) {
    let o = n * U[0].w;
    for (var c = t; c < nc; c += TPR) {
      up = false;
      let qg = deq8(o, c, K);
      up = true;
      let qu = deq8(o, c, K);
      var gw = Q8(vec4<f32>(1.0), vec4<f32>(1.0));
      if (NORM == 1u) { gw = Q8(norm_g4(8u * c, K), norm_g4(8u * c + 4u, K)); }
      for (var m = 0u; m < M; m++) {
        var v = x8(m, 8u * c, K);
        if (NORM == 1u) {
          ss[m] += norm_sq8(v.a, v.b, 8u * c, K);
          v = Q8(v.a * gw.a, v.b * gw.b);
        }
        g[m] += dot8(qg, v);
        u[m] += dot8(qu, v);
      }
    }
  }
  part_g[li] = g;
  part_u[li] = u;
  if (NORM == 1u) { pss[li] = ss; }
  workgroupBarrier();
  if (li < RPW && n0 + li < N) {
    var sg = vec4<f32>(0.0);
    var su = vec4<f32>(0.0);
    for (var k = 0u; k < TPR; k++) {
      sg += part_g[li * TPR + k];
      su += part_u[li * TPR + k];
    }
    if (NORM == 1u) {
      var sq = vec4<f32>(0.0);
      for (var k = 0u; k < TPR; k++) { sq += pss[li * TPR + k]; }
      for (var m = 0u; m < M; m++) {
        let f = norm_scale(sq[m], K, bitcast<f32>(U[1].y));
        sg[m] *= f;
        su[m] *= f;
      }
    }
    for (var m = 0u; m < M; m++) { y[m * N + n0 + li] = silu(sg[m]) * su[m]; }
  }
}
