// llm_attention_kv.wgsl - causal attention over the KV cache (after
// llm_kv_append.wgsl wrote this step's rows): q[Hq, S, D],
// k_cache[Hkv, C, D], v_cache[Hkv, C, Dv], pos -> out[S, Hq, Dv],
//   out[s, h] = sum_j softmax_j(scale q[h, s] . k_cache[g, j]) v_cache[g, j]
// over keys j = 0 .. pos + s, g = h / (Hq / Hkv); rows with pos + s >= C
// (or pos < 0) are zero.  One workgroup per (s, h): the scaled query in
// workgroup memory, keys in tiles of 64 (one score per thread), an online
// softmax (running max and sum) whose rescaled accumulators each thread
// keeps for its value columns i = t, t + 64, ... (Dv <= 256).
//
// Bindings: 0 q, 1 k_cache, 2 v_cache, 3 pos (i32 [1]), 4 out, 5 uniform.
// Uniform words: 0 Hq, 1 S, 2 D, 3 Dv, 4 C, 5 group (Hq / Hkv), 6 scale
// (f32 bits).

const T: u32 = 64u;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> kc: array<f32>;
@group(0) @binding(2) var<storage, read> vc: array<f32>;
@group(0) @binding(3) var<storage, read> pos: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> qs: array<f32, 256>;
var<workgroup> sc: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let Hq = U[0].x;
  let S = U[0].y;
  let D = U[0].z;
  let Dv = U[0].w;
  let C = U[1].x;
  let scale = bitcast<f32>(U[1].z);
  let g = wid.x + wid.y * nwg.x;
  if (g >= S * Hq) { return; } // the whole workgroup
  let s = g / Hq;
  let h = g % Hq;
  let kvh = h / U[1].y;
  let o = (s * Hq + h) * Dv;
  let p0 = pos[0];
  if (p0 < 0 || u32(p0) + s >= C) {
    for (var i = t; i < Dv; i += T) { out[o + i] = 0.0; }
    return;
  }
  let n_keys = u32(p0) + s + 1u;
  for (var i = t; i < D; i += T) { qs[i] = q[(h * S + s) * D + i] * scale; }
  workgroupBarrier();
  var acc = vec4<f32>(0.0); // columns t, t + 64, t + 128, t + 192
  var mx = -3.4028234663852886e38;
  var sum = 0.0;
  let kb = kvh * C;
  for (var j0 = 0u; j0 < n_keys; j0 += T) {
    let j = j0 + t;
    var score = -3.4028234663852886e38;
    if (j < n_keys) {
      score = 0.0;
      let kr = (kb + j) * D;
      for (var i = 0u; i < D; i++) { score += qs[i] * kc[kr + i]; }
    }
    sc[t] = score;
    workgroupBarrier();
    let n = min(T, n_keys - j0);
    var tile_max = sc[0];
    for (var jj = 1u; jj < n; jj++) { tile_max = max(tile_max, sc[jj]); }
    let new_max = max(mx, tile_max);
    let corr = exp(mx - new_max);
    sum *= corr;
    acc *= corr;
    for (var jj = 0u; jj < n; jj++) {
      let e = exp(sc[jj] - new_max);
      sum += e;
      let vr = (kb + j0 + jj) * Dv;
      for (var r = 0u; r < 4u; r++) {
        let i = t + T * r;
        if (i < Dv) { acc[r] += e * vc[vr + i]; }
      }
    }
    mx = new_max;
    workgroupBarrier();
  }
  for (var r = 0u; r < 4u; r++) {
    let i = t + T * r;
    if (i < Dv) { out[o + i] = acc[r] / sum; }
  }
}
