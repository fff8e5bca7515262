// ui.js - the page side of cluster.html. It owns the transport (a fabric.js
// Fabric of a BroadcastChannel per cohort name and, once the user opens or
// joins one, a WebRTC room: room_ui.js; relayed untouched into the Worker's
// ProxyBus by proxyRelay) and renders what worker.js reports: the status
// (what the run is doing, or how it ended), the roster, the cohort's loss
// curve and test accuracy (train-view.js), samples/s, step, parameter version and hash, the settings the
// leader put in force, refused peers and the policy in force. Every input is
// checked by settings.js: the URL's values when the page loads (a bad one is
// named by its URL key, e.g. 'steps: "x" is not a whole number ...', stays out
// of the form and holds autostart back), the form's before a rank starts
// (named by the field's label). No training happens here.
//
// Shown values carry their full value in data-value for the browser tests;
// window.rlxCluster is a debug hook: { state, info, points, accuracy, start(),
// stop(), setMaxSteps(n), params() -> Promise<Uint32Array bits as Array> }.
import { BroadcastChannelBus, proxyRelay } from './bus.js';
import { encodeMessage } from './wire.js';
import { createIdentity, signBuffer, SIG_PLACEHOLDER } from './auth.js';
import { LossPlot, AccuracyPlot } from '../train-view.js';
import { checkSettings, LLM_MODEL } from './settings.js';
import { applyLlmQuery, isLlm, llmChoice, llmJoinQuery, saveAdapter } from './llm_ui.js';
import { modelKey } from './task_key.js';
import { topologyOverrides } from './policy.js';
import { Fabric } from './fabric.js';
import { RoomPanel, ROOM_MIN } from './room_ui.js';
import { scaleRaw, scaleQuery, applyScaleQuery, setScaleDisabled, renderScale } from './sync_ui.js';

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const cohortName = query.get('cohort') ?? '';
const sayGoodbye = query.get('bye') !== '0';
let minText = query.get('min') ?? '1'; // '1' when the URL's is bad (urlErrors)
const topoQuery = { tree: query.get('tree') ?? '', fanout: query.get('fanout') ?? '' }; // ?tree=1|0, ?fanout=N

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
let models = [];
let run = null; // { id, slug, relay, port } while a rank runs
let llmSlug = null; // the fine-tuning choice's identity (llm_ui.js), once read: the room's hello carries it
let state = null; // latest status from the Worker
let info = null; // the started rank's info
let points = []; // cohort [step, loss]
let accuracy = []; // [step, test accuracy] of the leader's params
const lossPlot = new LossPlot(document.getElementById('loss-chart'), { label: 'cohort loss', smoothing: 0.8 });
const accPlot = new AccuracyPlot(document.getElementById('acc-chart'));
let nextReq = 1;
let hello = null;
const fabric = new Fabric(null);
fabric.add('tabs', new BroadcastChannelBus(channelName(), `${crypto.randomUUID()}#page`));
const room = new RoomPanel({
  fabric,
  query,
  model: () => (isLlm($) ? { slug: run?.slug ?? llmSlug ?? LLM_MODEL, paramCount: 0 } // the identity fixes the count
    : { slug: $('model').value, paramCount: models.find((m) => m.slug === $('model').value)?.params ?? 0 }),
  onChange: () => setRunning(!!run),
  onEnter: () => start({ minAtLeast: ROOM_MIN }), // Open a room / Join: this tab's rank trains with the room
  // a fine-tuning choice is read and hashed before the room's hello names it
  prepare: async () => {
    if (!isLlm($) || run) return;
    const c = await llmChoice($);
    if (c.errors.length) throw new Error(c.errors.join('; '));
    llmSlug = c.slug;
  },
  joinQuery: () => (isLlm($) ? llmJoinQuery($) : { model: $('model').value }),
});
const replies = new Map();

// ---- rendering ----------------------------------------------------------------

function show(id, value, text = String(value)) {
  const el = $(id);
  el.textContent = text;
  el.dataset.value = value === null || value === undefined ? '' : String(value);
}

const STATUS_TEXT = {
  joining: 'joining the cohort',
  waiting: 'waiting for ranks',
  running: 'running',
  finished: 'finished',
  diverged: 'diverged',
  halted: 'halted',
};

function setStatus(value, text = STATUS_TEXT[value] ?? value) {
  show('status', value, text);
}

function showError(err) {
  const text = err ? `${err?.message ?? err}` : '';
  $('error').textContent = text;
  if (err) console.warn(text); // a warning: the page keeps working (Start again)
}

