// cluster_mesh.test.mjs - cluster.html across SEPARATE Chromium processes over
// WebRTC, loaded from the static site (tools/build_site.py) as
// `python3 -m http.server` serves it, inside a loopback-only network namespace
// (the file re-runs itself under `unshare -n` through mesh_env.mjs; without
// unshare it is skipped, never run on the real network). Signalling goes
// through tools/nostr_relay.mjs on 127.0.0.1, TURN through a local coturn
// started by tools/turn.py; no STUN (stun=none: nothing to reach here).
//   1. Two processes, the first with a second tab that is not in the room
//      (BroadcastChannel only, bridged by its neighbour): one leader, 20 steps,
//      bit-identical params in all three ranks, a falling loss; the ICE
//      preflight reports host candidates.
//   2. Three processes: 20 steps as above, then free training (samples/s, the
//      leader's and a follower's bytes per step); the leader's process is
//      killed (SIGKILL) and the other two go on under a new leader from where
//      the cohort was, with identical params.
//   3. Relay only (iceTransportPolicy 'relay' through coturn): the preflight
//      finds relay candidates, two processes train, and the selected pair is
//      relay at both ends.
//   4. A process with another model joins a room of mnist-cnn ranks: it is
//      refused, and both sides say why.
//   5. Four processes with the tree and the partial mesh forced
//      (?tree=1&fanout=1&mesh=partial; both are the defaults above 16 ranks):
//      a chain leader -> inner -> inner -> leaf relays the params; every page
//      ends with the 2 open RTCPeerConnections the topology needs (the chain
//      closed into a ring), not 3, counted by a wrapper of RTCPeerConnection
//      in the page; identical params, a falling loss, every bucket in each
//      step over the links. (cluster.test.mjs forces the tree alone, over
//      tabs of one browser.)
// Figures go to stderr as "mesh timing:" lines (the outer run prints them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { REPO } from './helpers.mjs';
import { namespacedTests, launchPeerBrowser, startRelay, startTurn, turnMissing, stopAll, LEAVE_NOISE } from './mesh_env.mjs';
import { buildSite, httpServer } from './static_site.mjs';

const why = ['web/vendor/trystero.js', 'web/pkg/rlx_web.wasm'].map((f) => (existsSync(`${REPO}${f}`) ? null : `${f} is missing: run make`)).find(Boolean);
const STEPS = 20;
const BATCH = 32;

namespacedTests(import.meta.url, { title: 'cluster.html across Chromium processes over WebRTC', timeoutMs: 480000, skip: why }, inside);

function timing(line) {
  console.error(`mesh timing: ${line}`);
}

