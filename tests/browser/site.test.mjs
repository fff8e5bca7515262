// site.test.mjs - the static site of tools/build_site.py, built into a temp
// folder and served by plain `python3 -m http.server` (what a static host
// does: no serve.py, nothing outside the site), in Debian's chromium
// (headless, playwright-core). index.html shows its first loss, trains a few
// steps and finishes its GPU checks (which import the WebGPU and WebGL2
// executors dynamically); vision-bench.html's Worker loads the wasm and says
// ready; cluster.html reaches ready, and a started rank trains on the
// Fashion-MNIST subset copied into the site (when `make` wrote it). No page
// has a failed request, an HTTP error, a console error or an uncaught
// exception. The server gives .wasm the application/wasm type that the
// loader streams from (web/runtime/loader.js), and .js a JavaScript type.
// Cross-origin isolation: with the Space's headers every page is isolated
// by them; served with no headers at all, web/coi-sw.js (registered by
// isolation.js) isolates the page after one reload, its Worker too, and the
// next page at once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { launch, newPage, missing, REPO } from './helpers.mjs';
import { buildSite, httpServer, ISOLATION_HEADERS } from './static_site.mjs';

const why = missing();
const HAS_SUBSET = existsSync(`${REPO}web/data/fashion-mnist-train.bin`);
let tmp;
let site;
let server;
let bare; // the same site with no headers at all
let browser;

before(async () => {
  if (why) return;
  ({ tmp, site } = buildSite());
  [server, bare, browser] = await Promise.all([httpServer(site), httpServer(site, { headers: [] }), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await bare?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test('site: the card, and MIME types the loader and module scripts accept', { skip: why ?? false }, async () => {
  for (const f of ['index.html', 'README.md', '.nojekyll', 'pkg/rlx_web.wasm', 'cluster/worker.js']) {
    assert.ok(existsSync(join(site, f)), `the site lacks ${f}`);
  }
  const wasm = await fetch(`${server.url}pkg/rlx_web.wasm`);
  assert.equal(wasm.status, 200);
  // loader.js streams only from application/wasm (else it falls back to compiling the bytes).
  assert.match(wasm.headers.get('content-type') ?? '', /^application\/wasm\b/);
  await wasm.arrayBuffer();
  const js = await fetch(`${server.url}pkg/rlx_web.js`);
  assert.match(js.headers.get('content-type') ?? '', /^(text|application)\/javascript\b/);
  await js.text();
});

test('site: index.html shows its first loss, trains, and checks the GPU backends', { skip: why ?? false, timeout: 60000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}index.html?steps=40`);
  await page.waitForFunction(() => Number.isFinite(parseFloat(document.getElementById('loss0').dataset.value)),
    null, { timeout: 10000 });
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('status').textContent),
    null, { timeout: 10000 });
  assert.equal(await page.textContent('#status'), 'done', await page.textContent('#error'));
  await page.waitForSelector('#gpu-check[data-done="1"]', { state: 'attached', timeout: 45000 });
  for (const b of ['webgpu', 'webgl']) {
    const [state, text] = await page.$eval(`#check-${b}`, (el) => [el.dataset.state, el.textContent]);
    assert.ok(['match', 'unavailable'].includes(state), `${b}: ${state}: ${text}`);
  }
  assert.match(await page.textContent('#describe-source'), /import Rlx/); // fetched from the site
  assert.deepEqual(problems, []);
  await page.close();
});

test('site: vision-bench.html loads the wasm in its Worker', { skip: why ?? false, timeout: 20000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}vision-bench.html`);
  await page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('progress-text').dataset.value),
    null, { timeout: 15000 });
  assert.equal(await page.$eval('#progress-text', (el) => el.dataset.value), 'ready', await page.textContent('#error'));
  assert.deepEqual(problems, []);
  await page.close();
});

test('site: train.html loads the data and trains on it', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}train.html?model=mnist-mlp&backend=cpu&steps=20&evalEvery=20&autostart=1`);
  await page.waitForFunction(() => ['finished', 'error'].includes(document.getElementById('status').dataset.state),
    null, { timeout: 25000 });
  assert.equal(await page.$eval('#status', (el) => el.dataset.state), 'finished', await page.textContent('#error'));
  assert.match(await page.textContent('#status'), /3,000 training|Finished: 20 steps/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('site: cluster.html is ready and a rank trains on the subset', { skip: why ?? false, timeout: 20000 }, async () => {
  const context = await browser.newContext();
  const { page, problems } = await newPage(context);
  await page.goto(`${server.url}cluster.html`);
  await page.waitForFunction(() => document.getElementById('status').dataset.value === 'ready', null, { timeout: 10000 });
  await page.goto(`${server.url}cluster.html?autostart=1&model=mnist-cnn&batch=8&steps=2&min=1&bye=0`);
  await page.waitForFunction(() => document.getElementById('data').dataset.value !== '', null, { timeout: 10000 });
  const data = await page.$eval('#data', (el) => [el.dataset.value, el.textContent]);
  assert.equal(data[0], HAS_SUBSET ? 'fashion-mnist' : 'synthetic', data[1]);
  assert.deepEqual(problems, []);
  await context.close();
});

/** window.rlxIsolation once isolation.js settled, across the reload it may cause. */
async function isolationOf(page) {
  for (;;) {
    try {
      const r = await page.waitForFunction(() => self.rlxIsolation, null, { timeout: 30000, polling: 50 });
      return await r.jsonValue();
    } catch (err) {
      if (!/context was destroyed|navigat/i.test(String(err?.message))) throw err; // the reload: wait on the new page
    }
  }
}

const workerIsolated = (page) => page.evaluate(() => new Promise((resolve) => {
  const w = new Worker(URL.createObjectURL(new Blob(['postMessage([self.crossOriginIsolated, typeof SharedArrayBuffer])'], { type: 'text/javascript' })));
  w.onmessage = (e) => {
    resolve(e.data);
    w.terminate();
  };
}));

test('site: cross-origin isolated by the headers, or by the service worker on a host that sends none', { skip: why ?? false, timeout: 90000 }, async () => {
  const headers = await fetch(`${server.url}index.html`);
  for (const [name, value] of ISOLATION_HEADERS) assert.equal(headers.headers.get(name), value);
  const plain = await fetch(`${bare.url}index.html`);
  for (const [name] of ISOLATION_HEADERS) assert.equal(plain.headers.get(name), null, `the bare host sends ${name}`);
  for (const [host, via] of [[server, 'headers'], [bare, 'service worker']]) {
    const context = await browser.newContext();
    const { page, problems } = await newPage(context);
    await page.goto(`${host.url}index.html?steps=1`);
    assert.deepEqual(await isolationOf(page), { isolated: true, via, why: null });
    assert.deepEqual(await page.evaluate(() => [crossOriginIsolated, typeof SharedArrayBuffer]), [true, 'function']);
    assert.deepEqual(await workerIsolated(page), [true, 'function']);
    const navigation = () => page.evaluate(() => performance.getEntriesByType('navigation')[0].type);
    assert.equal(await navigation(), via === 'headers' ? 'navigate' : 'reload', 'one reload where the service worker isolates the page');
    // the next page of the site: isolated as it loads, no reload
    await page.goto(`${host.url}generate.html`);
    assert.deepEqual(await isolationOf(page), { isolated: true, via, why: null });
    assert.equal(await navigation(), 'navigate');
    // the reload cuts short what the first load was fetching: those aborts are expected, nothing else
    assert.deepEqual(problems.filter((m) => !(via === 'service worker' && /net::ERR_ABORTED$/.test(m))), []);
    await context.close();
  }
});
