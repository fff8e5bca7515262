// finetune.js - the UI of finetune.html: a base model from the picker it
// shares with generate.html (gguf-picker.js: a test model on this server, a
// picked or dropped .gguf file or its split parts, the file kept in this
// browser, any http(s) URL or one cached in this browser), loaded in
// a Worker with the training module of the backend chosen (GgufWorker,
// loadGguf's { train: true, backend }: the CPU, WebGPU, WebGL2 or auto; the
// page says which runs and why not the others, and on how many CPU threads
// and why: ?threads= as generate.html's, the threaded training build where
// the page is cross-origin isolated); training text pasted or a
// .txt / .jsonl file; the settings checked next to their fields (fields.js);
// GgufWorker.finetune with live loss plots (chart.js), tokens per second and
// time left; the prompt's greedy text before and after (the adapter applied
// in a second Worker); Stop (the run ends after its current step with the
// adapter it has); the adapter to download or keep in this browser
// (gguf-store.js's ADAPTER_FOLDER), where generate.html applies it.
import { show, status, showError } from './page-status.js';
import { readFields, applyQuery, intRule, numberRule, notStarted } from './fields.js';
import { GgufWorker } from './runtime/llm.js';
import { ModelPicker, backendRule, backendText, loadText, modelRule } from './gguf-picker.js';
import { mib } from './gguf-kept.js';
import * as store from './gguf-store.js';
import { drawChart } from './chart.js';

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const SAMPLE = 'The small river ran past the old mill. '.repeat(12).trim();
const GREEDY = { maxTokens: 16, temperature: 0 }; // the before / after text

let lm = null;        // the GgufWorker holding the base model, or null
let info = null;
let picked = null;    // { src, name } of the model loaded
let busy = false;
let run = null;       // the running fine-tuning's AbortController
let adapter = null;   // the last run's adapter bytes
let threads;          // the URL's threads (1 .. 64), else loadGguf's default: half the logical cores
const picker = new ModelPicker({ isBusy: () => busy, load: () => load(), waitFor: 'the model has loaded or training has ended' });

const LOAD = { backend: backendRule }; // read at Load: the model's Worker loads the backend's training module
const SETTINGS = {
  rank: intRule(1, 1024),
  alpha: numberRule({ gt: 0, max: 1e6 }),
  targets: (text) => (/^\s*[a-z_]+(\s*,\s*[a-z_]+)*\s*$/.test(text) ? { value: text.replace(/\s+/g, '') }
    : { error: 'names separated by commas: attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, or all' }),
  lr: numberRule({ gt: 0, max: 10 }),
  steps: intRule(1, 100000),
  seq: intRule(2, 4096),
  batch: intRule(1, 256),
  prompt: (text) => (text === '' ? { error: 'write a prompt' } : { value: text }),
};
const threadsRule = (text) => { // no field: the URL's value is kept for Load
  const r = intRule(1, 64, 'a whole number')(text);
  if (!r.error) threads = r.value;
  return r;
};
const QUERY_RULES = { ...SETTINGS, ...LOAD, model: modelRule, threads: threadsRule };

function setBusy(on, training = false) {
  busy = on;
  for (const id of ['load', 'kept-load', 'kept-forget', 'keep-adapter']) $(id).disabled = on;
  $('train').disabled = on || !info;
  $('stop-run').disabled = !training;
}

const clock = (s) => `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, '0')}`;

