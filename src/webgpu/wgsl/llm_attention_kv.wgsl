// llm_attention_kv.wgsl - attention_kv's keys split over workgroups (flash
// decoding), with the cache append in the same dispatch:
// q[Hq, S, D], k[Hkv, S, D], v[Hkv, S, Dv], k_cache[Hkv, C, D],
// v_cache[Hkv, C, Dv], pos -> out[S, Hq, Dv],
//   out[s, h] = sum_j softmax_j(scale q[h, s] . K[g, j]) V[g, j]
// over keys j = 0 .. pos + s, g = h / (Hq / Hkv), where K[g, j] is
// k_cache[g, j] below pos and this step's k[g, j - pos] from pos on (V the
// same); rows with pos + s >= C (or pos < 0) are zero.
//
// One workgroup of 256 threads per query row (s, h) = (row / Hq, row % Hq)
// and split sp.  The row's n = pos + s + 1 keys go to the splits in ranges
// of per = ceil(n / SPLITS) rounded up to tiles of KT = 32 keys (the merge,
// llm_attention_kv_merge.wgsl, recomputes them from pos); splits past the
// last key and rows past the cache return at once.  Per tile:
//  - scores: 16 lanes per key, 16 keys per pass, 2 passes (lane l reads
//    columns l, l + 16, ..., ND of them, coalesced along the K row); the
//    lanes' partial dot products are added through workgroup memory, one
//    score per thread of the first 32;
//  - tile max and exponentials through workgroup memory;
//  - values: thread t accumulates columns t % 64 + 64 c (NV of them, Dv <=
//    256) over keys t / 64 + 4 u of the tile (u < 8), reading V rows
//    coalesced; the 4 key groups' sums are added at the end.
// All inner loops have constant trip counts and no branches (reads past the
// tile's last key or past D / Dv are clamped, their terms zero or masked),
// so that a compiler unrolls them and issues their loads together; tiles
// wholly below pos read only the caches (no per-key branch).  An online
// softmax (running max and sum) across tiles.  A split writes its
// unnormalized sums to part[(row SPLITS + sp) Dv + i] and (max, sum) to
// part[U[9] + 2 (row SPLITS + sp)]; with DIRECT (one split) it writes the
// normalized row to out (bound as part) instead, zeros for rows past C.
//
// The append: the first split of each group's first query head (h % group
// == 0) also writes this step's row s of kv head g into the caches at
// pos + s (< C).  Every workgroup reads the caches only below pos, so no
// read of this dispatch meets those writes.
//
// ROPE 1 / 2 (attention_kv's rope: NeoX halves / adjacent pairs): q and
// this step's k are rotated where they are read (q[h, s] and k[g, s] at
// position pos + s, with _rope_turns.wgsl's exact angles, as rope_fused.wgsl
// rotates them), so the cache receives rotated keys; the cached keys are
// rotated already.  Heads of up to 128 values (the frequencies' constants
// fill the uniform).
//
// Bindings: 0 q, 1 k, 2 v, 3 k_cache, 4 v_cache (written), 5 pos (i32 [1]),
// 6 part (scratch) or out (DIRECT), 7 uniform.
// Uniform words: 0 Hq, 1 S, 2 D, 3 Dv, 4 C, 5 group (Hq / Hkv), 6 scale
// (f32 bits), 7 SPLITS, 8 workgroups (S Hq SPLITS), 9 (max, sum) offset in
// part, 10-11 unused; with ROPE from 12 on 3 words (a, b, c as f32) per
// frequency i < D/2.

override NV: u32 = 1u;     // value columns per thread: ceil(Dv / 64)
override ND: u32 = 1u;     // key columns per lane: ceil(D / 16)
override DIRECT: u32 = 0u; // one split: write out
override ROPE: u32 = 0u;   // 0 none, 1 NeoX halves, 2 adjacent pairs
const T: u32 = 256u;       // threads
const KT: u32 = 32u;       // keys per tile
const LN: u32 = 16u;       // score lanes per key
const KP: u32 = 16u;       // keys per score pass (T / LN)
const VG: u32 = 4u;        // key groups of the value sums (T / 64)
const LOW: f32 = -3.4028234663852886e38;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<storage, read> pos: array<i32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
@group(0) @binding(7) var<uniform> U: array<vec4<u32>, 51>;

