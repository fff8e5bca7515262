// bench_cluster.mjs - the cluster's throughput: web/cluster.html in headless
// Chromium (playwright-core, Debian's chromium, tools/serve.py), cohorts of
// n tabs of one browser (BroadcastChannel) and, with --webrtc, of n separate
// Chromium processes in one WebRTC room (a local Nostr relay, no STUN; the
// whole run then happens inside a loopback-only network namespace, `unshare
// -n`), training one model with a fixed batch per rank on the CPU backend.
// The cohort's samples/s is the leader's count of samples averaged over
// rounds of free training, after a warm-up; for the room also the time from
// page load to a connected cohort and the bytes the leader and a follower
// send per step. Both transports run the same model, batch and steps and
// every rank checks the same parameter hash before a figure is printed.
// Every rank's Worker needs its own core for the scaling to approach n (the
// core count is printed next to it).
//
// usage: node bench/bench_cluster.mjs [--tabs=1,2] [--webrtc] [--model=mnist-cnn] [--batch=32]
//          [--ms=3000] [--rounds=3] [--out=build/bench/cluster.json]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, launch, missing } from '../tests/browser/helpers.mjs';
import { inLoopbackNamespace, launchPeerBrowser, rerunInLoopbackNamespace, startRelay, stopAll, LEAVE_NOISE } from '../tests/browser/mesh_env.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [key, ...value] = a.replace(/^--/, '').split('=');
  return [key, value.length ? value.join('=') : true];
}));
const tabsList = String(args.tabs ?? '1,2').split(',').map(Number).filter((n) => n >= 1);
const model = args.model ?? 'mnist-cnn';
const batch = +(args.batch ?? 32);
const windowMs = +(args.ms ?? 3000);
const rounds = +(args.rounds ?? 3);
const outFile = args.out ?? 'build/bench/cluster.json';
const webrtc = !!args.webrtc;
const WARM_STEPS = 30;

const state = (page) => page.evaluate(() => window.rlxCluster.state);

function watch(page, problems) {
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => msg.type() === 'error' && !LEAVE_NOISE.test(msg.text()) && problems.push(msg.text()));
}

const pageUrl = (server, n, room = null) => `${server.url}cluster.html?autostart=1&backend=cpu&model=${model}&batch=${batch}&min=${n}&steps=0` +
  (room ? `&room=${room.id}&password=bench&relays=${encodeURIComponent(room.relay)}&stun=none&cohort=${room.id}` : '');

/** n tabs of one browser context (BroadcastChannel). */
async function measureTabs(browser, server, n) {
  const context = await browser.newContext();
  try {
    const pages = [];
    const problems = [];
    for (let i = 0; i < n; i++) {
      const page = await context.newPage();
      watch(page, problems);
      await page.goto(pageUrl(server, n));
      pages.push(page);
    }
    return { transport: 'tabs', ...await measure(pages, problems, n) };
  } finally {
    await context.close();
  }
}

/** n Chromium processes in one room (WebRTC); each its own cohort name, so no BroadcastChannel joins them. */
async function measureProcesses(server, relay, n) {
  const peers = await Promise.all(Array.from({ length: n }, () => launchPeerBrowser()));
  try {
    const problems = [];
    const room = { id: `bench${n}${Date.now().toString(36)}`, relay: relay.url };
    const t0 = Date.now();
    await Promise.all(peers.map((p) => {
      watch(p.page, problems);
      return p.page.goto(pageUrl(server, n, room));
    }));
    await Promise.all(peers.map((p) => p.page.waitForFunction((n) => window.rlxCluster.state?.roster.length === n, n, { timeout: 60000, polling: 50 })));
    const connectMs = Date.now() - t0;
    const pages = peers.map((p) => p.page);
    const r = await measure(pages, problems, n, true);
    return { transport: 'webrtc', connectMs, ...r };
  } finally {
    await Promise.all(peers.map((p) => p.close()));
  }
}

