// demo.js - the MLP demo page (index.html): trains the task of demo-task.js
// with mlp_train_step of runtime/models.js, a few steps per animation frame
// so the page stays responsive, and draws the loss curve and the current
// fit.  Training pauses every `steps` steps (URL ?steps=, default 3000) and
// Train goes on from there; a new seed starts over at once (the seed fixes
// the task and the initial weights).  The numbers shown carry their full
// value in data-value (the browser tests compare them with the same
// computation in Node).
import { init } from './runtime/instance.js';
import { backend } from './runtime/select.js';
import { mlpForward, mlp_loss, mlp_train_step } from './runtime/models.js';
import { makeTask, splitParams } from './demo-task.js';
import { drawChart } from './chart.js';
import { readFields, applyQuery, intRule, choiceRule } from './fields.js';

const STEPS_PER_FRAME = 20;
const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const RULES = { seed: intRule(0, 2147483647), lr: choiceRule() };
const QUERY_RULES = { ...RULES, steps: intRule(1, 10000000) };
let pauseEvery = 3000;
let pauseAt = pauseEvery;

let state = null;
let running = false;

function show(id, value, text = String(value)) {
  const el = $(id);
  el.textContent = text;
  el.dataset.value = String(value);
}

function showError(err) {
  $('error').textContent = `Error: ${err?.message ?? err}`;
  console.error(err);
  running = false;
  $('train').textContent = 'Train';
  show('status', 'error');
}

function lossOf(s) {
  const [i, h, o] = s.task.dims;
  return mlp_loss(s.task.x, s.task.t, i, h, o, s.p.w1, s.p.b1, s.p.w2, s.p.b2);
}

/** Starts over with the seed in the box; false (and a message by the box) when it is not a valid seed. */
function reset() {
  const f = readFields({ seed: RULES.seed });
  if (!f.ok) return false;
  const task = makeTask(f.values.seed);
  pauseAt = pauseEvery;
  state = { task, p: { w1: task.w1, b1: task.b1, w2: task.w2, b2: task.b2 }, step: 0, history: [], computeMs: 0,
    startedAt: 0, startedStep: 0 };
  const l0 = lossOf(state);
  state.history.push([0, l0]);
  show('loss0', l0, l0.toPrecision(7));
  show('loss', l0, l0.toPrecision(7));
  show('step', 0);
  show('rate', '-');
  show('per-step', '-');
  show('status', 'ready');
  render();
  return true;
}

function render() {
  const s = state;
  drawChart($('loss-chart'), [{ points: s.history, label: 'loss' }], { logY: true, xLabel: 'steps' });
  const [i, h, o] = s.task.dims;
  const y = mlpForward('cpu', s.task.x, i, h, o, s.p.w1, s.p.b1, s.p.w2, s.p.b2);
  const xs = Array.from(s.task.x);
  drawChart($('fit-chart'), [
    { points: xs.map((x, k) => [x, s.task.t[k]]), label: 'target' },
    { points: xs.map((x, k) => [x, y[k]]), label: 'MLP', dots: true },
  ], { xLabel: 'x' });
}

function frame() {
  if (!running) return;
  try {
    const s = state;
    const [i, h, o] = s.task.dims;
    const lr = Number($('lr').value);
    const t0 = performance.now();
    for (let k = 0; k < STEPS_PER_FRAME && s.step < pauseAt; k++) {
      const flat = mlp_train_step(s.task.x, s.task.t, i, h, o, s.p.w1, s.p.b1, s.p.w2, s.p.b2, lr);
      s.p = splitParams(flat);
      s.step++;
      s.history.push([s.step, lossOf(s)]);
    }
    s.computeMs += performance.now() - t0;
    const loss = s.history[s.history.length - 1][1];
    show('step', s.step);
    show('loss', loss, loss.toPrecision(7));
    const elapsed = (performance.now() - s.startedAt) / 1000;
    if (elapsed > 0) show('rate', (s.step - s.startedStep) / elapsed, ((s.step - s.startedStep) / elapsed).toFixed(0));
    const us = (1000 * s.computeMs) / Math.max(1, s.step);
    show('per-step', us, `${us.toFixed(1)} \u00b5s`);
    render();
    if (s.step >= pauseAt) { // a pause, not an end: Train goes on
      running = false;
      pauseAt += pauseEvery;
      $('train').textContent = 'Train on';
      show('status', 'done');
      return;
    }
    requestAnimationFrame(frame);
  } catch (err) {
    showError(err);
  }
}

function toggle() {
  if (!running && !readFields(RULES).ok) return;
  running = !running;
  $('train').textContent = running ? 'Pause' : 'Train';
  show('status', running ? 'training' : 'paused');
  if (running) {
    state.startedAt = performance.now();
    state.startedStep = state.step;
    requestAnimationFrame(frame);
  }
}

async function main() {
  const rt = await init();
  show('backend', backend());
  show('version', rt.version());
  show('simd', rt.simd);
  show('gemm', rt.gemmPath());
  const good = applyQuery(query, QUERY_RULES, (m) => { $('error').textContent += `${$('error').textContent ? '\n' : ''}${m}`; },
    ['autostart']);
  if (good && query.get('steps')) pauseEvery = Number(query.get('steps'));
  if (!reset()) $('error').textContent += '\nThe seed is not valid: fix it to start.';
  $('train').disabled = false;
  $('reset').disabled = false;
  $('train').addEventListener('click', () => {
    try { toggle(); } catch (err) { showError(err); }
  });
  const startOver = () => {
    try {
      running = false;
      $('train').textContent = 'Train';
      $('error').textContent = '';
      reset();
    } catch (err) { showError(err); }
  };
  $('reset').addEventListener('click', startOver);
  $('seed').addEventListener('change', startOver); // the seed fixes the task and the initial weights
  addEventListener('resize', () => state && render());
  if (query.get('autostart') !== '0' && good && state) toggle();
}

main().catch(showError);
