// worker.js - the compute and coordination side of cluster.html, in a
// dedicated module Worker: one protocol.js Rank over a ProxyBus whose other
// end is the page (the page owns the transport - a BroadcastChannel now, a
// WebRTC mesh later - and relays wire buffers with proxyRelay). Gradients
// come from the rank's task (task.js: a vision model on the backend it
// resolved to, or a LoRA fine-tuning of a language model) on this rank's
// shard of the data, with the cohort's batch size (the leader's settings are
// in force). The page only renders what this Worker reports.
//
// Messages in (from the page, on `self`):
//   { cmd: 'hello' }                            -> { type: 'hello', models, version, protocol, threads, threadsWhy }
//   { cmd: 'start', port, keys, task, slug, llm, backend, batch, lr, maxSteps, minMembers, seed, tree, fanout }
//                                               task: 'vision' (default: the model `slug`) or 'llm' (a LoRA
//                                               fine-tuning, task_llm.js: llm = { model, text: bytes, name,
//                                               textName, format, rank, alpha, targets, seq }; batch: windows)
//                                               port: the MessagePort of the bus hop (transferred);
//                                               keys: { privateKey, publicKey } CryptoKeys of this rank (auth.js:
//                                               the rank id is derived from the public key; the bus signs with them);
//                                               minMembers: ranks the cohort's first step waits for;
//                                               tree, fanout: the page's ?tree= / ?fanout= (policy.js topologyOverrides)
//                                               scale: { enc, sync, H, outerLr, outerMomentum, agg, clip, clipMax,
//                                               strikes } (settings.js checkScale; missing keys: the defaults)
//   { cmd: 'stop' }                             leave the cohort (goodbye), -> { type: 'stopped' }
//   { cmd: 'maxSteps', value }                  the step limit, when this rank leads (0: none)
//   { cmd: 'params', reqId }                    -> { type: 'params', reqId, params } (a copy, for tests)
//   { cmd: 'adapter', reqId }                   -> { type: 'adapter', reqId, bytes, version, step }: the
//                                               cohort's LoRA adapters as a GGUF file (fine-tuning only)
// Messages out: 'hello', 'started' { info }, 'info' { info } (the backend
// changed: a GPU failed), 'status' { ..., phase } (every STATUS_MS and on
// every role change), 'stopped', 'error' { error } (a plain sentence).
//
// phase: 'joining' (looking for or syncing with a leader), 'waiting' (the
// leader waits for the ranks of the first step), 'running', 'finished' (the
// cohort reached its step limit), 'diverged' / 'halted' (the run ended, see
// halted), as the page's status shows it.
//
// The leader's `params` broadcasts carry extra header fields, added by the
// bus tap below: `loss` (the cohort's mean loss of the step just resolved)
// and `cohortSps`, so every tab can plot the cohort's loss curve, and `acc`
// / `accStep`: the leader's test accuracy of the params after step accStep
// on the held-out Fashion-MNIST images (every EVAL_EVERY steps and at the
// step limit; models that do not take them have none); the Rank itself
// ignores them. In a tree step they ride in the leader's signed lead too
// (auth.js), so a relay passes them on and cannot change them.
import { init, runtime } from '../runtime/instance.js';
import * as vision from '../runtime/vision.js';
import { BACKEND_ORDER } from '../runtime/backends.js';
import { ProxyBus } from './bus.js';
import { identityFromKeys } from './auth.js';
import { Rank, PROTOCOL_VERSION } from './protocol.js';
import { createTask } from './task.js';
import { modelKey } from './task_key.js';
import { checkSettings, checkLora, LLM_MODEL } from './settings.js';
import { topologyOverrides } from './policy.js';
import { syncModes, collectMs } from './periodic.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const STATUS_MS = 100;
const MAX_POINTS = 2000; // loss points kept per run
const EVAL_EVERY = 50; // steps between two test-accuracy measurements of the leader

let session = null;

function post(msg) {
  self.postMessage(msg);
}

function errorText(err) {
  return String(err?.message ?? err);
}

async function hello() {
  await init();
  const models = vision.list_vision_models().map((slug) => {
    const i = vision.vision_model_info(slug);
    return {
      slug: i.slug,
      title: i.title,
      params: i.param_flat_len,
      input: i.input_dims,
      trainsOn: BACKEND_ORDER.filter((b) => i[`${b}_train`]),
    };
  });
  // threads / threadsWhy: the CPU's threads (the threaded build where this page is cross-origin isolated) and why
  return { type: 'hello', models, version: runtime().version(), protocol: PROTOCOL_VERSION,
    threads: runtime().threads, threadsWhy: runtime().threadsWhy };
}