/** The form's values, unchecked. */
function formRaw() {
  return {
    ...scaleRaw($, query), // encoding, lockstep / periodic, aggregation (sync_ui.js)
    model: $('model').value,
    backend: $('backend').value,
    batch: $('batch').value,
    lr: $('lr').value,
    steps: $('steps').value,
    min: minText,
  };
}

/** The form's values as settings.js checks them. */
function formSettings() {
  if (isLlm($)) return checkSettings({ ...formRaw(), model: LLM_MODEL }, { models: [LLM_MODEL] });
  return checkSettings(formRaw(), { models: models.map((m) => m.slug) });
}

const short = (id) => (id ? id.slice(0, 8) : '-');
const fixed = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '-');
const ms = (v) => (Number.isFinite(v) ? `${v} ms` : '-');

function setRunning(on) {
  $('start').disabled = on || models.length === 0;
  $('stop').disabled = !on;
  for (const id of ['model', 'backend', 'batch', 'lr', 'task', 'llm-base', 'llm-file', 'llm-text', 'llm-text-file', 'llm-paste', 'llm-rank', 'llm-alpha', 'llm-targets', 'llm-seq']) {
    $(id).disabled = on || models.length === 0;
  }
  $('adapter').disabled = !(on && info?.task === 'llm');
  setScaleDisabled($, on || models.length === 0);
  if (room?.joined) $('model').disabled = true; // the room's handshake named this model
  $('steps').disabled = false;
  $('steps').title = '0: never';
}

/** The leader's settings, and where this tab asked for something else. */
function renderSettings(s) {
  const c = s.settings;
  const from = s.settingsFrom;
  show('cohort-model', c.model ?? '', c.model ?? '-');
  show('cohort-lr', c.lr, String(c.lr));
  show('cohort-batch', c.batch ?? '', c.batch ? `${c.batch} per rank` : '-');
  show('cohort-optimizer', c.optimizer ?? '', (c.optimizer ?? '-').toUpperCase());
  show('cohort-steps', c.maxSteps, c.maxSteps > 0 ? `stop at step ${c.maxSteps}` : 'no step limit');
  renderScale(show, c, s.roster?.length ?? 1);
  show('cohort-from', from ?? s.id, from ? `set by the leader ${short(from)}` : 'set by this tab (it leads or has not synced yet)');
  const asked = info ? { lr: info.lr, batch: info.batch, maxSteps: info.maxSteps } : null;
  const differ = [];
  if (asked && from) {
    if (asked.lr !== c.lr) differ.push(`learning rate ${asked.lr}`);
    if (asked.batch !== c.batch) differ.push(`batch ${asked.batch}`);
    if (asked.maxSteps !== c.maxSteps) differ.push(`stop at step ${asked.maxSteps || 'never'}`);
  }
  show('settings-note', differ.join('; '), differ.length
    ? `This tab asked for ${differ.join(', ')}; the leader's settings above are in force.` : '');
  // only the leader's tab sets the step limit while a run is on
  const follower = !!run && s.role !== 'leader';
  $('steps').disabled = follower;
  $('steps').title = follower ? "the leader's tab sets the step limit" : '0: never';
}

function renderRefused(list) {
  const ul = $('refused');
  ul.replaceChildren(...list.map((r) => {
    const li = document.createElement('li');
    li.dataset.id = r.id;
    li.dataset.reason = r.reason;
    li.textContent = `${short(r.id)}: ${r.reason}`;
    return li;
  }));
  $('refused-box').hidden = list.length === 0;
}

/** One row per rank; the reason for a fallback goes on a full-width row under it (readable on a phone). */
function renderRoster(rows) {
  const body = $('roster').tBodies[0];
  body.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement('tr');
    tr.dataset.id = r.id;
    tr.dataset.role = r.role;
    tr.dataset.backend = r.backend ?? '';
    tr.dataset.fallback = r.fallback ?? '';
    tr.dataset.hash = r.hash ?? '';
    if (r.self) tr.className = 'self';
    const cells = [
      short(r.id) + (r.self ? ' (this tab)' : ''),
      r.role,
      r.backend ?? '-',
      String(r.step),
      String(r.version),
      r.hash ?? '-',
      fixed(r.samplesPerSec),
      r.self ? 'now' : `${Math.round(r.lastSeenMs)} ms ago`,
    ];
    cells.forEach((text, k) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (k === 1) td.className = `role-${r.role}`;
      tr.append(td);
    });
    body.append(tr);
    tr.dataset.excluded = r.excluded ?? ''; // left out of the steps by the leader (robust.js), and why
    if (r.fallback || r.excluded) {
      const why = document.createElement('tr');
      why.className = 'reason';
      const td = document.createElement('td');
      td.colSpan = cells.length;
      const text = document.createElement('div'); // as wide as the screen, not the table
      text.textContent = [r.fallback && `fallback to ${r.backend ?? '?'}: ${r.fallback}`, r.excluded].filter(Boolean).join('; ');
      td.append(text);
      why.append(td);
      body.append(why);
    }
  }
}

