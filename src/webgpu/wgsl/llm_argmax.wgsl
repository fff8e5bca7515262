// llm_argmax.wgsl - greedy decoding on the GPU: the argmax of a step's
// logits[V] (the lowest id on ties, as the CPU sampler's greedy choice),
// written into the 1-token step's ids input (the next step's token, with
// no round trip to the host) and into `picked` for the host to read later
// (web/runtime/llm_gpu_greedy.js).  -1 when a logit is NaN or +inf or all
// are -inf (the CPU sampler refuses those logits).  Special values are told
// by their bits: WGSL lets compilers assume floats are finite.
// One workgroup of 256 threads: a strided scan per thread, then a tree.
//
// Bindings: 0 logits, 1 ids (i32 [1], written), 2 picked (i32 [1], written).

override V: u32 = 1u;
const NONE: u32 = 0xffffffffu;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> ids: array<i32>;
@group(0) @binding(2) var<storage, read_write> picked: array<i32>;

var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;
var<workgroup> bad: atomic<u32>;

// (va, ia) beats (vb, ib): a value where the other has none, a larger one,
// or the same one at a lower id.
fn beats(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return ia != NONE && (ib == NONE || va > vb || (va == vb && ia < ib));
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
  var v = 0.0;
  var k = NONE;
  var odd = 0u;
  for (var i = t; i < V; i += 256u) {
    let x = logits[i];
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u || bits == 0x7f800000u) { odd = 1u; } // NaN, +inf
    else if (bits != 0xff800000u && (k == NONE || x > v)) { v = x; k = i; }       // not -inf
  }
  if (odd != 0u) { atomicOr(&bad, 1u); }
  best_v[t] = v;
  best_i[t] = k;
  workgroupBarrier();
  for (var half = 128u; half > 0u; half >>= 1u) {
    if (t < half && beats(best_v[t + half], best_i[t + half], best_v[t], best_i[t])) {
      best_v[t] = best_v[t + half];
      best_i[t] = best_i[t + half];
    }
    workgroupBarrier();
  }
  if (t == 0u) {
    var id = -1;
    if (atomicLoad(&bad) == 0u && best_i[0] != NONE) { id = i32(best_i[0]); }
    ids[0] = id;
    picked[0] = id;
  }
}