/**
 * A bus that stamps the leader's step results onto its params broadcasts and
 * reads them off the ones it receives (see the top of the file).
 */
class LossTap {
  constructor(inner, session) {
    this.inner = inner;
    this.id = inner.id;
    this.session = session;
  }

  get stats() {
    return this.inner.stats;
  }

  send(to, msg) {
    const s = this.session;
    if (msg.type === 'params' && s.rank?.role === 'leader') s.memberOf(msg.lead && typeof msg.lead === 'object' ? msg.lead : msg);
    if (msg.type === 'params' && s.rank?.role === 'leader' && s.lastStep) {
      const extra = { loss: s.lastStep.loss, lossStep: s.lastStep.step, cohortSps: s.rank.status().cohortSamplesPerSec ?? 0 };
      if (s.accPoints.length) {
        const [accStep, acc] = s.accPoints[s.accPoints.length - 1];
        extra.acc = acc;
        extra.accStep = accStep;
      }
      msg = { ...msg, ...extra };
      // a tree step: into the leader's own header too (the step's one object: signed once), which relays pass on
      if (msg.lead && typeof msg.lead === 'object' && msg.lead.text === undefined && msg.lead.lossStep === undefined) Object.assign(msg.lead, extra);
    }
    return this.inner.send(to, msg);
  }

  onMessage(fn) {
    return this.inner.onMessage((msg) => {
      fn(msg);
      if (msg.type !== 'params') return;
      // relayed down a tree: the leader's own (signed) header says it, not the relay's
      const m = msg.lead && typeof msg.lead === 'object' ? msg.lead : msg;
      // only this cohort's figures: the leader this rank follows (after the Rank took the message), of its
      // model and protocol; a tab of another model on the same channel is refused, and so are its numbers
      const rank = this.session.rank;
      if (!rank || m.from !== rank.leaderId || m.from === rank.id || msg.model !== rank.model || msg.pv !== PROTOCOL_VERSION) return;
      this.session.memberOf(m);
      if (typeof m.loss === 'number' && Number.isSafeInteger(m.lossStep)) {
        this.session.cohortPoint(m.lossStep, m.loss, typeof m.cohortSps === 'number' ? m.cohortSps : null);
      }
      if (typeof m.acc === 'number' && m.acc >= 0 && m.acc <= 1 && Number.isSafeInteger(m.accStep)) {
        this.session.accPoint(m.accStep, m.acc);
      }
    });
  }

  drained() {
    return this.inner.drained();
  }

  close() {
    this.inner.close();
  }
}

