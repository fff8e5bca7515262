// mesh.test.mjs - web/cluster/mesh.js over real WebRTC between SEPARATE
// Chromium processes, inside a loopback-only network namespace (the file
// re-runs itself under `unshare -n` through mesh_env.mjs; without unshare it
// is skipped rather than run on the real network). Signalling goes through
// tools/nostr_relay.mjs on 127.0.0.1, TURN through a local coturn
// (tools/turn.py). The page is tests/browser/mesh_page.html.
//   1. ICE preflight gathers host candidates; three processes join one room
//      with a password and accept each other; a 1 MiB buffer arrives intact
//      both ways; a large buffer and a small one after it arrive in order; a
//      unicast reaches only its addressee; diagnostics show
//      'connected' and a selected host pair.
//   2. A process with another model is refused, with the reason on both sides.
//      A page that can gather no candidate fails (after Trystero's ~23 s): the
//      failure names the peer, is reported once, and raises TURN only where
//      nothing is connected.
//   3. Relay-only (iceTransportPolicy 'relay', coturn): the preflight finds relay
//      candidates, two processes connect, the selected pair is 'relay' at both
//      ends, and 1 MiB arrives intact.
// Prints the timings (time to accepted, 1 MiB transfer) as "mesh timing:" lines.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { REPO, startServer } from './helpers.mjs';
import { isolate, launchPeerBrowser, startRelay, startTurn, turnMissing, stopAll, LEAVE_NOISE } from './mesh_env.mjs';

const MiB = 1 << 20;
const iso = isolate(import.meta.url, { timeoutMs: 150000 });
const why = existsSync(`${REPO}web/vendor/trystero.js`) ? null : 'web/vendor/trystero.js is missing: run `make web/vendor/trystero.js`';

if (why) {
  test('WebRTC mesh between Chromium processes', { skip: why }, () => {});
} else if (iso.mode === 'skip') {
  test('WebRTC mesh between Chromium processes', { skip: iso.reason }, () => {});
} else if (iso.mode === 'outer') {
  test('WebRTC mesh between Chromium processes (in a loopback-only network namespace)', async (t) => {
    const r = await iso.run();
    for (const line of r.timings) t.diagnostic(line);
    assert.equal(r.code, 0, `the namespaced run failed:\n${r.output.slice(-6000)}`);
    assert.ok(r.passed > 0 && r.failed === 0, `the namespaced run passed ${r.passed}, failed ${r.failed}:\n${r.output.slice(-3000)}`);
    if (r.skipped) t.diagnostic(`${r.skipped} skipped inside the namespace (see above)`);
  });
} else {
  inside();
}

function timing(line) {
  console.error(`mesh timing: ${line}`);
}

