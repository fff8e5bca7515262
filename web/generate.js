// generate.js - the UI of generate.html: a model from the picker it shares
// with finetune.html (gguf-picker.js: a test model on this server, a picked
// or dropped .gguf file or its split parts, the file kept in this browser,
// any http(s) URL or one cached in this browser), loaded in a Worker (GgufWorker, runtime/llm.js) with progress; its info;
// the backend (the CPU, WebGPU, WebGL2 or auto, and what runs); sampling settings
// checked next to their fields (fields.js); the prompt's tokens and the
// context used and left, live; the text streamed in as it is generated,
// Stop, and tokens per second for the prompt and generation.  Each load
// runs in a fresh Worker: the model loaded before stays usable until the
// new one has loaded, and a failed load leaves it (the error is shown next
// to the control that picked the file).  The stages of a load are said
// (reading, compiling GPU pipelines); a software GPU picked by name is timed
// against the CPU on a few tokens and the page warns with that figure.
// Two modes (the mode select, ?mode=): chat, a conversation in the model's
// chat template (chat-view.js), and complete, the prompt as it is.
import { show, status, showError } from './page-status.js';
import { readFields, applyQuery, intRule, notStarted, choiceRule } from './fields.js';
import { ChatView } from './chat-view.js';
import { GgufWorker } from './runtime/llm.js';
import { slowdown, slowdownText, gpuName } from './software-gpu.js';
import { ModelPicker, backendRule, backendText, loadText, modelRule } from './gguf-picker.js';
import { mib } from './gguf-kept.js';
import { ADAPTER_FOLDER, kept as keptIn } from './gguf-store.js';

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);

const PROBE = { prompt: 'The', maxTokens: 4 }; // the greedy run timed on a software GPU and on the CPU
let lm = null;        // the GgufWorker holding the model in use (info), or null
let info = null;
let loadedName = '';  // the file it came from
let busy = false;
const picker = new ModelPicker({ isBusy: () => busy, load: () => load(), waitFor: 'the model has loaded or the generation has ended' });
let keptAdapter = null; // the LoRA adapter finetune.html kept in this browser (a File), or null
let countTimer = 0;
let countSeq = 0;     // the latest prompt count asked for (older answers are dropped)
let threads;          // the URL's threads (1 .. 64), else the default: half the logical cores

/** A number from min to max (both included). */
function rangeRule(min, max) {
  return (text) => {
    if (text.trim() === '') return { error: 'enter a number' };
    const v = Number(text);
    if (!Number.isFinite(v)) return { error: `${JSON.stringify(text)} is not a number` };
    if (v < min || v > max) return { error: `must be from ${min} to ${max}` };
    return { value: v };
  };
}

/** Stop strings: one a line, "\n" and "\t" written as escapes; empty lines ignored. */
function stopRule(text) {
  const list = text.split('\n').filter((s) => s !== '').map((s) => s.replace(/\\(n|t|\\)/g, (_, c) => ({ n: '\n', t: '\t', '\\': '\\' })[c]));
  if (list.length > 16) return { error: `${list.length} stop strings; at most 16` };
  return { value: list };
}

const SAMPLING = {
  maxTokens: intRule(1, 100000),
  temperature: rangeRule(0, 100),
  topK: intRule(0, 2147483647),
  topP: rangeRule(0, 1),
  minP: rangeRule(0, 1),
  repeatPenalty: (text) => {
    const r = rangeRule(0, 100)(text);
    return r.error || r.value > 0 ? r : { error: 'must be greater than 0 (1: off)' };
  },
  repeatLastN: intRule(-1, 2147483647),
  seed: intRule(0, 2147483647),
  stop: stopRule,
  prompt: (text) => (text === '' ? { error: 'write a prompt' } : { value: text }),
};
const LOAD = { nCtx: intRule(0, 131072), backend: backendRule };
const { stop: _stop, ...QUERY_SAMPLING } = SAMPLING; // stop strings are typed on the page
const { prompt: _prompt, ...CHAT_SAMPLING } = SAMPLING; // a chat's prompt is its conversation
const QUERY_RULES = {
  ...QUERY_SAMPLING, ...LOAD,
  mode: choiceRule(),
  model: modelRule,
  url: (text) => ({ value: text }),
};

function setBusy(on, generating = false) {
  busy = on;
  for (const id of ['load', 'kept-load', 'kept-forget', 'mode']) $(id).disabled = on;
  $('generate').disabled = on || !info;
  $('stop-run').disabled = !generating;
  chat?.enable(!!info, on, generating);
}

