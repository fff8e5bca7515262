// cluster_room.test.mjs - cluster.html's room as a new user meets it, across
// SEPARATE Chromium processes inside a loopback-only network namespace (as
// cluster_mesh.test.mjs: the file re-runs itself under `unshare -n` through
// mesh_env.mjs, and is skipped where it cannot), from the static site, with
// tools/nostr_relay.mjs on 127.0.0.1 for signalling and no STUN:
//   1. A tab presses "Open a room" and nothing else; a second process opens
//      the join URL (on a phone-sized screen). The opener is a rank of the
//      cohort from its first step (step 0's params name it, with the
//      joiner), and neither trained alone. The joiner's peers table stays
//      inside its box.
//   2. A page whose signalling relays do not answer (a closed port, a name
//      that does not resolve) names each of them and says what to do
//      (?relays=); once a relay comes up on that port, it leaves the list.
// Figures go to stderr as "mesh timing:" lines.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { REPO, screenshot } from './helpers.mjs';
import { namespacedTests, launchPeerBrowser, startRelay, servedSite, LEAVE_NOISE } from './mesh_env.mjs';

const why = ['web/vendor/trystero.js', 'web/pkg/rlx_web.wasm'].map((f) => (existsSync(`${REPO}${f}`) ? null : `${f} is missing: run make`)).find(Boolean);

namespacedTests(import.meta.url, { title: 'cluster.html rooms as a new user meets them', timeoutMs: 240000, skip: why }, inside);

/** A port of 127.0.0.1 nothing listens on (yet). */
function closedPort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function inside() {
  const env = servedSite();

  const state = (page) => page.evaluate(() => window.rlxCluster.state);

  test('Open a room: the opener trains from the first step with the device that joins; the peers table fits a phone', { timeout: 120000 }, async () => {
    const [a, b] = await Promise.all([launchPeerBrowser(), launchPeerBrowser()]);
    const q = new URLSearchParams({ backend: 'cpu', batch: '32', steps: '0', relays: env.relay.url, stun: 'none' });
    await a.page.goto(`${env.server.url}cluster.html?${q}`);
    await a.page.waitForFunction(() => !document.getElementById('start').disabled, null, { timeout: 30000 });
    await a.page.click('#room-open'); // and nothing else
    await a.page.waitForFunction(() => document.getElementById('room-url').dataset.value, null, { timeout: 30000 });
    const join = new URL(await a.page.$eval('#room-url', (el) => el.dataset.value));
    assert.equal(join.searchParams.get('autostart'), '1');
    join.searchParams.set('backend', 'cpu');
    await b.page.setViewportSize({ width: 390, height: 844 });
    const t0 = Date.now();
    await b.page.goto(join.href);
    const pages = [a.page, b.page];
    await Promise.all(pages.map((page) => page.waitForFunction(() => {
      const s = window.rlxCluster.state;
      return s && s.step >= 3 && s.roster.length === 2 && s.role !== 'joining';
    }, null, { timeout: 60000, polling: 50 })));
    console.error(`mesh timing: opener and joiner at step 3 ${Date.now() - t0} ms after the join URL loaded`);
    // the first step whose params named each a member: the opener's is the cohort's first, and neither trained alone
    const [sa, sb] = await Promise.all(pages.map(state));
    assert.deepEqual(sa.firstStep, { step: 0, ranks: 2 }, 'the opener is a rank of the cohort\'s first step, with the joiner');
    assert.equal(sb.firstStep?.ranks, 2, `the joiner's first step: ${JSON.stringify(sb.firstStep)}`);
    assert.equal(sa.leader, sb.leader);
    // the joiner's peers table, on a phone-sized screen: inside its box, which scrolls; nothing past the screen
    await b.page.waitForSelector('#peers-table tbody tr', { timeout: 20000 });
    await screenshot(b.page, 'cluster-room-phone');
    const fit = await b.page.evaluate(() => {
      const box = document.getElementById('peers-box');
      // what sticks out past the screen (an element wider than it, outside any box that scrolls)
      const past = [...document.body.querySelectorAll('*')].filter((el) => el.getBoundingClientRect().right > innerWidth + 0.5 &&
        !el.closest('.scroll') && ![...el.children].some((c) => c.getBoundingClientRect().right > innerWidth + 0.5));
      return { right: box.getBoundingClientRect().right, width: innerWidth, scroll: document.documentElement.scrollWidth,
        overflow: getComputedStyle(box).overflowX, past: past.map((el) => `${el.tagName.toLowerCase()}#${el.id}.${el.className}`) };
    });
    assert.ok(fit.right <= fit.width, `the peers box ends at ${fit.right} px on a ${fit.width} px screen`);
    assert.equal(fit.overflow, 'auto', 'the peers box scrolls');
    assert.ok(fit.scroll <= fit.width, `the page is ${fit.scroll} px wide on a ${fit.width} px screen: ${fit.past.join(', ')}`);
    for (const p of [a, b]) {
      assert.equal(await p.page.textContent('#error'), '');
      assert.deepEqual(p.problems.filter((m) => !LEAVE_NOISE.test(m)), []);
    }
    await Promise.all([a.close(), b.close()]);
  });

  test('unreachable signalling relays are named on the page, with what to do, and leave the list once they answer', { timeout: 90000 }, async () => {
    const port = await closedPort();
    const down = `ws://127.0.0.1:${port}`;
    const unresolved = 'ws://relay.invalid';
    const p = await launchPeerBrowser();
    const q = new URLSearchParams({ room: 'relaycheck', password: 'x', relays: `${down},${unresolved}`, stun: 'none' });
    const t0 = Date.now();
    await p.page.goto(`${env.server.url}cluster.html?${q}`);
    await p.page.waitForFunction((want) => document.getElementById('room-relays').dataset.value.split(' ').sort().join(' ') === want,
      [down, unresolved].sort().join(' '), { timeout: 30000, polling: 100 });
    const text = await p.page.textContent('#room-relays');
    assert.ok(text.includes(down) && text.includes(unresolved), text);
    assert.match(text, /0 of 2 connected/);
    assert.match(text, /\?relays=/);
    // a relay comes up on the closed port: Trystero's next attempt connects, and it leaves the list
    const late = await startRelay({ port });
    await p.page.waitForFunction((want) => document.getElementById('room-relays').dataset.value === want, unresolved,
      { timeout: 60000, polling: 100 });
    assert.match(await p.page.textContent('#room-relays'), /1 of 2 connected/);
    assert.ok(late.url.endsWith(`:${port}`));
    await p.close();
  });
}
