// webgpu_tfjs_entry.mjs - the entry of the TensorFlow.js bundle that
// bench/webgpu_models.mjs loads: tfjs-core with its gradients and the webgpu
// backend, one file (`make bench-gpu-bundle` -> build/bench/tfjs-webgpu.mjs),
// so a machine without node_modules (the GPU machine) can carry it.
// bench/webgpu_chromium.mjs bundles it for the browser at start (esbuild).
// The backend registers itself on import and looks for navigator.gpu when it
// is selected: in Node set globalThis.navigator = { gpu } first (Dawn).
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-core/dist/register_all_gradients';
import '@tensorflow/tfjs-backend-webgpu';

export { tf };
