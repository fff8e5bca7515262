// llm_attention_kv_merge.wgsl - attention_kv's second dispatch: merges the
// key splits llm_attention_kv.wgsl wrote.  For each query row (s, h), over
// the splits that saw keys (recomputed from pos as there),
//   M = max m_sp,  L = sum exp(m_sp - M) l_sp,
//   out[s, h, i] = sum exp(m_sp - M) O_sp[i] / L;
// rows with pos + s >= C (or pos < 0) are zero.  One workgroup per row:
// thread t reads split t's (m, l) (SPLITS <= 64), then value columns t,
// t + 64, ...
//
// Bindings: 0 part (O_sp at part[(row SPLITS + sp) Dv + i], (m, l) at
// part[U[5] + 2 (row SPLITS + sp)]), 1 pos (i32 [1]), 2 out, 3 uniform.
// Uniform words: 0 Hq, 1 Dv, 2 C, 3 SPLITS, 4 rows (S Hq), 5 (m, l) offset.

const T: u32 = 64u;   // threads
const KT: u32 = 32u;  // keys per tile of llm_attention_kv.wgsl
const LOW: f32 = -3.4028234663852886e38;

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read> pos: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> U: array<vec4<u32>, 2>;

var<workgroup> ml: array<vec2<f32>, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = wid.x + wid.y * nwg.x;
  if (row >= U[1].x) { return; }
  let Dv = U[0].y;
  let splits = U[0].w;
  let s = row / U[0].x;
  let p = pos[0];
  if (p < 0 || u32(p) + s >= U[0].z) {
    for (var i = t; i < Dv; i += T) { out[row * Dv + i] = 0.0; }
    return;
  }
  let n = u32(p) + s + 1u;
  let per = ((n + splits - 1u) / splits + KT - 1u) / KT * KT;
  let live = (n + per - 1u) / per;
  var m = LOW;
  var l = 0.0;
  if (t < live) {
    m = part[U[1].y + 2u * (row * splits + t)];
    l = part[U[1].y + 2u * (row * splits + t) + 1u];
  }
  ml[t] = vec2<f32>(m, l);
  workgroupBarrier();
  var M = LOW;
  for (var r = 0u; r < live; r++) { M = max(M, ml[r].x); }
  workgroupBarrier();
  let f = exp(m - M);
  ml[t] = vec2<f32>(f, f * l);
  workgroupBarrier();
  var L = 0.0;
  for (var r = 0u; r < live; r++) { L += ml[r].y; }
  for (var i = t; i < Dv; i += T) {
    var acc = 0.0;
    for (var r = 0u; r < live; r++) { acc += ml[r].x * part[(row * splits + r) * Dv + i]; }
    out[row * Dv + i] = acc / L;
  }
}