const chat = new ChatView({ model: () => lm, sampling: () => readFields(CHAT_SAMPLING), setBusy });

/** Shows the mode's section: the chat, or the prompt and its output. */
function applyMode() {
  const isChat = $('mode').value === 'chat';
  $('chat-section').hidden = !isChat;
  $('complete-section').hidden = isChat;
}

/** "1 token", "12 tokens". */
const tokens = (n) => `${n.toLocaleString('en-US')} token${n === 1 ? '' : 's'}`;
function count(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  return n.toLocaleString('en-US');
}

function showInfo(i) {
  show('i-arch', i.arch, `${i.arch} (RoPE ${i.ropeNeox ? 'NeoX' : 'pairs'}${i.tiedOutput ? ', tied output' : ''})`);
  show('i-name', i.name, i.name || '-');
  show('i-params', i.nParams, count(i.nParams));
  show('i-types', i.weightTypes);
  show('i-ctx', i.nCtx, `${i.nCtx.toLocaleString('en-US')} (${i.nCtxTrain.toLocaleString('en-US')})`);
  show('i-mem', i.weightBytes + i.kvBytes, `${mib(i.weightBytes)} + ${mib(i.kvBytes)}`);
  show('i-shape', i.nLayer, `${i.nLayer}, ${i.nHead} (${i.nHeadKv}), ${i.nEmbd}`);
  show('i-vocab', i.nVocab, `${i.nVocab.toLocaleString('en-US')} (${i.tokenizer})`);
  show('i-simd', i.simd, i.simd === 'relaxed' ? 'relaxed SIMD' : 'SIMD128');
  show('i-threads', i.threads, `${i.threads} (${i.threadsWhy})`);
  show('i-backend', i.backend, backendText(i));
}

/** Where a failed load's message goes: next to the control that picked the file, or the backend's. */
function noteFor(err, from) {
  if (/options\.(backend|xq8)\b/.test(err?.message ?? '')) return 'backend';
  return from === 'kept' ? 'file' : from === 'cached' ? 'url' : from;
}
const CONTROL_NAMES = { file: 'the file picker', model: 'the test model list', url: 'the URL box', backend: 'the backend' };

async function load() {
  $('error').textContent = '';
  const f = readFields(LOAD);
  const picked = picker.pick();
  if (!f.ok || !picked) {
    status('error', 'Not loaded: fix the marked field.');
    return;
  }
  const from = picker.source;
  setBusy(true);
  $('load-progress').value = 0;
  status('loading', `Loading ${picked.name}...`);
  const t0 = performance.now();
  let compiling = 0; // when the GPU pipelines began to compile
  // A fresh Worker: the model loaded before stays in use until this one has loaded (a failed load leaves it).
  const next = new GgufWorker();
  try {
    const nextInfo = await next.load(picked.src, {
      nCtx: f.values.nCtx,
      backend: f.values.backend, // 'cpu', 'webgpu' (navigator.gpu of the Worker), 'webgl' (its OffscreenCanvas) or 'auto'
      xq8: $('xq8').checked, // the CPU only: refused with 'webgpu' / 'webgl', not applied where 'auto' picks a GPU
      threads, // the CPU's: the threaded build where this page is cross-origin isolated (info.threadsWhy)
      lora: $('lora-kept').checked && keptAdapter ? [{ source: keptAdapter }] : undefined,
      onProgress: (e) => {
        const { loaded, total, stage } = e;
        if (stage === 'compiling') {
          compiling = performance.now();
          $('load-progress').removeAttribute('value'); // no measure of this stage: indeterminate
          status('compiling', `Compiling GPU pipelines for ${picked.name} and uploading its weights (${mib(loaded)} read)...`);
          return;
        }
        if (total) $('load-progress').value = loaded / total;
        status('loading', loadText(picked.name, e));
      },
    });
    const old = lm;
    [lm, info, loadedName] = [next, nextInfo, picked.name];
    old?.terminate(); // the previous model's memory goes with its Worker
    $('load-progress').value = 1;
    for (const id of ['c-prompt', 'c-used', 'c-size', 'c-left']) show(id, '', '-');
    showInfo(info);
    chat.modelChanged(info, lm.chatTemplate);
    const s = ((performance.now() - t0) / 1000).toFixed(2);
    const compiled = compiling ? `, ${((performance.now() - compiling) / 1000).toFixed(2)} s of it compiling GPU pipelines` : '';
    await warnSoftware(picked);
    const adapted = info.nLora ? `, with the LoRA adapter ${keptAdapter?.name ?? ''} (${info.nLoraPairs} products)` : '';
    status('ready', `Loaded ${picked.name} (${mib(info.fileBytes)})${picked.from ?? ''}${adapted} in ${s} s${compiled}.`);
    picker.keepLoaded(picked).catch(showError);
  } catch (err) {
    next.terminate();
    const where = noteFor(err, from);
    $(`${where}-error`).textContent = `${err?.message ?? err}${from === 'model' && err?.statusName === 'not found'
      ? ' (make lm-web-fixtures puts the test models on this server)' : ''}`;
    $('load-progress').value = info ? 1 : 0;
    status('error', `Not loaded: ${picked.name} (the reason is next to ${CONTROL_NAMES[where]}).` +
      `${info ? ` ${loadedName} is still loaded: Generate uses it.` : ''}`);
  } finally {
    setBusy(false);
    countPrompt();
  }
}

