// cluster_cohort_harness.mjs - a cohort of real ranks in one Node process for
// the cluster tests at scale: protocol.js Ranks on a wire-mode InProcessHub
// (every message is encoded and decoded as between tabs) on a VirtualClock,
// each computing real gradients of a vision model through the wasm module
// (VisionBench.grads_cpu, compute.js Buckets) on its shard of the
// Fashion-MNIST subset (data.js), in lockstep or periodic mode, optionally
// with one attacking rank. Reports the leader's test accuracy on the 1,000
// held-out images, the bytes each rank sent per step (from the first step
// on, so the joining syncs are left out), and whether every rank holds the
// same parameter bytes. With `task` (web/cluster/task.js, e.g. a LoRA
// fine-tuning of task_llm.js) the ranks train that instead of a vision
// model, and env may be null; with `tasks`, rank i trains tasks[i] (the
// same model on other backends).  A compute that returns a Promise (a GPU)
// takes no simulated time: the clock waits for it before moving on.
import { existsSync, readFileSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { Buckets } from '../../web/cluster/compute.js';
import { parseSubset, Shards } from '../../web/cluster/data.js';
import { VirtualClock } from '../../web/cluster/clock.js';
import { InProcessHub } from '../../web/cluster/bus.js';
import { Rank } from '../../web/cluster/protocol.js';
import { syncModes, collectMs } from '../../web/cluster/periodic.js';

const TRAIN = new URL('../../web/data/fashion-mnist-train.bin', import.meta.url);
const TEST = new URL('../../web/data/fashion-mnist-test.bin', import.meta.url);
const EVAL_BATCH = 100;

let ready = null;

/** The wasm module and both subset files; null when the subset is not built (run `make`). */
export function load() {
  ready ??= (async () => {
    if (!existsSync(TRAIN) || !existsSync(TEST)) return null;
    await init();
    return { rlx, train: parseSubset(readFileSync(TRAIN)), test: parseSubset(readFileSync(TEST), 'test subset') };
  })();
  return ready;
}

const models = new Map();
function model(env, slug) {
  if (!models.has(slug)) {
    const bench = new env.rlx.VisionBench(slug);
    models.set(slug, { bench, grads: new Buckets(env.rlx, slug, 'cpu'), info: bench.info() });
  }
  return models.get(slug);
}

/** Test accuracy of params on the held-out subset. */
export function accuracy(env, slug, params) {
  const { bench, info } = model(env, slug);
  const { test } = env;
  const classes = info.num_classes;
  const x = new Float32Array(EVAL_BATCH * test.inputLen);
  const labels = new Int32Array(EVAL_BATCH);
  let correct = 0;
  let seen = 0;
  for (let start = 0; start + EVAL_BATCH <= test.count; start += EVAL_BATCH) {
    for (let k = 0; k < EVAL_BATCH; k++) labels[k] = test.sample(start + k, x, k * test.inputLen);
    const logits = bench.forward_cpu(x, params);
    for (let k = 0; k < EVAL_BATCH; k++) {
      let best = 0;
      for (let c = 1; c < classes; c++) if (logits[k * classes + c] > logits[k * classes + best]) best = c;
      correct += best === labels[k];
      seen++;
    }
  }
  return correct / seen;
}

/** What an attacking rank sends instead of its true bucket. */
export const ATTACKS = {
  scaled: (r) => ({ ...r, grads: r.grads.map((v) => v * 1e6) }), // 1e6-scaled
  stale: (r, memo) => (memo.first ??= r), // its first bucket, again and again
  flipped: (r) => ({ ...r, grads: r.grads.map((v) => -v) }), // sign-flipped
  flipped4: (r) => ({ ...r, grads: r.grads.map((v) => -4 * v) }), // sign-flipped and scaled to outweigh 4 honest ranks
  nan: (r) => ({ ...r, grads: r.grads.map((v, i) => (i % 97 === 0 ? NaN : v)) }),
};

/**
 * Trains `ranks` ranks for `samples` training samples (lockstep: steps of
 * ranks * batch; periodic: rounds of ranks * batch * H). settings: the
 * cohort's (enc, sync, H, outerLr, outerMomentum, agg, clip, clipMax,
 * strikes); attack: { id, kind } for one bad rank.
 */
export async function trainCohort(env, {
  slug = 'mnist-mlp', ranks = 5, batch = 16, samples = 9600, lr = 0.1, seed = 1, settings = {}, attack = null, maxMs = 600_000,
  task = null, tasks = null, onUpdate = null,
} = {}) {
  task ??= tasks?.[0] ?? null;
  const inFlight = new Set(); // the computes still running (Promises)
  const held = (r) => {
    if (!(r instanceof Promise)) return r;
    const p = r.finally(() => inFlight.delete(p));
    inFlight.add(p);
    return p;
  };
  // a task's gradients, or the vision model's on its shard of the subset
  const bucketOf = (i) => (task ? (p, dataStep, ctx) => held((tasks?.[i] ?? task).grads(p, { step: dataStep, index: ctx.index, count: ctx.count, batch }))
    : (p, dataStep, ctx) => {
      const { x, labels } = shards.batch(dataStep, ctx.index, ctx.count, batch);
      return model(env, slug).grads.run(x, labels, p);
    });
  const runUntil = async (predicate, ms) => {
    const start = clock.now();
    while (!predicate()) {
      if (inFlight.size) await Promise.allSettled([...inFlight]);
      else if (clock.now() - start >= ms) throw new Error(`cohort: condition not reached within ${ms} ms of simulated time`);
      else await clock.advance(5);
    }
  };
  const periodic = settings.sync === 'periodic';
  const H = periodic ? settings.H : 1;
  const steps = Math.round(samples / (ranks * batch * H));
  const clock = new VirtualClock();
  const hub = new InProcessHub({ clock, wire: true, delayMs: 1 });
  const shards = task ? null : new Shards(env.train, { seed });
  const init0 = task ? task.initParams() : model(env, slug).bench.init_params(seed);
  const ids = Array.from({ length: ranks }, (_, i) => `r${i}`);
  const events = [];
  let cohort = null;
  let snap = null; // bytes sent by each rank when the first step resolved: traffic is counted from there (no joining syncs)
  cohort = ids.map((id, i) => {
    let rank = null;
    // the compute and update worker.js gives its Rank (periodic.js syncModes)
    const modes = syncModes({
      settings: () => rank.settings,
      lr: () => rank.lr,
      bucketAt: bucketOf(i),
    });
    let compute = modes.compute;
    if (attack && attack.id === id) {
      const bad = ATTACKS[attack.kind];
      const inner = compute;
      const memo = {};
      compute = async (p, v, ctx) => bad(await inner(p, v, ctx), memo);
    }
    rank = new Rank({
      bus: hub.connect(id),
      compute,
      params: init0,
      lr,
      update: onUpdate ? (p, g, info) => (onUpdate(id, p, g, info), modes.update(p, g, info)) : modes.update,
      clock,
      maxSteps: steps,
      minMembers: ranks,
      minStepMs: 1,
      // every bucket of every step, so all modes see the same samples
      policy: { quorumFraction: 1, collectMs: collectMs({ sync: settings.sync, H }) },
      settings: { model: slug, batch, ...settings },
      onEvent: (type, data) => {
        if (type === 'excluded' || type === 'halted') events.push({ id, type, data });
        // minMembers gates the first step only (as in worker.js): an excluded rank must not stall the rest
        if (type === 'step') for (const r of cohort) r.minMembers = 1;
        if (type === 'step' && !snap) snap = { step: data.step + 1, bytes: Object.fromEntries(cohort.map((r) => [r.id, r.bus.stats.bytesOut])) };
      },
    });
    return rank.start();
  });
  const leader = () => cohort.find((r) => r.role === 'leader');
  await runUntil(() => {
    const l = leader();
    return !!l && (l.halted || (l.step >= steps && !l.collect));
  }, maxMs);
  const l = leader();
  // let the last broadcast reach everyone
  await runUntil(() => l.halted || cohort.every((r) => r.version === l.version), 10_000);
  const acc = l.halted || task ? null : accuracy(env, slug, l.params);
  const losses = l.history.map((h) => h.loss);
  const stepsDone = l.step;
  const counted = Math.max(1, stepsDone - (snap?.step ?? 0));
  const bytesPerStep = Object.fromEntries(cohort.map((r) => [r.id, Math.round((r.bus.stats.bytesOut - (snap?.bytes[r.id] ?? 0)) / counted)]));
  const out = {
    slug: task ? task.slug : slug,
    params: task ? task.paramCount : model(env, slug).info.param_flat_len,
    steps: stepsDone,
    samples: l.history.reduce((s, h) => s + h.samples, 0),
    acc,
    halted: l.halted,
    finalLoss: losses.length ? losses[losses.length - 1] : NaN,
    leader: l.id,
    hashes: cohort.map((r) => r.hash),
    sameBytes: cohort.every((r) => r.hash === l.hash && Buffer.compare(Buffer.from(r.params.buffer), Buffer.from(l.params.buffer)) === 0),
    bytesPerStep, // one message per send: a broadcast counts once (a mesh sends it to each peer)
    samplesPerStep: ranks * batch * H,
    roster: l.roster(),
    stats: l.stats,
    events,
    cohort,
  };
  for (const r of cohort) r.stop({ silent: true });
  return out;
}
