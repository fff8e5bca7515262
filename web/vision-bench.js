// vision-bench.js - the UI of vision-bench.html: talks to vision-worker.js
// (where every RLX call runs), checks every setting and URL value
// (fields.js), says what the run is doing (compiling, step n, evaluating,
// finished, stopped, diverged at step n), draws the loss and, on
// Fashion-MNIST, the test accuracy as it goes and the confusion matrix
// (train-view.js), the forward check and a table row per run with the
// training rate and the whole run's wall time (evaluations and compiling
// included).  A software GPU is warned about with its slowdown against the
// CPU, measured on the run's first steps (software-gpu.js); a run whose loss
// rose is warned about.  Values shown carry their full value in data-value
// for the browser tests.
import { readFields, applyQuery, intRule, numberRule, choiceRule, notStarted } from './fields.js';
import { LossPlot, AccuracyPlot, renderConfusion, noLearning } from './train-view.js';
import { softwareNotice, slowdownText } from './software-gpu.js';
import { connect } from './worker-rpc.js';

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const worker = new Worker(new URL('./vision-worker.js', import.meta.url), { type: 'module' });
let busy = false;
let stopAll = false; // set by Stop: also ends a 'Run all models' sequence
const lossPlot = new LossPlot(document.getElementById('loss-chart'), { smoothing: 0.8 });
const accPlot = new AccuracyPlot(document.getElementById('acc-chart'));
const models = new Map(); // slug -> vision_model_info, plus fashion: why it cannot train on Fashion-MNIST (or null)
let evals = 0; // test evaluations per Fashion-MNIST run (the Worker's EVALS)
let backends = {}; // backend -> { available, reason, software } (the Worker's)

const RULES = {
  model: choiceRule(),
  backend: choiceRule(),
  data: choiceRule(), // and fashion only for a model that takes 28x28 images (settings)
  batch: intRule(1, 256),
  steps: intRule(1, 10000),
  lr: numberRule({ gt: 0, max: 1e9 }),
  seed: intRule(0, 2147483647),
};

const call = connect(worker, (err) => showError(err));

function show(id, value, text = String(value)) {
  const el = $(id);
  el.textContent = text;
  el.dataset.value = String(value);
}

function showError(err) {
  $('error').textContent = `Error: ${err?.message ?? err}`;
  console.error(err);
}

function status(state, text) {
  $('progress-text').dataset.state = state;
  show('progress-text', state, text);
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
  for (const id of ['run', 'run-all', 'model', 'data', 'batch', 'steps', 'lr', 'seed', 'backend']) $(id).disabled = on;
  $('stop').disabled = !on;
}

/** A message next to a field (readFields clears it at the next check). */
function markField(id, message) {
  $(`${id}-error`).textContent = message;
  $(id).setAttribute('aria-invalid', 'true');
}

/** The rules for URL values: one refused is also marked next to its field (applyQuery reports it in #error). */
function urlRules(rules) {
  return Object.fromEntries(Object.entries(rules).map(([id, rule]) => [id, (text, el) => {
    const r = rule(text, el);
    if (r.error) markField(id, `URL value refused: ${r.error}`);
    return r;
  }]));
}

/** The settings of a run, or null (each bad field then carries its message). */
function settings(slug) {
  const f = readFields(RULES);
  if (!f.ok) {
    status('error', notStarted(f.errors));
    return null;
  }
  const { backend, data, batch, steps, lr, seed } = f.values;
  const why = data === 'fashion' && models.get(slug)?.fashion;
  if (why) {
    markField('data', `${why}: pick synthetic, or mnist-mlp or mnist-cnn`);
    status('error', notStarted({ data: why }));
    return null;
  }
  return { slug, backend, data, batch, steps, lr, seed };
}

function clearResult(data) {
  for (const id of ['r-model', 'r-forward', 'r-step', 'r-steps', 'r-samples', 'r-wall', 'r-loss', 'r-acc', 'logits', 'logits-sum']) {
    show(id, '', '-');
  }
  lossPlot.clear();
  accPlot.clear();
  $('confusion').replaceChildren();
  $('confusion-note').textContent = '';
  $('acc-box').hidden = $('confusion-box').hidden = data !== 'fashion';
  noteBackend();
}

/** Before a run: whether the backend picked is a software GPU (the run then measures the slowdown). */
function noteBackend() {
  const picked = $('backend').value;
  const software = backends[picked]?.software;
  $('software-warning').textContent = software ? softwareNotice(picked, software) : '';
  delete $('software-warning').dataset.ratio;
}