/**
 * On a software GPU (picked by name; auto never takes one): the same few
 * greedy tokens timed there and on the CPU (the file loaded again in a
 * second Worker for that, then dropped), and the warning with the figure.
 */
async function warnSoftware(picked) {
  const el = $('software-warning');
  el.textContent = '';
  delete el.dataset.ratio;
  if (!info.software) return;
  status('measuring', `${gpuName(info.backend)} here is ${info.software}, a software renderer: timing ${PROBE.maxTokens} tokens on it and on the CPU...`);
  const perToken = async (w) => {
    const { stats: st } = await w.generate(PROBE.prompt, { maxTokens: PROBE.maxTokens, temperature: 0 });
    return st.generatedTokens ? (1000 * st.generateSeconds) / st.generatedTokens : (1000 * st.promptSeconds) / st.promptTokens;
  };
  const cpu = new GgufWorker();
  try {
    const gpuMs = await perToken(lm);
    await cpu.load(picked.src, { nCtx: Math.min(64, info.nCtx), backend: 'cpu' });
    const s = slowdown(info.backend, info.software, 'a generated token', gpuMs, await perToken(cpu));
    el.textContent = slowdownText(s, 'Load it with backend CPU (wasm) or auto for this browser.');
    el.dataset.ratio = String(s.ratio);
  } catch (err) {
    el.textContent = `${gpuName(info.backend)} here is ${info.software}, a software renderer (usually much slower than the CPU); ` +
      `timing it against the CPU failed: ${err?.message ?? err}`;
  } finally {
    cpu.terminate();
  }
}

/** The context line: prompt tokens, then used and left of the model's context; a prompt that does not fit is marked. */
function showContext(promptTokens, generated) {
  const n = info.nCtx;
  const used = Math.min(n, promptTokens + generated);
  show('c-prompt', promptTokens, promptTokens.toLocaleString('en-US'));
  $('c-prompt-unit').textContent = promptTokens === 1 ? 'token' : 'tokens';
  show('c-used', used, used.toLocaleString('en-US'));
  show('c-size', n, n.toLocaleString('en-US'));
  show('c-left', n - used, (n - used).toLocaleString('en-US'));
  const tooLong = promptTokens > n;
  $('prompt-error').textContent = tooLong
    ? `the prompt is ${tokens(promptTokens)}, longer than the context (${n.toLocaleString('en-US')}): shorten it or load with a larger context`
    : '';
  if (tooLong) $('prompt').setAttribute('aria-invalid', 'true');
  else $('prompt').removeAttribute('aria-invalid');
  return !tooLong;
}

/** Counts the prompt's tokens in the Worker (not while it loads or generates). */
async function countPrompt() {
  const seq = ++countSeq;
  if (!info || busy) return;
  try {
    const ids = await lm.tokenize($('prompt').value);
    if (seq === countSeq && !busy) showContext(ids.length, 0);
  } catch (err) {
    if (seq === countSeq) $('prompt-error').textContent = err?.message ?? String(err);
  }
}

