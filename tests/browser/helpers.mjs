// helpers.mjs - shared set-up of the browser tests: tools/serve.py on a free
// port (127.0.0.1) and Debian's chromium driven by playwright-core, with the
// flags of the verified recipe (SwiftShader WebGPU / WebGL2).  Pages get a
// log of console errors and uncaught exceptions to assert on.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
export const WASM = new URL('../../web/pkg/rlx_web.wasm', import.meta.url);

const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run', '--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];

/** Why the browser tests cannot run here, or null. */
export function missing() {
  if (!existsSync(CHROMIUM)) return `no chromium at ${CHROMIUM} (Debian package chromium; make setup)`;
  if (!existsSync(WASM)) return 'missing web/pkg/rlx_web.wasm: run `make wasm`';
  return null;
}

/** Starts tools/serve.py on a free port; resolves to { url, stop() }. */
export function startServer(extraArgs = []) {
  const child = spawn('python3', ['tools/serve.py', '--port', '0', '--host', '127.0.0.1', '--quiet', ...extraArgs],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`serve.py did not start in 10 s:\n${out}${err}`)), 10000);
    function fail(e) {
      clearTimeout(timer);
      child.kill();
      reject(e);
    }
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => fail(new Error(`serve.py exited (${code}):\n${out}${err}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /serving .* on (https?):\/\/[^:]+:(\d+)\//.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({
        url: `${m[1]}://127.0.0.1:${m[2]}/`,
        output: () => out,
        stop: () => new Promise((done) => {
          if (child.exitCode !== null) return done();
          child.once('exit', () => done());
          child.kill();
        }),
      });
    });
  });
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

/** The data-value of an element (full precision of a number shown). */
export function valueOf(page, selector) {
  return page.$eval(selector, (el) => el.dataset.value);
}
