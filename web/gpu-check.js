// gpu-check.js - the "Backends" section of index.html: runs the demo's MLP
// (the task of demo-task.js, seed 1) once through mlpForward and mlpGrads
// of runtime/models.js on the CPU and on every GPU backend this browser
// offers (WebGPU, WebGL2: the backend is their first argument), and shows the largest difference from the CPU
// per backend.  A backend that is missing or fails shows why.  Each value
// carries its full number in data-value for the browser tests.  The line
// "This browser offers" lists every backend that can run here (the CPU
// first), a software renderer (SwiftShader) named as such, as soon as the
// GPUs are probed; one whose cross-check then fails is marked so.
import { init } from './runtime/instance.js';
import { init_webgpu, init_webgl, backend_environment } from './runtime/select.js';
import { mlpForward, mlpGrads } from './runtime/models.js';
import { BACKEND_ORDER } from './runtime/backends.js';
import { makeTask } from './demo-task.js';

const TOLERANCE = 1e-4; // relative: |gpu - cpu| <= tol * (1 + |cpu|)
const GPUS = BACKEND_ORDER.filter((b) => b !== 'cpu'); // webgpu, webgl
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
  const env = backend_environment();
  const names = ['cpu', ...GPUS.filter((b) => env[b]?.available)];
  return names.map((b) => {
    const notes = [env[b]?.software ? `${env[b].software}, a software renderer` : '',
      results[b] && results[b] !== 'match' ? `but its cross-check below: ${results[b]}` : ''].filter(Boolean);
    return notes.length ? `${b} (${notes.join(', ')})` : b;
  }).join(', ');
}

async function checkOne(backend, available, forward, grads, cpu) {
  if (!available) {
    show(backend, 'unavailable', `not available: ${backend_environment()[backend].reason}`);
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
  const cpu = { y: mlpForward('cpu', task.x, ...args), g: mlpGrads('cpu', task.x, task.t, ...args) };
  $('preferred').textContent = 'checking...';
  const [webgpu, webgl] = await Promise.all([init_webgpu(), init_webgl()]);
  const available = { webgpu, webgl };
  $('preferred').textContent = offered();
  $('preferred').dataset.state = 'probed';
  const results = {};
  for (const b of GPUS) {
    results[b] = await checkOne(b, available[b], () => mlpForward(b, task.x, ...args), () => mlpGrads(b, task.x, task.t, ...args), cpu);
  }
  $('preferred').textContent = offered(results);
  $('preferred').dataset.state = 'checked';
  $('gpu-check').dataset.done = '1';
}

main().catch((err) => {
  show('webgpu', 'error', `failed: ${err?.message ?? err}`);
  $('gpu-check').dataset.done = '1';
});