function renderStatus(s) {
  state = s;
  const fresh = [];
  for (const p of s.points) {
    const last = points[points.length - 1];
    if (!last || p[0] > last[0]) {
      points.push(p);
      fresh.push(p);
    }
  }
  if (points.length > 2000) points = points.slice(-2000);
  if (fresh.length) lossPlot.add(fresh);
  for (const [step, acc] of s.accPoints ?? []) {
    const last = accuracy[accuracy.length - 1];
    if (last && step <= last[0]) continue;
    accuracy.push([step, acc]);
    accPlot.add(step, acc);
    show('acc', acc, `${(100 * acc).toFixed(1)}% (step ${step})`);
  }
  const leaderRow = s.roster.find((r) => r.id === s.leader);
  show('role', s.role, s.role);
  if (run) {
    setStatus(s.phase, s.phase === 'finished' ? `finished at step ${s.step}`
      : s.phase === 'waiting' ? `waiting for ranks (${s.roster.length} of ${s.minMembers})` : undefined);
  }
  if (s.halted) showError(`Training ${s.phase === 'diverged' ? 'stopped' : 'halted'}: ${s.halted}`);
  show('leader', s.leader ?? '', s.leader ? `${short(s.leader)}${s.leader === s.id ? ' (this tab)' : ''}` : 'none yet');
  show('step', s.step);
  show('version', s.version);
  show('hash', s.hash);
  show('loss', s.loss ?? '', Number.isFinite(s.loss) ? s.loss.toFixed(4) : '-');
  show('sps', s.cohortSamplesPerSec, fixed(s.cohortSamplesPerSec));
  show('own-sps', s.samplesPerSec, fixed(s.samplesPerSec));
  show('peers', s.roster.length, `${s.roster.length}${leaderRow ? '' : ' (no leader in view)'}`);
  const p = s.policy;
  show('quorum', p.quorum, `${p.quorum} of ${p.peers}`);
  show('heartbeat', p.heartbeatMs, ms(p.heartbeatMs));
  show('takeover', p.takeoverMs, ms(p.takeoverMs));
  show('drop', p.dropMs, ms(p.dropMs));
  show('collect', p.collectMs, ms(p.collectMs));
  const t = s.tree;
  if (t) {
    // the data path of the last step (the leader's policy decides it), and this tab's threshold and fan-out
    show('topology', t.topology, t.topology === 'tree' ? `tree, fan-out ${t.fanout}, depth ${t.depth}${t.role ? ` (this tab: ${t.role})` : ''}` : 'star');
    const above = t.policy.treeAbove;
    show('tree-above', above, above === 0 ? `always a tree (fan-out ${t.policy.fanout})` : Number.isFinite(above)
      ? `star up to ${above} ranks, then a tree of fan-out ${t.policy.fanout}` : 'always a star');
  }
  if (s.shard) {
    $('shard').textContent = `last bucket: shard ${s.shard.index + 1} of ${s.shard.count} at step ${s.shard.step}, ` +
      `loss ${fixed(s.shard.loss, 4)} on it`;
  }
  if (s.lastEvent && !s.halted) showError(s.lastEvent);
  renderRoster(s.roster);
  renderSettings(s);
  renderRefused(s.refused ?? []);
}

function renderInfo(i) {
  info = i;
  show('backend-resolved', i.backend, `${i.backend} (asked for ${i.requested})`);
  show('fallback', i.fallback ?? '', i.fallback ? `- ${i.fallback}` : '');
  const d = i.data;
  const text = d.why ? `${d.source} - ${d.why}` : i.task === 'llm' ? `${d.source}, sharded across the ranks`
    : `${d.source}: ${d.count} samples, sharded across the ranks`;
  $('adapter').disabled = !(run && i.task === 'llm');
  show('data', d.kind, text);
}

// ---- the rank -------------------------------------------------------------------

// One channel per cohort name, whatever the model: a tab of another model is
// then refused by name (and says so) instead of silently forming its own cohort.
function channelName() {
  return `rlx-cluster${cohortName ? `/${cohortName}` : ''}`;
}

let starting = false;

