// llm_attention_kv.wgsl - attention_kv's keys split over workgroups (flash
// decoding), with the cache append in the same dispatch:
// q[Hq, S, D], k[Hkv, S, D], v[Hkv, S, Dv], k_cache[Hkv, C, D],
// v_cache[Hkv, C, Dv], pos -> out[S, Hq, Dv],
//   out[s, h] = sum_j softmax_j(scale q[h, s] . K[g, j]) V[g, j]
// over keys j = 0 .. pos + s, g = h / (Hq / Hkv), where K[g, j] is
// k_cache[g, j] below pos and this step's k[g, j - pos] from pos on (V the
// same); rows with pos + s >= C (or pos < 0) are zero.
//
// One workgroup per query row (s, h) = (row / Hq, row % Hq) and split sp.
// The row's n = pos + s + 1 keys go to the splits in ranges of per =
// ceil(n / SPLITS) rounded up to tiles of 64 keys (the merge,
// llm_attention_kv_merge.wgsl, recomputes them from pos); splits past the
// last key and rows past the cache return at once.  Per tile of 64 keys,
// scores: 16 lanes per key, 4 keys at a time (coalesced reads of K rows,
// ND per lane), the lanes' partial dot products added through workgroup
// memory, one score per thread; tile max and exponentials through
// workgroup memory; then thread t accumulates value columns t, t + 64, ...
// (NV of them, Dv <= 256) over the tile's keys, reading V rows coalesced.
// Both loops go in blocks of 32 keys without branches (reads past the
// tile's last key or past D are clamped to it, their terms zero or
// masked), so that a GPU compiler issues a block's loads together.  An
// online softmax (running max and sum) across tiles.  A split writes its
// unnormalized sums to part[(row SPLITS + sp) Dv + i] and (max, sum) to
// part[U[9] + 2 (row SPLITS + sp)]; with DIRECT (one split) it writes the
// normalized row to out (bound as part) instead, zeros for rows past C.
//
// The append: the first split of each group's first query head (h % group
// == 0) also writes this step's row s of kv head g into the caches at
// pos + s (< C).  Every workgroup reads the caches only below pos, so no
// read of this dispatch meets those writes.
//
// Bindings: 0 q, 1 k, 2 v, 3 k_cache, 4 v_cache (written), 5 pos (i32 [1]),
// 6 part (scratch) or out (DIRECT), 7 uniform.
// Uniform words: 0 Hq, 1 S, 2 D, 3 Dv, 4 C, 5 group (Hq / Hkv), 6 scale
// (f32 bits), 7 SPLITS, 8 workgroups (S Hq SPLITS), 9 (max, sum) offset in
// part.

override NV: u32 = 1u;     // value columns per thread: ceil(Dv / 64)
override ND: u32 = 1u;     // key columns per lane: ceil(D / 16)
override DIRECT: u32 = 0u; // one split: write out
const T: u32 = 64u;        // threads; keys per tile
const LOW: f32 = -3.4028234663852886e38;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<storage, read> pos: array<i32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
@group(0) @binding(7) var<uniform> U: array<vec4<u32>, 3>;

var<workgroup> ps: array<f32, 1088>;     // lanes' partial scores [64 keys][17]
var<workgroup> sc: array<vec4<f32>, 16>; // the tile's scores
var<workgroup> pe: array<vec4<f32>, 16>; // their exponentials

// Element i of key j (value j with V) of kv head g: the cache below p0,
// this step's rows from p0 on.
fn key(g: u32, j: u32, i: u32, p0: u32) -> f32 {
  if (j < p0) { return kc[(g * U[1].x + j) * U[0].z + i]; }
  return k[(g * U[0].y + j - p0) * U[0].z + i];
}

fn value(g: u32, j: u32, i: u32, p0: u32) -> f32 {
  if (j < p0) { return vc[(g * U[1].x + j) * U[0].w + i]; }
  return v[(g * U[0].y + j - p0) * U[0].w + i];
}

