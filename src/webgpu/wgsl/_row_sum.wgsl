// _row_sum.wgsl - included by norm.wgsl and norm_grad.wgsl: the sum of a
// value over the TPR threads of each row in a workgroup shared-memory tree.
// The includer declares `sh` (array<f32, WG> in workgroup memory) and TPR.

// Sum of v over the TPR threads of each row; every thread gets its row's.
fn row_sum(v: f32, lid: u32, lane: u32) -> f32 {
  sh[lid] = v;
  workgroupBarrier();
  for (var st = TPR / 2u; st > 0u; st = st / 2u) {
    if (lane < st) { sh[lid] += sh[lid + st]; }
    workgroupBarrier();
  }
  let total = sh[lid - lane];
  workgroupBarrier(); // sh is reused by the next sum
  return total;
}
