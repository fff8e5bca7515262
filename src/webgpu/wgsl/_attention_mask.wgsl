// _attention_mask.wgsl - included by attention.wgsl, attention_grad_dq.wgsl
// and attention_grad_dkdv.wgsl: which keys a query row sees, and the
// masked, scaled score.  The includer declares U (uniform words as in
// attention.wgsl: 0 B, 1 H, 2 Sq, 3 Sk, 6 mask kind, 7 window, 8 scale,
// 10..13 bias strides), the `mask` binding and the MASKED constant.

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
