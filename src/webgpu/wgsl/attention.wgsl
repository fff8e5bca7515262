// attention.wgsl - scaled dot-product attention, flash style, with every
// mask kind: q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv] -> y[B,H,Sq,Dv].
//
// One workgroup of 128 threads per (batch, head, block of BQ = 16 RPT query
// rows, key split).  Thread t owns rows ty RPT .. ty RPT + RPT - 1 (ty =
// t / 8) of the block and, per 32-key tile, keys tx 4 .. tx 4 + 3 (tx = t % 8)
// and value columns cg 32 + tx 4 .. + 3 for cg < NC.  The block walks the
// union of its rows' key ranges (causal and sliding masks narrow it; a key
// split narrows it further) in tiles of 32 keys:
//   scores   S = Q K^T over D in chunks of DC, both chunks transposed in
//            workgroup memory so a thread reads its RPT rows and 4 keys as
//            vectors: an RPT x 4 register tile;
//   mask     scale, causal/sliding range, padding, additive bias;
//   softmax  online: the row max over the tile meets through workgroup
//            memory (8 partials per row); each thread rescales its own
//            accumulators and keeps its own part of the row sum l;
//   output   O += P V with P^T in workgroup memory and V in sub-tiles of
//            2048 / DvP keys: an RPT x 4 NC register tile (DvP = 32 NC >= Dv).
// Masked scores (and -inf biases) never enter exp: they are kept as values
// below -1e38, and a row that sees no key outputs zeros (as
// src/cpu/k_attention.c).
//
// MODE 0 writes y.  MODE 1 serves attention_grad (lower_attention.c):
// per query row L = m + log(l) (3e38 when the row sees nothing, so that
// exp(s - L) is 0) and Delta = sum_e y[e] dy[e] go to out[row],
// out[rows + row].  MODE 2 (a key split of a long, narrow attention, e.g.
// decoding) writes the unnormalized O of its split to
// out[(row * splits + split) * Dv + e] and (m, l) to out[U[17] + 2 (row *
// splits + split)]; attention_combine.wgsl merges the splits.  In MODE 0
// and 2 `dy` is an unused placeholder binding; `mask` is one for mask kinds
// without a tensor.
//
// Uniform words: 0 B, 1 H, 2 Sq, 3 Sk, 4 D, 5 Dv, 6 mask kind, 7 window,
// 8 scale (f32), 9 query blocks per head, 10..13 bias strides (b, h, i, j),
// 14 workgroups, 15 B * H * Sq, 16 key splits, 17 (m, l) offset (MODE 2),
// 18 keys per split (a multiple of 32).

override RPT: u32 = 4u;   // query rows per thread: 1, 2 or 4 (BQ = 16 RPT)
override NC: u32 = 2u;    // value column groups of 32 per thread; RPT * NC <= 8, or RPT 1 and NC <= 16
override MODE: u32 = 0u;
const WG: u32 = 128u;
const BK: u32 = 32u;      // keys per tile
override DC: u32 = 16u;   // D chunk: min(32, 1024 / BQ)
const KT: u32 = 1024u;    // float offset of the K chunk in A (after the Q chunk)
const A_FLOATS: u32 = 2048u;
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

// A: Q chunk^T [DC][BQ] and K chunk^T [DC][32]; then row partials [BQ][8];
// then a V sub-tile [VK][DvP].  PT: P^T [32][BQ].  16 KiB together.
var<workgroup> A: array<vec4<f32>, 512>;
var<workgroup> PT: array<vec4<f32>, 512>;

fn a_set(i: u32, x: f32) { A[i >> 2u][i & 3u] = x; }
fn a_get(i: u32) -> f32 { return A[i >> 2u][i & 3u]; }