var<workgroup> ps: array<f32, 544>;      // lanes' partial scores [KT keys][17]
var<workgroup> sc: array<vec4<f32>, 8>;  // the tile's scores
var<workgroup> pe: array<vec4<f32>, 8>;  // their exponentials
var<workgroup> red: array<f32, 1024>;    // value sums [VG][256]

//!include _rope_turns.wgsl

fn uw(i: u32) -> u32 { return U[i / 4u][i % 4u]; }

// Element i of a D-wide row rotated at position p (ROPE): v the element,
// w its partner ((i, i +- D/2) or (2f, 2f + 1)).
fn rotate(v: f32, w: f32, i: u32, D: u32, p: u32) -> f32 {
  let half = D / 2u;
  let f = select(i % half, i / 2u, ROPE == 2u);
  let o = 12u + 3u * f;
  let cs = cos_sin_turns(turns(p, bitcast<f32>(uw(o)), bitcast<f32>(uw(o + 1u)), bitcast<f32>(uw(o + 2u))));
  let first = select(i < half, i % 2u == 0u, ROPE == 2u);
  return select(v * cs.x + w * cs.y, v * cs.x - w * cs.y, first);
}

fn partner(i: u32, D: u32) -> u32 {
  if (ROPE == 2u) { return i ^ 1u; }
  return select(i + D / 2u, i - D / 2u, i >= D / 2u);
}

// Element i of the row at b of q (k) at position p, rotated with ROPE.
fn q_at(b: u32, i: u32, D: u32, p: u32) -> f32 {
  if (ROPE == 0u) { return q[b + i]; }
  return rotate(q[b + i], q[b + partner(i, D)], i, D, p);
}

fn k_at(b: u32, i: u32, D: u32, p: u32) -> f32 {
  if (ROPE == 0u) { return k[b + i]; }
  return rotate(k[b + i], k[b + partner(i, D)], i, D, p);
}

// Element i of key j (value j with V) of kv head g: the cache below p0,
// this step's rows from p0 on.
fn key(g: u32, j: u32, i: u32, p0: u32) -> f32 {
  if (j < p0) { return kc[(g * U[1].x + j) * U[0].z + i]; }
  return k_at((g * U[0].y + j - p0) * U[0].z, i, U[0].z, j);
}