async function generate() {
  $('error').textContent = '';
  const f = readFields(SAMPLING);
  if (!f.ok) {
    status('error', notStarted(f.errors));
    return;
  }
  const { prompt, ...options } = f.values;
  setBusy(true);
  status('running', 'Reading the prompt...'); // at once: the last run's "Finished" no longer stands
  clearTimeout(countTimer); // this run counts the prompt itself
  countSeq++;
  let promptTokens;
  try {
    promptTokens = (await lm.tokenize(prompt)).length;
  } catch (err) {
    setBusy(false);
    showError(err);
    return;
  }
  if (!showContext(promptTokens, 0)) {
    setBusy(false);
    status('error', `Not started: the prompt is ${tokens(promptTokens)}; the context holds ${info.nCtx} (see the prompt).`);
    return;
  }
  setBusy(true, true);
  const out = $('output');
  out.textContent = '';
  delete out.dataset.ids;
  for (const id of ['r-prompt', 'r-prompt-rate', 'r-gen', 'r-gen-rate', 'r-stopped']) show(id, '', '-');
  status('running', 'Reading the prompt...');
  let n = 0;
  let first = 0;
  try {
    const result = await lm.generate(prompt, {
      ...options,
      onToken: (text) => {
        if (n++ === 0) first = performance.now();
        out.append(text);
        show('r-gen', n);
        showContext(promptTokens, n);
        const s = (performance.now() - first) / 1000;
        if (n > 1 && s > 0) show('r-gen-rate', (n - 1) / s, ((n - 1) / s).toFixed(1));
        status('running', `Generating: ${tokens(n)}...`);
      },
    });
    const st = result.stats;
    out.textContent = result.text;
    out.dataset.ids = JSON.stringify(result.ids);
    show('r-prompt', st.promptTokens);
    if (st.promptTokensPerSecond) show('r-prompt-rate', st.promptTokensPerSecond, st.promptTokensPerSecond.toFixed(1));
    show('r-gen', st.generatedTokens);
    if (st.generateTokensPerSecond) show('r-gen-rate', st.generateTokensPerSecond, st.generateTokensPerSecond.toFixed(1));
    show('r-stopped', result.stoppedBy);
    showContext(st.promptTokens, st.generatedTokens);
    const why = { maxTokens: 'max tokens', eog: 'end-of-generation token', stop: 'a stop string', abort: 'Stop', context: 'a full context' };
    status(result.stoppedBy === 'abort' ? 'stopped' : 'finished',
      `${result.stoppedBy === 'abort' ? 'Stopped' : 'Finished'}: ${tokens(st.generatedTokens)} (ended by ${why[result.stoppedBy] ?? result.stoppedBy}).`);
  } catch (err) {
    showError(err);
  } finally {
    setBusy(false);
    if ($('prompt').value !== prompt) countPrompt(); // edited during the run
  }
}

async function main() {
  const report = (m) => { $('error').textContent += `${$('error').textContent ? '\n' : ''}${m}`; };
  let good = applyQuery(query, QUERY_RULES, report, ['autoload', 'xq8', 'threads']);
  if (query.has('threads')) {
    const v = query.get('threads');
    if (/^[1-9][0-9]?$/.test(v) && Number(v) <= 64) threads = Number(v);
    else good = (report(`URL parameter threads=${v}: must be a whole number from 1 to 64`), false);
  }
  if (query.has('xq8')) { // a checkbox: 1 or 0
    const v = query.get('xq8');
    if (v === '1' || v === '0') $('xq8').checked = v === '1';
    else good = (report(`URL parameter xq8=${v}: must be 1 or 0`), false);
  }
  if (query.has('url')) picker.source = 'url';
  applyMode();
  $('mode').addEventListener('change', applyMode);
  $('prompt').addEventListener('input', () => {
    clearTimeout(countTimer);
    countTimer = setTimeout(countPrompt, 150);
  });
  $('load').addEventListener('click', () => { if (!busy) load(); });
  $('generate').addEventListener('click', () => { if (!busy) generate(); });
  $('stop-run').addEventListener('click', () => {
    lm?.stop();
    status('stopping', 'Stopping...');
  });
  setBusy(false);
  picker.kept.refresh().catch(showError);
  picker.cached.refresh().catch(showError);
  keptIn(ADAPTER_FOLDER).then(({ file }) => { // an adapter finetune.html kept
    keptAdapter = file;
    if (!file) return;
    $('lora-kept').disabled = false;
    $('lora-name').textContent = `apply ${file.name} (${mib(file.size)}) kept by finetune.html`;
  }).catch(showError);
  if (!good) status('error', 'Some URL settings were refused (see above).');
  if (query.get('autoload') === '1' && good) await load();
}

main().catch(showError);