// RPT consecutive floats of A (or PT) from i (i a multiple of RPT).
fn a_rows(i: u32) -> vec4<f32> {
  if (RPT == 4u) { return A[i >> 2u]; }
  if (RPT == 2u) {
    let x = A[i >> 2u];
    if ((i & 2u) == 0u) { return vec4<f32>(x.xy, 0.0, 0.0); }
    return vec4<f32>(x.zw, 0.0, 0.0);
  }
  return vec4<f32>(A[i >> 2u][i & 3u], 0.0, 0.0, 0.0);
}
fn pt_rows(i: u32) -> vec4<f32> {
  if (RPT == 4u) { return PT[i >> 2u]; }
  if (RPT == 2u) {
    let x = PT[i >> 2u];
    if ((i & 2u) == 0u) { return vec4<f32>(x.xy, 0.0, 0.0); }
    return vec4<f32>(x.zw, 0.0, 0.0);
  }
  return vec4<f32>(PT[i >> 2u][i & 3u], 0.0, 0.0, 0.0);
}

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
  let splits = U[4].x;
  let BQ = 16u * RPT;
  let DvP = 32u * NC;
  let VK = A_FLOATS / DvP;
  let sp = lin % splits;
  let blk = lin / splits;
  let bh = blk / nqb;
  let b = bh / H;
  let h = bh % H;
  let q0 = (blk % nqb) * BQ;
  let tx = t % 8u;
  let ty = t / 8u;
  let r0 = ty * RPT; // first row of this thread in the block

  let q_last = min(q0 + BQ, Sq) - 1u;
  var ulo = key_range(q0).x;
  var uhi = max(key_range(q_last).y, ulo);
  if (splits > 1u) {
    ulo = max(ulo, sp * U[4].z);
    uhi = max(min(uhi, (sp + 1u) * U[4].z), ulo);
  }

  var m: array<f32, 4>;
  var l: array<f32, 4>;
  var o: array<f32, 64>;
  for (var r = 0u; r < 4u; r++) {
    m[r] = LOW;
    l[r] = 0.0;
  }
  for (var x = 0u; x < RPT * NC * 4u; x++) { o[x] = 0.0; }

  for (var j0 = ulo; j0 < uhi; j0 += BK) {
    // scores: RPT x 4 tile
    var s: array<f32, 16>;
    for (var x = 0u; x < 16u; x++) { s[x] = 0.0; }
    for (var d0 = 0u; d0 < D; d0 += DC) {
      workgroupBarrier();
      for (var e = t; e < BQ * DC; e += WG) {
        let i = e / DC;
        let dd = e % DC;
        var val = 0.0;
        if (q0 + i < Sq && d0 + dd < D) { val = q[(bh * Sq + q0 + i) * D + d0 + dd]; }
        a_set(dd * BQ + i, val);
      }
      for (var e = t; e < BK * DC; e += WG) {
        let j = e / DC;
        let dd = e % DC;
        var val = 0.0;
        if (j0 + j < Sk && d0 + dd < D) { val = k[(bh * Sk + j0 + j) * D + d0 + dd]; }
        a_set(KT + dd * BK + j, val);
      }
      workgroupBarrier();
      for (var dd = 0u; dd < DC; dd++) {
        let qv = a_rows(dd * BQ + r0);
        let kv = A[(KT + dd * BK) / 4u + tx];
        for (var r = 0u; r < RPT; r++) {
          s[r * 4u + 0u] += qv[r] * kv.x;
          s[r * 4u + 1u] += qv[r] * kv.y;
          s[r * 4u + 2u] += qv[r] * kv.z;
          s[r * 4u + 3u] += qv[r] * kv.w;
        }
      }
    }
    // mask, then the row max over the tile through A
    var pm: array<f32, 4>;
    for (var r = 0u; r < RPT; r++) {
      pm[r] = LOW;
      for (var c = 0u; c < 4u; c++) {
        let kj = j0 + tx * 4u + c;
        var sc = MASKED; // keys past the block's range may belong to the next split
        if (kj < uhi) { sc = score(s[r * 4u + c], b, h, q0 + r0 + r, kj); }
        s[r * 4u + c] = sc;
        if (sc > CUT) { pm[r] = max(pm[r], sc); }
      }
    }
    workgroupBarrier();
    for (var r = 0u; r < RPT; r++) { a_set((r0 + r) * 8u + tx, pm[r]); }
    workgroupBarrier();
    for (var r = 0u; r < RPT; r++) {
      var mt = LOW;
      for (var x = 0u; x < 8u; x++) { mt = max(mt, a_get((r0 + r) * 8u + x)); }
      let m_new = max(m[r], mt);
      let alpha = exp(m[r] - m_new);
      m[r] = m_new;
      var ps = 0.0;
      for (var c = 0u; c < 4u; c++) {
        var p = 0.0;
        if (s[r * 4u + c] > CUT) { p = exp(s[r * 4u + c] - m_new); }
        ps += p;
        let at = (tx * 4u + c) * BQ + r0 + r;
        PT[at >> 2u][at & 3u] = p;
      }
      l[r] = l[r] * alpha + ps;
      for (var x = 0u; x < NC * 4u; x++) { o[r * NC * 4u + x] *= alpha; }
    }
    // O += P V over sub-tiles of VK keys
    for (var jj0 = 0u; jj0 < BK; jj0 += VK) {
      let n = min(VK, BK - jj0);
      workgroupBarrier();
      for (var e = t; e < n * DvP; e += WG) {
        let jj = e / DvP;
        let col = e % DvP;
        let kj = j0 + jj0 + jj;
        var val = 0.0;
        if (kj < Sk && col < Dv) { val = v[(bh * Sk + kj) * Dv + col]; }
        a_set(e, val);
      }
      workgroupBarrier();
      for (var jj = 0u; jj < n; jj++) {
        let pv = pt_rows((jj0 + jj) * BQ + r0);
        for (var cg = 0u; cg < NC; cg++) {
          let vv = A[(jj * DvP + cg * 32u) / 4u + tx];
          for (var r = 0u; r < RPT; r++) {
            let at = (r * NC + cg) * 4u;
            o[at + 0u] += pv[r] * vv.x;
            o[at + 1u] += pv[r] * vv.y;
            o[at + 2u] += pv[r] * vv.z;
            o[at + 3u] += pv[r] * vv.w;
          }
        }
      }
    }
  }

  // the row sums: each thread holds its keys' part
  workgroupBarrier();
  for (var r = 0u; r < RPT; r++) { a_set((r0 + r) * 8u + tx, l[r]); }
  workgroupBarrier();
  var lt: array<f32, 4>;
  for (var r = 0u; r < RPT; r++) {
    var sum = 0.0;
    for (var x = 0u; x < 8u; x++) { sum += a_get((r0 + r) * 8u + x); }
    lt[r] = sum;
  }

  if (MODE == 2u) {
    for (var r = 0u; r < RPT; r++) {
      let qi = q0 + r0 + r;
      if (qi < Sq) {
        let slot = (bh * Sq + qi) * splits + sp;
        for (var cg = 0u; cg < NC; cg++) {
          for (var c = 0u; c < 4u; c++) {
            let col = cg * 32u + tx * 4u + c;
            if (col < Dv) { out[slot * Dv + col] = o[(r * NC + cg) * 4u + c]; }
          }
        }
        if (tx == 0u) {
          out[U[4].y + 2u * slot] = m[r];
          out[U[4].y + 2u * slot + 1u] = lt[r];
        }
      }
    }
  } else if (MODE == 0u) {
    for (var r = 0u; r < RPT; r++) {
      let qi = q0 + r0 + r;
      if (qi < Sq) {
        var inv = 0.0;
        if (lt[r] > 0.0) { inv = 1.0 / lt[r]; }
        for (var cg = 0u; cg < NC; cg++) {
          for (var c = 0u; c < 4u; c++) {
            let col = cg * 32u + tx * 4u + c;
            if (col < Dv) { out[(bh * Sq + qi) * Dv + col] = o[(r * NC + cg) * 4u + c] * inv; }
          }
        }
      }
    }
  } else {
    // Delta = y . dy per row: partials over this thread's columns, then A
    var dl: array<f32, 4>;
    for (var r = 0u; r < RPT; r++) {
      let qi = q0 + r0 + r;
      dl[r] = 0.0;
      if (qi < Sq && lt[r] > 0.0) {
        let inv = 1.0 / lt[r];
        for (var cg = 0u; cg < NC; cg++) {
          for (var c = 0u; c < 4u; c++) {
            let col = cg * 32u + tx * 4u + c;
            if (col < Dv) { dl[r] += o[(r * NC + cg) * 4u + c] * inv * dy[(bh * Sq + qi) * Dv + col]; }
          }
        }
      }
    }
    workgroupBarrier();
    for (var r = 0u; r < RPT; r++) { a_set((r0 + r) * 8u + tx, dl[r]); }
    workgroupBarrier();
    if (tx == 0u) {
      for (var r = 0u; r < RPT; r++) {
        let qi = q0 + r0 + r;
        if (qi < Sq) {
          var delta = 0.0;
          for (var x = 0u; x < 8u; x++) { delta += a_get((r0 + r) * 8u + x); }
          var L = 3.0e38;
          if (lt[r] > 0.0) { L = m[r] + log(lt[r]); }
          out[bh * Sq + qi] = L;
          out[U[3].w + bh * Sq + qi] = delta;
        }
      }
    }
  }
}