/** minAtLeast: the first step waits for at least this many ranks (a room's, room_ui.js ROOM_MIN). */
async function start({ minAtLeast = 1 } = {}) {
  if (run || starting) return;
  showError(null);
  const { settings, errors } = formSettings();
  if (settings.min !== null) settings.min = Math.max(settings.min, minAtLeast);
  errors.push(...topologyOverrides(topoQuery).errors);
  if (errors.length) {
    showError(`Cannot start: ${errors.join('; ')}.`);
    setStatus('ready', 'ready (fix the settings)');
    return;
  }
  // a fine-tuning run: the base file and text as bytes, and their identity
  starting = true;
  let llm = null;
  let slug = settings.model;
  if (isLlm($)) {
    const c = await llmChoice($).finally(() => { starting = false; });
    if (c.errors.length) {
      showError(`Cannot start: ${c.errors.join('; ')}.`);
      setStatus('ready', 'ready (fix the settings)');
      return;
    }
    ({ llm, slug } = c);
    llmSlug = slug;
  }
  // this run's key pair: its rank id is derived from the public key (auth.js)
  starting = true;
  let identity;
  try {
    identity = await createIdentity();
  } catch (err) {
    showError(`Cannot start: ${err.message}`);
    return;
  } finally {
    starting = false;
  }
  if (run) return;
  const id = identity.id;
  const { port1, port2 } = new MessageChannel();
  fabric.selfId = id;
  fabric.identity = identity;
  const relay = proxyRelay(port2, fabric);
  const key = llm ? modelKey({ kind: 'llm', slug }) : modelKey({ kind: 'vision', slug, paramCount: models.find((m) => m.slug === slug)?.params });
  run = { id, slug, relay, port: port2, bye: signedBye(identity, { model: key, pv: hello?.protocol }) };
  points = [];
  accuracy = [];
  lossPlot.clear();
  accPlot.clear();
  show('acc', '', '-');
  state = null;
  info = null;
  setStatus('starting');
  setRunning(true);
  worker.postMessage({
    cmd: 'start',
    port: port1,
    keys: { privateKey: identity.privateKey, publicKey: identity.publicKey },
    slug,
    task: llm ? 'llm' : 'vision',
    llm,
    backend: settings.backend,
    batch: settings.batch,
    lr: settings.lr,
    maxSteps: settings.steps,
    minMembers: settings.min,
    scale: settings.scale,
    ...topoQuery,
  }, llm ? [port1, llm.model, llm.text] : [port1]);
}

/**
 * The goodbye this page sends for its rank when the tab closes, signed at
 * start (a closing page cannot wait for WebCrypto): the last message of
 * this identity, so its seq is the largest there is.
 */
function signedBye(identity, stamp) {
  const buf = encodeMessage({ type: 'bye', from: identity.id, to: null, seq: Number.MAX_SAFE_INTEGER, term: 0, ...stamp, pk: identity.pk, sig: SIG_PLACEHOLDER });
  const out = { buf: null };
  signBuffer(identity, buf).then((b) => { out.buf = b; }, () => {});
  return out;
}

function teardown() {
  if (!run) return;
  run.relay.close();
  run.port.close();
  run = null;
  setRunning(false);
}

function stop() {
  if (!run) return;
  setStatus('stopping');
  worker.postMessage({ cmd: 'stop' });
}

/** On close: the page says goodbye for its rank, so the peers need not wait for its silence. */
function goodbye() {
  if (!run || !sayGoodbye || !state || !run.bye.buf) return;
  try {
    fabric.sendRaw(run.bye.buf.slice(0));
  } catch {
    // closing anyway
  }
}

