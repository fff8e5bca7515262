// attention_grad_dkdv.wgsl - dk and dv of scaled dot-product attention (all
// mask kinds), the second and third of attention_grad's packed outputs
// [dq | dk | dv].  The sums over query rows run inside one workgroup, so
// nothing is accumulated across workgroups (no atomics).
//
// One workgroup of 128 threads per (batch, head, block of BKB keys) walks
// the query rows that may see those keys (causal and sliding masks narrow
// them) in tiles of 32 and recomputes, transposed,
//   P  = exp(S - L)        S[BKB, 32] = scaled, masked K Q^T
//   dP = V dY^T
//   dS = scale P (dP - Delta)
//   dV += P dY             dK += dS Q
// with L and Delta per query row from attention.wgsl (MODE 1) in `stats`.
// Scores come from chunks of 32 in workgroup memory (SPT per thread), P and
// dS go to workgroup memory, dY and Q are read in sub-tiles, and each
// thread owns OPTK outputs of dK and OPTV of dV in registers.
//
// Uniform words: as attention.wgsl (0 B, 1 H, 2 Sq, 3 Sk, 4 D, 5 Dv,
// 6 kind, 7 window, 8 scale, 9 key blocks per head, 10..13 bias strides,
// 14 workgroups, 15 B * H * Sq), 16 dq, 17 dk, 18 dv offsets into out,
// 19 BKB (keys per block: 1, 2, 4, 8 or 16).

const OPTK: u32 = 8u; // dK outputs per thread (at most; ceil(BKB * D / 128) are used)
const OPTV: u32 = 8u; // dV outputs per thread (at most; ceil(BKB * Dv / 128) are used)
const WG: u32 = 128u;
const BQ: u32 = 32u;      // query rows per tile
const DC: u32 = 32u;
const KP: u32 = 33u;
const SPT: u32 = 4u;      // scores per thread (at most; BKB * BQ / 128 are used)
const QC: u32 = 0u;       // Q / dY chunk [BQ][KP]; dY / Q sub-tiles (2112 floats)
const KC: u32 = 1056u;    // K / V chunk [BKB][DC]
const PT: u32 = 2112u;    // P [BKB][BQ]
const DT: u32 = 2624u;    // dS [BKB][BQ]
const SUB_FLOATS: u32 = 2112u;
const MASKED: f32 = -3.0e38;
const CUT: f32 = -1.0e38;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<f32>;
@group(0) @binding(5) var<storage, read> stats: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;
@group(0) @binding(7) var<uniform> U: array<vec4<u32>, 5>;

var<workgroup> smem: array<f32, 3136>;
var<workgroup> rL: array<f32, 32>;
var<workgroup> rD: array<f32, 32>;

