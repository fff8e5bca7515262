// llm_kv_append.wgsl - attention_kv's side effect: this step's keys and
// values into the KV cache at positions pos .. pos + S - 1,
//   k_cache[h, pos + s, i] = k[h, s, i],  v_cache[h, pos + s, i] = v[h, s, i],
// for rows with pos + s < C (the others are past the cache's end and are
// not written; nothing is written when pos < 0).  One thread per (h, s, i)
// for i < max(D, Dv).  llm_attention_kv.wgsl then reads the caches.
//
// Bindings: 0 k, 1 v, 2 pos (i32 [1]), 3 k_cache, 4 v_cache (written),
// 5 uniform.
// Uniform words: 0 threads (Hkv S W), 1 S, 2 D, 3 Dv, 4 C, 5 W = max(D, Dv).

@group(0) @binding(0) var<storage, read> k: array<f32>;
@group(0) @binding(1) var<storage, read> v: array<f32>;
@group(0) @binding(2) var<storage, read> pos: array<i32>;
@group(0) @binding(3) var<storage, read_write> kc: array<f32>;
@group(0) @binding(4) var<storage, read_write> vc: array<f32>;
@group(0) @binding(5) var<uniform> U: array<vec4<u32>, 2>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = gid.x + gid.y * nwg.x * 256u;
  let p0 = pos[0];
  if (t >= U[0].x || p0 < 0) { return; }
  let S = U[0].y;
  let D = U[0].z;
  let Dv = U[0].w;
  let C = U[1].x;
  let W = U[1].y;
  let i = t % W;
  let s = (t / W) % S;
  let h = t / (W * S);
  let p = u32(p0) + s;
  if (p >= C) { return; }
  if (i < D) { kc[(h * C + p) * D + i] = k[(h * S + s) * D + i]; }
  if (i < Dv) { vc[(h * C + p) * Dv + i] = v[(h * S + s) * Dv + i]; }
}
