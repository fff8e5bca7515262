// train.js - the UI of train.html: settings checked (fields.js), the run in
// train-worker.js, a status that says what is happening (loading,
// compiling, step n, evaluating, finished / stopped / diverged at step n,
// and a warning when a finished run did not learn), the time since the run
// began (compiling included), live loss and accuracy plots, the confusion
// matrix and the test-image grid (train-view.js); a software GPU picked by
// name is warned about with its slowdown against the CPU, measured on the
// run's first steps (software-gpu.js).
import { show, status, showError } from './page-status.js';
import { readFields, applyQuery, intRule, numberRule, choiceRule, notStarted } from './fields.js';
import { LossPlot, AccuracyPlot, renderConfusion, renderGrid, noLearning } from './train-view.js';
import { softwareNotice, slowdownText } from './software-gpu.js';
import { OPTIMIZERS } from './optim.js';
import { connect } from './worker-rpc.js';

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const worker = new Worker(new URL('./train-worker.js', import.meta.url), { type: 'module' });
let hello = null;
let running = false;
const lossPlot = new LossPlot($('loss-chart'));
const accPlot = new AccuracyPlot($('acc-chart'));

const RULES = {
  model: choiceRule(),
  backend: choiceRule(),
  optimizer: choiceRule(Object.keys(OPTIMIZERS)),
  lr: numberRule({ gt: 0, max: 1e9 }),
  batch: intRule(1, 256),
  steps: intRule(1, 20000),
  evalEvery: intRule(1, 20000),
  seed: intRule(0, 2147483647),
};

const call = connect(worker, (err) => fail(err));

function fail(err) {
  showError(err);
  console.error(err);
}

function setRunning(on) {
  running = on;
  for (const id of Object.keys(RULES)) $(id).disabled = on;
  $('train').disabled = on || !hello;
  $('stop').disabled = !on;
}

/** What auto picks for the model shown, and why not the others; or that the backend picked is a software GPU. */
function noteBackends() {
  if (!hello) return;
  const picked = $('backend').value;
  if (picked !== 'auto') {
    const software = hello.backends[picked]?.software;
    $('backend-note').textContent = software ? softwareNotice(picked, software) : '';
    return;
  }
  const auto = hello.auto[$('model').value];
  const skipped = auto?.skipped?.map((s) => `${s.backend}: ${s.reason}`) ?? [];
  $('backend-note').textContent = `auto runs ${$('model').value} on ${auto?.backend ?? 'cpu'}` +
    `${skipped.length ? ` (not ${skipped.join('; ')})` : ''}.`;
}

function fillControls(h) {
  for (const m of h.models) $('model').append(new Option(`${m.slug} (${m.param_flat_len.toLocaleString('en-US')} params)`, m.slug));
  for (const opt of $('backend').options) {
    if (opt.value === 'auto' || opt.value === 'cpu') continue;
    const st = h.backends[opt.value];
    opt.disabled = !st?.available;
    opt.textContent = st?.available ? opt.value : `${opt.value} (not available: ${st?.reason ?? 'unknown'})`;
  }
  renderGrid($('grid'), h.grid, null);
}

let lastOptimizer = $('optimizer').value;
$('optimizer').addEventListener('change', () => {
  // The rate follows the optimizer only while it is still the previous one's default.
  if (Number($('lr').value) === OPTIMIZERS[lastOptimizer].lr) $('lr').value = String(OPTIMIZERS[$('optimizer').value].lr);
  lastOptimizer = $('optimizer').value;
});
$('model').addEventListener('change', noteBackends);
$('backend').addEventListener('change', noteBackends);
$('plots').addEventListener('change', () => {
  lossPlot.enabled = accPlot.enabled = $('plots').checked;
  if ($('plots').checked) {
    lossPlot.draw();
    accPlot.draw();
  }
});