async function load() {
  $('error').textContent = '';
  const f = readFields(LOAD);
  const next = picker.pick();
  if (!f.ok || !next) { status('error', 'Not loaded: fix the marked field.'); return; }
  const from = picker.source;
  setBusy(true);
  $('load-progress').value = 0;
  status('loading', `Loading ${next.name}...`);
  const w = new GgufWorker(); // a fresh Worker: the model loaded before stays until this one has loaded
  try {
    const nextInfo = await w.load(next.src, {
      train: true, backend: f.values.backend, // 'auto': a hardware GPU, else the CPU (info.fallbacks say why)
      threads, // the CPU's: the threaded training build where this page is cross-origin isolated (info.threadsWhy)
      onProgress: (e) => {
        if (e.total && !e.stage) $('load-progress').value = e.loaded / e.total;
        status('loading', loadText(next.name, e));
      },
    });
    lm?.terminate();
    [lm, info, picked] = [w, nextInfo, next];
    $('load-progress').value = 1;
    show('r-backend', info.backend, backendText(info));
    show('r-threads', info.threads, `${info.threads} (${info.threadsWhy})`);
    status('ready', `Loaded ${next.name}: ${info.arch}, ${info.nLayer} layers, context ${info.nCtxTrain}; training runs on ` +
      `${backendText(info)}. Set the data and Train.`);
    picker.keepLoaded(next).catch(showError);
  } catch (err) {
    w.terminate();
    const where = /options\.backend\b/.test(err?.message ?? '') ? 'backend' : from === 'kept' ? 'file' : from === 'cached' ? 'url' : from;
    $(`${where}-error`).textContent = err?.message ?? String(err);
    status('error', `Not loaded: ${next.name} (the reason is next to the control).`);
  } finally {
    setBusy(false);
  }
}

/** The training data: the picked file (.jsonl as JSONL) or the pasted text. */
async function readData() {
  $('text-error').textContent = $('data-file-error').textContent = '';
  const file = $('data-file').files?.[0];
  if (file) {
    const bytes = new Uint8Array(await file.arrayBuffer());
    return { data: /\.jsonl$/i.test(file.name) ? { jsonl: bytes } : { text: bytes }, field: 'data-file' };
  }
  if ($('text').value.trim() === '') { $('text-error').textContent = 'paste some text or pick a file'; return null; }
  return { data: $('text').value, field: 'text' };
}

/** The loss plot: training loss per step, validation loss when taken. */
function plot(losses, valid) {
  drawChart($('loss-chart'), [
    { points: losses.map((l, i) => [i + 1, l]), label: 'training loss' },
    { points: valid.map((v) => [v.step, v.loss]), label: 'validation loss', dots: true },
  ], { xLabel: 'step', yLabel: 'loss' });
}

/** plot() at the next frame, once however many steps came before it (fast steps would flood the page with redraws). */
let plotQueued = false;
function plotSoon(losses, valid) {
  if (plotQueued) return;
  plotQueued = true;
  requestAnimationFrame(() => { plotQueued = false; plot(losses, valid); });
}

/** Greedy text of the prompt with w's model. */
async function greedy(w, prompt) {
  return (await w.generate(prompt, GREEDY)).text;
}

