// prng.mjs - the fuzzers' seeded random choices, over the cluster's
// mulberry32 generator (web/cluster/sim.js rng): next() in [0, 1), int(n)
// in [0, n), pick(xs) one element.
import { rng } from '../../web/cluster/sim.js';

export function prng(seed) {
  const next = rng(seed);
  return { next, int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}
