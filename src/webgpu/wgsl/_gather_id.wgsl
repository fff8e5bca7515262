// _gather_id.wgsl - id_at(i): the id at ids[i] (included by gather.wgsl and
// llm_gather_q.wgsl, which declare ids: array<f32> and the override
// IDS_I32): int32 bits when IDS_I32 is 1, else an f32 truncated toward zero
// as the CPU does (NaN, infinities and values outside the int32 range: -1).

fn id_at(i: u32) -> i32 {
  let v = ids[i];
  if (IDS_I32 == 1u) { return bitcast<i32>(v); }
  let bits = bitcast<u32>(v) & 0x7fffffffu;
  if (bits >= 0x7f800000u || !(v > -2147483648.0 && v < 2147483648.0)) { return -1; }
  return i32(v);
}
