// bench_cluster.mjs - the tab cluster's throughput: web/cluster.html in
// headless Chromium (playwright-core, Debian's chromium, tools/serve.py), a
// cohort of 1 tab, then of 2 tabs (pages of one browser context), training
// one model with a fixed batch per tab; the cohort's samples/s is the
// leader's count of samples averaged over rounds of free training, after a
// warm-up. Prints one line per cohort size and the scaling ratio against 1
// tab; every tab's Worker needs its own core for the ratio to approach the
// number of tabs (the core count is printed next to it).
//
// usage: node bench/bench_cluster.mjs [--tabs=1,2] [--model=mnist-cnn] [--batch=32]
//          [--ms=3000] [--rounds=3] [--out=build/bench/cluster.json]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, launch, missing } from '../tests/browser/helpers.mjs';

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
const WARM_STEPS = 30;

const state = (page) => page.evaluate(() => window.rlxCluster.state);

async function measure(browser, server, n) {
  const context = await browser.newContext();
  try {
    const pages = [];
    const problems = [];
    for (let i = 0; i < n; i++) {
      const page = await context.newPage();
      page.on('pageerror', (err) => problems.push(err.message));
      page.on('console', (msg) => msg.type() === 'error' && problems.push(msg.text()));
      await page.goto(`${server.url}cluster.html?autostart=1&backend=cpu&model=${model}&batch=${batch}&min=${n}&steps=0`);
      pages.push(page);
    }
    // warm-up: the cohort is complete and past its first steps (plans compiled)
    await pages[0].waitForFunction(([n, warm]) => {
      const s = window.rlxCluster.state;
      return s && s.roster.length === n && s.step >= warm;
    }, [n, WARM_STEPS], { timeout: 30000, polling: 50 });
    const states = await Promise.all(pages.map(state));
    const leaderPage = pages[states.findIndex((s) => s.role === 'leader')];
    if (!leaderPage) throw new Error(`no leader among ${n} tabs`);
    const rates = [];
    for (let r = 0; r < rounds; r++) {
      const a = await state(leaderPage);
      await leaderPage.waitForTimeout(windowMs);
      const b = await state(leaderPage);
      if (b.id !== a.id) throw new Error('the leader changed during the measurement');
      rates.push(((b.samplesTotal - a.samplesTotal) * 1000) / (b.t - a.t));
    }
    const end = await state(leaderPage);
    if (problems.length) throw new Error(`page errors: ${problems.join('; ')}`);
    const info = await leaderPage.evaluate(() => window.rlxCluster.info);
    return {
      tabs: n,
      samplesPerSec: rates.reduce((x, y) => x + y, 0) / rates.length,
      rounds: rates,
      stepsPerSec: rates.reduce((x, y) => x + y, 0) / rates.length / (n * batch),
      steps: end.step,
      loss: end.loss,
      backend: info.backend,
      data: info.data.kind,
      policy: end.policy,
    };
  } finally {
    await context.close();
  }
}

async function main() {
  const why = missing();
  if (why) {
    console.log(`bench_cluster: skipped: ${why}`);
    return;
  }
  const [server, browser] = await Promise.all([startServer(), launch()]);
  const results = [];
  try {
    for (const n of tabsList) results.push(await measure(browser, server, n));
  } finally {
    await browser.close();
    await server.stop();
  }
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  const base = results.find((r) => r.tabs === 1)?.samplesPerSec;
  console.log(`\nTab cluster (web/cluster.html, headless Chromium): ${model}, batch ${batch} per tab, ` +
    `backend ${results[0]?.backend}, ${results[0]?.data} data, ${cores} cores, ${rounds} x ${windowMs} ms`);
  console.log('tabs  samples/s  steps/s  scaling');
  for (const r of results) {
    const ratio = base ? (r.samplesPerSec / base).toFixed(2) : '-';
    r.scaling = base ? r.samplesPerSec / base : null;
    console.log(`${String(r.tabs).padStart(4)}  ${r.samplesPerSec.toFixed(0).padStart(9)}  ${r.stepsPerSec.toFixed(1).padStart(7)}  x${ratio}`);
  }
  const two = results.find((r) => r.tabs === 2);
  if (base && two) console.log(`scaling 1 -> 2 tabs: x${(two.samplesPerSec / base).toFixed(2)} (ideal x2.00 with a core per tab)`);
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, JSON.stringify({ model, batch, cores, windowMs, rounds, results }, null, 2));
  console.log(`results: ${outFile}`);
}

main().catch((err) => {
  console.error(`bench_cluster: ${err?.stack ?? err}`);
  process.exitCode = 1;
});
