// gpu-check.js - the "Backends" section of index.html: runs the demo's MLP
// (the task of demo-task.js, seed 1) once through mlp_forward and mlp_grads
// on the CPU and through the same calls on every GPU backend this browser
// offers (mlp_forward_gpu / mlp_grads_gpu on WebGPU, mlp_forward_webgl /
// mlp_grads_webgl on WebGL2), and shows the largest difference from the CPU
// per backend.  A backend that is missing or fails shows why.  Each value
// carries its full number in data-value for the browser tests.  The line
// "This browser offers" lists every backend that can run here (the CPU
// first), a software renderer (SwiftShader) named as such, as soon as the
// GPUs are probed; one whose cross-check then fails is marked so.
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

/**
 * Every backend that can run here, the CPU first, a software renderer named:
 * "cpu, webgl (SwiftShader, a software renderer)"; results: backend -> the
 * cross-check's state, where it ran (one that did not match is marked).
 */
function offered(results = {}) {
  const env = rlx.backend_environment();
  const names = ['cpu', ...['webgpu', 'webgl'].filter((b) => env[b]?.available)];
  return names.map((b) => {
    const notes = [env[b]?.software ? `${env[b].software}, a software renderer` : '',
      results[b] && results[b] !== 'match' ? `but its cross-check below: ${results[b]}` : ''].filter(Boolean);
    return notes.length ? `${b} (${notes.join(', ')})` : b;
  }).join(', ');
}

async function checkOne(backend, available, forward, grads, cpu) {
  if (!available) {
    show(backend, 'unavailable', `not available: ${rlx.backend_environment()[backend].reason}`);
    return 'unavailable';
  }
  try {
    show(backend, 'running', 'running...');
    const t0 = performance.now();
    const y = await forward();
    const g = await grads();
    const ms = performance.now() - t0;
    const diff = Math.max(maxRelDiff(y, cpu.y), maxRelDiff(g, cpu.g));
    const verdict = diff <= TOLERANCE ? 'match' : 'MISMATCH';
    const state = diff <= TOLERANCE ? 'match' : 'mismatch';
    show(backend, state,
      `${verdict}: max relative difference ${diff.toExponential(2)} over ${cpu.y.length + cpu.g.length} values (${ms.toFixed(0)} ms with compiling)`, diff);
    return state;
  } catch (err) {
    show(backend, 'error', `failed: ${err?.message ?? err}`);
    return 'error';
  }
}

async function main() {
  await init();
  const task = makeTask(1);
  const [i, h, o] = task.dims;
  const args = [i, h, o, task.w1, task.b1, task.w2, task.b2];
  const cpu = { y: rlx.mlp_forward(task.x, ...args), g: rlx.mlp_grads(task.x, task.t, ...args) };
  $('preferred').textContent = 'checking...';
  const [webgpu, webgl] = await Promise.all([rlx.init_webgpu(), rlx.init_webgl()]);
  $('preferred').textContent = offered();
  $('preferred').dataset.state = 'probed';
  const results = {
    webgpu: await checkOne('webgpu', webgpu, () => rlx.mlp_forward_gpu(task.x, ...args), () => rlx.mlp_grads_gpu(task.x, task.t, ...args), cpu),
    webgl: await checkOne('webgl', webgl, () => rlx.mlp_forward_webgl(task.x, ...args), () => rlx.mlp_grads_webgl(task.x, task.t, ...args), cpu),
  };
  $('preferred').textContent = offered(results);
  $('preferred').dataset.state = 'checked';
  $('gpu-check').dataset.done = '1';
}

main().catch((err) => {
  show('webgpu', 'error', `failed: ${err?.message ?? err}`);
  $('gpu-check').dataset.done = '1';
});
