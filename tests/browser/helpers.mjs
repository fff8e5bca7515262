// helpers.mjs - shared set-up of the browser tests: tools/serve.py on a free
// port (127.0.0.1) and Debian's chromium driven by playwright-core, with the
// flags of the verified recipe (SwiftShader WebGPU / WebGL2).  Pages get a
// log of console errors and uncaught exceptions to assert on; the set-up the
// language-model GPU files share (lmSuite).
import { before, after } from 'node:test';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { REPO } from './server.mjs';

import { startServer } from './server.mjs';

export { REPO, startServer } from './server.mjs';
export const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
export const WASM = new URL('../../web/pkg/rlx_web.wasm', import.meta.url);

export const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];

/** Why the browser tests cannot run here, or null. */
export function missing() {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM} (Debian package chromium; make setup)`;
  if (!existsSync(WASM)) return 'missing web/pkg/rlx_web.wasm: run `make wasm`';
  return null;
}

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/** A new page that records console errors, uncaught exceptions and failed requests. */
export async function newPage(browser) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console.error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`));
  page.on('response', (res) => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.url()}`);
  });
  return { page, problems };
}

/** A page of the served site (generate.html) whose /lm/<name>.gguf requests are answered from build/lm (make lm-fixtures). */
export async function lmPage(browser, server) {
  const { page, problems } = await newPage(browser);
  await page.route('**/lm/*.gguf', (route) => {
    const name = new URL(route.request().url()).pathname.split('/').pop();
    route.fulfill({ path: `${REPO}build/lm/${name}`, contentType: 'application/octet-stream' });
  });
  await page.goto(`${server.url}generate.html`);
  return { page, problems };
}

/**
 * The set-up of a file of language-model GPU tests: whys[i] says why the
 * tests of web/pkg/files[i] cannot run here (no chromium, that module or
 * one of the build/lm fixtures `names`), or is null; the server and the
 * browser start before the tests when any can run and stop after them;
 * page() is lmPage on them.
 */
export function lmSuite(names, files) {
  const fixtures = names.some((n) => !existsSync(`${REPO}build/lm/${n}.gguf`)) ? 'missing build/lm fixtures: run make lm-fixtures' : null;
  const whys = files.map((file) => missing() ?? (!existsSync(`${REPO}web/pkg/${file}`) ? `missing web/pkg/${file}: run \`make wasm\`` : null) ?? fixtures);
  let server, browser;
  before(async () => {
    if (whys.every(Boolean)) return;
    [server, browser] = await Promise.all([startServer(), launch()]);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });
  return { whys, page: () => lmPage(browser, server) };
}

/** The data-value of an element (full precision of a number shown). */
export function valueOf(page, selector) {
  return page.$eval(selector, (el) => el.dataset.value);
}

/** Saves a full-page screenshot as build/screens/<name>.png for a person to look at. */
export async function screenshot(page, name) {
  const { mkdirSync } = await import('node:fs');
  const dir = new URL('../../build/screens/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: new URL(`${name}.png`, dir).pathname, fullPage: true });
}
