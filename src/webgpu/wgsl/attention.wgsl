// attention.wgsl - scaled dot-product attention, flash style, with every
// mask kind: q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv] -> y[B,H,Sq,Dv].
//
// One workgroup of 128 threads per (batch, head, block of BQ query rows).
// The block walks the union of its rows' key ranges (causal and sliding
// masks narrow it) in tiles of 32 keys:
//   scores   S[BQ, 32] = Q K^T over D in chunks of 32 (Q and K chunks in
//            workgroup memory, each thread owning SPT scores in registers),
//            then scale, padding mask, additive bias;
//   softmax  online: per row the running max m and sum l (threads < BQ),
//            P = exp(S - m) in workgroup memory, the old accumulators
//            rescaled by exp(m_old - m_new);
//   output   O[BQ, Dv] += P V, V read in sub-tiles of VK keys, each thread
//            owning OPT outputs in registers.
// At the end O / l is written (0 for a row that sees no key: an empty
// causal/sliding range, an all-zero padding row or a bias of -inf
// everywhere, as src/cpu/k_attention.c).  Masked scores (and -inf biases)
// never enter exp: they are kept as values below -1e38.
//
// MODE 1 serves attention_grad (lower_attention.c): instead of y it writes
// per query row L = m + log(l) (3e38 for a row that sees nothing, so that
// exp(s - L) is 0) and Delta = sum_e O[e] dy[e] into stats[row] and
// stats[rows + row].  In MODE 0 `dy` is an unused placeholder binding;
// `mask` is one for mask kinds without a tensor.
//
// Uniform words: 0 B, 1 H, 2 Sq, 3 Sk, 4 D, 5 Dv, 6 mask kind, 7 window,
// 8 scale (f32), 9 query blocks per head, 10..13 bias strides (b, h, i, j),
// 14 workgroups, 15 B * H * Sq, 16 BQ (query rows per block: 1, 2, 4, 8,
// 16 or 32; a uniform rather than an override, so that one pipeline serves
// every head size).

const OPT: u32 = 16u; // outputs per thread (at most; ceil(BQ * Dv / 128) are used)
override MODE: u32 = 0u;
const WG: u32 = 128u;
const BK: u32 = 32u;      // keys per tile
const DC: u32 = 32u;      // D chunk
const KP: u32 = 33u;      // padded K chunk row (no bank conflicts)
const SPT: u32 = 8u;      // scores per thread (at most; BQ * BK / 128 are used)
const QC: u32 = 0u;       // workgroup memory: Q chunk [BQ][DC]
const KV: u32 = 1024u;    //   K chunk [BK][KP] / V sub-tile [VK][Dv] (1536 floats)
const PS: u32 = 2560u;    //   scores / probabilities [BQ][BK]
const KV_FLOATS: u32 = 1536u;
const LOW: f32 = -3.402823e38;
const MASKED: f32 = -3.0e38;
const CUT: f32 = -1.0e38; // scores below this are masked

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<uniform> U: array<vec4<u32>, 5>;

var<workgroup> smem: array<f32, 3584>;
var<workgroup> rm: array<f32, 32>;
var<workgroup> rl: array<f32, 32>;
var<workgroup> ra: array<f32, 32>;

// Keys [lo, hi) that query i may see before padding and bias.
fn key_range(i: u32) -> vec2<u32> {
  let Sq = i32(U[0].z);
  let Sk = i32(U[0].w);
  let kind = U[1].z;
  var lo = 0;
  var hi = Sk;
  if (kind == 1u || kind == 2u) {
    let last = i32(i) + Sk - Sq;
    hi = min(hi, last + 1);
    if (kind == 2u) { lo = max(lo, last - i32(U[1].w) + 1); }
  }
  hi = max(hi, 0);
  lo = min(lo, hi);
  return vec2<u32>(u32(lo), u32(hi));
}

