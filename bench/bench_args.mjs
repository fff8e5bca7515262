// bench_args.mjs - what the Node benches share: their --name=value
// arguments and the median of a list of timings.
//
//   const args = benchArgs('web_threads');   // { threads: '1,2', ... }; an unknown form throws
//   median([3, 1, 2]) === 2

/** The process's --name=value arguments as an object; anything else throws, naming the bench. */
export function benchArgs(bench) {
  return Object.fromEntries(process.argv.slice(2).map((a) => {
    const m = /^--([a-z]+)=(.*)$/.exec(a);
    if (!m) throw new Error(`${bench}: unknown argument ${a}`);
    return [m[1], m[2]];
  }));
}

/** The median of values (the mean of the middle two for an even count). */
export function median(values) {
  const s = [...values].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
