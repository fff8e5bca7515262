// mesh_env.mjs - what the WebRTC mesh browser tests need around them, with
// nothing reaching past 127.0.0.1:
//
//   isolate(import.meta.url, { timeoutMs }) ->
//       { mode: 'inside' }                 already in a loopback-only network namespace: run the tests
//       { mode: 'outer', run() }           run() re-runs the file under `unshare -n` (lo up) with
//                                          RLX_NETNS=1 and resolves { code, output, timings,
//                                          passed, failed, skipped } (counts of the inner run)
//       { mode: 'skip', reason }           unshare is not possible here: skip, never run on the real network
//   namespacedTests(import.meta.url, { title, timeoutMs, skip }, inside)
//                                          a test file's frame on isolate(): inside() declares the tests
//                                          in the namespace; outside, one test named title re-runs the
//                                          file and asserts every inner test passed (none skipped), or
//                                          is skipped with the reason (skip: why the file cannot run)
//   inLoopbackNamespace() -> bool         RLX_NETNS=1 and no interface but lo
//   rerunInLoopbackNamespace(import.meta.url) -> exit code
//                                          a bench script run again in such a namespace, output inherited
//   launchPeerBrowser({ permissions, killable }) -> { browser, context, page, problems, close(), kill() }
//       (kill: SIGKILL of the browser process, when killable: true)
//   LEAVE_NOISE                            the console error Chromium logs when a room peer leaves
//       a SEPARATE Chromium process (Debian /usr/bin/chromium via playwright-core) with the
//       flags of helpers.mjs plus --allow-loopback-in-peer-connection and
//       --disable-features=WebRtcHideLocalIpsWithMdns, in a context granted 'microphone'
//       (without it Chromium gathers no host candidates on loopback)
//   startRelay()                           tools/nostr_relay.mjs on 127.0.0.1, a free port
//   startTurn({ port, minPort, maxPort, user, password }) -> { fragment, iceServer, stop() }
//       tools/turn.py (coturn on 127.0.0.1) once it printed its '&turn=' line
//   stopAll()                              stops everything started here (call it in `after`)
//   const env = servedSite()               registers before / after hooks: the static site (static_site.mjs)
//                                          served on 127.0.0.1 and startRelay() (env.server, env.relay once
//                                          before ran); after: stopAll(), the server stopped, the site removed
// Child processes are started in their own process group and killed by that
// group id only; nothing here touches processes it did not start.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { ARGS as BASE_ARGS, CHROMIUM, REPO, newPage } from './helpers.mjs';
import { startRelay as startNostrRelay } from '../../tools/nostr_relay.mjs';
import { buildSite, httpServer } from './static_site.mjs';

// helpers.mjs's flags, then the two WebRTC-over-loopback ones.
const ARGS = [...BASE_ARGS, '--allow-loopback-in-peer-connection', '--disable-features=WebRtcHideLocalIpsWithMdns'];

const stoppers = [];

/** Registers fn (async) to run in stopAll(); returns fn. */
function onStop(fn) {
  stoppers.push(fn);
  return fn;
}

export function servedSite() {
  const env = { server: null, relay: null, tmp: null };
  before(async () => {
    const built = buildSite();
    env.tmp = built.tmp;
    [env.server, env.relay] = await Promise.all([httpServer(built.site), startRelay()]);
  });
  after(async () => {
    await stopAll();
    await env.server?.stop();
    if (env.tmp) rmSync(env.tmp, { recursive: true, force: true });
  });
  return env;
}

export async function stopAll() {
  const all = stoppers.splice(0).reverse();
  for (const fn of all) {
    try {
      await fn();
    } catch {
      // stopping the rest anyway
    }
  }
}

/** Kills the process group of a child we spawned detached (its pid is the group id). */
function killGroup(child, signal = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

function stopChild(child, graceMs = 3000) {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    killGroup(child, 'SIGTERM');
  });
}

export function inLoopbackNamespace() {
  return process.env.RLX_NETNS === '1' && Object.keys(networkInterfaces()).every((name) => name === 'lo');
}

/** Why a loopback-only namespace cannot be made here, or null. */
function namespaceProblem() {
  const r = spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up'], { encoding: 'utf8', timeout: 10000 });
  if (r.error) return `unshare is not available: ${r.error.message}`;
  if (r.status !== 0) return `unshare -n failed (root and CAP_SYS_ADMIN needed): ${(r.stderr || '').trim() || `exit ${r.status}`}`;
  return null;
}

/**
 * A script (a bench) run again under `unshare -n` with lo up and RLX_NETNS=1,
 * the same arguments, its output inherited: resolves to its exit code.
 */
export function rerunInLoopbackNamespace(fileUrl, args = process.argv.slice(2)) {
  return new Promise((resolve) => {
    const child = spawn('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh', process.execPath, fileURLToPath(fileUrl), ...args],
      { stdio: 'inherit', env: { ...process.env, RLX_NETNS: '1' } });
    child.on('exit', (code) => resolve(code ?? 1));
    child.on('error', (err) => {
      console.log(`${fileURLToPath(fileUrl)}: needs unshare -n (root): ${err.message}`);
      resolve(1);
    });
  });
}