async function start(opts) {
  if (session) throw new RlxError(STATUS.STATE, 'already running: stop first');
  const { port, seed = 1 } = opts;
  const identity = await identityFromKeys(opts.keys);
  const id = identity.id;
  const topo = topologyOverrides({ tree: opts.tree, fanout: opts.fanout });
  if (topo.errors.length) throw new RlxError(STATUS.INVALID_ARG, topo.errors.join('; '));
  if (!port) throw new RlxError(STATUS.INVALID_ARG, 'start needs the bus port');
  await init();
  const kind = opts.task ?? 'vision';
  // a fine-tuning run's model is its base file (the task's identity); its LoRA settings are checked apart
  const checked = checkSettings({ ...opts.scale, model: kind === 'llm' ? LLM_MODEL : opts.slug, backend: opts.backend, batch: opts.batch, lr: opts.lr, steps: opts.maxSteps, min: opts.minMembers },
    { models: kind === 'llm' ? [LLM_MODEL] : vision.list_vision_models() });
  const lora = kind === 'llm' ? checkLora(opts.llm ?? {}) : null;
  const errors = [...checked.errors, ...(lora?.errors ?? [])];
  if (errors.length) throw new RlxError(STATUS.INVALID_ARG, errors.join('; '));
  const { backend, batch, lr, steps: maxSteps, min: minMembers, scale } = checked.settings;
  const s = {
    id,
    rank: null,
    bus: null,
    task: null,
    info: null,
    points: [], // [step, loss] of the cohort, newest last
    newPoints: [],
    accPoints: [], // [step, test accuracy] of the leader's params, newest last
    newAccPoints: [],
    lastStep: null,
    cohortSps: 0,
    samplesTotal: 0, // samples of every step this rank resolved as leader
    lastCompute: null, // this rank's last bucket: step, shard index / count, loss
    computeMs: 0, // time this rank spent computing its buckets (the rest of a step is the exchange and waiting)
    firstStep: null, // the first step whose params named this rank a member: { step, ranks } (where it joined the cohort's work)
    lastEvent: null,
    timer: 0,
    cohortPoint(step, loss, sps) {
      // minMembers gates the cohort's first step only: once it trained, a
      // rank that takes over leads whoever is left.
      if (this.rank && this.rank.minMembers > 1) this.rank.minMembers = 1;
      const last = this.points[this.points.length - 1];
      if (last && last[0] >= step) return;
      this.points.push([step, loss]);
      this.newPoints.push([step, loss]);
      if (this.points.length > MAX_POINTS) this.points.shift();
      if (sps !== null) this.cohortSps = sps;
    },
    memberOf(params) {
      const members = Array.isArray(params.members) ? params.members : [];
      if (!this.firstStep && params.go === true && Number.isSafeInteger(params.step) && members.includes(this.id)) {
        this.firstStep = { step: params.step, ranks: members.length };
      }
    },
    accPoint(step, acc) {
      const last = this.accPoints[this.accPoints.length - 1];
      if (last && last[0] >= step) return;
      this.accPoints.push([step, acc]);
      this.newAccPoints.push([step, acc]);
    },
  };
  session = s;
  try {
    const onFallback = (reason) => {
      s.info.backend = 'cpu';
      s.info.fallback = reason;
      s.rank?.setInfo({ backend: 'cpu', fallback: reason });
      post({ type: 'info', info: s.info });
    };
    s.task = await createTask(kind, kind === 'llm'
      ? { ...opts.llm, ...lora.settings, seed, backend }
      : { vision, slug: opts.slug, backend, batch, seed, onFallback });
    const task = s.task;
    const params = task.initParams();
    s.info = {
      id,
      task: kind,
      slug: task.slug,
      title: task.title,
      paramCount: task.paramCount,
      batch,
      lr,
      maxSteps,
      scale,
      requested: task.requested,
      backend: task.backend,
      fallback: task.fallback,
      data: task.data,
    };
    if (session !== s) {
      task.free(); // stopped while starting
      return;
    }
    s.bus = new LossTap(new ProxyBus(identity, port), s);
    const modes = syncModes({
      settings: () => s.rank.settings,
      lr: () => s.rank.lr,
      bucketAt: (p, dataStep, ctx) => {
        // the cohort's batch per rank (the leader's setting), not necessarily ours
        const n = s.rank.settings.batch ?? batch;
        const t0 = performance.now();
        const done = (r) => {
          s.computeMs += performance.now() - t0;
          s.lastCompute = { step: ctx.step, index: ctx.index, count: ctx.count, loss: r.loss, backend: r.backend };
          return r;
        };
        const r = task.grads(p, { step: dataStep, index: ctx.index, count: ctx.count, batch: n });
        return r instanceof Promise ? r.then(done) : done(r);
      },
    });
    s.rank = new Rank({
      id,
      bus: s.bus,
      params,
      lr,
      maxSteps: maxSteps > 0 ? maxSteps : Infinity,
      minMembers,
      firstComputeMs: task.firstComputeMs ?? 0, // a language model's first gradient takes seconds: peers wait for it
      policy: { ...topo.overrides, collectMs: collectMs(scale) }, // star or tree, fan-out (policy.js); periodic: H x the deadline
      model: modelKey(task),
      // encoding, lockstep / periodic, aggregation: the leader's are in force (protocol.js, periodic.js)
      settings: { model: task.slug, batch, optimizer: 'sgd', ...scale },
      info: { backend: task.backend, fallback: task.fallback },
      // the messages sent before a compute (the step's params) are signed and out first: a
      // synchronous compute would hold the signatures, so the step, back until it ends (bus.js drained)
      compute: (params, version, ctx) => {
        const sending = s.bus.drained();
        return sending ? sending.then(() => modes.compute(params, version, ctx)) : modes.compute(params, version, ctx);
      },
      update: modes.update,
      onEvent: (type, data) => {
        if (type === 'step') {
          s.lastStep = data;
          s.samplesTotal += data.samples;
          s.cohortPoint(data.step, data.loss, null);
          const done = data.step + 1; // steps taken by the params the leader now holds
          if (task.evaluate && (done % EVAL_EVERY === 0 || done === s.rank.maxSteps)) {
            const acc = task.evaluate(s.rank.params);
            if (acc !== null) s.accPoint(done, acc);
          }
        } else if (type === 'error') {
          // a sentence for the page; the stack (if any) for the console
          const text = String(data.error);
          s.lastEvent = text.split('\n')[0];
          if (text.includes('\n')) console.warn(text);
        }
        if (type === 'settings') s.rank.policyOverrides.collectMs = collectMs(s.rank.settings);
        if (type === 'role' || type === 'halted' || type === 'settings' || type === 'refused' || type === 'excluded') sendStatus(s);
      },
    });
    post({ type: 'started', info: s.info });
    s.rank.start();
    // Every period, not only after events: heartbeats move the roster (versions, last seen) too.
    s.timer = setInterval(() => sendStatus(s), STATUS_MS);
  } catch (err) {
    stop(s, { silent: true });
    throw err;
  }
}