worker.onmessage = (event) => {
  const msg = event.data;
  switch (msg.type) {
    case 'hello': {
      hello = msg;
      models = msg.models;
      show('threads', msg.threads, `${msg.threads} (${msg.threadsWhy})`);
      const sel = $('model');
      for (const m of models) {
        const opt = document.createElement('option');
        opt.value = m.slug;
        opt.textContent = `${m.slug} - trains on ${m.trainsOn.join(', ')}`;
        opt.dataset.trainsOn = m.trainsOn.join(',');
        sel.append(opt);
      }
      const want = query.get('model');
      sel.value = models.some((m) => m.slug === want) ? want : models.some((m) => m.slug === 'mnist-cnn') ? 'mnist-cnn' : models[0]?.slug;
      setStatus('ready');
      setRunning(false);
      if (want !== null && !models.some((m) => m.slug === want)) {
        showError(`Unknown model ${JSON.stringify(want)} in the URL: known models are ${models.map((m) => m.slug).join(', ')}.`);
      } else if (urlErrors.length) {
        showError(`In the URL: ${urlErrors.join('; ')}. The form keeps its own value${urlErrors.length > 1 ? 's' : ''} instead` +
          `${query.get('autostart') === '1' ? '; not started (Start trains with the form as it is)' : ''}.`);
        if (query.get('room')) room.join();
      } else {
        // a join URL: into the room first, then (autostart) the rank
        (query.get('room') ? room.join() : Promise.resolve()).then(() => {
          if (query.get('autostart') === '1') start();
        });
      }
      break;
    }
    case 'started':
      renderInfo(msg.info);
      setStatus('joining');
      break;
    case 'info':
      renderInfo(msg.info);
      break;
    case 'status':
      if (run && msg.id === run.id) renderStatus(msg);
      break;
    case 'stopped':
      teardown();
      setStatus('stopped');
      break;
    case 'adapter': {
      const r = replies.get(msg.reqId);
      replies.delete(msg.reqId);
      if (r) r(msg.bytes);
      else saveAdapter(msg.bytes);
      break;
    }
    case 'params': {
      const r = replies.get(msg.reqId);
      replies.delete(msg.reqId);
      r?.(msg.params ? { version: msg.version, bits: Array.from(new Uint32Array(msg.params.buffer)) } : null);
      break;
    }
    case 'error':
      showError(msg.error);
      if (msg.cmd === 'start') {
        teardown();
        setStatus('error');
      }
      break;
    default:
      break;
  }
};
worker.onerror = (event) => {
  showError(`the Worker failed: ${event.message ?? 'it could not start'}`);
  setStatus('error');
};

$('start').addEventListener('click', start);
$('adapter').addEventListener('click', () => worker.postMessage({ cmd: 'adapter', reqId: 0 }));
$('stop').addEventListener('click', stop);
$('steps').addEventListener('change', () => {
  if (!run) return;
  const { errors, settings } = formSettings();
  const bad = errors.find((e) => e.startsWith('stop at step'));
  if (bad) showError(bad);
  else worker.postMessage({ cmd: 'maxSteps', value: settings.steps });
});
addEventListener('pagehide', goodbye);
addEventListener('resize', () => {
  lossPlot.draw();
  accPlot.draw();
});

/**
 * The URL's settings checked as the page loads, named by their URL keys
 * (settings.js byKey, policy.js): the errors. Good values go into the form,
 * bad ones stay out of it (a number field could not even hold "x").
 */
function checkQuery() {
  const fields = ['backend', 'batch', 'lr', 'steps']; // URL keys that are the ids of their form fields
  const given = scaleQuery(query);
  for (const key of [...fields, 'min']) if (query.has(key)) given[key] = query.get(key);
  // the model is checked once the Worker listed the models (hello)
  const { errors } = checkSettings({ ...formRaw(), ...given, model: '-' }, { models: ['-'], byKey: true });
  errors.push(...topologyOverrides(topoQuery).errors);
  const bad = new Set(errors.map((e) => e.slice(0, e.indexOf(':'))));
  for (const key of fields) {
    const v = query.get(key);
    if (v === null || bad.has(key)) continue;
    const el = $(key);
    if (el.tagName === 'SELECT' && ![...el.options].some((o) => o.value === v)) el.append(new Option(v, v));
    el.value = v;
  }
  applyScaleQuery($, query, bad);
  if (bad.has('min')) minText = '1';
  return errors;
}

applyLlmQuery($, query);
const urlErrors = checkQuery();
lossPlot.draw();
accPlot.draw();
worker.postMessage({ cmd: 'hello' });

window.rlxCluster = {
  get state() { return state; },
  get info() { return info; },
  get points() { return points.slice(); },
  get accuracy() { return accuracy.slice(); },
  get rankId() { return run?.id ?? null; },
  get room() { return room.snapshot(); },
  get fabric() { return { ...fabric.stats, links: [...fabric.links.keys()] }; },
  joinRoom: () => room.join(),
  openRoom: () => room.open(),
  leaveRoom: () => room.leave(),
  start,
  stop,
  setMaxSteps(n) {
    $('steps').value = String(n);
    worker.postMessage({ cmd: 'maxSteps', value: n });
  },
  /** The cohort's LoRA adapters as GGUF bytes (a fine-tuning run). */
  adapter() {
    const reqId = nextReq++;
    return new Promise((resolve) => {
      replies.set(reqId, resolve);
      worker.postMessage({ cmd: 'adapter', reqId });
    });
  },
  params() {
    const reqId = nextReq++;
    return new Promise((resolve) => {
      replies.set(reqId, resolve);
      worker.postMessage({ cmd: 'params', reqId });
    });
  },
};