export function isolate(fileUrl, { timeoutMs = 120000 } = {}) {
  if (inLoopbackNamespace()) return { mode: 'inside' };
  if (process.env.RLX_NETNS === '1') return { mode: 'skip', reason: 'RLX_NETNS=1 but interfaces other than lo are present' };
  const problem = namespaceProblem();
  if (problem) return { mode: 'skip', reason: `${problem}; not running WebRTC tests on the real network` };
  const file = fileURLToPath(fileUrl);
  // Without NODE_TEST_CONTEXT, or the inner `node --test` sees itself nested and runs nothing.
  const { NODE_TEST_CONTEXT, ...env } = process.env;
  return {
    mode: 'outer',
    run: () => new Promise((resolve) => {
      const child = spawn('unshare', ['-n', '--', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh',
        process.execPath, '--test', '--test-reporter=spec', file], {
        cwd: REPO, env: { ...env, RLX_NETNS: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
      });
      let output = '';
      const keep = (d) => {
        output += d;
        process.stderr.write(d);
      };
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      // SIGTERM first: playwright then closes the browsers it launched; SIGKILL if that hangs.
      const timer = setTimeout(() => {
        output += `\n(stopped after ${timeoutMs} ms)\n`;
        stopChild(child, 5000);
      }, timeoutMs);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        const timings = output.split('\n').filter((l) => l.includes('mesh timing:')).map((l) => l.replace(/^.*mesh timing: /, ''));
        const count = (what) => Number(new RegExp(`${what} (\\d+)`).exec(output)?.[1] ?? NaN);
        resolve({ code: code ?? (signal ? 128 : 1), signal, output, timings, passed: count('pass'), failed: count('fail'), skipped: count('skipped') });
      });
    }),
  };
}

export function namespacedTests(fileUrl, { title, timeoutMs, skip = null }, inside) {
  const iso = isolate(fileUrl, { timeoutMs });
  if (skip || iso.mode === 'skip') {
    test(title, { skip: skip ?? iso.reason }, () => {});
  } else if (iso.mode === 'outer') {
    test(`${title} (in a loopback-only network namespace)`, { timeout: timeoutMs + 10000 }, async (t) => {
      const r = await iso.run();
      for (const line of r.timings) t.diagnostic(line);
      assert.equal(r.code, 0, `the namespaced run failed:\n${r.output.slice(-8000)}`);
      assert.ok(r.passed > 0 && r.failed === 0, `the namespaced run passed ${r.passed}, failed ${r.failed}:\n${r.output.slice(-4000)}`);
      assert.equal(r.skipped, 0, `skipped inside the namespace:\n${r.output.slice(-3000)}`);
    });
  } else {
    inside();
  }
}

/** What Chromium logs on the other side of every peer that leaves a Trystero room: noise, not a problem. */
export const LEAVE_NOISE = /Trystero peer error: OperationError: User-Initiated Abort, reason=Close called/;

export async function launchPeerBrowser({ permissions = ['microphone'], killable = false } = {}) {
  // killable: through a browser server, whose process the test can SIGKILL (a crashed device)
  const server = killable ? await chromium.launchServer({ executablePath: CHROMIUM, args: ARGS, headless: true }) : null;
  const browser = server ? await chromium.connect(server.wsEndpoint()) : await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  const close = onStop(async () => {
    await browser.close().catch(() => {});
    await server?.close().catch(() => {});
  });
  const context = await browser.newContext({ permissions });
  const { page, problems } = await newPage(context);
  const kill = server ? () => server.process().kill('SIGKILL') : null;
  return { browser, context, page, problems, close, kill };
}

export async function startRelay(opts = {}) {
  const relay = await startNostrRelay({ host: '127.0.0.1', port: 0, ...opts });
  onStop(() => relay.close());
  return relay;
}

/** Why coturn cannot run here, or null. */
export function turnMissing() {
  if (!existsSync(`${REPO}tools/turn.py`)) return 'tools/turn.py is missing';
  const r = spawnSync('sh', ['-c', 'command -v turnserver'], { encoding: 'utf8' });
  if (r.status !== 0) return 'no turnserver (Debian package coturn; make setup)';
  return null;
}

export function startTurn({ port = 3478, minPort = 49152, maxPort = 49252, user = 'rlxtest', password = 'rlxtest-pass', timeoutMs = 20000 } = {}) {
  const child = spawn('python3', ['tools/turn.py', '--listen', '127.0.0.1', '--port', String(port), '--min-port', String(minPort),
    '--max-port', String(maxPort), '--user', user, '--password', password], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const stop = onStop(() => stopChild(child));
  let out = '';
  return new Promise((resolve, reject) => {
    const fail = (why) => {
      clearTimeout(timer);
      stop().then(() => reject(new Error(`tools/turn.py: ${why}\n${out}`)));
    };
    const timer = setTimeout(() => fail(`no &turn= line within ${timeoutMs} ms`), timeoutMs);
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => fail(`exited (${code}) before it was ready`));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /^(&turn=\S+)$/m.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      const value = new URLSearchParams(m[1].slice(1)).get('turn');
      const [urls, username, credential] = value.split(';')[0].split('|');
      resolve({ fragment: m[1], iceServer: { urls, username, credential }, output: () => out, stop });
    });
  });
}
