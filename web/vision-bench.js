// vision-bench.js - the UI of vision-bench.html: talks to vision-worker.js
// (where every RLX call runs), shows progress, the loss chart, the forward
// check and a table row per run.  Values shown carry their full value in
// data-value for the browser tests.
import { preferred_backend } from './pkg/rlx_web.js';
import { drawChart } from './chart.js';

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const worker = new Worker(new URL('./vision-worker.js', import.meta.url), { type: 'module' });
const pending = new Map(); // id -> { resolve, reject, onProgress }
let nextId = 1;
let busy = false;
let stopAll = false; // set by Stop: also ends a 'Run all models' sequence

worker.onmessage = (event) => {
  const msg = event.data;
  const entry = pending.get(msg.id);
  if (!entry) return;
  if (msg.progress) {
    entry.onProgress?.(msg.progress);
    return;
  }
  pending.delete(msg.id);
  if (msg.ok) entry.resolve(msg.result);
  else entry.reject(new Error(msg.error));
};
worker.onerror = (event) => showError(new Error(`worker failed: ${event.message ?? 'could not start'}`));

function call(cmd, args = {}, onProgress) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ id, cmd, ...args });
  });
}

function show(id, value, text = String(value)) {
  const el = $(id);
  el.textContent = text;
  el.dataset.value = String(value);
}

function showError(err) {
  $('error').textContent = `Error: ${err?.message ?? err}`;
  console.error(err);
}

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text;
  row.append(td);
  return td;
}

