// cluster_mesh.test.mjs - web/cluster/mesh.js and ice.js without a browser.
// (1) The Trystero API shape is pinned against fake modules (makeAction as
// the 0.25+ object and as the legacy tuple; onPeerJoin as an assignable
// property and as a function), and the real installed trystero (and the
// bundle, when built) must pass checkTrysteroApi; a real 0.25.4 room is
// joined in Node against tools/nostr_relay.mjs (WebSocket from npm ws, a
// do-nothing RTCPeerConnection), which pins the room shape and the relay's
// protocol against the real client. (2) MeshLink over an in-process fake
// Trystero: handshake, refusals with the reason on both sides, nothing sent
// to refused peers, unicast by learned rank id, a 1 MiB buffer intact, the
// failure-message rules, the handshake timeout. (3) parseTurn /
// parseRelays / iceConfig, classifyIce's four cases. (4) The relay with a
// plain ws client. No network beyond 127.0.0.1.
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { WebSocket } from 'ws';
import {
  MeshLink, checkTrysteroApi, adaptAction, adaptRoom, parseTurn, parseRelays, iceConfig, DEFAULT_ICE_SERVERS,
  failureMessage, helloMismatch, loadTrystero,
} from '../../web/cluster/mesh.js';
import { classifyIce, parseCandidate, candidatesFromSdp, peerIceStats, icePreflight, trackPeerConnections } from '../../web/cluster/ice.js';
import { encode, peekHeader } from '../../web/cluster/wire.js';
import { createIdentity, signBuffer, SIG_PLACEHOLDER } from '../../web/cluster/auth.js';
import { PROTOCOL_VERSION } from '../../web/cluster/protocol.js';
import { startRelay, matchFilter } from '../../tools/nostr_relay.mjs';
import { FakeNet, StatsPC } from './cluster_fake_trystero.mjs';
import { PATIENCE_MS } from './cluster_wait.mjs';

