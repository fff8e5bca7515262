// webgl_worker.mjs - runs the WebGL2 op cases in a dedicated Worker (an
// OffscreenCanvas made by web/runtime/webgl.js); replies with the results.
import { runCases, runChecks } from './webgl_runner.mjs';

self.onmessage = async (ev) => {
  try {
    const opts = ev.data ?? {};
    const canvas = new OffscreenCanvas(1, 1); // one context for all the cases
    const results = await runCases({ ...opts, canvas });
    const checks = opts.checks ? await runChecks({}) : null;
    self.postMessage({ results, checks, offscreen: typeof OffscreenCanvas === 'function', isWorker: typeof document === 'undefined' });
  } catch (err) {
    self.postMessage({ error: String(err?.stack ?? err) });
  }
};
