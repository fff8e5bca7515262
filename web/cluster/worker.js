// worker.js - the compute and coordination side of cluster.html, in a
// dedicated module Worker: one protocol.js Rank over a ProxyBus whose other
// end is the page (the page owns the transport - a BroadcastChannel now, a
// WebRTC mesh later - and relays wire buffers with proxyRelay). Gradients
// come from rlx_vision_grads in wasm (compute.js) on this rank's shard of
// the data (data.js). The page only renders what this Worker reports.
//
// Messages in (from the page, on `self`):
//   { cmd: 'hello' }                            -> { type: 'hello', models, version }
//   { cmd: 'start', port, id, slug, backend, batch, lr, maxSteps, minMembers, seed }
//                                               port: the MessagePort of the bus hop (transferred);
//                                               minMembers: ranks the cohort's first step waits for
//   { cmd: 'stop' }                             leave the cohort (goodbye), -> { type: 'stopped' }
//   { cmd: 'maxSteps', value }                  the step count this rank stops at when it leads (0: none)
//   { cmd: 'params', reqId }                    -> { type: 'params', reqId, params } (a copy, for tests)
// Messages out: 'hello', 'started' { info }, 'status' { ... } (every
// STATUS_MS and on every role change), 'stopped', 'error' { error }.
//
// The leader's `params` broadcasts carry two extra header fields, added by
// the bus tap below: `loss` (the cohort's mean loss of the step just
// resolved) and `cohortSps`, so every tab can plot the cohort's loss curve;
// the Rank itself ignores them.
import init, * as rlx from '../pkg/rlx_web.js';
import { ProxyBus } from './bus.js';
import { Rank } from './protocol.js';
import { VisionGrads, resolveBackend } from './compute.js';
import { loadTrainingSet, Shards } from './data.js';

const STATUS_MS = 100;
const MAX_POINTS = 2000; // loss points kept per run

let session = null;

function post(msg) {
  self.postMessage(msg);
}

function errorText(err) {
  return String(err?.message ?? err);
}

async function hello() {
  await init();
  const models = rlx.list_vision_models().map((slug) => {
    const i = rlx.vision_model_info(slug);
    return {
      slug: i.slug,
      title: i.title,
      params: i.param_flat_len,
      input: i.input_dims,
      trainsOn: ['cpu', 'webgpu', 'webgl'].filter((b) => i[`${b}_train`]),
    };
  });
  return { type: 'hello', models, version: rlx.runtime().version() };
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
    if (msg.type === 'params' && s.rank?.role === 'leader' && s.lastStep) {
      msg = { ...msg, loss: s.lastStep.loss, lossStep: s.lastStep.step, cohortSps: s.rank.status().cohortSamplesPerSec ?? 0 };
    }
    return this.inner.send(to, msg);
  }

  onMessage(fn) {
    return this.inner.onMessage((msg) => {
      if (msg.type === 'params' && typeof msg.loss === 'number' && Number.isSafeInteger(msg.lossStep)) {
        this.session.cohortPoint(msg.lossStep, msg.loss, typeof msg.cohortSps === 'number' ? msg.cohortSps : null);
      }
      fn(msg);
    });
  }

  close() {
    this.inner.close();
  }
}

async function start(opts) {
  if (session) throw new Error('already running: stop first');
  const { port, id, slug, backend = 'auto', batch = 32, lr = 0.1, maxSteps = 0, minMembers = 1, seed = 1 } = opts;
  if (!port) throw new Error('start needs the bus port');
  const s = {
    id,
    rank: null,
    bus: null,
    grads: null,
    shards: null,
    info: null,
    points: [], // [step, loss] of the cohort, newest last
    newPoints: [],
    lastStep: null,
    cohortSps: 0,
    samplesTotal: 0, // samples of every step this rank resolved as leader
    lastCompute: null, // this rank's last bucket: step, shard index / count, loss
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
  };
  session = s;
  try {
    await init();
    const model = rlx.vision_model_info(slug);
    const resolved = await resolveBackend(rlx, model.slug, backend, { batch });
    const bench = new rlx.VisionBench(model.slug);
    const params = bench.init_params(seed);
    const { set, why } = await loadTrainingSet(model, bench, { seed });
    bench.free();
    s.grads = new VisionGrads(rlx.runtime(), model);
    s.shards = new Shards(set, { seed });
    s.info = {
      id,
      slug: model.slug,
      title: model.title,
      paramCount: model.param_flat_len,
      batch,
      lr,
      requested: resolved.requested,
      backend: resolved.backend,
      selected: resolved.selected,
      fallback: resolved.fallback,
      data: { kind: set.kind, source: set.source, count: set.count, why },
    };
    if (session !== s) {
      s.grads.free(); // stopped while starting
      return;
    }
    s.bus = new LossTap(new ProxyBus(id, port), s);
    s.rank = new Rank({
      id,
      bus: s.bus,
      params,
      lr,
      maxSteps: maxSteps > 0 ? maxSteps : Infinity,
      minMembers: Math.max(1, minMembers | 0),
      info: { backend: resolved.backend, fallback: resolved.fallback },
      compute: (p, version, ctx) => {
        const { x, labels } = s.shards.batch(ctx.step, ctx.index, ctx.count, batch);
        const r = s.grads.run(x, labels, p);
        s.lastCompute = { step: ctx.step, index: ctx.index, count: ctx.count, loss: r.loss };
        return r;
      },
      onEvent: (type, data) => {
        if (type === 'step') {
          s.lastStep = data;
          s.samplesTotal += data.samples;
          s.cohortPoint(data.step, data.loss, null);
        } else if (type === 'error') {
          s.lastEvent = `${data.where}: ${data.error}`;
        }
        if (type === 'role') sendStatus(s);
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
    policy: st.policy,
    samplesPerSec: st.samplesPerSec,
    cohortSamplesPerSec: s.cohortSps,
    samplesTotal: s.samplesTotal,
    shard: s.lastCompute,
    points: s.newPoints.splice(0),
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
  s.grads?.free();
  s.grads = null;
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
      case 'maxSteps':
        if (session?.rank) session.rank.maxSteps = msg.value > 0 ? msg.value : Infinity;
        session?.rank?.setTraining(true); // re-checks whether a step can start now
        break;
      case 'params':
        post({ type: 'params', reqId: msg.reqId, params: session?.rank ? session.rank.params.slice() : null, version: session?.rank?.version ?? -1 });
        break;
      default:
        throw new Error(`unknown command ${msg.cmd}`);
    }
  } catch (err) {
    post({ type: 'error', cmd: msg.cmd ?? null, error: errorText(err) });
  }
};
