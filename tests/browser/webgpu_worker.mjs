// webgpu_worker.mjs - webgpu_runner.mjs in a dedicated Worker; replies with the results.
import { runChecks } from './webgpu_runner.mjs';

self.onmessage = async () => {
  try {
    self.postMessage({ ...(await runChecks()), isWorker: typeof document === 'undefined' });
  } catch (err) {
    self.postMessage({ error: String(err?.stack ?? err) });
  }
};