/** Warm-up, rounds of free training on the leader's count, then the parameter check. */
async function measure(pages, problems, n, inRoom = false) {
  // warm-up: the cohort is complete and past its first steps (plans compiled)
  await pages[0].waitForFunction(([n, warm]) => {
    const s = window.rlxCluster.state;
    return s && s.roster.length === n && s.step >= warm;
  }, [n, WARM_STEPS], { timeout: 30000, polling: 50 });
  const states = await Promise.all(pages.map(state));
  const li = states.findIndex((s) => s.role === 'leader');
  const leaderPage = pages[li];
  if (!leaderPage) throw new Error(`no leader among ${n} ranks`);
  const followerPage = pages.find((p, k) => k !== li) ?? null;
  const room = (page) => (page && inRoom ? page.evaluate(() => window.rlxCluster.room.stats) : null);
  const rates = [];
  const bytes = { leader: 0, follower: 0, steps: 0 };
  for (let r = 0; r < rounds; r++) {
    const [a, la, fa] = [await state(leaderPage), await room(leaderPage), await room(followerPage)];
    await leaderPage.waitForTimeout(windowMs);
    const [b, lb, fb] = [await state(leaderPage), await room(leaderPage), await room(followerPage)];
    if (b.id !== a.id) throw new Error('the leader changed during the measurement');
    rates.push(((b.samplesTotal - a.samplesTotal) * 1000) / (b.t - a.t));
    bytes.steps += b.step - a.step;
    if (la) bytes.leader += lb.bytesOut - la.bytesOut;
    if (fa) bytes.follower += fb.bytesOut - fa.bytesOut;
  }
  // every rank holds the leader's parameters (stop stepping first, so they come to rest)
  const end = await state(leaderPage);
  await leaderPage.evaluate((s) => window.rlxCluster.setMaxSteps(s), end.step + 2);
  await Promise.all(pages.map((p) => p.waitForFunction((s) => {
    const st = window.rlxCluster.state;
    return st.step >= s && st.roster.every((r) => r.version === st.version);
  }, end.step + 2, { timeout: 20000, polling: 50 })));
  const hashes = new Set(await Promise.all(pages.map((p) => p.evaluate(() => window.rlxCluster.state.hash))));
  if (hashes.size !== 1) throw new Error(`ranks hold different parameters (hashes ${[...hashes].join(', ')}): no figure`);
  if (problems.length) throw new Error(`page errors: ${problems.join('; ')}`);
  const info = await leaderPage.evaluate(() => window.rlxCluster.info);
  return {
    ranks: n,
    bytesPerStep: inRoom && bytes.steps ? { leader: Math.round(bytes.leader / bytes.steps), follower: n > 1 ? Math.round(bytes.follower / bytes.steps) : null } : null,
    samplesPerSec: rates.reduce((x, y) => x + y, 0) / rates.length,
    rounds: rates,
    stepsPerSec: rates.reduce((x, y) => x + y, 0) / rates.length / (n * batch),
    steps: end.step,
    loss: end.loss,
    backend: info.backend,
    data: info.data.kind,
    policy: end.policy,
  };
}

async function main() {
  if (webrtc && !inLoopbackNamespace()) {
    process.exitCode = await rerunInLoopbackNamespace(import.meta.url);
    return;
  }
  const why = missing();
  if (why) {
    console.log(`bench_cluster: skipped: ${why}`);
    return;
  }
  const [server, browser, relay] = await Promise.all([startServer(), launch(), webrtc ? startRelay() : null]);
  const results = [];
  try {
    for (const n of tabsList) {
      results.push(await measureTabs(browser, server, n));
      if (webrtc) results.push(await measureProcesses(server, relay, n));
    }
  } finally {
    await browser.close();
    await stopAll();
    await server.stop();
  }
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  console.log(`\nCluster (web/cluster.html, headless Chromium): ${model}, batch ${batch} per rank, ` +
    `backend ${results[0]?.backend}, ${results[0]?.data} data, ${cores} cores, ${rounds} x ${windowMs} ms`);
  console.log('transport  ranks  samples/s  steps/s  scaling  connect ms  bytes/step leader / follower');
  for (const r of results) {
    const base = results.find((q) => q.transport === r.transport && q.ranks === 1)?.samplesPerSec;
    r.scaling = base ? r.samplesPerSec / base : null;
    const b = r.bytesPerStep;
    console.log(`${r.transport.padEnd(9)}  ${String(r.ranks).padStart(5)}  ${r.samplesPerSec.toFixed(0).padStart(9)}  ${r.stepsPerSec.toFixed(1).padStart(7)}  ` +
      `${r.scaling ? `x${r.scaling.toFixed(2)}` : '-'}`.padEnd(7) + `  ${String(r.connectMs ?? '-').padStart(10)}  ` +
      (b ? `${b.leader} / ${b.follower ?? '-'}` : '-'));
  }
  for (const n of tabsList) {
    const t = results.find((r) => r.transport === 'tabs' && r.ranks === n);
    const w = results.find((r) => r.transport === 'webrtc' && r.ranks === n);
    if (t && w) console.log(`${n} rank${n > 1 ? 's' : ''}: WebRTC processes / BroadcastChannel tabs x${(w.samplesPerSec / t.samplesPerSec).toFixed(2)}`);
  }
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, JSON.stringify({ model, batch, cores, windowMs, rounds, results }, null, 2));
  console.log(`results: ${outFile}`);
}

main().catch((err) => {
  console.error(`bench_cluster: ${err?.stack ?? err}`);
  process.exitCode = 1;
});
