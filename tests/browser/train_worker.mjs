// train_worker.mjs - train_runner.mjs in a dedicated Worker (WebGL2 on an
// OffscreenCanvas); replies with the result and whether it ran in a Worker.
import { trainParity } from './train_runner.mjs';

self.onmessage = async (ev) => {
  try {
    const opts = ev.data ?? {};
    const canvas = opts.device === 'webgl' ? new OffscreenCanvas(1, 1) : undefined;
    const result = await trainParity({ ...opts, canvas });
    self.postMessage({ ...result, isWorker: typeof document === 'undefined', offscreen: canvas instanceof OffscreenCanvas });
  } catch (err) {
    self.postMessage({ error: String(err?.stack ?? err) });
  }
};
