// attention_grad_dq.wgsl - dq of scaled dot-product attention (all mask
// kinds), the first of attention_grad's packed outputs [dq | dk | dv].
//
// attention.wgsl (MODE 1) has left per query row L = logsumexp of its
// masked scores (3e38 when it sees nothing) and Delta = dy . y in `stats`
// (stats[row], stats[rows + row]).  One workgroup of 128 threads per
// (batch, head, block of BQ query rows) walks the union of its rows' key
// ranges in tiles of 32 keys and recomputes
//   P  = exp(S - L)                      (S = scaled, masked Q K^T)
//   dP = dY V^T
//   dS = scale P (dP - Delta)
//   dQ += dS K
// Scores and dP come from D (Dv) chunks of 32 in workgroup memory, each
// thread owning SPT of them in registers; dS goes to workgroup memory; K
// is read in sub-tiles of VK keys; each thread owns OPT outputs of dQ.
// Masked scores give P = dS = 0.
//
// Uniform words: as attention.wgsl (0 B, 1 H, 2 Sq, 3 Sk, 4 D, 5 Dv,
// 6 kind, 7 window, 8 scale, 9 query blocks per head, 10..13 bias strides,
// 14 workgroups, 15 B * H * Sq), 16 dq offset into out, 19 BQ (query rows
// per block: 1, 2, 4, 8, 16 or 32).

const OPT: u32 = 16u; // outputs per thread (at most; ceil(BQ * D / 128) are used)
const WG: u32 = 128u;
const BK: u32 = 32u;
const DC: u32 = 32u;
const KP: u32 = 33u;
const SPT: u32 = 8u;      // scores per thread (at most; BQ * BK / 128 are used)
const QC: u32 = 0u;       // Q / dY chunk [BQ][DC]
const KV: u32 = 1024u;    // K / V chunk [BK][KP], K sub-tile [VK][D] (1536 floats)
const PS: u32 = 2560u;    // dS [BQ][BK]
const KV_FLOATS: u32 = 1536u;
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

var<workgroup> smem: array<f32, 3584>;
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
  let nqb = U[2].y;
  let BQ = U[4].w;
  let rows = U[3].w;
  let scale = bitcast<f32>(U[2].x);
  let bh = lin / nqb;
  let b = bh / H;
  let h = bh % H;
  let q0 = (lin % nqb) * BQ;
  let q_last = min(q0 + BQ, Sq) - 1u;
  let ulo = key_range(q0).x;
  let uhi = max(key_range(q_last).y, ulo);
  let vk = min(BK, KV_FLOATS / D);

  if (t < BQ) {
    var L = 3.0e38;
    var dl = 0.0;
    if (q0 + t < Sq) {
      L = stats[bh * Sq + q0 + t];
      dl = stats[rows + bh * Sq + q0 + t];
    }
    rL[t] = L;
    rD[t] = dl;
  }
  var o: array<f32, 16>;
  for (var u = 0u; u < OPT; u++) { o[u] = 0.0; }

  for (var j0 = ulo; j0 < uhi; j0 += BK) {
    var sacc: array<f32, 8>;
    var pacc: array<f32, 8>;
    for (var u = 0u; u < SPT; u++) {
      sacc[u] = 0.0;
      pacc[u] = 0.0;
    }
    // phase 0: S = Q K^T over D; phase 1: dP = dY V^T over Dv
    for (var ph = 0u; ph < 2u; ph++) {
      var width = D;
      if (ph == 1u) { width = Dv; }
      for (var d0 = 0u; d0 < width; d0 += DC) {
        workgroupBarrier();
        for (var u = 0u; u < SPT; u++) {
          let e = t + WG * u;
          let i = e / DC;
          let dd = e % DC;
          var val = 0.0;
          if (i < BQ && q0 + i < Sq && d0 + dd < width) {
            let at = (bh * Sq + q0 + i) * width + d0 + dd;
            if (ph == 0u) { val = q[at]; } else { val = dy[at]; }
          }
          smem[QC + e] = val;
        }
        for (var u = 0u; u < 8u; u++) {
          let e = t + WG * u;
          let j = e / DC;
          let dd = e % DC;
          var val = 0.0;
          if (j0 + j < Sk && d0 + dd < width) {
            let at = (bh * Sk + j0 + j) * width + d0 + dd;
            if (ph == 0u) { val = k[at]; } else { val = v[at]; }
          }
          smem[KV + j * KP + dd] = val;
        }
        workgroupBarrier();
        for (var u = 0u; u < SPT; u++) {
          let e = t + WG * u;
          let i = e / BK;
          let j = e % BK;
          if (i < BQ) {
            var a = 0.0;
            for (var dd = 0u; dd < DC; dd++) { a += smem[QC + i * DC + dd] * smem[KV + j * KP + dd]; }
            if (ph == 0u) { sacc[u] += a; } else { pacc[u] += a; }
          }
        }
      }
    }
    for (var u = 0u; u < SPT; u++) {
      let e = t + WG * u;
      let i = e / BK;
      let j = e % BK;
      if (i < BQ) {
        let s = score(sacc[u], b, h, q0 + i, j0 + j);
        var ds = 0.0;
        if (s > CUT) { ds = scale * exp(s - rL[i]) * (pacc[u] - rD[i]); }
        smem[PS + e] = ds;
      }
    }
    // dQ += dS K over sub-tiles of vk keys
    for (var jj0 = 0u; jj0 < BK; jj0 += vk) {
      let n = min(vk, BK - jj0);
      workgroupBarrier();
      for (var e = t; e < n * D; e += WG) {
        let kj = j0 + jj0 + e / D;
        var val = 0.0;
        if (kj < Sk) { val = k[(bh * Sk + kj) * D + e % D]; }
        smem[KV + e] = val;
      }
      workgroupBarrier();
      for (var u = 0u; u < OPT; u++) {
        let e = t + WG * u;
        if (e < BQ * D) {
          let i = e / D;
          let c = e % D;
          var a = o[u];
          for (var jj = 0u; jj < n; jj++) { a += smem[PS + i * BK + jj0 + jj] * smem[KV + jj * D + c]; }
          o[u] = a;
        }
      }
    }
  }

  for (var u = 0u; u < OPT; u++) {
    let e = t + WG * u;
    if (e < BQ * D && q0 + e / D < Sq) { out[U[4].x + (bh * Sq + q0) * D + e] = o[u]; }
  }
}
