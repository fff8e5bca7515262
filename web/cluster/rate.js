// rate.js - samples per second over a sliding window of completions, for a
// protocol.js Rank's own computes and the cohort's steps.

const RATE_WINDOW = 16; // completions kept for samples/s

export function pushRate(window, t, samples, ms) {
  window.push({ t, samples, ms });
  if (window.length > RATE_WINDOW) window.shift();
}

/** Samples per second over a window of completions (t, samples, duration). */
export function rateOf(window) {
  if (!window.length) return 0;
  if (window.length === 1) {
    const { samples, ms } = window[0];
    return ms > 0 ? (samples * 1000) / ms : 0;
  }
  const span = window[window.length - 1].t - window[0].t;
  if (span <= 0) return 0;
  let s = 0;
  for (let i = 1; i < window.length; i++) s += window[i].samples;
  return (s * 1000) / span;
}