function inside() {
  let tmp;
  let server;
  let relay;
  let turn = null;
  const rooms = new Set();

  before(async () => {
    const built = buildSite();
    tmp = built.tmp;
    [server, relay] = await Promise.all([httpServer(built.site), startRelay()]);
    const noTurn = turnMissing();
    if (noTurn) throw new Error(noTurn);
    turn = await startTurn({ port: 3479, minPort: 49300, maxPort: 49400 });
  });

  after(async () => {
    await stopAll();
    await server?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  function newRoomId() {
    const id = `t${Math.random().toString(36).slice(2, 10)}`;
    rooms.add(id);
    return id;
  }

  /** cluster.html with the room (unless room: null), a local relay, no STUN, the CPU backend. */
  function pageUrl({ room, min, model = 'mnist-cnn', steps = STEPS, extra = {} }) {
    const q = new URLSearchParams({ model, backend: 'cpu', batch: String(BATCH), steps: String(steps), min: String(min), autostart: '1', bye: '0' });
    if (room) {
      q.set('room', room);
      q.set('password', 'correct horse battery');
      q.set('relays', relay.url);
      q.set('stun', 'none');
    }
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    return `${server.url}cluster.html?${q}`;
  }

  const state = (page) => page.evaluate(() => window.rlxCluster.state);
  const roomOf = (page) => page.evaluate(() => JSON.parse(JSON.stringify(window.rlxCluster.room)));
  const bits = (page) => page.evaluate(() => window.rlxCluster.params());
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

  async function waitSynced(pages, step, n, timeout = 60000) {
    try {
      await Promise.all(pages.map((page) => page.waitForFunction(([step, n]) => {
        const s = window.rlxCluster.state;
        return s && s.step >= step && s.roster.length === n && s.leader && s.roster.every((r) => r.version === s.version) &&
          s.role !== 'joining';
      }, [step, n], { timeout, polling: 50 })));
    } catch (err) {
      // Say where each page stands: its step, role, version and roster (with exclusion reasons).
      const seen = await Promise.all(pages.map((page) => page.evaluate(() => {
        const s = window.rlxCluster.state;
        const room = window.rlxCluster.room;
        const c = room.connections;
        return s && { step: s.step, phase: s.phase, role: s.role, version: s.version,
          roster: s.roster.map((r) => `${r.role}@${r.version}${r.self ? '(self)' : ''}${r.excluded ? ` ${r.excluded}` : ''}`),
          room: { accepted: room.accepted, failures: room.failures.map((f) => f.message), refusals: room.refusals.map((r) => r.reason),
            connections: c && { mode: c.mode, lobby: c.lobby, roster: c.roster, neighbours: c.neighbours.length, linked: c.linked.length, held: c.held },
            overlay: room.overlay } };
      }).catch((e) => e.message)));
      throw new Error(`${err.message.split('\n')[0]}: waiting for step ${step} with ${n} ranks in sync; the pages: ${JSON.stringify(seen)}`);
    }
  }

  async function assertIdentical(pages) {
    const all = await Promise.all(pages.map(bits));
    for (const p of all) assert.deepEqual(p.bits, all[0].bits, 'parameters differ between ranks');
    return all[0];
  }

  async function assertFalling(page) {
    const curve = await page.evaluate(() => window.rlxCluster.points);
    const first = mean(curve.slice(0, 5).map((p) => p[1]));
    const last = mean(curve.slice(-5).map((p) => p[1]));
    assert.ok(last < first - 0.05, `the loss did not fall: ${first.toFixed(3)} -> ${last.toFixed(3)}`);
  }

  async function noProblems(peers) {
    for (const p of peers) {
      for (const page of p.context.pages()) assert.equal(await page.textContent('#error'), '', 'no error shown');
      assert.deepEqual(p.problems.filter((m) => !LEAVE_NOISE.test(m)), []);
    }
  }

  test('two processes and a BroadcastChannel-only tab: one cohort, 20 steps, identical params, falling loss', { timeout: 90000 }, async () => {
    const room = newRoomId();
    const [a, b] = await Promise.all([launchPeerBrowser(), launchPeerBrowser()]);
    const t0 = Date.now();
    await Promise.all([a.page.goto(pageUrl({ room, min: 3 })), b.page.goto(pageUrl({ room, min: 3 }))]);
    const tabOnly = await a.context.newPage(); // same browser as a, not in the room
    await tabOnly.goto(pageUrl({ room: null, min: 3 }));
    const pages = [a.page, b.page, tabOnly];
    await Promise.all(pages.map((p) => p.waitForFunction(() => window.rlxCluster.state?.roster.length === 3, null, { timeout: 45000, polling: 50 })));
    timing(`2 processes + 1 tab: cohort of 3 connected ${Date.now() - t0} ms after page load`);
    await waitSynced(pages, STEPS, 3);
    const states = await Promise.all(pages.map(state));
    assert.equal(states.filter((s) => s.role === 'leader').length, 1, 'one leader');
    assert.ok(states.every((s) => s.leader === states[0].leader && s.step === STEPS));
    await assertIdentical(pages);
    await assertFalling(a.page);
    const ra = await roomOf(a.page);
    assert.equal(ra.joined, true);
    assert.equal(ra.accepted, 1);
    assert.ok(ra.preflight?.host > 0, `the ICE preflight gathered host candidates: ${JSON.stringify(ra.preflight)}`);
    assert.equal((await roomOf(tabOnly)).joined, false, 'the third tab is only on the BroadcastChannel');
    const peer = ra.diagnostics.peers[0];
    assert.equal(peer.connectionState, 'connected');
    assert.equal(peer.selectedPair?.local?.candidateType, 'host');
    timing(`preflight host ${ra.preflight.host} in ${Math.round(ra.preflight.ms)} ms; first peer accepted ${Math.round(ra.connectMs)} ms after join`);
    await noProblems([a, b]);
    await Promise.all([a.close(), b.close()]);
  });

  test('three processes: 20 steps, throughput and bytes per step, then the leader is killed and the others go on', { timeout: 120000 }, async () => {
    const room = newRoomId();
    const peers = await Promise.all([0, 1, 2].map(() => launchPeerBrowser({ killable: true })));
    const t0 = Date.now();
    await Promise.all(peers.map((p) => p.page.goto(pageUrl({ room, min: 3 }))));
    await waitSynced(peers.map((p) => p.page), 3, 3);
    timing(`3 processes: cohort connected and at step 3 ${Date.now() - t0} ms after page load`);
    await waitSynced(peers.map((p) => p.page), STEPS, 3);
    await assertIdentical(peers.map((p) => p.page));
    await assertFalling(peers[0].page);
    const states = await Promise.all(peers.map((p) => state(p.page)));
    assert.equal(states.filter((s) => s.role === 'leader').length, 1, 'one leader');
    const li = states.findIndex((s) => s.role === 'leader');
    const leader = peers[li];
    const followers = peers.filter((p) => p !== leader);

    // free training: samples/s and bytes per step of the leader and a follower
    await leader.page.evaluate(() => window.rlxCluster.setMaxSteps(0));
    await leader.page.waitForFunction((s) => window.rlxCluster.state.step >= s, STEPS + 5, { timeout: 20000 });
    const snap = () => Promise.all([state(leader.page), roomOf(leader.page), roomOf(followers[0].page)]);
    const [s0, l0, f0] = await snap();
    await leader.page.waitForTimeout(3000);
    const [s1, l1, f1] = await snap();
    const steps = s1.step - s0.step;
    assert.ok(steps > 0, 'the cohort trained while measured');
    const sps = ((s1.samplesTotal - s0.samplesTotal) * 1000) / (s1.t - s0.t);
    timing(`3 processes over WebRTC: ${sps.toFixed(0)} samples/s (mnist-cnn, batch ${BATCH} per rank); ` +
      `bytes per step: leader ${Math.round((l1.stats.bytesOut - l0.stats.bytesOut) / steps)}, follower ${Math.round((f1.stats.bytesOut - f0.stats.bytesOut) / steps)}`);

    // the leader's browser dies; a follower takes over from the params the cohort held
    const goal = s1.step + 15;
    const before = await Promise.all(followers.map((p) => state(p.page)));
    const tk = Date.now();
    leader.kill();
    await Promise.race(followers.map((p) => p.page.waitForFunction(() => window.rlxCluster.state.role === 'leader', null, { timeout: 20000, polling: 20 })));
    timing(`leader killed: a new leader ${Date.now() - tk} ms later`);
    const after = await Promise.all(followers.map((p) => state(p.page)));
    const nl = after.findIndex((s) => s.role === 'leader');
    assert.ok(after[nl].step >= Math.max(...before.map((s) => s.step)), 'the new leader starts from where the cohort was');
    await followers[nl].page.evaluate((g) => window.rlxCluster.setMaxSteps(g), goal);
    await waitSynced(followers.map((p) => p.page), goal, 2);
    await assertIdentical(followers.map((p) => p.page));
    const final = await Promise.all(followers.map((p) => state(p.page)));
    assert.ok(final.every((s) => s.leader === after[nl].id && s.roster.length === 2));
    await noProblems(followers);
  });

  // Four browsers training on two shared cores: allow them time (the wait is for events, not a speed).
  // The tree's relaying (params down a chain, partials up it) is checked here on the links of the partial
  // mesh, the default above 16 ranks; a tree over the full mesh is only reached by forcing both options.
  test('four processes, the tree and the partial mesh forced (fan-out 1): params relayed down a chain, each holds the 2 connections the topology needs, not 3', { timeout: 240000 }, async () => {
    const room = newRoomId();
    const peers = await Promise.all([0, 1, 2, 3].map(() => launchPeerBrowser()));
    // every RTCPeerConnection the page makes (Trystero's offers too), to count the open ones
    for (const p of peers) {
      await p.page.addInitScript(() => {
        const Native = window.RTCPeerConnection;
        const made = [];
        window.__rlxPcs = made;
        window.RTCPeerConnection = class extends Native {
          constructor(...args) {
            super(...args);
            made.push(this);
          }
        };
      });
    }
    const t0 = Date.now();
    await Promise.all(peers.map((p) => p.page.goto(pageUrl({ room, min: 4, extra: { tree: '1', fanout: '1', mesh: 'partial' } }))));
    const pages = peers.map((p) => p.page);
    await waitSynced(pages, STEPS, 4, 180000);
    timing(`4 processes, partial mesh: ${STEPS} steps ${Date.now() - t0} ms after page load`);
    await assertIdentical(pages);
    const states = await Promise.all(pages.map(state));
    assert.deepEqual(states.map((s) => s.tree.role).sort(), ['inner', 'inner', 'leaf', 'root'], 'a chain: leader -> inner -> inner -> leaf');
    const leader = states.find((s) => s.role === 'leader');
    await assertFalling(pages[states.indexOf(leader)]);
    // the overlay settles: each page linked to its two ring neighbours, nothing else open
    const open = (page) => page.evaluate(() => window.__rlxPcs.filter((pc) => pc.connectionState === 'connected').length);
    const ts = Date.now();
    await Promise.all(pages.map((page) => page.waitForFunction(() => {
      const c = window.rlxCluster.room.connections;
      const connected = window.__rlxPcs.filter((pc) => pc.connectionState === 'connected').length;
      return c?.mode === 'partial' && c.neighbours.length === 2 && c.linked.length === 2 && connected === 2;
    }, null, { timeout: 30000, polling: 100 }))).catch(async (err) => {
      // Say what each page holds: its overlay's view and its open RTCPeerConnections.
      const seen = await Promise.all(pages.map((page) => page.evaluate(() => {
        const c = window.rlxCluster.room.connections;
        return { mode: c?.mode, neighbours: c?.neighbours?.length, linked: c?.linked?.length, held: c?.held, lobby: c?.lobby,
          connected: window.__rlxPcs.filter((pc) => pc.connectionState === 'connected').length, overlay: window.rlxCluster.room.overlay };
      }).catch((e) => e.message)));
      throw new Error(`${err.message.split('\n')[0]}: the overlay did not settle; the pages: ${JSON.stringify(seen)}`);
    });
    const settledMs = Date.now() - ts;
    // the ring as the pages see it now (a loaded machine may have elected another leader meanwhile)
    const now = await Promise.all(pages.map(state));
    assert.ok(now.every((s) => s.leader === now[0].leader), `one leader: ${now.map((s) => s.leader).join(', ')}`);
    const order = [now[0].leader, ...now.map((s) => s.id).filter((id) => id !== now[0].leader).sort()];
    const rooms = await Promise.all(pages.map(roomOf));
    for (let i = 0; i < 4; i++) {
      const at = order.indexOf(states[i].id);
      const ring = [order[(at + 3) % 4], order[(at + 1) % 4]].sort();
      assert.deepEqual(rooms[i].connections.neighbours, ring, `${states[i].id}: the chain closed into a ring`);
      assert.equal(rooms[i].connections.held, 2);
      assert.equal(await open(pages[i]), 2, 'two RTCPeerConnections open, not three');
    }
    assert.deepEqual(rooms.map((r) => r.connections.lobby), now.map((s) => s.id === now[0].leader), 'only the leader\'s page keeps the room open');
    // training goes on over the links alone: 10 more steps, every bucket, identical
    const li = now.findIndex((s) => s.id === now[0].leader);
    const goal = now[li].step + 10;
    await pages[li].evaluate((g) => window.rlxCluster.setMaxSteps(g), goal);
    await waitSynced(pages, goal, 4);
    await assertIdentical(pages);
    for (const page of pages) assert.equal(await open(page), 2, 'still two');
    const after = await Promise.all(pages.map(roomOf));
    timing(`4 processes, partial mesh (fan-out 1): ${rooms.map((r) => r.connections.held).join('/')} connections per page (full mesh: 3), ` +
      `all 4 settled at most ${settledMs} ms after step ${STEPS}; ${(await Promise.all(pages.map((page) => page.evaluate(() => window.__rlxPcs.length)))).join('/')} ` +
      `RTCPeerConnections made (Trystero's offers included); leader bytes sent ${after[li].stats.bytesOut}`);
    await noProblems(peers);
    await Promise.all(peers.map((p) => p.close()));
  });

  test('relay only, through the local coturn: the preflight finds relay candidates and the selected pair is relay', { timeout: 90000 }, async () => {
    const room = newRoomId();
    const extra = { turn: new URLSearchParams(turn.fragment.slice(1)).get('turn'), ice: 'relay' };
    const [a, b] = await Promise.all([launchPeerBrowser({ permissions: [] }), launchPeerBrowser({ permissions: [] })]);
    await Promise.all([a, b].map((p) => p.page.goto(pageUrl({ room, min: 2, steps: 10, extra }))));
    await waitSynced([a.page, b.page], 10, 2);
    await assertIdentical([a.page, b.page]);
    for (const p of [a, b]) {
      await p.page.waitForFunction(() => window.rlxCluster.room.diagnostics?.peers?.[0]?.selectedPair, null, { timeout: 10000 });
      const r = await roomOf(p.page);
      assert.ok(r.preflight.relay > 0, `relay candidates in the preflight: ${JSON.stringify(r.preflight)}`);
      assert.equal(r.preflight.host, 0, 'relay only: no host candidates');
      const pair = r.diagnostics.peers[0].selectedPair;
      assert.equal(pair.local.candidateType, 'relay');
      assert.equal(pair.remote.candidateType, 'relay');
    }
    timing(`relay only: 2 processes trained 10 steps through coturn; preflight relay ${(await roomOf(a.page)).preflight.relay}`);
    await noProblems([a, b]);
    await Promise.all([a.close(), b.close()]);
  });

  test('a process with another model is refused, and both sides say why', { timeout: 60000 }, async () => {
    const room = newRoomId();
    const [a, c] = await Promise.all([launchPeerBrowser(), launchPeerBrowser()]);
    await a.page.goto(pageUrl({ room, min: 1, steps: 0 }));
    await c.page.goto(pageUrl({ room, min: 1, steps: 0, model: 'mnist-mlp' }));
    for (const p of [a, c]) {
      await p.page.waitForFunction(() => window.rlxCluster.room.refusals.length > 0, null, { timeout: 30000, polling: 50 });
    }
    const ra = await roomOf(a.page);
    const rc = await roomOf(c.page);
    for (const r of [ra, rc]) {
      assert.ok(r.refusals.some((x) => /model mismatch: .* trains mnist-\w+ \(\d+ parameters\), .* trains mnist-\w+ \(\d+ parameters\)/.test(x.reason) &&
        x.reason.includes('mnist-mlp (101770') && x.reason.includes('mnist-cnn (5258')), JSON.stringify(r.refusals));
    }
    assert.match(await a.page.textContent('#room-refused'), /model mismatch/);
    assert.match(await c.page.textContent('#room-refused'), /model mismatch/);
    assert.equal(ra.accepted, 0);
    // the refusal can arrive before the Worker's first status: wait for one
    await a.page.waitForFunction(() => window.rlxCluster.state?.roster, null, { timeout: 30000, polling: 50 });
    assert.equal((await state(a.page)).roster.length, 1, 'the refused peer is not in the cohort');
    await Promise.all([a.close(), c.close()]);
  });
}
