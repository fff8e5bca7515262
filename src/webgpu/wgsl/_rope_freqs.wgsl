// _rope_freqs.wgsl - included after _rope_turns.wgsl by rope.wgsl and
// rope_fused.wgsl: their uniform's frequencies and positions.
//
// The includer declares u(i) (word i of its uniform, laid out as
// rope.wgsl's: 4 pos0, 7 inverse, 8.. a, b, c per frequency of the
// dispatch), off and OFFSET, as rope.wgsl does.

// (a, b, c) of the dispatch's k-th frequency.
fn rope_freq(k: u32) -> vec3<f32> {
  return vec3<f32>(bitcast<f32>(u(8u + 3u * k)), bitcast<f32>(u(9u + 3u * k)), bitcast<f32>(u(10u + 3u * k)));
}

// (cos, sin) of the angle of position pos0 + p (+ off[0] with OFFSET 1)
// at frequency f = (a, b, c), the sine negated for the inverse rotation.
fn rope_cos_sin(p: u32, f: vec3<f32>) -> vec2<f32> {
  var pos = bitcast<i32>(u(4u)) + i32(p);
  if (OFFSET == 1u) { pos += off[0]; }
  var cs = cos_sin_turns(turns(u32(abs(pos)), f.x, f.y, f.z));
  if ((pos < 0) != (u(7u) != 0u)) { cs.y = -cs.y; } // negative angle
  return cs;
}