function inside() {
  const t0 = Date.now();
  let server;
  let relay;
  let turn = null;
  let turnError = null;
  const peers = [];
  let meshRoom = null; // the room of the first test, which the second joins
  const url = () => `${server.url}tests/browser/mesh_page.html`;
  const room = (name) => `${name}-${Math.random().toString(36).slice(2)}`;
  const base = () => ({ relayUrls: [relay.url], rtcConfig: { iceServers: [] }, password: 'correct horse', slug: 'mnist-cnn', paramCount: 5258 });

  before(async () => {
    const noTurn = turnMissing();
    const [s, r, ...browsers] = await Promise.all([
      startServer(['--root', REPO]),
      startRelay(),
      launchPeerBrowser(),
      launchPeerBrowser(),
      launchPeerBrowser(),
      noTurn ? Promise.resolve(null) : startTurn().then((x) => { turn = x; }, (e) => { turnError = e.message; }),
    ]);
    server = s;
    relay = r;
    peers.push(...browsers.slice(0, 3));
    if (noTurn) turnError = noTurn;
    await Promise.all(peers.map((p) => open(p)));
    timing(`set-up (server, relay, coturn, 3 Chromium processes) ${Date.now() - t0} ms`);
  });

  after(async () => {
    await stopAll();
    await server?.stop();
    timing(`whole file ${Date.now() - t0} ms`);
  });

  async function open(p) {
    await p.page.goto(url());
    await p.page.waitForFunction(() => window.meshTest);
  }
  const call = (p, fn, arg) => p.page.evaluate(fn, arg);
  const join = (p, opts) => call(p, (o) => window.meshTest.join(o), opts);
  const accepted = (p, n, timeout = 20000) => p.page.waitForFunction((k) => window.meshTest.accepted() >= k, n, { timeout, polling: 50 });
  const events = (p, type) => call(p, (ty) => window.meshTest.events().filter((e) => e.type === ty), type);
  const send = (p, opts) => call(p, (o) => window.meshTest.send(o), opts);
  const receivedAt = (p, k, timeout = 15000) => p.page.waitForFunction((i) => {
    const r = window.meshTest.received();
    return r.length > i && r[i].digest ? r[i] : null;
  }, k, { timeout, polling: 20 }).then((h) => h.jsonValue());
  const diag = (p) => call(p, () => window.meshTest.diagnostics().then((d) => JSON.parse(JSON.stringify(d))));

  test('three Chromium processes: preflight, password room, accept, 1 MiB both ways, order, unicast, diagnostics', { timeout: 60000 }, async () => {
    const [a, b, c] = peers;
    const pre = await call(a, () => window.meshTest.preflight({ iceServers: [], timeoutMs: 4000 }));
    assert.ok(pre.host > 0, `preflight gathered host candidates: ${JSON.stringify(pre)}`);
    timing(`preflight host ${pre.host} (${pre.candidates.map((x) => `${x.protocol} ${x.address}`).join(', ')}) in ${pre.ms} ms`);

    const id = room('mesh');
    const joined = await Promise.all([a, b, c].map((p) => join(p, { ...base(), roomId: id })));
    const rankA = joined[0].rankId;
    await Promise.all([a, b, c].map((p) => accepted(p, 2)));
    const acc = await events(a, 'peer-accepted');
    timing(`accepted by both others ${Math.round(Math.max(...acc.map((e) => e.at)) - joined[0].joinedAt)} ms after join`);

    // 1 MiB from a to everyone, then from b to everyone: intact (SHA-256 of the whole buffer).
    const s1 = await send(a, { bytes: MiB, seed: 7 });
    assert.ok(s1.sent);
    const [rb, rc] = await Promise.all([receivedAt(b, 0), receivedAt(c, 0)]);
    for (const r of [rb, rc]) {
      assert.equal(r.byteLength, s1.byteLength);
      assert.equal(r.digest, s1.digest, '1 MiB intact');
      assert.equal(r.header.from, rankA);
    }
    const s2 = await send(b, { bytes: MiB, seed: 11 });
    const [ra, rc2] = await Promise.all([receivedAt(a, 0), receivedAt(c, 1)]);
    assert.equal(rc2.digest, s2.digest);
    assert.equal(ra.digest, s2.digest, '1 MiB intact the other way');
    timing(`1 MiB a->b ${Math.round(rb.at - s1.at)} ms, a->c ${Math.round(rc.at - s1.at)} ms, b->a ${Math.round(ra.at - s2.at)} ms`);

    // b has seen a's rank id in a's verified buffers: a buffer addressed to it goes to a alone.
    const before = await call(b, () => JSON.parse(JSON.stringify(window.meshTest.stats())));
    const s3 = await send(b, { bytes: 64, to: rankA, seed: 3 });
    const ru = await receivedAt(a, 1);
    assert.equal(ru.digest, s3.digest);
    assert.equal(ru.header.to, rankA);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await call(c, () => window.meshTest.received().length)), 2, 'c did not get the unicast');
    const afterStats = await call(b, () => JSON.parse(JSON.stringify(window.meshTest.stats())));
    assert.equal(afterStats.sent - before.sent, 1, 'one copy sent');

    // A large buffer and a small one right after it arrive in the order sent.
    const seq = await call(a, (n) => window.meshTest.sendSeq([{ bytes: n, seed: 21 }, { bytes: 64, seed: 22 }]), MiB);
    const [o1, o2] = [await receivedAt(b, 1), await receivedAt(b, 2)];
    assert.deepEqual([o1.digest, o2.digest], [seq[0].digest, seq[1].digest], 'in order');

    const d = await diag(a);
    assert.equal(d.peers.length, 2);
    for (const p of d.peers) {
      assert.equal(p.connectionState, 'connected', JSON.stringify(p));
      assert.ok(p.selectedPair, `a selected pair: ${JSON.stringify(p)}`);
      assert.equal(p.selectedPair.local.candidateType, 'host');
      // prflx: the peer's checks arrived before its trickled candidate did (a race on loopback); still direct.
      assert.ok(['host', 'prflx'].includes(p.selectedPair.remote.candidateType), JSON.stringify(p.selectedPair));
      assert.equal(p.handshake.state, 'accepted');
      assert.ok(p.remoteCandidates.total > 0);
    }
    assert.ok(Array.isArray(d.attempts));
    timing(`selected pair ${d.peers[0].selectedPair.local.protocol} ${d.peers[0].selectedPair.local.address} -> ` +
      `${d.peers[0].selectedPair.remote.address}, rtt ${d.peers[0].selectedPair.rttMs} ms`);
    meshRoom = id;
  });

  test('a process with another model is refused, with the reason on both sides', { timeout: 40000 }, async () => {
    const [a, b, c] = peers;
    assert.ok(meshRoom, 'needs the room of the first test');
    await call(c, () => window.meshTest.close());
    await open(c); // a fresh page: a fresh Trystero peer id
    await join(c, { ...base(), roomId: meshRoom, slug: 'mnist-mlp', paramCount: 101770 });
    const refusedBy = (p, n) => p.page.waitForFunction((k) => window.meshTest.events().filter((e) => e.type === 'peer-refused').length >= k,
      n, { timeout: 25000, polling: 50 });
    await Promise.all([refusedBy(a, 1), refusedBy(b, 1), refusedBy(c, 2)]);
    const all = [...await events(a, 'peer-refused'), ...await events(b, 'peer-refused'), ...await events(c, 'peer-refused')];
    for (const r of all) assert.match(r.reason, /model mismatch: (?=.*mnist-mlp \(101770 parameters\))(?=.*mnist-cnn \(5258 parameters\))/);
    assert.equal(await call(c, () => window.meshTest.accepted()), 0);
    assert.equal(await call(a, () => window.meshTest.accepted()), 1, 'a still has b');
    const s = await send(c, { bytes: 64, seed: 5 });
    assert.equal(s.sent, false, 'a refused tab has no one to send to');
    timing(`refusal seen: ${all[0].reason}`);
  });

  test('a peer that gathers no candidates fails: named, reported once, TURN raised only where nothing connected', { timeout: 60000 }, async () => {
    const [a, b, c] = peers;
    // Relay-only with no TURN server gathers no candidate at all: signalling succeeds, ICE never
    // does, and Trystero gives up on the peer after ~23 s (its answer / offer expiry).
    const context = await c.browser.newContext();
    const d = { page: await context.newPage(), problems: [] };
    await open(d);
    const t1 = Date.now();
    await join(d, { ...base(), roomId: meshRoom, rtcConfig: { iceServers: [], iceTransportPolicy: 'relay' } });
    const failed = (p, n) => p.page.waitForFunction((k) => window.meshTest.events().filter((e) => e.type === 'peer-failed').length >= k,
      n, { timeout: 50000, polling: 200 });
    await Promise.all([failed(a, 1), failed(b, 1), failed(d, 2)]);
    timing(`ICE failure reported ${Date.now() - t1} ms after the peer joined`);
    const [fa] = await events(a, 'peer-failed');
    assert.match(fa.message, /could not connect to peer \S{8} /);
    assert.equal(fa.case, 'peer-gone', 'a got no candidate from d');
    assert.match(fa.message, /1 peer is connected and training goes on with it/);
    assert.doesNotMatch(fa.message, /\?turn=/);
    const fd = await events(d, 'peer-failed');
    for (const f of fd) {
      assert.match(f.message, /no peer is connected/);
      assert.match(f.message, /\?turn=/);
    }
    assert.equal(await call(a, () => window.meshTest.accepted()), 1, 'a keeps b');
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await events(a, 'peer-failed')).length, 1, 'reported once');
    timing(`failure at a: ${fa.message} [case ${fa.case}]`);
    timing(`failure at the peer without candidates: ${fd[0].message} [case ${fd[0].case}]`);
    await call(d, () => window.meshTest.close());
    await context.close();
  });

  test('relay-only through a local coturn: relay candidates, a relay pair at both ends, 1 MiB intact', { timeout: 60000 }, async (t) => {
    if (!turn) {
      t.skip(`no local TURN: ${turnError}`);
      return;
    }
    const [a, b] = peers;
    await Promise.all([a, b].map(async (p) => {
      await call(p, () => window.meshTest.close());
      await open(p);
    }));
    const rtcConfig = { iceServers: [turn.iceServer], iceTransportPolicy: 'relay' };
    const pre = await call(a, (cfg) => window.meshTest.preflight({ ...cfg, timeoutMs: 5000 }), rtcConfig);
    assert.ok(pre.relay > 0, `preflight gathered relay candidates: ${JSON.stringify(pre)}`);
    assert.equal(pre.host, 0, 'relay policy: no host candidates');
    timing(`relay preflight: relay ${pre.relay} (${pre.relayed.join(', ')}) in ${pre.ms} ms`);

    const id = room('relay');
    const joined = await Promise.all([a, b].map((p) => join(p, { ...base(), rtcConfig, roomId: id })));
    await Promise.all([a, b].map((p) => accepted(p, 1, 30000)));
    const acc = await events(b, 'peer-accepted');
    timing(`relay-only accepted ${Math.round(acc[0].at - joined[1].joinedAt)} ms after join`);
    const remoteTypes = [];
    for (const p of [a, b]) {
      const d = await diag(p);
      const pair = d.peers[0].selectedPair;
      assert.ok(pair, `selected pair: ${JSON.stringify(d.peers[0])}`);
      // Each end's own half of the pair is its TURN allocation: every byte goes through coturn.
      assert.equal(pair.local.candidateType, 'relay');
      assert.ok(['relay', 'prflx'].includes(pair.remote.candidateType), JSON.stringify(pair));
      remoteTypes.push(pair.remote.candidateType);
    }
    const s = await send(a, { bytes: MiB, seed: 13 });
    const r = await receivedAt(b, 0, 30000);
    assert.equal(r.digest, s.digest, '1 MiB intact through TURN');
    timing(`1 MiB through coturn ${Math.round(r.at - s.at)} ms (remote halves of the pairs: ${remoteTypes.join(', ')})`);
  });

  // A peer that leaves closes its data channel; Chromium reports that on the
  // other side as an OperationError, which Trystero logs with console.error.
  test('no page errors (besides Trystero logging a peer that left)', () => {
    const problems = peers.flatMap((p) => p.problems).filter((m) => !LEAVE_NOISE.test(m));
    assert.deepEqual(problems, []);
  });
}
