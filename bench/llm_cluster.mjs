// llm_cluster.mjs - what the cluster's LoRA fine-tuning spends on the adapter
// exchange: web/cluster.html's fine-tuning task in 1 and then 2 separate
// headless Chromium processes in one WebRTC room (a local Nostr relay, no
// STUN, the whole run inside a loopback-only network namespace, as
// bench_cluster.mjs --webrtc), on bench/llm_finetune.mjs's workload: the
// SmolLM-135M-shaped llama (bench/llm_models.mjs, picked as a file on each
// page), rank 8 on attn_q and attn_v, windows of 128 tokens, 4 windows per
// rank a step, the CPU backend (the wasm training build).
//
// Every rank's Worker adds up the time it spends computing its gradient
// bucket (worker.js computeMs); over the measured steps the leader's step
// time is split into
//   compute   the leader's own bucket
//   exchange  the rest: sending the adapters and buckets, waiting for the
//             slower rank, averaging, applying the update
// and, since the ranks compute at the same time, also into the slowest
// rank's compute and what remains beyond it (the exchange proper). Target
// (issue B10): a cluster of 2 processes spends < 10% of its step on the
// exchange. Before a figure is printed every rank must hold the same
// adapters (the parameter hash), or the bench fails.
//
//   node bench/llm_cluster.mjs [--type=q8_0|q4_0] [--steps=4] [--ranks=1,2]
//   RLX_BENCH_QUICK=1 ...      the small bench model, seq 64, 3 steps
// Needs: chromium, unshare -n (root), web/pkg/rlx_llm_train.wasm, build/make_test_lm.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, missing } from '../tests/browser/helpers.mjs';
import { inLoopbackNamespace, launchPeerBrowser, rerunInLoopbackNamespace, startRelay, stopAll, LEAVE_NOISE } from '../tests/browser/mesh_env.mjs';
import { BENCH_DIR, benchModel } from './llm_models.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, ...v] = a.replace(/^--/, '').split('=');
  return [k, v.join('=')];
}));
const QUICK = process.env.RLX_BENCH_QUICK === '1';
const TYPE = args.type || 'q8_0';
const STEPS = Number(args.steps || (QUICK ? 3 : 4));
const RANKS = String(args.ranks || '1,2').split(',').map(Number);
const SHAPE = { seq: QUICK ? 64 : 128, batch: 4, rank: 8, alpha: 16, targets: 'attn_q,attn_v' };
const WARM_STEPS = 1; // the first step compiles the plan
const STEP_TIMEOUT_MS = 180000;
const OUT = path.join(BENCH_DIR, 'llm_cluster.json');
if (!(Number.isInteger(STEPS) && STEPS >= 1) || RANKS.some((n) => !(Number.isInteger(n) && n >= 1))) {
  throw new Error('llm_cluster: --steps and --ranks must be positive integers');
}

const state = (page) => page.evaluate(() => window.rlxCluster.state);

/** The page's URL: one process trains alone (no room: a room's rank waits for a second), more in one room. */
function pageUrl(server, relay, room, n) {
  const q = new URLSearchParams({ task: 'llm', base: 'file', text: 'file', seq: String(SHAPE.seq), rank: String(SHAPE.rank),
    alpha: String(SHAPE.alpha), targets: SHAPE.targets, backend: 'cpu', batch: String(SHAPE.batch), lr: '0.001', steps: '0',
    min: String(n), bye: '0', cohort: room, ...(n > 1 ? { room, password: 'bench', relays: relay.url, stun: 'none' } : {}) });
  return `${server.url}cluster.html?${q}`;
}

