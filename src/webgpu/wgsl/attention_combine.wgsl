// attention_combine.wgsl - merges the key splits of attention.wgsl (MODE 2):
// for each query row and value column,
//   M = max_s m_s,  L = sum_s exp(m_s - M) l_s,  y = sum_s exp(m_s - M) O_s / L
// over the splits s whose rows saw a key (l_s > 0); y = 0 when none did.
// One thread per output element.
//
// Uniform words: 0 rows (B * H * Sq), 1 Dv, 2 splits, 3 (m, l) offset in
// `part` (O_s at part[(row * splits + s) * Dv + e]).

@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> U: array<vec4<u32>, 1>;

const LOW: f32 = -3.402823e38;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let idx = gid.x + gid.y * nwg.x * 256u;
  let Dv = U[0].y;
  let splits = U[0].z;
  let ml = U[0].w;
  if (idx >= U[0].x * Dv) { return; }
  let row = idx / Dv;
  let col = idx % Dv;
  var M = LOW;
  for (var s = 0u; s < splits; s++) {
    let at = ml + 2u * (row * splits + s);
    if (part[at + 1u] > 0.0) { M = max(M, part[at]); }
  }
  var L = 0.0;
  var acc = 0.0;
  for (var s = 0u; s < splits; s++) {
    let slot = row * splits + s;
    let l = part[ml + 2u * slot + 1u];
    if (l > 0.0) {
      let f = exp(part[ml + 2u * slot] - M);
      L += f * l;
      acc += f * part[slot * Dv + col];
    }
  }
  var val = 0.0;
  if (L > 0.0) { val = acc / L; }
  y[idx] = val;
}