fn value(g: u32, j: u32, i: u32, p0: u32) -> f32 {
  if (j < p0) { return vc[(g * U[1].x + j) * U[0].w + i]; }
  return v[(g * U[0].y + j - p0) * U[0].w + i];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let wg = wid.x + wid.y * nwg.x;
  if (wg >= U[2].x) { return; }
  let Hq = U[0].x;
  let S = U[0].y;
  let D = U[0].z;
  let Dv = U[0].w;
  let C = U[1].x;
  let splits = U[1].w;
  let row = wg / splits;
  let sp = wg % splits;
  let s = row / Hq;
  let h = row % Hq;
  let p = pos[0];
  if (p < 0 || u32(p) + s >= C) {
    if (DIRECT == 1u && t < Dv) { part[row * Dv + t] = 0.0; }
    return;
  }
  let p0 = u32(p);
  let n = p0 + s + 1u;
  let per = ((n + splits - 1u) / splits + KT - 1u) / KT * KT;
  let j_begin = sp * per;
  if (j_begin >= n) { return; }
  let j_end = min(n, j_begin + per);
  let g = h / U[1].y;
  // the append: this step's row s of kv head g, by the first split of the
  // group's first query head; loaded now, stored at the end
  let appends = sp == 0u && h % U[1].y == 0u;
  var kr = 0.0;
  var vr = 0.0;
  if (appends) {
    if (t < D) { kr = k_at((g * S + s) * D, t, D, p0 + s); }
    if (t < Dv) { vr = v[(g * S + s) * Dv + t]; }
  }
  let lane = t % LN;
  let kg = t / LN;
  let col = t % 64u;
  let vq = t / 64u;
  let scale = bitcast<f32>(U[1].z);
  var qr: array<f32, 16>;
  for (var r = 0u; r < ND; r++) {
    let i = lane + LN * r;
    qr[r] = 0.0;
    if (i < D) { qr[r] = q_at((h * S + s) * D, i, D, p0 + s) * scale; }
  }
  var acc = vec4<f32>(0.0); // columns col, col + 64, col + 128, col + 192
  var mx = LOW;
  var sum = 0.0;
  for (var j0 = j_begin; j0 < j_end; j0 += KT) {
    let nk = min(KT, j_end - j0);
    let cached = j0 + KT <= p0; // the whole tile in the caches, all keys valid
    if (cached) {
      for (var m = 0u; m < KT / KP; m++) {
        let base = (g * C + j0 + KP * m + kg) * D;
        var d = 0.0;
        for (var r = 0u; r < ND; r++) { d += qr[r] * kc[base + min(lane + LN * r, D - 1u)]; }
        ps[(KP * m + kg) * 17u + lane] = d;
      }
    } else {
      for (var m = 0u; m < KT / KP; m++) {
        let jj = KP * m + kg;
        var d = 0.0; // keys past the tile read its last key (masked below)
        for (var r = 0u; r < ND; r++) { d += qr[r] * key(g, j0 + min(jj, nk - 1u), min(lane + LN * r, D - 1u), p0); }
        ps[jj * 17u + lane] = d;
      }
    }
    workgroupBarrier();
    if (t < KT) {
      var score = 0.0;
      for (var l = 0u; l < LN; l++) { score += ps[t * 17u + l]; }
      sc[t / 4u][t % 4u] = select(LOW, score, t < nk);
    }
    workgroupBarrier();
    var tmax = LOW;
    for (var r = 0u; r < KT / 4u; r++) {
      let m4 = sc[r];
      tmax = max(tmax, max(max(m4.x, m4.y), max(m4.z, m4.w)));
    }
    let new_max = max(mx, tmax);
    let corr = exp(mx - new_max);
    if (t < KT) { pe[t / 4u][t % 4u] = exp(sc[t / 4u][t % 4u] - new_max); }
    workgroupBarrier();
    sum *= corr;
    acc *= corr;
    for (var r = 0u; r < KT / 4u; r++) {
      let e4 = pe[r];
      sum += (e4.x + e4.y) + (e4.z + e4.w);
    }
    // keys vq + VG u: exponential pe[u][vq], 0 past the last key
    if (cached) {
      for (var u = 0u; u < KT / VG; u++) {
        let e = pe[u][vq];
        let base = (g * C + j0 + VG * u + vq) * Dv;
        for (var c = 0u; c < NV; c++) { acc[c] += e * vc[base + min(col + 64u * c, Dv - 1u)]; }
      }
    } else {
      for (var u = 0u; u < KT / VG; u++) {
        let e = pe[u][vq];
        let j = j0 + min(VG * u + vq, nk - 1u);
        for (var c = 0u; c < NV; c++) { acc[c] += e * value(g, j, min(col + 64u * c, Dv - 1u), p0); }
      }
    }
    mx = new_max;
  }
  for (var c = 0u; c < NV; c++) { red[vq * 256u + col + 64u * c] = acc[c]; }
  workgroupBarrier();
  let slot = row * splits + sp;
  if (t < Dv) {
    let o = (red[t] + red[256u + t]) + (red[512u + t] + red[768u + t]);
    if (DIRECT == 1u) { part[row * Dv + t] = o / sum; } else { part[slot * Dv + t] = o; }
  }
  if (DIRECT == 0u && t == 0u) {
    part[U[2].y + 2u * slot] = mx;
    part[U[2].y + 2u * slot + 1u] = sum;
  }
  if (appends) {
    if (t < D) { kc[(g * C + p0 + s) * D + t] = kr; }
    if (t < Dv) { vc[(g * C + p0 + s) * Dv + t] = vr; }
  }
}