/** One test evaluation: the accuracy plot, the stat and the confusion matrix. */
function showEval(ev) {
  accPlot.add(ev.step, ev.accuracy);
  show('r-acc', ev.accuracy, `${(100 * ev.accuracy).toFixed(1)}%`);
  renderConfusion($('confusion'), ev.confusion);
  $('confusion-note').textContent = `(${ev.evaluated} test images, after step ${ev.step})`;
}

/** What the data picked means for the model picked. */
function noteData() {
  const m = models.get($('model').value);
  if (!m) return;
  let text;
  if (m.fashion) {
    text = `${m.fashion}: it trains on the synthetic batch only.`;
  } else if ($('data').value === 'fashion') {
    text = `Fashion-MNIST: each step trains on the next batch of the training subset; the test subset is scored ${evals} ` +
      'times per run (samples/s leaves that out).';
  } else {
    text = 'Synthetic: one seeded batch trained on at every step, the benchmark (no test accuracy).';
  }
  $('data-note').textContent = text;
}

async function runOne(slug, label) {
  const s = settings(slug);
  if (!s) return null;
  clearResult(s.data);
  show('r-model', slug);
  $('progress').removeAttribute('value'); // indeterminate while it compiles
  status('compiling', `${label}${slug} on ${s.backend}: compiling and timing the forward pass...`);
  const result = await call('run', s, (p) => {
    if (p.slowdown) {
      $('software-warning').textContent = slowdownText(p.slowdown, 'Pick cpu for this browser.');
      $('software-warning').dataset.ratio = String(p.slowdown.ratio);
      return;
    }
    if (p.eval) {
      showEval(p.eval);
      return;
    }
    if (p.phase) {
      status(p.phase, `${label}${slug} on ${s.backend}: ${p.text}...`);
      return;
    }
    $('progress').value = p.step / p.steps;
    lossPlot.add(p.losses);
    status('training', `${label}${slug}: step ${p.step} / ${p.steps}, loss ${p.loss.toFixed(4)}, ` +
      `${(p.elapsedMs / 1000).toFixed(1)} s`);
  });
  showResult(result, label);
  addTableRow(result);
  return result;
}

function showResult(r, label = '') {
  show('r-model', r.slug);
  show('r-forward', r.forwardMs, `${fixed(r.forwardMs)} ms`);
  show('r-step', r.stepMs, `${fixed(r.stepMs)} ms`);
  show('r-steps', r.stepsPerSec, fixed(r.stepsPerSec, 1));
  show('r-samples', r.samplesPerSec, fixed(r.samplesPerSec, 0));
  show('r-wall', r.totalMs, wallText(r));
  const first = r.losses[0];
  const last = r.losses[r.losses.length - 1];
  show('r-loss', last, `${fixed(first, 4)} \u2192 ${fixed(last, 4)}`);
  $('r-loss').dataset.first = String(first);
  show('logits', r.logitsHead.join(','), r.logitsHead.map((v) => v.toFixed(6)).join('  '));
  show('logits-sum', r.logitsSum, r.logitsSum.toFixed(6));
  lossPlot.redraw.flush();
  accPlot.redraw.flush();
  const acc = r.test ? `, test accuracy ${(100 * r.test.accuracy).toFixed(1)}% after step ${r.test.step}` : '';
  const warning = r.diverged ? '' : noLearning({ firstLoss: first, lastLoss: lossPlot.ema, accuracy: r.test?.accuracy,
    classes: models.get(r.slug)?.num_classes ?? 10 });
  if (r.diverged) {
    status('diverged', `${label}${r.slug}: diverged at step ${r.steps}: the loss became ${r.losses[r.losses.length - 1]}. ` +
      'Try a smaller learning rate.');
  } else if (r.stopped) {
    status('stopped', `${label}${r.slug}: stopped after ${r.steps} of ${r.requested} steps${acc}.`);
  } else {
    status('finished', `${label}${r.slug}: finished, ${r.steps} steps${acc}.${warning ? ` ${warning}` : ''}`);
  }
  if (warning) $('progress-text').dataset.warning = 'no-learning';
  else delete $('progress-text').dataset.warning;
  $('progress').value = r.requested ? r.steps / r.requested : 1;
}

/** The whole run's wall time and what besides training steps it holds: "12.3 s (10 test evaluations: 8.1 s; compiling: 0.4 s)". */
function wallText(r) {
  const parts = [r.evals ? `${r.evals} test evaluation${r.evals === 1 ? '' : 's'}: ${(r.evalMs / 1000).toFixed(1)} s` : '',
    `compiling: ${(r.compileMs / 1000).toFixed(1)} s`].filter(Boolean);
  return `${(r.totalMs / 1000).toFixed(1)} s (${parts.join('; ')})`;
}

