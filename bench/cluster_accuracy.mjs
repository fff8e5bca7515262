// cluster_accuracy.mjs - the test accuracy a single tab and a 3-rank cohort
// of cluster.html reach in headless Chromium after the same number of
// training samples, next to the native CLI on the same model, optimizer,
// learning rate, batch per rank and sample count. The browser ranks train on
// the 3,000-image Fashion-MNIST subset and are measured on its 1,000
// held-out images; the CLI trains on the first --limit images of the full
// training set and is measured on the full 10,000-image test set.
//
//   node bench/cluster_accuracy.mjs [--samples=9600] [--lr=0.1] [--batch=32] [--tabs=1,3]
import { execFileSync } from 'node:child_process';
import { startServer, launch, REPO } from '../tests/browser/helpers.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const samples = +(args.samples ?? 9600), lr = +(args.lr ?? 0.1), batch = +(args.batch ?? 32);
const tabsList = String(args.tabs ?? '1,3').split(',').map(Number);

async function cohort(browser, server, n) {
  const steps = Math.round(samples / (n * batch));
  const context = await browser.newContext();
  try {
    const pages = await Promise.all(Array.from({ length: n }, () => context.newPage()));
    for (const page of pages) {
      await page.goto(`${server.url}cluster.html?autostart=1&model=mnist-cnn&backend=cpu&batch=${batch}&lr=${lr}&steps=${steps}&min=${n}`);
    }
    await pages[0].waitForFunction((s) => window.rlxCluster?.accuracy?.some((p) => p[0] === s), steps, { timeout: 600000, polling: 200 });
    const acc = await pages[0].evaluate((s) => window.rlxCluster.accuracy.find((p) => p[0] === s)[1], steps);
    return { steps, acc };
  } finally {
    await context.close();
  }
}

const [server, browser] = await Promise.all([startServer(), launch()]);
const rows = [];
try {
  for (const n of tabsList) {
    const r = await cohort(browser, server, n);
    rows.push([`cluster.html, ${n} rank${n > 1 ? 's' : ''}`, r.steps, n * batch, r.acc, '1,000 held-out subset images']);
    console.log(`${n} rank(s): ${r.steps} steps of ${n * batch} samples: test accuracy ${(100 * r.acc).toFixed(1)}%`);
  }
} finally {
  await browser.close();
  await server.stop();
}
const limit = Math.min(3000, samples);
const epochs = Math.max(1, Math.round(samples / limit));
const out = execFileSync(`${REPO}build/rlx`, ['train', '--model', 'mnist-cnn', '--optimizer', 'sgd', '--lr', String(lr), '--batch',
  String(batch), '--schedule', 'constant', '--limit', String(limit), '--epochs', String(epochs), '--seed', '1'],
{ encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
const m = /test accuracy[^0-9]*([0-9.]+)%/.exec(out);
rows.push([`native CLI (${limit} images x ${epochs} epochs)`, Math.floor(limit / batch) * epochs, batch, m ? Number(m[1]) / 100 : NaN,
  '10,000 test images']);
console.log(out.trim().split('\n').slice(-2).join('\n'));
console.log(`\nmnist-cnn, SGD lr ${lr}, ${samples} samples, batch ${batch} per rank`);
console.log('| run | steps | samples per step | test accuracy | measured on |\n|---|---|---|---|---|');
for (const [what, steps, per, acc, on] of rows) console.log(`| ${what} | ${steps} | ${per} | ${(100 * acc).toFixed(1)}% | ${on} |`);
