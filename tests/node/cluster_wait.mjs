// cluster_wait.mjs - what the cluster tests on real time share: waitFor()
// polls a condition (the events it stands for: deliveries, steps, roles)
// and fails by name after a generous timeout, so a loaded machine makes a
// test slower, never wrong; identities(n) makes n signing identities
// (auth.js) sorted by rank id, so the first is the bootstrap leader.
import { createIdentity } from '../../web/cluster/auth.js';

/** Generous: a 2-core machine running other work may be 10x slower than an idle one. */
export const PATIENCE_MS = 60_000;

export const tick = () => new Promise((r) => setTimeout(r, 5));

export async function waitFor(pred, what, ms = PATIENCE_MS) {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await tick();
  }
}

export async function identities(n) {
  const out = await Promise.all(Array.from({ length: n }, () => createIdentity()));
  return out.sort((a, b) => (a.id < b.id ? -1 : 1));
}
