// page_plots.mjs - what the live plots of train.html cost: the same training
// run (mnist-cnn, Adam, batch 32, CPU backend, test every 100 steps) with the
// plots on and off, interleaved, in headless Chromium; prints the samples/s
// the page reports for each run and the medians.
//
//   node bench/page_plots.mjs [--runs=3] [--steps=400]
import { startServer, launch } from '../tests/browser/helpers.mjs';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const runs = arg('runs', 3), steps = arg('steps', 400);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const [server, browser] = await Promise.all([startServer(), launch()]);
try {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto(`${server.url}train.html?model=mnist-cnn&backend=cpu&optimizer=adam&lr=0.001&batch=32&steps=${steps}&evalEvery=100`);
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'ready', null, { timeout: 60000 });
  const rates = { on: [], off: [] };
  for (let r = 0; r < runs; r++) {
    for (const mode of ['on', 'off']) {
      if ((await page.isChecked('#plots')) !== (mode === 'on')) await page.click('#plots');
      await page.click('#train');
      await page.waitForFunction(() => ['finished', 'stopped', 'diverged', 'error'].includes(document.getElementById('status').dataset.state),
        null, { timeout: 300000 });
      const state = await page.$eval('#status', (el) => el.dataset.state);
      if (state !== 'finished') throw new Error(`run ${r} (${mode}): ${await page.textContent('#status')}`);
      const rate = Number(await page.$eval('#r-rate', (el) => el.dataset.value));
      rates[mode].push(rate);
      console.log(`run ${r + 1}, plots ${mode}: ${rate.toFixed(0)} samples/s`);
    }
  }
  const on = median(rates.on), off = median(rates.off);
  console.log(`median: plots on ${on.toFixed(0)}, off ${off.toFixed(0)} samples/s (on / off = ${(on / off).toFixed(3)})`);
} finally {
  await browser.close();
  await server.stop();
}