/** What the page's status says (see the top of the file). */
function phaseOf(rank, st) {
  if (st.halted) return /^diverged/.test(st.halted) ? 'diverged' : 'halted';
  if (st.role === 'joining' || !st.leader) return 'joining';
  if (st.settings.maxSteps > 0 && st.step >= st.settings.maxSteps) return 'finished';
  if (st.role === 'leader' && st.step === 0 && !rank.collect && rank._stepMembers().length < rank.minMembers) return 'waiting';
  return 'running';
}

function sendStatus(s) {
  if (!s.rank) return;
  const st = s.rank.status();
  if (st.role === 'leader' && st.cohortSamplesPerSec !== null) s.cohortSps = st.cohortSamplesPerSec;
  post({
    type: 'status',
    t: performance.now(),
    id: st.id,
    role: st.role,
    leader: st.leader,
    term: st.term,
    version: st.version,
    step: st.step,
    hash: st.hash,
    loss: s.points.length ? s.points[s.points.length - 1][1] : null,
    training: st.training,
    halted: st.halted,
    haltedAt: st.haltedAt,
    phase: phaseOf(s.rank, st),
    settings: st.settings,
    settingsFrom: st.settingsFrom,
    refused: st.refused,
    minMembers: s.rank.minMembers,
    policy: st.policy,
    tree: st.tree, // the step's topology as seen from here (tree.js LiveTree.status)
    samplesPerSec: st.samplesPerSec,
    cohortSamplesPerSec: s.cohortSps,
    samplesTotal: s.samplesTotal,
    shard: s.lastCompute,
    computeMs: s.computeMs,
    firstStep: s.firstStep,
    points: s.newPoints.splice(0),
    accPoints: s.newAccPoints.splice(0),
    roster: s.rank.roster(),
    stats: { ...st.stats, dropped: { ...st.stats.dropped } },
    transport: st.transport ? { ...st.transport } : null,
    lastEvent: s.lastEvent,
  });
}

function stop(s = session, { silent = false } = {}) {
  if (!s) return;
  clearInterval(s.timer);
  if (s.rank) {
    sendStatus(s);
    s.rank.stop({ silent });
  }
  s.bus?.close();
  s.task?.free();
  s.task = null;
  if (session === s) session = null;
}

self.onmessage = async (event) => {
  const msg = event.data ?? {};
  try {
    switch (msg.cmd) {
      case 'hello':
        post(await hello());
        break;
      case 'start':
        await start(msg);
        break;
      case 'stop':
        stop();
        post({ type: 'stopped' });
        break;
      case 'maxSteps': {
        const r = session?.rank;
        if (!r) break;
        if (r.role !== 'leader') {
          throw new RlxError(STATUS.STATE, `the leader's tab sets the step limit; this cohort's is ${r.cohortSettings().maxSteps || 'none'}`);
        }
        const v = Number(msg.value);
        if (!Number.isInteger(v) || v < 0) throw new RlxError(STATUS.INVALID_ARG, `stop at step: ${JSON.stringify(String(msg.value))} is not a whole number of 0 or more`);
        r.maxSteps = v > 0 ? v : Infinity;
        r.setTraining(true); // re-checks whether a step can start now
        sendStatus(session);
        break;
      }
      case 'adapter': {
        // the cohort's adapters as a LoRA GGUF (every rank holds the same bytes; the leader's page offers them)
        const t = session?.task;
        if (!t?.adapter) throw new RlxError(STATUS.STATE, 'no fine-tuning run: only a LoRA fine-tuning writes an adapter');
        post({ type: 'adapter', reqId: msg.reqId, bytes: t.adapter(session.rank.params), version: session.rank.version, step: session.rank.step });
        break;
      }
      case 'params':
        post({ type: 'params', reqId: msg.reqId, params: session?.rank ? session.rank.params.slice() : null, version: session?.rank?.version ?? -1 });
        break;
      default:
        throw new RlxError(STATUS.INVALID_ARG, `unknown command ${msg.cmd}`);
    }
  } catch (err) {
    if (err?.stack) console.warn(err.stack);
    post({ type: 'error', cmd: msg.cmd ?? null, error: errorText(err) });
  }
};