//!include _attention_mask.wgsl

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
  let lin = wid.x + wid.y * nwg.x;
  if (lin >= U[3].z) { return; }
  let H = U[0].y;
  let Sq = U[0].z;
  let Sk = U[0].w;
  let D = U[1].x;
  let Dv = U[1].y;
  let kind = U[1].z;
  let nkb = U[2].y;
  let BKB = U[4].w;
  let rows = U[3].w;
  let scale = bitcast<f32>(U[2].x);
  let bh = lin / nkb;
  let b = bh / H;
  let h = bh % H;
  let k0 = (lin % nkb) * BKB;
  let k1 = min(k0 + BKB, Sk);
  // query rows that may see keys [k0, k1)
  var qlo = 0;
  var qhi = i32(Sq);
  if (kind == 1u || kind == 2u) {
    qlo = max(0, i32(k0) + i32(Sq) - i32(Sk));
    if (kind == 2u) { qhi = min(qhi, i32(k1) - i32(Sk) + i32(Sq) + i32(U[1].w) - 1); }
  }
  qhi = max(qhi, qlo);
  let qiv = min(BQ, SUB_FLOATS / Dv);
  let qik = min(BQ, SUB_FLOATS / D);

  var dk: array<f32, 8>;
  var dv: array<f32, 8>;
  for (var u = 0u; u < OPTK; u++) { dk[u] = 0.0; }
  for (var u = 0u; u < OPTV; u++) { dv[u] = 0.0; }

  for (var i0 = u32(qlo); i0 < u32(qhi); i0 += BQ) {
    if (t < BQ) {
      var L = 3.0e38;
      var dl = 0.0;
      if (i0 + t < Sq) {
        L = stats[bh * Sq + i0 + t];
        dl = stats[rows + bh * Sq + i0 + t];
      }
      rL[t] = L;
      rD[t] = dl;
    }
    var sacc: array<f32, 4>;
    var pacc: array<f32, 4>;
    for (var u = 0u; u < SPT; u++) {
      sacc[u] = 0.0;
      pacc[u] = 0.0;
    }
    // phase 0: S = K Q^T over D; phase 1: dP = V dY^T over Dv
    for (var ph = 0u; ph < 2u; ph++) {
      var width = D;
      if (ph == 1u) { width = Dv; }
      for (var d0 = 0u; d0 < width; d0 += DC) {
        workgroupBarrier();
        for (var u = 0u; u < 8u; u++) {
          let e = t + WG * u;
          let i = e / DC;
          let dd = e % DC;
          var val = 0.0;
          if (i0 + i < Sq && d0 + dd < width) {
            let at = (bh * Sq + i0 + i) * width + d0 + dd;
            if (ph == 0u) { val = q[at]; } else { val = dy[at]; }
          }
          smem[QC + i * KP + dd] = val;
        }
        for (var u = 0u; u < SPT; u++) {
          let e = t + WG * u;
          let j = e / DC;
          let dd = e % DC;
          var val = 0.0;
          if (j < BKB && k0 + j < Sk && d0 + dd < width) {
            let at = (bh * Sk + k0 + j) * width + d0 + dd;
            if (ph == 0u) { val = k[at]; } else { val = v[at]; }
          }
          if (j < BKB) { smem[KC + e] = val; }
        }
        workgroupBarrier();
        for (var u = 0u; u < SPT; u++) {
          let e = t + WG * u;
          let j = e / BQ;
          let i = e % BQ;
          if (j < BKB) {
            var a = 0.0;
            for (var dd = 0u; dd < DC; dd++) { a += smem[KC + j * DC + dd] * smem[QC + i * KP + dd]; }
            if (ph == 0u) { sacc[u] += a; } else { pacc[u] += a; }
          }
        }
      }
    }
    for (var u = 0u; u < SPT; u++) {
      let e = t + WG * u;
      let j = e / BQ;
      let i = e % BQ;
      if (j < BKB) {
        let s = score(sacc[u], b, h, i0 + i, k0 + j);
        var p = 0.0;
        var ds = 0.0;
        if (s > CUT) {
          p = exp(s - rL[i]);
          ds = scale * p * (pacc[u] - rD[i]);
        }
        smem[PT + e] = p;
        smem[DT + e] = ds;
      }
    }
    // dV += P dY, then dK += dS Q, over sub-tiles of query rows
    for (var ph = 0u; ph < 2u; ph++) {
      var width = Dv;
      var step = qiv;
      if (ph == 1u) {
        width = D;
        step = qik;
      }
      for (var ii0 = 0u; ii0 < BQ; ii0 += step) {
        let n = min(step, BQ - ii0);
        workgroupBarrier();
        for (var e = t; e < n * width; e += WG) {
          let qi = i0 + ii0 + e / width;
          var val = 0.0;
          if (qi < Sq) {
            let at = (bh * Sq + qi) * width + e % width;
            if (ph == 0u) { val = dy[at]; } else { val = q[at]; }
          }
          smem[QC + e] = val;
        }
        workgroupBarrier();
        if (ph == 0u) {
          for (var u = 0u; u < OPTV; u++) {
            let e = t + WG * u;
            if (e < BKB * Dv) {
              let j = e / Dv;
              let c = e % Dv;
              var a = dv[u];
              for (var ii = 0u; ii < n; ii++) { a += smem[PT + j * BQ + ii0 + ii] * smem[QC + ii * Dv + c]; }
              dv[u] = a;
            }
          }
        } else {
          for (var u = 0u; u < OPTK; u++) {
            let e = t + WG * u;
            if (e < BKB * D) {
              let j = e / D;
              let c = e % D;
              var a = dk[u];
              for (var ii = 0u; ii < n; ii++) { a += smem[DT + j * BQ + ii0 + ii] * smem[QC + ii * D + c]; }
              dk[u] = a;
            }
          }
        }
      }
    }
    workgroupBarrier(); // rL, rD and the chunks are rewritten by the next tile
  }

  for (var u = 0u; u < OPTK; u++) {
    let e = t + WG * u;
    if (e < BKB * D && k0 + e / D < Sk) { out[U[4].y + (bh * Sk + k0) * D + e] = dk[u]; }
  }
  for (var u = 0u; u < OPTV; u++) {
    let e = t + WG * u;
    if (e < BKB * Dv && k0 + e / Dv < Sk) { out[U[4].z + (bh * Sk + k0) * Dv + e] = dv[u]; }
  }
}
