// webgpu_profile.mjs - GPU time per kernel of a WebGpuSession
// (web/runtime/webgpu.js profile(): one compute pass per dispatch with
// timestamps around it; the device needs 'timestamp-query'), averaged
// over `runs` runs and grouped by pipeline key: what the benches print
// with --profile.
//
//   const p = await profileKernels(session, { runs: 5, label: 'step' });
//   p.lines(12).forEach((l) => console.log(l));   // the 12 costliest kernels

/** { total (ms of kernels, summed over dispatches), dispatches, rows: [{ key, op, ms, n }] costliest first, lines(k) }. */
export async function profileKernels(session, { runs = 5, label = 'run' } = {}) {
  const all = [];
  for (let r = 0; r < runs; r++) all.push(await session.profile());
  const byKey = new Map();
  for (const row of all.flat()) {
    const e = byKey.get(row.key) ?? { key: row.key, op: row.op, ms: 0, n: 0 };
    e.ms += row.ms / runs;
    e.n += 1 / runs;
    byKey.set(row.key, e);
  }
  const rows = [...byKey.values()].sort((a, b) => b.ms - a.ms).map((e) => ({ ...e, n: Math.round(e.n) }));
  const total = rows.reduce((a, e) => a + e.ms, 0);
  const dispatches = all[0].length;
  const lines = (k = 12) => [
    `  profile: GPU time of the ${label} ${total.toFixed(3)} ms over ${dispatches} dispatches (mean of ${runs} runs)`,
    ...rows.slice(0, k).map((e) => `    ${e.ms.toFixed(3).padStart(8)} ms ${(100 * e.ms / total).toFixed(1).padStart(5)}% ${String(e.n).padStart(4)} x  ${e.op}  ${e.key}`),
  ];
  return { total, dispatches, rows, lines };
}
