// gpu-check.js - the "Backends" section of index.html: runs the demo's MLP
// (the task of demo-task.js, seed 1) once through mlp_forward and mlp_grads
// on the CPU and through the same calls on every GPU backend this browser
// offers (mlp_forward_gpu / mlp_grads_gpu on WebGPU, mlp_forward_webgl /
// mlp_grads_webgl on WebGL2), and shows the largest difference from the CPU
// per backend.  A backend that is missing or fails shows why.  Each value
// carries its full number in data-value for the browser tests.
import init, * as rlx from './pkg/rlx_web.js';
import { makeTask } from './demo-task.js';

const TOLERANCE = 1e-4; // relative: |gpu - cpu| <= tol * (1 + |cpu|)
const $ = (id) => document.getElementById(id);

/** Largest |a - b| / (1 + |b|) over the elements. */
function maxRelDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1 + Math.abs(b[i])));
  return worst;
}

function show(backend, state, text, value = '') {
  const el = $(`check-${backend}`);
  el.textContent = text;
  el.dataset.state = state;
  el.dataset.value = String(value);
}

async function checkOne(backend, available, forward, grads, cpu) {
  if (!available) {
    show(backend, 'unavailable', `not available: ${rlx.backend_environment()[backend].reason}`);
    return;
  }
  try {
    show(backend, 'running', 'running...');
    const t0 = performance.now();
    const y = await forward();
    const g = await grads();
    const ms = performance.now() - t0;
    const diff = Math.max(maxRelDiff(y, cpu.y), maxRelDiff(g, cpu.g));
    const verdict = diff <= TOLERANCE ? 'match' : 'MISMATCH';
    show(backend, diff <= TOLERANCE ? 'match' : 'mismatch',
      `${verdict}: max relative difference ${diff.toExponential(2)} over ${cpu.y.length + cpu.g.length} values (${ms.toFixed(0)} ms with compiling)`, diff);
  } catch (err) {
    show(backend, 'error', `failed: ${err?.message ?? err}`);
  }
}

async function main() {
  await init();
  const task = makeTask(1);
  const [i, h, o] = task.dims;
  const args = [i, h, o, task.w1, task.b1, task.w2, task.b2];
  const cpu = { y: rlx.mlp_forward(task.x, ...args), g: rlx.mlp_grads(task.x, task.t, ...args) };
  const [webgpu, webgl] = await Promise.all([rlx.init_webgpu(), rlx.init_webgl()]);
  await checkOne('webgpu', webgpu, () => rlx.mlp_forward_gpu(task.x, ...args), () => rlx.mlp_grads_gpu(task.x, task.t, ...args), cpu);
  await checkOne('webgl', webgl, () => rlx.mlp_forward_webgl(task.x, ...args), () => rlx.mlp_grads_webgl(task.x, task.t, ...args), cpu);
  $('gpu-check').dataset.done = '1';
}

main().catch((err) => {
  show('webgpu', 'error', `failed: ${err?.message ?? err}`);
  $('gpu-check').dataset.done = '1';
});