const BUNDLE = new URL('../../web/vendor/trystero.js', import.meta.url);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, ms = 3000, what = 'condition') {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

// ---- a fake Trystero (cluster_fake_trystero.mjs): rooms of one FakeNet connect in-process -----

const open = new Set(); // every MeshLink a test made, closed after it (also when it failed)
afterEach(async () => {
  for (const l of open) await l.close();
  open.clear();
});

/** A MeshLink on the fake net that records its events. */
function link(net, { slug = 'mnist-cnn', paramCount = 5258, form, events, mute, roomId = 'room-1', ...opts } = {}) {
  const mod = net.module({ form, events, mute });
  const evs = [];
  const l = new MeshLink({ trystero: mod, roomId, slug, paramCount, trackAttempts: false, onEvent: (type, detail) => evs.push({ type, ...detail }), ...opts });
  open.add(l);
  const got = [];
  l.onRaw((buf) => got.push(buf));
  return { l, evs, got, id: mod.selfId, of: (type) => evs.filter((e) => e.type === type) };
}

// Rank identities by name (auth.js): a MeshLink passes on signed buffers only.
const RANKS = Object.fromEntries(await Promise.all(['rank-a', 'rank-b', 'rank-c', 'rank-x', 'rank-unknown'].map(async (n) => [n, await createIdentity()])));
const rid = (name) => RANKS[name]?.id ?? name;

/** A buffer from rank `from` to `to` (names of RANKS): signed; other names give an unsigned one. */
async function wireBuf(from, to, floats = 4, fill = (i) => i) {
  const p = new Float32Array(floats);
  for (let i = 0; i < floats; i++) p[i] = fill(i);
  const me = RANKS[from];
  if (!me) return encode({ type: 'test', from, to }, p);
  return signBuffer(me, encode({ type: 'test', from: me.id, to: to === null ? null : rid(to), pk: me.pk, sig: SIG_PLACEHOLDER }, p));
}

// ---- (1) the Trystero API shape ----------------------------------------------------------

test('checkTrysteroApi: the installed trystero (and the bundle) pass; a module without joinRoom is refused by name', async () => {
  const real = await import('trystero');
  assert.equal(checkTrysteroApi(real), real);
  assert.equal(typeof real.selfId, 'string');
  if (existsSync(BUNDLE)) {
    const bundled = await loadTrystero(BUNDLE.href);
    assert.deepEqual(Object.keys(bundled).sort(), Object.keys(real).sort());
  }
  assert.throws(() => checkTrysteroApi({ default: {} }), /lacks joinRoom \(a function\)/);
  assert.throws(() => checkTrysteroApi(null), /expected an ES module/);
  await assert.rejects(loadTrystero('data:text/javascript,export const x = 1'), /lacks joinRoom/);
  await assert.rejects(loadTrystero('file:///nonexistent/trystero.js'), /could not load the mesh module/);
});

test('adaptAction: the 0.25+ object and the legacy tuple; {} names what is missing (not "{} is not iterable")', async () => {
  const sentObj = [];
  let handler = null;
  const obj = {
    send: async (data, options) => sentObj.push([data, options]),
    get onMessage() { return handler; },
    set onMessage(fn) { handler = fn; },
  };
  const a = adaptAction(obj, 'x');
  assert.equal(a.form, 'object');
  a.send('hi', ['p1']);
  assert.deepEqual(sentObj[0], ['hi', { target: ['p1'] }], '0.25+ takes the target inside an options object');
  const seen = [];
  a.onMessage((data, peerId) => seen.push([data, peerId]));
  handler('d', { peerId: 'p9', metadata: 1 });
  assert.deepEqual(seen, [['d', 'p9']]);

  const sentTuple = [];
  let get = null;
  const t = adaptAction([(data, targets) => sentTuple.push([data, targets]), (fn) => { get = fn; }, () => {}], 'y');
  assert.equal(t.form, 'tuple');
  t.send('hey', ['p2']);
  assert.deepEqual(sentTuple[0], ['hey', ['p2']]);
  t.onMessage((data, peerId) => seen.push([data, peerId]));
  get('e', 'p3');
  assert.deepEqual(seen[1], ['e', 'p3']);

  assert.throws(() => adaptAction({}, 'wire'), /makeAction\('wire'\) returned \{\}: expected \{ send, onMessage \}/);
  assert.throws(() => adaptAction([1, 2], 'wire'), /tuple without \[send, onMessage\]/);
  assert.throws(() => adaptAction(undefined, 'wire'), /returned undefined/);
});

test('adaptRoom: onPeerJoin as an accessor, a plain null property or a function; a missing one is named', () => {
  const base = () => ({ makeAction: () => [() => {}, () => {}], leave: async () => {}, getPeers: () => ({}) });
  let joined = null;
  const accessor = Object.defineProperties(base(), {
    onPeerJoin: { set: (fn) => { joined = fn; }, get: () => joined },
    onPeerLeave: { set: () => {}, get: () => null },
  });
  const r1 = adaptRoom(accessor);
  assert.equal(r1.events, 'property');
  const f = () => {};
  r1.onPeerJoin(f);
  assert.equal(joined, f);

  const plain = { ...base(), onPeerJoin: null, onPeerLeave: null };
  const r2 = adaptRoom(plain);
  r2.onPeerJoin(f);
  assert.equal(plain.onPeerJoin, f);

  let legacy = null;
  const fnRoom = { ...base(), onPeerJoin: (fn) => { legacy = fn; }, onPeerLeave: () => {} };
  const r3 = adaptRoom(fnRoom);
  assert.equal(r3.events, 'function');
  r3.onPeerJoin(f);
  assert.equal(legacy, f);

  assert.throws(() => adaptRoom({ ...base(), onPeerLeave: null }), /lacks onPeerJoin \(an assignable property or a function taking a callback\)/);
  assert.throws(() => adaptRoom({ onPeerJoin: null, onPeerLeave: null }), /makeAction \(a function\), leave \(a function\)/);
  assert.deepEqual([...adaptRoom({ ...plain, getPeers: () => ['a', 'b'] }).peers().keys()], ['a', 'b']);
});

/** A do-nothing RTCPeerConnection: Trystero's offer pool makes 20 of them, none ever negotiates. */
class InertPC extends EventTarget {
  static made = 0;
  constructor(config) {
    super();
    InertPC.made++;
    this.config = config;
    this.connectionState = 'new';
    this.iceConnectionState = 'new';
    this.iceGatheringState = 'new';
    this.signalingState = 'stable';
    this.localDescription = null;
    this.remoteDescription = null;
  }
  createDataChannel(label) {
    return Object.assign(new EventTarget(), { label, readyState: 'connecting', bufferedAmount: 0, bufferedAmountLowThreshold: 0, send() {}, close() {} });
  }
  createOffer() { return new Promise(() => {}); }
  setLocalDescription() { return new Promise(() => {}); }
  setRemoteDescription() { return new Promise(() => {}); }
  addIceCandidate() { return Promise.resolve(); }
  getSenders() { return []; }
  restartIce() {}
  close() { this.connectionState = 'closed'; }
}

test('the real trystero 0.25.4 room (in Node, against tools/nostr_relay.mjs): shape, config keys, relay protocol', async (t) => {
  const relay = await startRelay();
  const frames = [];
  const RealWS = WebSocket;
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
  // Trystero opens relays with the global WebSocket (Node 20 has none); record what it sends.
  globalThis.WebSocket = class extends RealWS {
    send(data, ...rest) {
      frames.push(JSON.parse(String(data)));
      return super.send(data, ...rest);
    }
  };
  const mod = await import('trystero');
  let l;
  try {
    l = new MeshLink({
      trystero: mod, roomId: 'node-room', password: 'pw', relayUrls: [relay.url], slug: 'mnist-cnn', paramCount: 5258,
      RTCPeerConnectionImpl: InertPC, rtcConfig: { iceServers: [] },
    });
    assert.equal(l.selfId, mod.selfId);
    assert.equal(l._room.events, 'property', '0.25.4: onPeerJoin is an assignable property');
    assert.equal(l._hs.form, 'object', '0.25.4: makeAction returns an object');
    await until(() => frames.some((f) => f[0] === 'EVENT') && relay.stats.forwarded > 0, PATIENCE_MS, 'an announcement through the relay');
    const req = frames.find((f) => f[0] === 'REQ');
    assert.ok(Array.isArray(req[2].kinds) && Array.isArray(req[2]['#x']), `REQ filter uses kinds and #x: ${JSON.stringify(req[2])}`);
    const ev = frames.find((f) => f[0] === 'EVENT')[1];
    assert.ok(ev.tags.some((tg) => tg[0] === 'x'), 'events carry an x tag');
    assert.ok(matchFilter(req[2], ev, { sinceSlackS: 600 }), 'its own announcement matches its own subscription');
    assert.ok(InertPC.made > 0, 'the rtcPolyfill (our tracking subclass of RTCPeerConnectionImpl) was used');
    assert.equal(l._room.peers().size, 0);
    t.diagnostic(`relay: ${JSON.stringify(relay.stats)}; RTCPeerConnections made by the offer pool: ${InertPC.made}`);
  } finally {
    await l?.close();
    mod.pauseRelayReconnection(); // else Trystero reopens the socket we close next
    for (const s of Object.values(mod.getRelaySockets())) s.close();
    await relay.close();
    if (saved) Object.defineProperty(globalThis, 'WebSocket', saved);
    else delete globalThis.WebSocket;
  }
});

// ---- (2) MeshLink over the fake -----------------------------------------------------------

for (const [form, events] of [['object', 'property'], ['tuple', 'function']]) {
  test(`MeshLink (${form} actions, onPeerJoin as ${events}): handshake, 1 MiB intact, unicast by learned rank id`, async () => {
    const net = new FakeNet();
    const a = link(net, { form, events });
    const b = link(net, { form, events });
    const c = link(net, { form, events });
    await until(() => a.l.acceptedCount === 2 && b.l.acceptedCount === 2 && c.l.acceptedCount === 2, PATIENCE_MS, 'three accepted pairs');
    assert.equal(a.of('peer-join').length, 2);
    assert.equal(a.of('peer-accepted').length, 2);
    assert.equal(a.of('peer-accepted')[0].remote.slug, 'mnist-cnn');
    assert.equal(net.sent('rlx-wire').length, 0, 'nothing on the wire before anyone sends');

    // 1 MiB of payload, every bit pattern distinct, arrives intact at both others.
    const big = await wireBuf('rank-a', null, 1 << 18, (i) => i * 1.0001 - 7);
    const copy = big.slice(0);
    assert.equal(a.l.sendRaw(big), true);
    await until(() => b.got.length === 1 && c.got.length === 1, PATIENCE_MS, '1 MiB at b and c');
    for (const got of [b.got[0], c.got[0]]) {
      assert.ok(got instanceof ArrayBuffer);
      assert.deepEqual(new Uint8Array(got), new Uint8Array(copy));
    }
    assert.equal(a.l.stats.bytesOut, 2 * big.byteLength);
    assert.equal(b.l.stats.bytesIn, big.byteLength);
    assert.equal(b.l.stats.peers[a.id].received, 1);

    // b learns rank-b2 lives on... c sends from rank-c; then a unicast from b to rank-c goes to c only.
    c.l.sendRaw(await wireBuf('rank-c', null));
    await until(() => b.got.length === 2 && a.got.length === 1, PATIENCE_MS, 'c broadcast');
    assert.equal(b.l.hasRank(rid('rank-c')), true);
    assert.equal(b.l.hasRank('rank-zz'), false);
    const before = net.sent('rlx-wire', b.id).length;
    b.l.sendRaw(await wireBuf('rank-b', 'rank-c'));
    await until(() => c.got.length === 2, PATIENCE_MS, 'unicast at c');
    const after = net.sent('rlx-wire', b.id).slice(before);
    assert.deepEqual(after.map((e) => e.to), [c.id], 'unicast: one copy, to the peer that sent from rank-c');
    // b holds a connection to every peer of the room; its data path (unicast) used one
    assert.deepEqual(b.l.connections(), { held: 2, accepted: 2, unicastPeers: 1, unicast: { [c.id]: 1 } });
    // An unknown addressee falls back to a broadcast (receivers filter by `to`).
    b.l.sendRaw(await wireBuf('rank-b', 'rank-unknown'));
    await until(() => a.got.length === 2 && c.got.length === 3, PATIENCE_MS, 'fallback broadcast');
    // b's buffers reach a in order: had the unicast gone to a, it would be there before the fallback
    assert.equal(a.got.length, 2, 'a did not get the unicast');

    const d = await b.l.diagnostics();
    assert.equal(d.peers.length, 2);
    const pa = d.peers.find((p) => p.peerId === a.id);
    assert.equal(pa.handshake.state, 'accepted');
    assert.equal(pa.connectionState, 'connected');
    assert.equal(pa.selectedPair.local.candidateType, 'host');
    assert.equal(pa.localCandidates.srflx, 1);
    assert.equal(b.of('diagnostics').length, 1);

    await c.l.close();
    await until(() => a.of('peer-leave').length === 1 && b.of('peer-leave').length === 1, PATIENCE_MS, 'leave');
    assert.equal(b.l.hasRank(rid('rank-c')), false, 'a peer that left takes its rank ids along');
    await a.l.close();
    await b.l.close();
  });
}

test('MeshLink keeps each peer\'s buffers in order although a large send takes longer than a small one', async () => {
  const net = new FakeNet();
  net.bytesPerMs = 20000; // 1 MiB: ~50 ms, 100 bytes: ~0
  const a = link(net);
  const b = link(net);
  await until(() => a.l.acceptedCount === 1 && b.l.acceptedCount === 1, PATIENCE_MS, 'accepted');
  const [large, small] = [await wireBuf('rank-a', null, 1 << 18), await wireBuf('rank-a', null, 4)];
  a.l.sendRaw(large);
  a.l.sendRaw(small);
  assert.equal(a.l.peers()[0].queued, 2);
  await until(() => b.got.length === 2, PATIENCE_MS, 'both buffers');
  assert.deepEqual(b.got.map((buf) => buf.byteLength > 1000), [true, false], 'the large one first, as sent');
  await until(() => a.l.peers()[0].queued === 0, PATIENCE_MS, 'the queue drains');
});

test('MeshLink refuses another model, parameter count or protocol, with the reason on both sides; refused peers get no buffers', async () => {
  for (const [other, pattern] of [
    [{ slug: 'mnist-mlp', paramCount: 101770 }, /model mismatch: (?=.*mnist-mlp \(101770 parameters\))(?=.*mnist-cnn \(5258 parameters\))/],
    [{ paramCount: 5259 }, /parameter count mismatch in mnist-cnn: (?=.*5259 parameters)(?=.*5258 parameters)/],
    [{ protocol: PROTOCOL_VERSION + 1 }, new RegExp(`protocol mismatch: (?=.*protocol ${PROTOCOL_VERSION + 1}\\b)(?=.*protocol ${PROTOCOL_VERSION}\\b)`)],
  ]) {
    const net = new FakeNet();
    const a = link(net);
    const b = link(net);
    const x = link(net, other);
    await until(() => a.l.acceptedCount === 1 && b.l.acceptedCount === 1, PATIENCE_MS, 'a and b accept each other');
    await until(() => a.of('peer-refused').length === 1 && b.of('peer-refused').length === 1 && x.of('peer-refused').length === 2,
      3000, 'refusals on both sides');
    for (const r of [...a.of('peer-refused'), ...b.of('peer-refused'), ...x.of('peer-refused')]) {
      assert.match(r.reason, pattern);
      assert.ok(r.side === 'local' || r.side === 'remote');
    }
    assert.equal(a.of('peer-refused')[0].peerId, x.id);
    const rowA = a.l.peers().find((p) => p.peerId === x.id);
    assert.equal(rowA.state, 'refused');
    await until(() => a.l.peers().find((p) => p.peerId === x.id).remoteReason, PATIENCE_MS, 'the remote reason kept too');
    assert.match(rowA.remoteReason ?? a.l.peers().find((p) => p.peerId === x.id).remoteReason, pattern);

    a.l.sendRaw(await wireBuf('rank-a', null));
    x.l.sendRaw(await wireBuf('rank-x', null));
    await until(() => b.got.length === 1, PATIENCE_MS, 'b gets a');
    assert.equal(net.sent('rlx-wire').filter((e) => e.to === x.id || e.from === x.id).length, 0, 'no buffer to or from the refused peer');
    assert.equal(x.got.length, 0);
    assert.equal(x.l.sendRaw(await wireBuf('rank-x', null)), false, 'a tab refused by everyone has no one to send to');
    for (const p of [a, b, x]) await p.l.close();
  }
});

test('buffers from a peer that is not accepted are dropped and counted', async () => {
  const net = new FakeNet();
  const a = link(net);
  const x = link(net, { slug: 'other' });
  await until(() => a.of('peer-refused').length === 1, PATIENCE_MS, 'refusal');
  net.find(x.id)._send('rlx-wire', new Uint8Array(await wireBuf('rank-x', null)), [a.id]); // a misbehaving peer sends anyway
  await until(() => a.l.stats.dropped.unaccepted === 1, PATIENCE_MS, 'the drop');
  assert.equal(a.got.length, 0);
  await a.l.close();
  await x.l.close();
});

test('the wrong room password is a refusal that names it', async () => {
  const net = new FakeNet();
  const a = link(net, { password: 'one' });
  const b = link(net, { password: 'two' });
  await until(() => a.of('peer-refused').length === 1 && b.of('peer-refused').length === 1, PATIENCE_MS, 'password refusals');
  assert.match(a.of('peer-refused')[0].reason, /wrong room password/);
  await a.l.close();
  await b.l.close();
});

test('failure messages: name the peer, count the connected, TURN only when none is, a repeated failure once', async () => {
  const net = new FakeNet();
  const a = link(net);
  const lonely = `${'z'.repeat(8)}ghostpeer0000`;
  net.fail(a.id, lonely);
  net.fail(a.id, lonely); // Trystero reports a peer again on every new offer
  assert.equal(a.of('peer-failed').length, 1, 'reported once');
  const m0 = a.of('peer-failed')[0].message;
  assert.match(m0, /could not connect to peer zzzzzzzz/);
  assert.match(m0, /no peer is connected/);
  assert.match(m0, /\?turn=/);

  const b = link(net);
  const c = link(net);
  await until(() => a.l.acceptedCount === 2, PATIENCE_MS, 'two accepted');
  net.fail(a.id, 'yyyyyyyyanotherpeer');
  const m1 = a.of('peer-failed')[1].message;
  assert.match(m1, /peer yyyyyyyy/);
  assert.match(m1, /2 peers are connected and training goes on with them/);
  assert.doesNotMatch(m1, /\?turn=/);

  assert.match(failureMessage({ peerId: 'abcdefghij', connected: 1 }), /1 peer is connected and training goes on with it/);
  assert.doesNotMatch(failureMessage({ peerId: 'p', connected: 0, diagnosis: { case: 'peer-gone', message: 'gone' } }), /\?turn=/);
  assert.match(failureMessage({ peerId: 'p', connected: 0, diagnosis: classifyIce({ peer: { remoteCandidates: { total: 0 } } }) }),
    /sent no ICE candidates/);
  for (const p of [a, b, c]) await p.l.close();
});

test('handshake timeout: a peer that joins but never answers is abandoned and reported once, not refused; once it answers it is accepted', async () => {
  const net = new FakeNet();
  const a = link(net, { handshakeTimeoutMs: 150, helloRetryMs: 40 });
  const mute = link(net, { mute: true, handshakeTimeoutMs: 60000, helloRetryMs: 40 });
  await until(() => a.of('peer-join').length === 1, PATIENCE_MS, 'join');
  await until(() => a.of('peer-failed').length === 1, PATIENCE_MS, 'timeout');
  const f = a.of('peer-failed')[0];
  assert.equal(f.peerId, mute.id);
  assert.match(f.message, /finished no handshake within 150 ms/);
  assert.equal(a.l.peers()[0].state, 'abandoned');
  const hellos = () => net.sent('rlx-hs', a.id).filter((e) => e.data.t === 'hello').length;
  const before = hellos();
  assert.ok(before >= 2, `hellos are re-sent while waiting (${before})`);
  await until(() => hellos() > before, PATIENCE_MS, 'a hello now and then after giving up (the other side may have given up too)');
  assert.equal(a.of('peer-failed').length, 1, 'reported once');
  assert.equal(net.sent('rlx-hs', a.id).filter((e) => e.data.t === 'refuse').length, 0, 'no refusal: that would be final');
  assert.equal(a.l.sendRaw(await wireBuf('r', null)), false);
  // the busy tab answers at last
  net.find(mute.id).mute = false;
  await until(() => a.l.acceptedCount === 1 && mute.l.acceptedCount === 1, PATIENCE_MS, 'accepted after all');
  assert.equal(a.of('peer-accepted').length, 1);
  assert.equal(a.of('peer-refused').length + mute.of('peer-refused').length, 0);
  a.l.sendRaw(await wireBuf('rank-a', null));
  await until(() => mute.got.length === 1, PATIENCE_MS, 'a buffer over the healed link');
});

test('Trystero\'s password check on a shared connection failing (overlapping room) is a failed try, not a refusal; a rejoin heals it', async () => {
  const net = new FakeNet();
  const a = link(net, { handshakeTimeoutMs: 60000, helloRetryMs: 40 });
  const b = link(net, { mute: true });
  await until(() => a.of('peer-join').length === 1, PATIENCE_MS, 'join');
  net.fail(a.id, b.id, 'Trystero: incorrect password for overlapping room');
  assert.equal(a.of('peer-refused').length, 0);
  assert.equal(a.of('peer-failed').length, 1);
  assert.match(a.of('peer-failed')[0].message, /incorrect password for overlapping room/);
  assert.equal(a.l.peers()[0].state, 'abandoned');
  // Trystero connects the peer again (its next announcement): a new handshake
  net.find(b.id).mute = false;
  net.find(a.id).joinFn(b.id);
  await until(() => a.l.acceptedCount === 1 && b.l.acceptedCount === 1, PATIENCE_MS, 'accepted on the new try');
  // the wrong password proper (an offer that does not decrypt) stays a refusal
  net.fail(a.id, 'zzzzzzzzstranger', 'incorrect room password when decrypting offer');
  assert.match(a.of('peer-refused')[0].reason, /wrong room password/);
});

test('peekHeader reads the header only; helloMismatch', async () => {
  const buf = await wireBuf('me', 'you', 8);
  assert.deepEqual(peekHeader(buf), { type: 'test', from: 'me', to: 'you' });
  assert.equal(peekHeader(new ArrayBuffer(2)), null);
  const bad = new Uint8Array(buf.slice(0));
  bad[0] = 3; // not a multiple of 4
  assert.equal(peekHeader(bad.buffer), null);
  const huge = new Uint8Array(8);
  new DataView(huge.buffer).setUint32(0, 1 << 20, true);
  assert.equal(peekHeader(huge.buffer), null);
  const mine = { protocol: 1, app: 'rlx-cluster', slug: 'a', paramCount: 3 };
  assert.equal(helloMismatch(mine, { ...mine }), null);
  assert.match(helloMismatch(mine, { ...mine, app: 'chat' }), /another application/);
  assert.match(helloMismatch({ ...mine, mesh: 1 }, { ...mine, mesh: 2 }), /mesh protocol mismatch: .*mesh protocol 2.*mesh protocol 1/);
});

// ---- (3) configuration and ICE ---------------------------------------------------------------

test('parseTurn / parseRelays / iceConfig', () => {
  assert.deepEqual(parseTurn(''), []);
  assert.deepEqual(parseTurn('turn:127.0.0.1:3478?transport=udp|u|p'), [{ urls: 'turn:127.0.0.1:3478?transport=udp', username: 'u', credential: 'p' }]);
  assert.equal(parseTurn('turn:a:3478|u|p; turns:b:5349?transport=tcp|v|q').length, 2);
  assert.throws(() => parseTurn('turn:a:3478|u'), /turn entry 1 .*expected url\|user\|credential, got 2 fields/);
  assert.throws(() => parseTurn('turn:a|u|p;stun:b|u|p'), /turn entry 2 .*must start with turn: or turns:/);
  assert.throws(() => parseTurn('turn:a||p'), /must not be empty/);
  assert.deepEqual(parseRelays(' ws://127.0.0.1:7777 , wss://relay.example/,'), ['ws://127.0.0.1:7777', 'wss://relay.example/']);
  assert.throws(() => parseRelays('https://x'), /only ws:\/\/ and wss:\/\//);
  assert.throws(() => parseRelays('nonsense'), /is not a URL/);

  const plain = iceConfig();
  assert.deepEqual(plain.iceServers, DEFAULT_ICE_SERVERS.map((s) => ({ ...s })));
  assert.equal(plain.iceTransportPolicy, undefined);
  assert.ok(DEFAULT_ICE_SERVERS.every((s) => s.urls.startsWith('stun:')), 'defaults are STUN only');
  const withTurn = iceConfig({ turn: 'turn:t:3478|u|p' });
  assert.equal(withTurn.iceServers.at(-1).urls, 'turn:t:3478', 'TURN comes after STUN');
  assert.ok(withTurn.iceServers.slice(0, -1).every((s) => s.urls.startsWith('stun:')));
  assert.equal(iceConfig({ turn: 'turn:t:3478|u|p', relayOnly: true }).iceTransportPolicy, 'relay');
  assert.throws(() => iceConfig({ relayOnly: true }), /relay-only mode needs a TURN server/);
});

test('classifyIce: the four cases', () => {
  const counts = (o) => ({ host: 0, srflx: 0, relay: 0, prflx: 0, total: 0, ...o, total: Object.values(o).reduce((a, b) => a + b, 0) });
  const noStun = classifyIce({ preflight: { host: 2, srflx: 0, relay: 0, servers: { stun: 0, turn: 0 } }, peer: { remoteCandidates: counts({ host: 2 }) } });
  assert.equal(noStun.case, 'no-stun');
  assert.equal(classifyIce({ peer: { localCandidates: counts({ host: 1 }), remoteCandidates: counts({ host: 1 }) }, iceServers: [] }).case, 'no-stun');
  const blocked = classifyIce({ preflight: { host: 2, srflx: 0, relay: 0, servers: { stun: 3, turn: 0 } }, peer: { remoteCandidates: counts({ host: 1, srflx: 1 }) } });
  assert.equal(blocked.case, 'stun-unreachable');
  assert.match(blocked.message, /UDP is probably blocked/);
  const gone = classifyIce({ preflight: { host: 2, srflx: 1, relay: 0, servers: { stun: 3, turn: 0 } }, peer: { remoteCandidates: counts({}) } });
  assert.equal(gone.case, 'peer-gone');
  const sym = classifyIce({ preflight: { host: 2, srflx: 1, relay: 0, servers: { stun: 3, turn: 0 } }, peer: { remoteCandidates: counts({ host: 1, srflx: 1 }) } });
  assert.equal(sym.case, 'symmetric-nat');
  assert.equal(sym.needsTurn, true);
  assert.equal(classifyIce({ peer: { connected: true } }).case, 'connected');
  assert.equal(classifyIce({}).case, 'unknown');
});

test('ice.js: candidate parsing, getStats summary, attempt tracking, preflight over a scripted RTCPeerConnection', async () => {
  const c = parseCandidate('a=candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 192.168.1.2 rport 46154 generation 0');
  assert.deepEqual([c.type, c.protocol, c.address, c.port, c.relatedAddress], ['srflx', 'udp', '203.0.113.7', 46154, '192.168.1.2']);
  assert.equal(parseCandidate('garbage'), null);
  assert.equal(candidatesFromSdp('v=0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\na=mid:0\r\n').length, 1);
  const s = await peerIceStats(new StatsPC());
  assert.equal(s.selectedPair.remote.address, '127.0.0.1');
  assert.equal(s.selectedPair.rttMs, 2);
  assert.equal(s.localCandidates.total, 2);

  // A scripted connection: gathers host + srflx, then completes.
  class Scripted extends EventTarget {
    constructor(cfg) {
      super();
      this.cfg = cfg;
      this.iceGatheringState = 'new';
      this.connectionState = 'new';
      this.localDescription = null;
    }
    createDataChannel() { return {}; }
    async createOffer() { return { type: 'offer', sdp: 'v=0' }; }
    async setLocalDescription(d) {
      this.localDescription = { type: 'offer', sdp: 'v=0\r\na=candidate:9 1 udp 5 10.0.0.9 5000 typ host\r\n' };
      setTimeout(() => {
        const cand = (line) => Object.assign(new Event('icecandidate'), { candidate: { candidate: line } });
        this.dispatchEvent(cand('candidate:1 1 udp 1 192.168.1.2 5000 typ host'));
        this.dispatchEvent(cand('candidate:2 1 udp 1 198.51.100.1 6000 typ srflx raddr 192.168.1.2 rport 5000'));
        this.dispatchEvent(Object.assign(new Event('icecandidateerror'), { url: 'stun:x', errorCode: 701, errorText: 'unreachable' }));
        this.iceGatheringState = 'complete';
        this.dispatchEvent(new Event('icegatheringstatechange'));
      }, 5);
      return d;
    }
    close() { this.closed = true; }
    async addIceCandidate() {}
    async setRemoteDescription() {}
  }
  const pre = await icePreflight({ iceServers: [{ urls: ['stun:a:1', 'turn:b:2'] }], RTCPeerConnectionImpl: Scripted, timeoutMs: 2000 });
  assert.deepEqual([pre.host, pre.srflx, pre.relay, pre.complete], [2, 1, 0, true]);
  assert.deepEqual(pre.reflexive, ['198.51.100.1']);
  assert.deepEqual(pre.servers, { stun: 1, turn: 1 });
  assert.equal(pre.errors[0].errorCode, 701);

  const tracker = trackPeerConnections(Scripted);
  const pc = new tracker.Impl({});
  await pc.setRemoteDescription({ type: 'answer', sdp: 'a=candidate:3 1 udp 1 10.1.1.1 7 typ host\r\n' });
  await pc.addIceCandidate({ candidate: 'candidate:4 1 udp 1 198.51.100.2 8 typ srflx raddr 0.0.0.0 rport 0' });
  await pc.addIceCandidate({ candidate: 'candidate:4 1 udp 1 198.51.100.2 8 typ srflx raddr 0.0.0.0 rport 0' }); // duplicate
  const [snap] = tracker.unconnected();
  assert.deepEqual([snap.remoteCandidates.host, snap.remoteCandidates.srflx, snap.remoteCandidates.total], [1, 1, 2]);
  pc.close();
  assert.equal(tracker.snapshot(tracker.records()[0]).closed, true);
});

// ---- (4) the relay ---------------------------------------------------------------------------

test('nostr_relay.mjs: REQ/EOSE, EVENT/OK, forwarding to matching subscriptions (the sender too), CLOSE', async () => {
  const relay = await startRelay();
  assert.match(relay.url, /^ws:\/\/127\.0\.0\.1:\d+$/);
  const open = async () => {
    const ws = new WebSocket(relay.url);
    const inbox = [];
    ws.on('message', (d) => inbox.push(JSON.parse(String(d))));
    await new Promise((r, j) => { ws.once('open', r); ws.once('error', j); });
    return { ws, inbox, send: (m) => ws.send(JSON.stringify(m)) };
  };
  const a = await open();
  const b = await open();
  const now = Math.floor(Date.now() / 1000);
  a.send(['REQ', 'sa', { kinds: [20001], '#x': ['topic-1'], since: now - 5 }]);
  b.send(['REQ', 'sb', { kinds: [20001], '#x': ['topic-1', 'topic-2'] }]);
  b.send(['REQ', 'sb-other', { kinds: [20002] }]);
  await until(() => a.inbox.length === 1 && b.inbox.length === 2, PATIENCE_MS, 'EOSE');
  assert.deepEqual(a.inbox[0], ['EOSE', 'sa']);
  const ev = { id: 'e1', pubkey: 'pk', kind: 20001, created_at: now, tags: [['x', 'topic-1']], content: 'hello', sig: 's' };
  a.send(['EVENT', ev]);
  await until(() => a.inbox.length === 3 && b.inbox.length === 3, PATIENCE_MS, 'OK and forwards');
  assert.deepEqual(a.inbox.find((m) => m[0] === 'OK'), ['OK', 'e1', true, '']);
  assert.deepEqual(a.inbox.find((m) => m[0] === 'EVENT'), ['EVENT', 'sa', ev], 'the sender gets its own event');
  assert.deepEqual(b.inbox[2], ['EVENT', 'sb', ev]);
  // b's socket is ordered: once the relay answers a REQ sent after CLOSE, it has handled the CLOSE
  const probe = async (id) => {
    const n = b.inbox.length;
    b.send(['REQ', id, { kinds: [29999] }]);
    await until(() => b.inbox.some((m, i) => i >= n && m[0] === 'EOSE' && m[1] === id), 30_000, `EOSE of ${id}`);
    b.send(['CLOSE', id]);
    return b.inbox.filter((m) => m[0] !== 'EOSE');
  };
  b.send(['CLOSE', 'sb']);
  await probe('probe-1');
  a.send(['EVENT', { ...ev, id: 'e2' }]);
  a.send(['EVENT', { ...ev, id: 'e3', tags: [['x', 'elsewhere']] }]);
  await until(() => a.inbox.filter((m) => m[0] === 'OK').length === 3, 30_000, 'OKs');
  // anything the relay sent b for e2 / e3 went out before its answer to a later REQ
  assert.deepEqual(await probe('probe-2'), [['EVENT', 'sb', ev]], 'nothing after CLOSE, nothing for another topic');
  assert.equal(a.inbox.filter((m) => m[0] === 'EVENT').length, 2, 'e2 matched, e3 did not');
  a.send(['EVENT', { nope: 1 }]);
  a.ws.send('not json');
  await until(() => a.inbox.filter((m) => m[0] === 'NOTICE').length === 2, PATIENCE_MS, 'NOTICEs');
  assert.equal(relay.stats.events, 3);
  assert.equal(relay.stats.open, 2);
  assert.ok(!matchFilter({ since: now + 3600 }, ev), 'since is honoured (with slack 0)');
  assert.ok(matchFilter({ ids: ['e'], authors: ['p'] }, ev), 'ids/authors match by prefix');
  assert.ok(!matchFilter({ authors: ['q'] }, ev));
  a.ws.close();
  b.ws.close();
  await relay.close();
});