function addTableRow(r) {
  const tr = document.createElement('tr');
  tr.dataset.slug = r.slug;
  cell(tr, r.slug);
  cell(tr, r.params.toLocaleString('en-US'));
  cell(tr, r.backend);
  cell(tr, r.data);
  cell(tr, String(r.batch));
  cell(tr, fixed(r.forwardMs));
  cell(tr, fixed(r.stepMs));
  cell(tr, fixed(r.stepsPerSec, 1));
  cell(tr, fixed(r.samplesPerSec, 0));
  cell(tr, `${fixed(r.totalMs / 1000, 1)}${r.evals ? ` (${fixed(r.evalMs / 1000, 1)})` : ''}`);
  cell(tr, `${fixed(r.losses[0], 3)} \u2192 ${fixed(r.losses[r.losses.length - 1], 3)}`);
  cell(tr, r.test ? `${(100 * r.test.accuracy).toFixed(1)}%` : '-');
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
    status('error', 'Stopped by an error (see above).');
    $('progress').value = 0;
  } finally {
    setBusy(false);
  }
}

function fillModels(list) {
  const select = $('model');
  for (const m of list) {
    models.set(m.slug, m);
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
    cell(tr, m.fashion ? 'synthetic' : 'synthetic, Fashion-MNIST').title = m.fashion ?? '';
    $('models').tBodies[0].append(tr);
  }
}

/** Enables the backends the Worker can run (a software GPU named so); the others say why not. */
function fillBackends(available) {
  backends = available;
  const names = { cpu: 'cpu (WebAssembly)', webgpu: 'webgpu', webgl: 'webgl (WebGL2)' };
  const usable = [];
  for (const opt of $('backend').options) {
    const status = available[opt.value] ?? { available: false, reason: 'unknown' };
    opt.disabled = !status.available;
    opt.textContent = status.available ? `${names[opt.value]}${status.software ? ` (${status.software}, software)` : ''}`
      : `${opt.value} (not available)`;
    opt.title = status.reason ?? '';
    if (status.available) usable.push(`${opt.value}${status.software ? ` (${status.software}, a software renderer)` : ''}`);
  }
  const why = Object.entries(available).filter(([, st]) => !st.available).map(([b, st]) => `${b}: ${st.reason}`);
  $('backend-note').textContent = `The Worker can run ${usable.join(', ')}` +
    `${why.length ? ` (not ${why.join('; ')})` : ''}. Forward, backward and the SGD update all run on the backend picked.`;
}

async function main() {
  const hello = await call('hello');
  show('r-threads', hello.threads, `${hello.threads} (${hello.threadsWhy})`);
  evals = hello.evals;
  fillModels(hello.models);
  fillBackends(hello.backends);
  const good = applyQuery(query, urlRules(RULES), (m) => { $('error').textContent += `${$('error').textContent ? '\n' : ''}${m}`; },
    ['autorun']);
  for (const id of ['model', 'data']) $(id).addEventListener('change', noteData);
  $('backend').addEventListener('change', noteBackend);
  noteData();
  noteBackend();
  setBusy(false);
  status('ready', `Ready: RLX ${hello.version}.${good ? '' : ' Some URL settings were refused (see above); nothing ran.'}`);
  $('run').addEventListener('click', () => guarded(() => runOne($('model').value, '')));
  $('run-all').addEventListener('click', () => guarded(async () => {
    // On Fashion-MNIST only the models that take its images run; the others are named at the end.
    const all = [...$('model').options].map((o) => o.value);
    const fashion = $('data').value === 'fashion';
    const slugs = all.filter((slug) => !fashion || !models.get(slug).fashion);
    let r = null;
    for (const [i, slug] of slugs.entries()) {
      if (stopAll) break;
      r = await runOne(slug, `(${i + 1}/${slugs.length}) `);
      if (!r) break;
    }
    const skipped = all.filter((slug) => !slugs.includes(slug));
    if (r && skipped.length) {
      status($('progress-text').dataset.state, `${$('progress-text').textContent} Not run: ${skipped.join(', ')} ` +
        '(synthetic data only).');
    }
  }));
  $('stop').addEventListener('click', () => {
    stopAll = true;
    worker.postMessage({ cmd: 'stop' });
    status('stopping', 'Stopping after the current step...');
  });
  if (query.get('autorun') === '1' && good) $('run').click();
}

main().catch((err) => {
  showError(err);
  status('error', 'Could not start.');
});