async function train() {
  $('error').textContent = '';
  const f = readFields(SETTINGS);
  const d = await readData();
  if (!f.ok || !d) {
    status('error', notStarted({ ...f.errors, ...(d ? {} : { text: 'no data' }) }));
    return;
  }
  const { prompt, ...options } = f.values;
  setBusy(true, true);
  $('adapter').hidden = true;
  adapter = null;
  for (const id of ['r-step', 'r-loss', 'r-valid', 'r-rate', 'r-eta']) show(id, '', '-');
  $('before').textContent = $('after').textContent = '';
  const losses = [], valid = [];
  plot(losses, valid);
  delete $('loss-chart').dataset.losses;
  run = new AbortController();
  try {
    status('training', 'Greedy text before training...');
    $('before').textContent = await greedy(lm, prompt);
    status('training', 'Reading the data and compiling the training step...');
    const r = await lm.finetune(d.data, {
      ...options, signal: run.signal, evalEvery: Math.max(1, Math.floor(options.steps / 20)), // twenty points on the plot
      onProgress: (p) => {
        losses.push(p.loss);
        if (p.validLoss !== null && valid.at(-1)?.loss !== p.validLoss) valid.push({ step: p.step, loss: p.validLoss });
        show('r-step', p.step, `${p.step} / ${p.steps}`);
        show('r-loss', p.loss, p.loss.toFixed(4));
        if (p.validLoss !== null) show('r-valid', p.validLoss, p.validLoss.toFixed(4));
        if (p.tokensPerSecond) show('r-rate', p.tokensPerSecond, p.tokensPerSecond.toFixed(0));
        show('r-eta', p.etaSeconds, clock(p.etaSeconds));
        plotSoon(losses, valid);
        if (!run.signal.aborted) status('training', `Training: step ${p.step} of ${p.steps}...`);
      },
    });
    adapter = r.adapter;
    $('loss-chart').dataset.losses = JSON.stringify(r.losses); // the run's losses at full precision
    valid.splice(0, valid.length, ...r.validLosses);
    plot(losses, valid);
    if (valid.length) show('r-valid', valid.at(-1).loss, valid.at(-1).loss.toFixed(4));
    showAdapter(r);
    setBusy(true);
    status('training', 'Greedy text with the adapter...');
    const after = new GgufWorker();
    try {
      await after.load(picked.src, { backend: 'cpu', lora: [{ source: adapter }] });
      $('after').textContent = await greedy(after, prompt);
    } finally {
      after.terminate();
    }
    const first = losses[0], last = losses.at(-1);
    status(r.stopped ? 'stopped' : 'finished', `${r.stopped ? 'Stopped' : 'Finished'} after ${r.steps} step${r.steps === 1 ? '' : 's'}` +
      (r.steps ? `: training loss ${first.toFixed(4)} -> ${last.toFixed(4)}.` : '.'));
  } catch (err) {
    if (/finetune: data/.test(err?.message ?? '')) $(`${d.field}-error`).textContent = err.message;
    showError(err);
  } finally {
    run = null;
    setBusy(false);
  }
}

/** The download link and the keep button for the adapter. */
function showAdapter(r) {
  const link = $('download');
  if (link.href.startsWith('blob:')) URL.revokeObjectURL(link.href);
  link.href = URL.createObjectURL(new Blob([r.adapter], { type: 'application/octet-stream' }));
  link.dataset.bytes = String(r.adapter.length);
  $('adapter').hidden = false;
  $('adapter-note').dataset.state = 'ready';
  $('adapter-note').textContent = `adapter.gguf: ${mib(r.adapter.length)}, rank ${$('rank').value} on ${$('targets').value}, ` +
    `from ${picked.name}.`;
}

async function keepAdapter() {
  if (!adapter) return;
  const note = $('adapter-note');
  note.dataset.state = 'keeping';
  note.textContent = 'Keeping adapter.gguf in this browser...';
  const r = await store.keep(new File([adapter], 'adapter.gguf'), undefined, store.ADAPTER_FOLDER);
  note.dataset.state = r.ok ? 'kept' : 'not-kept';
  note.textContent = r.ok ? 'Kept adapter.gguf in this browser: generate.html offers to apply it.' : `Not kept: ${r.reason}.`;
}

async function main() {
  $('text').value = SAMPLE;
  const report = (m) => { $('error').textContent += `${$('error').textContent ? '\n' : ''}${m}`; };
  const good = applyQuery(query, QUERY_RULES, report, ['autoload']);
  $('load').addEventListener('click', () => { if (!busy) load(); });
  $('train').addEventListener('click', () => { if (!busy) train(); });
  $('stop-run').addEventListener('click', () => {
    run?.abort();
    status('stopping', 'Stopping after the current step...');
  });
  $('keep-adapter').addEventListener('click', () => { if (!busy) keepAdapter().catch(showError); });
  setBusy(false);
  plot([], []);
  picker.kept.refresh().catch(showError);
  picker.cached.refresh().catch(showError);
  if (!good) status('error', 'Some URL settings were refused (see above).');
  if (query.get('autoload') === '1' && good) await load();
}

main().catch(showError);