/** n processes in one room fine-tune; the leader's step split over STEPS steps after the warm-up. */
async function measure(server, relay, model, corpus, n) {
  const peers = await Promise.all(Array.from({ length: n }, () => launchPeerBrowser()));
  try {
    const room = `llm${n}${Date.now().toString(36)}`;
    for (const p of peers) {
      await p.page.goto(pageUrl(server, relay, room, n));
      await p.page.waitForFunction(() => !document.getElementById('start').disabled, null, { timeout: 60000 });
      await p.page.setInputFiles('#llm-file', model);
      await p.page.setInputFiles('#llm-text-file', corpus);
    }
    // the room's handshake carries the base file's hash: join (which starts the rank) once the files are picked
    await Promise.all(peers.map((p) => p.page.click(n > 1 ? '#room-join' : '#start')));
    const pages = peers.map((p) => p.page);
    await pages[0].waitForFunction(([n, warm]) => {
      const s = window.rlxCluster.state;
      return (s && s.roster.length === n && s.step >= warm) || document.getElementById('error').textContent !== '';
    }, [n, WARM_STEPS], { timeout: STEP_TIMEOUT_MS, polling: 20 }).catch(async (err) => {
      const seen = await Promise.all(pages.map((p) => p.evaluate(() => JSON.stringify({ s: window.rlxCluster.state, room: window.rlxCluster.room }))));
      throw new Error(`${err.message}; the ranks: ${seen.join('\n')}`);
    });
    const error = await pages[0].textContent('#error');
    if (error) throw new Error(`cluster.html: ${error}`);
    const from = await Promise.all(pages.map(state));
    const li = from.findIndex((s) => s.role === 'leader');
    if (li < 0) throw new Error(`no leader among ${n} ranks`);
    const target = from[li].step + STEPS;
    await pages[li].waitForFunction((t) => window.rlxCluster.state.step >= t, target, { timeout: STEP_TIMEOUT_MS * STEPS, polling: 20 });
    const to = await Promise.all(pages.map(state));
    if (to[li].id !== from[li].id || to[li].role !== 'leader') {
      const seen = to.map((s) => JSON.stringify({ role: s.role, term: s.term, step: s.step, stats: s.stats, lastEvent: s.lastEvent, roster: s.roster.map((r) => [r.id, r.role, r.lastSeenMs]) }));
      throw new Error(`the leader changed during the measurement (${n} processes): ${seen.join('\n')}`);
    }
    const steps = to[li].step - from[li].step;
    const stepMs = (to[li].t - from[li].t) / steps;
    // each rank's compute per step, over the steps it computed in its own window
    const computeMs = pages.map((_, k) => (to[k].computeMs - from[k].computeMs) / steps);
    // every rank holds the leader's adapters (stop stepping first, so they come to rest)
    await pages[li].evaluate((s) => window.rlxCluster.setMaxSteps(s), to[li].step + 1);
    await Promise.all(pages.map((p) => p.waitForFunction((s) => {
      const st = window.rlxCluster.state;
      return st.step >= s && st.roster.every((r) => r.version === st.version);
    }, to[li].step + 1, { timeout: STEP_TIMEOUT_MS, polling: 50 })));
    const hashes = new Set(await Promise.all(pages.map((p) => p.evaluate(() => window.rlxCluster.state.hash))));
    if (hashes.size !== 1) throw new Error(`ranks hold different adapters (hashes ${[...hashes].join(', ')}): no figure`);
    const problems = peers.flatMap((p) => p.problems).filter((m) => !LEAVE_NOISE.test(m));
    if (problems.length) throw new Error(`page errors: ${problems.join('; ')}`);
    const info = await pages[li].evaluate(() => window.rlxCluster.info);
    const slowest = Math.max(...computeMs);
    return {
      ranks: n, steps, stepMs, computeMs, leaderComputeMs: computeMs[li],
      leaderIdleShare: 1 - computeMs[li] / stepMs,
      exchangeShare: Math.max(0, 1 - slowest / stepMs),
      tokensPerSec: (n * SHAPE.batch * SHAPE.seq * 1000) / stepMs,
      params: info.paramCount ?? null, backend: info.backend, loss: to[li].loss,
    };
  } finally {
    await Promise.all(peers.map((p) => p.close()));
  }
}

async function main() {
  if (!inLoopbackNamespace()) {
    process.exitCode = await rerunInLoopbackNamespace(import.meta.url);
    return;
  }
  const why = missing();
  if (why) {
    console.log(`llm_cluster: skipped: ${why}`);
    return;
  }
  const model = benchModel(TYPE, { quick: QUICK, label: 'llm_cluster bench' });
  const corpus = path.join(BENCH_DIR, `llm_corpus_${QUICK ? 2500 : 9000}.txt`);
  const [server, relay] = await Promise.all([startServer(), startRelay()]);
  const results = [];
  try {
    for (const n of RANKS) results.push(await measure(server, relay, model, corpus, n));
  } finally {
    await stopAll();
    await server.stop();
  }
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  console.log(`\nCluster fine-tuning (cluster.html, ${path.basename(model)}, rank ${SHAPE.rank} on ${SHAPE.targets}, ` +
    `${SHAPE.batch} x ${SHAPE.seq} tokens per rank a step, backend ${results[0]?.backend}, ${cores} cores, ${STEPS} steps after ${WARM_STEPS})`);
  console.log('processes  step ms  compute ms (each rank)  leader idle  exchange  tokens/s');
  for (const r of results) {
    console.log(`${String(r.ranks).padStart(9)}  ${r.stepMs.toFixed(0).padStart(7)}  ${r.computeMs.map((c) => c.toFixed(0)).join(' / ').padStart(22)}  ` +
      `${(100 * r.leaderIdleShare).toFixed(1).padStart(10)}%  ${(100 * r.exchangeShare).toFixed(1).padStart(7)}%  ${r.tokensPerSec.toFixed(0).padStart(8)}`);
  }
  const two = results.find((r) => r.ranks === 2);
  if (two) {
    console.log(`2 processes: ${(100 * two.exchangeShare).toFixed(1)}% of the step beyond the slowest rank's compute ` +
      `(target < 10%: ${two.exchangeShare < 0.1 ? 'met' : 'missed'}), the leader idle ${(100 * two.leaderIdleShare).toFixed(1)}%`);
  }
  fs.mkdirSync(BENCH_DIR, { recursive: true });
  fs.writeFileSync(OUT, JSON.stringify({ type: TYPE, shape: SHAPE, quick: QUICK, cores, results }, null, 2));
  console.log(`results: ${path.relative(process.cwd(), OUT)}`);
}

main().catch((err) => {
  console.error(`llm_cluster: ${err?.stack ?? err}`);
  process.exitCode = 1;
});