// The masked, scaled score of query qi against key kj, from the dot product.
fn score(dot: f32, b: u32, h: u32, qi: u32, kj: u32) -> f32 {
  let r = key_range(qi);
  if (qi >= U[0].z || kj < r.x || kj >= r.y) { return MASKED; }
  var s = dot * bitcast<f32>(U[2].x);
  let kind = U[1].z;
  if (kind == 3u) {
    if (mask[b * U[0].w + kj] == 0.0) { return MASKED; }
  } else if (kind == 4u) {
    s += mask[b * U[2].z + h * U[2].w + qi * U[3].x + kj * U[3].y];
  }
  return s;
}

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
  let BQ = U[4].x;
  let bh = lin / nqb;
  let b = bh / H;
  let h = bh % H;
  let q0 = (lin % nqb) * BQ;
  let q_last = min(q0 + BQ, Sq) - 1u;
  let ulo = key_range(q0).x;
  let uhi = max(key_range(q_last).y, ulo);
  let vk = min(BK, KV_FLOATS / Dv);

  if (t < BQ) {
    rm[t] = LOW;
    rl[t] = 0.0;
  }
  var o: array<f32, 16>;
  for (var u = 0u; u < OPT; u++) { o[u] = 0.0; }

  for (var j0 = ulo; j0 < uhi; j0 += BK) {
    // scores
    var acc: array<f32, 8>;
    for (var u = 0u; u < SPT; u++) { acc[u] = 0.0; }
    for (var d0 = 0u; d0 < D; d0 += DC) {
      workgroupBarrier();
      for (var u = 0u; u < SPT; u++) {
        let e = t + WG * u;
        let i = e / DC;
        let dd = e % DC;
        var val = 0.0;
        if (i < BQ && q0 + i < Sq && d0 + dd < D) { val = q[(bh * Sq + q0 + i) * D + d0 + dd]; }
        smem[QC + e] = val;
      }
      for (var u = 0u; u < 8u; u++) {
        let e = t + WG * u;
        let j = e / DC;
        let dd = e % DC;
        var val = 0.0;
        if (j0 + j < Sk && d0 + dd < D) { val = k[(bh * Sk + j0 + j) * D + d0 + dd]; }
        smem[KV + j * KP + dd] = val;
      }
      workgroupBarrier();
      for (var u = 0u; u < SPT; u++) {
        let e = t + WG * u;
        let i = e / BK;
        let j = e % BK;
        if (i < BQ) {
          var a = acc[u];
          for (var dd = 0u; dd < DC; dd++) { a += smem[QC + i * DC + dd] * smem[KV + j * KP + dd]; }
          acc[u] = a;
        }
      }
    }
    for (var u = 0u; u < SPT; u++) {
      let e = t + WG * u;
      let i = e / BK;
      let j = e % BK;
      if (i < BQ) { smem[PS + e] = score(acc[u], b, h, q0 + i, j0 + j); }
    }
    workgroupBarrier();
    // online softmax, one thread per row
    if (t < BQ) {
      var mx = LOW;
      for (var j = 0u; j < BK; j++) {
        let s = smem[PS + t * BK + j];
        if (s > CUT) { mx = max(mx, s); }
      }
      let m_old = rm[t];
      let m_new = max(m_old, mx);
      let alpha = exp(m_old - m_new);
      var sum = 0.0;
      for (var j = 0u; j < BK; j++) {
        let s = smem[PS + t * BK + j];
        var p = 0.0;
        if (s > CUT) { p = exp(s - m_new); }
        smem[PS + t * BK + j] = p;
        sum += p;
      }
      rl[t] = rl[t] * alpha + sum;
      ra[t] = alpha;
      rm[t] = m_new;
    }
    workgroupBarrier();
    for (var u = 0u; u < OPT; u++) {
      let e = t + WG * u;
      if (e < BQ * Dv) { o[u] *= ra[e / Dv]; }
    }
    // O += P V over sub-tiles of vk keys
    for (var jj0 = 0u; jj0 < BK; jj0 += vk) {
      let n = min(vk, BK - jj0);
      workgroupBarrier();
      for (var e = t; e < n * Dv; e += WG) {
        let kj = j0 + jj0 + e / Dv;
        var val = 0.0;
        if (kj < Sk) { val = v[(bh * Sk + kj) * Dv + e % Dv]; }
        smem[KV + e] = val;
      }
      workgroupBarrier();
      for (var u = 0u; u < OPT; u++) {
        let e = t + WG * u;
        if (e < BQ * Dv) {
          let i = e / Dv;
          let c = e % Dv;
          var a = o[u];
          for (var jj = 0u; jj < n; jj++) { a += smem[PS + i * BK + jj0 + jj] * smem[KV + jj * Dv + c]; }
          o[u] = a;
        }
      }
    }
  }

  workgroupBarrier();
  if (MODE == 0u) {
    for (var u = 0u; u < OPT; u++) {
      let e = t + WG * u;
      let i = e / Dv;
      if (e < BQ * Dv && q0 + i < Sq) {
        let l = rl[i];
        var val = 0.0;
        if (l > 0.0) { val = o[u] / l; }
        out[(bh * Sq + q0) * Dv + e] = val;
      }
    }
  } else {
    // O tile into workgroup memory, then per row L and Delta
    for (var u = 0u; u < OPT; u++) {
      let e = t + WG * u;
      if (e < BQ * Dv) {
        let l = rl[e / Dv];
        var val = 0.0;
        if (l > 0.0) { val = o[u] / l; }
        smem[e] = val;
      }
    }
    workgroupBarrier();
    if (t < BQ && q0 + t < Sq) {
      let row = bh * Sq + q0 + t;
      var delta = 0.0;
      for (var c = 0u; c < Dv; c++) { delta += smem[t * Dv + c] * dy[row * Dv + c]; }
      let l = rl[t];
      var L = 3.0e38;
      if (l > 0.0) { L = rm[t] + log(l); }
      out[row] = L;
      out[U[3].w + row] = delta;
    }
  }
}