@compute @workgroup_size(64)
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
    if (DIRECT == 1u) {
      for (var i = t; i < Dv; i += T) { part[row * Dv + i] = 0.0; }
    }
    return;
  }
  let p0 = u32(p);
  let n = p0 + s + 1u;
  let per = ((n + splits - 1u) / splits + T - 1u) / T * T;
  let j_begin = sp * per;
  if (j_begin >= n) { return; }
  let j_end = min(n, j_begin + per);
  let g = h / U[1].y;
  // the append: this step's row s of kv head g, by the first split of the
  // group's first query head; loaded now, stored at the end
  let appends = sp == 0u && h % U[1].y == 0u;
  var kr = vec4<f32>(0.0);
  var vr = vec4<f32>(0.0);
  if (appends) {
    for (var c = 0u; c < 4u; c++) {
      let i = t + T * c;
      if (i < D) { kr[c] = k[(g * S + s) * D + i]; }
      if (i < Dv) { vr[c] = v[(g * S + s) * Dv + i]; }
    }
  }
  // lane l of key group kg reads columns l, l + 16, ... of keys 4 m + kg
  let lane = t % 16u;
  let kg = t / 16u;
  let scale = bitcast<f32>(U[1].z);
  var qr: array<f32, 16>;
  for (var r = 0u; r < ND; r++) {
    let i = lane + 16u * r;
    qr[r] = 0.0;
    if (i < D) { qr[r] = q[(h * S + s) * D + i] * scale; }
  }
  var acc = vec4<f32>(0.0); // columns t, t + 64, t + 128, t + 192
  var mx = LOW;
  var sum = 0.0;
  for (var j0 = j_begin; j0 < j_end; j0 += T) {
    let nk = min(T, j_end - j0);
    for (var b = 0u; b < nk; b += 32u) { // blocks of 32 keys: no branch, the loads unroll
      for (var m = 0u; m < 8u; m++) {
        let jj = b + 4u * m + kg;
        var d = 0.0; // rows past the tile read its last key (masked below)
        for (var r = 0u; r < ND; r++) { d += qr[r] * key(g, j0 + min(jj, nk - 1u), min(lane + 16u * r, D - 1u), p0); }
        ps[jj * 17u + lane] = d;
      }
    }
    workgroupBarrier();
    var score = 0.0;
    for (var l = 0u; l < 16u; l++) { score += ps[t * 17u + l]; }
    score = select(LOW, score, t < nk);
    sc[t / 4u][t % 4u] = score;
    workgroupBarrier();
    var tmax = LOW;
    for (var r = 0u; r < T / 4u; r++) {
      let m4 = sc[r];
      tmax = max(tmax, max(max(m4.x, m4.y), max(m4.z, m4.w)));
    }
    let new_max = max(mx, tmax);
    let corr = exp(mx - new_max);
    pe[t / 4u][t % 4u] = exp(score - new_max);
    workgroupBarrier();
    sum *= corr;
    acc *= corr;
    for (var b = 0u; b < nk; b += 32u) {
      for (var m = 0u; m < 8u; m++) {
        let e4 = pe[b / 4u + m];
        sum += (e4.x + e4.y) + (e4.z + e4.w);
        for (var u = 0u; u < 4u; u++) {
          let j = j0 + min(b + 4u * m + u, nk - 1u); // e4[u] is 0 past the last key
          for (var c = 0u; c < NV; c++) { acc[c] += e4[u] * value(g, j, min(t + T * c, Dv - 1u), p0); }
        }
      }
    }
    mx = new_max;
  }
  let slot = row * splits + sp;
  for (var c = 0u; c < NV; c++) {
    let i = t + T * c;
    if (i < Dv) {
      if (DIRECT == 1u) { part[row * Dv + i] = acc[c] / sum; } else { part[slot * Dv + i] = acc[c]; }
    }
  }
  if (DIRECT == 0u && t == 0u) {
    part[U[2].y + 2u * slot] = mx;
    part[U[2].y + 2u * slot + 1u] = sum;
  }
  if (appends) {
    for (var c = 0u; c < 4u; c++) {
      let i = t + T * c;
      if (i < D) { kc[(g * C + p0 + s) * D + i] = kr[c]; }
      if (i < Dv) { vc[(g * C + p0 + s) * Dv + i] = vr[c]; }
    }
  }
}