async function train() {
  $('error').textContent = '';
  const f = readFields(RULES);
  if (!f.ok) {
    status('error', notStarted(f.errors));
    return;
  }
  const v = f.values;
  setRunning(true);
  lossPlot.clear();
  accPlot.clear();
  $('confusion').replaceChildren();
  $('confusion-note').textContent = '';
  renderGrid($('grid'), hello.grid, null);
  for (const id of ['r-step', 'r-loss', 'r-acc', 'r-rate', 'r-time']) show(id, '', '-');
  $('software-warning').textContent = '';
  delete $('software-warning').dataset.ratio;
  delete $('status').dataset.warning;
  const backend = v.backend === 'auto' ? hello.auto[v.model].backend : v.backend;
  show('r-backend', backend, v.backend === 'auto' ? `${backend} (auto)` : backend);
  $('progress').removeAttribute('value'); // indeterminate until the first step is done
  const t0 = performance.now(); // elapsed counts from here: compiling included
  const ticker = setInterval(() => showElapsed(t0), 250);
  try {
    const result = await call('train', {
      slug: v.model, backend, optimizer: { kind: v.optimizer, lr: v.lr }, batch: v.batch, steps: v.steps,
      evalEvery: v.evalEvery, seed: v.seed,
    }, (p) => onProgress(p, t0));
    lossPlot.redraw.flush();
    accPlot.redraw.flush();
    const rate = Number.isFinite(result.samplesPerSec) ? `, ${Math.round(result.samplesPerSec)} samples/s` : '';
    if (result.status === 'diverged') {
      status('diverged', `Diverged at step ${result.step}: the loss became ${result.loss}. Try a smaller learning rate.`);
    } else if (result.status === 'stopped') {
      status('stopped', `Stopped at step ${result.step} of ${v.steps}${rate}.`);
    } else {
      const acc = Number($('r-acc').dataset.value);
      const warning = noLearning({ firstLoss: lossPlot.raw[0]?.[1], lastLoss: lossPlot.ema, accuracy: acc,
        classes: hello.models.find((m) => m.slug === v.model)?.num_classes ?? 10 });
      status('finished', `Finished: ${result.step} steps${rate}, test accuracy ${(100 * acc).toFixed(1)}%.` +
        `${warning ? ` ${warning}` : ''}`);
      if (warning) $('status').dataset.warning = 'no-learning';
    }
    $('progress').value = result.step / v.steps;
  } catch (err) {
    fail(err);
    $('progress').value = 0;
  } finally {
    clearInterval(ticker);
    showElapsed(t0);
    setRunning(false);
  }
}

/** The time since the run began, and whether it is still compiling. */
function showElapsed(t0) {
  const ms = performance.now() - t0;
  show('r-time', ms, `${(ms / 1000).toFixed(1)} s${$('status').dataset.state === 'compiling' ? ', compiling' : ''}`);
}

function onProgress(p, t0) {
  if (p.phase === 'measured') {
    if (!p.slowdown) return;
    $('software-warning').textContent = slowdownText(p.slowdown, 'Pick cpu (or auto) for this browser.');
    $('software-warning').dataset.ratio = String(p.slowdown.ratio);
    return;
  }
  if (p.phase === 'eval') {
    accPlot.add(p.step, p.accuracy);
    show('r-acc', p.accuracy, `${(100 * p.accuracy).toFixed(1)}%`);
    renderConfusion($('confusion'), p.confusion);
    $('confusion-note').textContent = `(${p.evaluated} test images, after step ${p.step})`;
    renderGrid($('grid'), hello.grid, p.predictions);
    return;
  }
  if (p.losses.length) {
    lossPlot.add(p.losses);
    show('r-loss', lossPlot.ema, Number.isFinite(lossPlot.ema) ? lossPlot.ema.toFixed(4) : String(lossPlot.ema));
  }
  if (p.step > 0) {
    $('progress').value = p.step / p.steps;
    show('r-step', p.step, `${p.step} / ${p.steps}`);
  }
  if (Number.isFinite(p.samplesPerSec)) show('r-rate', p.samplesPerSec, Math.round(p.samplesPerSec).toLocaleString('en-US'));
  if (p.text) status(p.phase, `${p.text[0].toUpperCase()}${p.text.slice(1)}...`);
  showElapsed(t0);
}

async function main() {
  hello = await call('hello');
  show('r-threads', hello.threads, `${hello.threads} (${hello.threadsWhy})`);
  fillControls(hello);
  const good = applyQuery(query, RULES, (m) => { $('error').textContent += `${$('error').textContent ? '\n' : ''}${m}`; },
    ['autostart']);
  lastOptimizer = $('optimizer').value;
  noteBackends();
  setRunning(false);
  status('ready', `Ready: RLX ${hello.version}, ${hello.train.toLocaleString('en-US')} training and ` +
    `${hello.test.toLocaleString('en-US')} test images.${good ? '' : ' Some URL settings were refused (see above).'}`);
  $('train').addEventListener('click', () => { if (!running) train(); });
  $('stop').addEventListener('click', () => {
    worker.postMessage({ cmd: 'stop' });
    status('stopping', 'Stopping after the current step...');
  });
  if (query.get('autostart') === '1' && good) train();
}

main().catch(fail);