const fixed = (v, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-');

function setBusy(on) {
  busy = on;
  for (const id of ['run', 'run-all', 'model', 'batch', 'steps', 'lr', 'seed', 'backend']) $(id).disabled = on;
  $('stop').disabled = !on;
}

function settings(slug) {
  const steps = Number.parseInt($('steps').value, 10);
  const lr = Number($('lr').value);
  const seed = Number.parseInt($('seed').value, 10);
  if (!(steps >= 1 && steps <= 10000)) throw new Error('steps must be between 1 and 10000');
  const batch = Number($('batch').value);
  if (!(Number.isInteger(batch) && batch >= 1)) throw new Error('pick a batch size');
  if (!Number.isFinite(lr)) throw new Error('the learning rate must be a number');
  if (!(seed >= 0)) throw new Error('the seed must be an integer >= 0');
  return { slug, backend: $('backend').value, batch, steps, lr, seed };
}

async function runOne(slug, label) {
  const s = settings(slug);
  $('progress').value = 0;
  show('progress-text', 'compiling', `${label}${slug} on ${s.backend}: compiling and timing the forward pass...`);
  const losses = [];
  const result = await call('run', s, (p) => {
    $('progress').value = p.step / p.steps;
    losses.push(p.loss);
    show('progress-text', p.step, `${label}${slug}: step ${p.step} / ${p.steps}, loss ${p.loss.toFixed(4)}, ` +
      `${(p.elapsedMs / 1000).toFixed(1)} s`);
  });
  showResult(result);
  addTableRow(result);
  return result;
}

function showResult(r) {
  show('r-model', r.slug);
  show('r-forward', r.forwardMs, `${fixed(r.forwardMs)} ms`);
  show('r-step', r.stepMs, `${fixed(r.stepMs)} ms`);
  show('r-steps', r.stepsPerSec, fixed(r.stepsPerSec, 1));
  show('r-samples', r.samplesPerSec, fixed(r.samplesPerSec, 0));
  const first = r.losses[0];
  const last = r.losses[r.losses.length - 1];
  show('r-loss', last, `${fixed(first, 4)} \u2192 ${fixed(last, 4)}`);
  $('r-loss').dataset.first = String(first);
  show('logits', r.logitsHead.join(','), r.logitsHead.map((v) => v.toFixed(6)).join('  '));
  show('logits-sum', r.logitsSum, r.logitsSum.toFixed(6));
  drawChart($('loss-chart'), [{ points: r.losses.map((l, i) => [i + 1, l]), label: `${r.slug}, batch ${r.batch}` }],
    { xLabel: 'steps' });
  const stopped = r.stopped ? ' (stopped early)' : '';
  show('progress-text', 'done', `${r.slug}: ${r.steps} steps done${stopped}.`);
  $('progress').value = 1;
}

function addTableRow(r) {
  const tr = document.createElement('tr');
  tr.dataset.slug = r.slug;
  cell(tr, r.slug);
  cell(tr, r.params.toLocaleString('en-US'));
  cell(tr, r.backend);
  cell(tr, String(r.batch));
  cell(tr, fixed(r.forwardMs));
  cell(tr, fixed(r.stepMs));
  cell(tr, fixed(r.stepsPerSec, 1));
  cell(tr, fixed(r.samplesPerSec, 0));
  cell(tr, `${fixed(r.losses[0], 3)} \u2192 ${fixed(r.losses[r.losses.length - 1], 3)}`);
  $('table').tBodies[0].append(tr);
}

async function guarded(fn) {
  if (busy) return;
  $('error').textContent = '';
  stopAll = false;
  setBusy(true);
  try {
    await fn();
  } catch (err) {
    showError(err);
    show('progress-text', 'error', 'Stopped by an error.');
  } finally {
    setBusy(false);
  }
}

function fillModels(models) {
  const select = $('model');
  for (const m of models) {
    const opt = document.createElement('option');
    opt.value = m.slug;
    opt.textContent = `${m.slug} (${m.param_flat_len.toLocaleString('en-US')} params)`;
    select.append(opt);
    const tr = document.createElement('tr');
    cell(tr, m.slug);
    cell(tr, m.title);
    cell(tr, `[${m.input_dims.join(', ')}]`);
    cell(tr, m.param_flat_len.toLocaleString('en-US'));
    const where = ['cpu_train', 'webgpu_train', 'webgl_train'].filter((k) => m[k]).map((k) => k.split('_')[0]);
    cell(tr, where.join(', '));
    $('models').tBodies[0].append(tr);
  }
  const wanted = query.get('model');
  if (wanted && models.some((m) => m.slug === wanted)) select.value = wanted;
}

/** Enables the backends the Worker can run; the others say why not. */
function fillBackends(available) {
  const names = { cpu: 'cpu (WebAssembly)', webgpu: 'webgpu', webgl: 'webgl (WebGL2)' };
  const usable = [];
  for (const opt of $('backend').options) {
    const status = available[opt.value] ?? { available: false, reason: 'unknown' };
    opt.disabled = !status.available;
    opt.textContent = status.available ? names[opt.value] : `${opt.value} (not available)`;
    opt.title = status.reason ?? '';
    if (status.available) usable.push(opt.value);
  }
  const why = Object.entries(available).filter(([, st]) => !st.available).map(([b, st]) => `${b}: ${st.reason}`);
  $('backend-note').textContent = `This browser offers ${preferred_backend()}; the Worker can run ${usable.join(', ')}` +
    `${why.length ? ` (not ${why.join('; ')})` : ''}. Forward, backward and the SGD update all run on the backend picked.`;
  const wanted = query.get('backend');
  if (wanted && usable.includes(wanted)) $('backend').value = wanted;
}

async function main() {
  const hello = await call('hello');
  fillModels(hello.models);
  fillBackends(hello.backends);
  const batch = Number.parseInt(query.get('batch') ?? '', 10);
  if (batch >= 1 && batch <= 1024) {
    if (![...$('batch').options].some((o) => Number(o.value) === batch)) $('batch').append(new Option(String(batch)));
    $('batch').value = String(batch);
  }
  if (query.get('steps')) $('steps').value = query.get('steps');
  setBusy(false);
  show('progress-text', 'ready', `Ready: RLX ${hello.version}.`);
  $('run').addEventListener('click', () => guarded(() => runOne($('model').value, '')));
  $('run-all').addEventListener('click', () => guarded(async () => {
    const slugs = [...$('model').options].map((o) => o.value);
    for (const [i, slug] of slugs.entries()) {
      if (stopAll) break;
      await runOne(slug, `(${i + 1}/${slugs.length}) `);
    }
  }));
  $('stop').addEventListener('click', () => {
    stopAll = true;
    worker.postMessage({ cmd: 'stop' });
  });
  if (query.get('autorun') === '1') $('run').click();
}

main().catch((err) => {
  showError(err);
  show('progress-text', 'error', 'Could not start.');
});
