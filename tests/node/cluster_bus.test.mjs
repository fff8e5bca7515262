// cluster_bus.test.mjs - web/cluster/bus.js: the in-process bus keeps
// structured-clone semantics, simulated delays, drops, partitions and frozen
// tabs; BroadcastChannelBus carries wire buffers between channel instances;
// the Worker<->page proxy hop transfers one ArrayBuffer per message (the
// sender's buffer is detached) and never decodes on the page, which verifies
// every buffer's signature before the Worker sees it; a cohort and an
// elastic join run through that hop on real time (waiting for events, with
// beats and deadlines far above a loaded machine's stalls); garbage and
// unsigned or forged buffers are counted, not fatal; a signing bus says
// when its sends have left (drained).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InProcessHub, BroadcastChannelBus, ProxyBus, proxyRelay, WireBus } from '../../web/cluster/bus.js';
import { VirtualClock, FreezableClock } from '../../web/cluster/clock.js';
import { encodeMessage, decodeMessage } from '../../web/cluster/wire.js';
import { Rank } from '../../web/cluster/protocol.js';
import { stubCompute } from '../../web/cluster/sim.js';
import { SIG_PLACEHOLDER, signBuffer, Verifier } from '../../web/cluster/auth.js';
import { waitFor, identities } from './cluster_wait.mjs';

function collect(bus) {
  const got = [];
  bus.onMessage((m) => got.push(m));
  return got;
}

// ---- in-process hub -------------------------------------------------------------

test('in-process bus: structured-clone semantics, unicast and broadcast', async () => {
  const clock = new VirtualClock();
  const hub = new InProcessHub({ clock, delayMs: 5 });
  const [a, b, c] = ['a', 'b', 'c'].map((id) => hub.connect(id));
  const [ga, gb, gc] = [a, b, c].map(collect);
  const payload = Float32Array.of(1, 2, 3);
  const nested = { deep: [1, { x: 2 }] };
  a.send(null, { type: 't', nested, payload });
  payload[0] = 99; // mutating after send must not reach receivers
  nested.deep[1].x = 42;
  a.send('c', { type: 'u' });
  await clock.advance(4);
  assert.equal(gb.length + gc.length, 0, 'nothing arrives before the delay');
  await clock.advance(1);
  assert.equal(ga.length, 0, 'no echo to the sender');
  assert.deepEqual(gb.map((m) => m.type), ['t']);
  assert.deepEqual(gc.map((m) => m.type), ['t', 'u']);
  assert.deepEqual(Array.from(gb[0].payload), [1, 2, 3]);
  assert.equal(gb[0].nested.deep[1].x, 2);
  assert.notEqual(gb[0].payload, gc[0].payload, 'each recipient has its own copy');
  assert.notEqual(gb[0].payload.buffer, payload.buffer);
  assert.equal(gb[0].from, 'a');
  assert.equal(gb[0].to, null);
  assert.equal(gc[1].to, 'c');
  // uncloneable data fails at send, as postMessage would
  assert.equal(a.send(null, { type: 'f', fn: () => 1 }), false);
  assert.equal(a.stats.sendErrors, 1);
  assert.throws(() => hub.connect('a'), /already connected/);
});

test('in-process bus: seeded drops, per-link delays, partitions, frozen tabs', async () => {
  const clock = new VirtualClock();
  const hub = new InProcessHub({ clock, drop: 0.25, seed: 42, delayMs: (from, to) => (to === 'c' ? 10 : 1) });
  const a = hub.connect('a');
  const b = hub.connect('b');
  const frozen = new FreezableClock(clock);
  const c = hub.connect('c', { clock: frozen });
  const [gb, gc] = [b, c].map(collect);
  for (let i = 0; i < 400; i++) a.send(null, { type: 'n', i });
  await clock.advance(20);
  const dropped = 800 - gb.length - gc.length;
  assert.equal(dropped, hub.stats.dropped);
  assert.ok(dropped > 150 && dropped < 250, `~25% dropped, got ${dropped}`);
  // the same seed drops the same messages
  const hub2 = new InProcessHub({ clock, drop: 0.25, seed: 42, delayMs: (from, to) => (to === 'c' ? 10 : 1) });
  const a2 = hub2.connect('a');
  const gb2 = collect(hub2.connect('b'));
  hub2.connect('c');
  for (let i = 0; i < 400; i++) a2.send(null, { type: 'n', i });
  await clock.advance(20);
  assert.deepEqual(gb2.map((m) => m.i), gb.map((m) => m.i));

  hub.drop = 0;
  gb.length = gc.length = 0;
  hub.partition([['a', 'b'], ['c']]);
  a.send(null, { type: 'p' });
  c.send(null, { type: 'q' });
  await clock.advance(20);
  assert.deepEqual(gb.map((m) => m.type), ['p']);
  assert.equal(gc.length, 0);
  assert.equal(hub.stats.partitioned, 3); // a->c, c->a, c->b
  hub.heal();
  frozen.freeze();
  a.send(null, { type: 'r' });
  await clock.advance(50);
  assert.equal(gc.length, 0, 'a frozen tab receives nothing');
  frozen.thaw();
  assert.deepEqual(gc.map((m) => m.type), ['r'], 'and gets it on waking');
});

test('wire-mode hub: every message crosses as an encoded buffer; garbage is counted', async () => {
  const clock = new VirtualClock();
  const hub = new InProcessHub({ clock, wire: true });
  const a = hub.connect('a');
  const b = hub.connect('b');
  const c = hub.connect('c');
  assert.ok(a instanceof WireBus);
  const [gb, gc] = [b, c].map(collect);
  a.send('b', { type: 'grad', loss: NaN, payload: Float32Array.of(0.5, -1) });
  a.sendRaw(new Uint8Array([1, 2, 3]).buffer);
  a.sendRaw(encodeMessage({ type: 'x', from: 'a', to: null }).slice(0, 9));
  a.sendRaw('not a buffer');
  await clock.advance(1);
  assert.equal(gb.length, 1);
  assert.ok(Number.isNaN(gb[0].loss), 'a non-finite loss survives the encoded hop');
  assert.deepEqual(Array.from(gb[0].payload), [0.5, -1]);
  assert.equal(gc.length, 0);
  assert.equal(c.stats.notForMe, 1);
  assert.equal(b.stats.truncated + b.stats.malformed, 3);
  assert.equal(c.stats.truncated + c.stats.malformed, 3);
});

// ---- BroadcastChannel ------------------------------------------------------------------

test('BroadcastChannelBus: signed wire buffers between channel instances, garbage and forgeries counted', async () => {
  const name = `rlx-bc-test-${process.pid}-${Math.random()}`;
  const [ia, ib, ic] = await identities(3);
  const a = new BroadcastChannelBus(name, ia);
  const b = new BroadcastChannelBus(name, ib);
  const relayOnly = new BroadcastChannelBus(name, 'page');
  const gb = collect(b);
  const raw = new BroadcastChannel(name);
  try {
    a.send(null, { type: 'hb', loss: -Infinity, payload: Float32Array.of(1, 2) });
    a.send('nobody', { type: 'hb' });
    raw.postMessage(new ArrayBuffer(7));
    raw.postMessage({ not: 'a buffer' });
    raw.postMessage(encodeMessage({ type: 'hb', from: ia.id, to: null, seq: 9 })); // unsigned, in a's name
    raw.postMessage(encodeMessage({ type: 'hb', from: ia.id, to: null, seq: 10, pk: ic.pk, sig: SIG_PLACEHOLDER })); // c's key, a's id
    raw.postMessage(encodeMessage({ type: 'hb', from: ic.id, to: null, seq: 11, pk: ic.pk, sig: 'B'.repeat(86) })); // a wrong signature
    assert.equal(relayOnly.send(null, { type: 'hb' }), false, 'a bus without an identity cannot send');
    await waitFor(() => b.stats.received >= 7 && b.stats.unsigned + b.stats.wrongId + b.stats.badSignature >= 4, 'seven deliveries');
    await waitFor(() => gb.length >= 1, 'the signed message');
    assert.equal(gb.length, 1);
    assert.equal(gb[0].from, ia.id);
    assert.equal(gb[0].loss, -Infinity);
    assert.deepEqual(Array.from(gb[0].payload), [1, 2]);
    assert.equal(b.stats.notForMe, 1);
    assert.equal(b.stats.malformed, 1, 'the non-buffer');
    assert.equal(b.stats.unsigned, 2, 'seven bytes, the unsigned header');
    assert.equal(b.stats.wrongId, 1);
    assert.equal(b.stats.badSignature, 1);
  } finally {
    relayOnly.close();
    a.close();
    b.close();
    raw.close();
  }
});

test('a signing bus says when its sends have left (drained); a check leaves the buffer as it came', async () => {
  const [ia, ib] = await identities(2);
  const { port1, port2 } = new MessageChannel();
  const bus = new ProxyBus(ia, port1);
  const got = [];
  port2.on('message', (buf) => got.push(buf));
  assert.equal(bus.drained(), null, 'nothing sent');
  bus.send(null, { type: 'params', payload: Float32Array.of(1, 2, 3) });
  bus.send(null, { type: 'hb' });
  const sending = bus.drained();
  assert.ok(sending instanceof Promise, 'two messages being signed');
  await sending;
  assert.equal(bus.drained(), null);
  await waitFor(() => got.length === 2, 'both buffers');
  const verifier = new Verifier();
  const before = new Uint8Array(got[0].slice(0));
  assert.ok((await verifier.check(got[0])).ok);
  assert.deepEqual(new Uint8Array(got[0]), before, 'the signature is in place after the check');
  const forged = got[0].slice(0);
  new Uint8Array(forged)[forged.byteLength - 1] ^= 1; // one payload bit
  assert.equal((await verifier.check(forged)).code, 'badSignature');
  assert.ok((await verifier.check(got[1])).ok);
  assert.equal((await new Verifier().check(await signBuffer(ib, encodeMessage({ type: 'hb', from: ib.id, to: null, seq: 1, pk: ib.pk, sig: SIG_PLACEHOLDER })))).ok, true);
  bus.close();
  port1.close();
});

// ---- the proxy hop -----------------------------------------------------------------------

/** Wraps port.postMessage to check every transferred buffer is detached afterwards. */
function watchTransfers(port) {
  const seen = { posts: 0, detached: 0, bytes: 0 };
  const post = port.postMessage.bind(port);
  port.postMessage = (data, transfer) => {
    const before = data?.byteLength ?? 0;
    post(data, transfer);
    seen.posts++;
    seen.bytes += before;
    if (data instanceof ArrayBuffer && data.byteLength === 0 && before > 0) seen.detached++;
  };
  return seen;
}

test('ProxyBus transfers one ArrayBuffer per message; the sender copy is detached', async () => {
  const { port1, port2 } = new MessageChannel();
  const workerSide = watchTransfers(port1);
  const bus = new ProxyBus('w', port1);
  const got = [];
  port2.on('message', (buf) => got.push(buf));
  const grads = Float32Array.from({ length: 1000 }, (_, i) => i);
  bus.send('leader', { type: 'grad', loss: NaN, payload: grads });
  await waitFor(() => got.length === 1, 'the buffer');
  assert.equal(workerSide.posts, 1);
  assert.equal(workerSide.detached, 1, 'sender buffer detached by the transfer');
  assert.ok(got[0] instanceof ArrayBuffer);
  const msg = decodeMessage(got[0]);
  assert.equal(msg.to, 'leader');
  assert.ok(Number.isNaN(msg.loss));
  assert.deepEqual(Array.from(msg.payload.subarray(0, 3)), [0, 1, 2]);
  assert.equal(grads[999], 999, "the caller's array is untouched (it was encoded, not transferred)");
  bus.close();
  port1.close();
});

test('proxyRelay forwards buffers without decoding them, verified; the Worker side validates', async () => {
  const clock = new VirtualClock();
  const hub = new InProcessHub({ clock, wire: true });
  const [iw, io, is] = await identities(3);
  const page = hub.connect('w#page');
  const other = hub.connect(io);
  const gotOther = collect(other);
  const { port1, port2 } = new MessageChannel();
  const { port1: p3, port2: p4 } = new MessageChannel();
  const relay = proxyRelay(port2, page);
  const pageSide = watchTransfers(port2);
  const worker = new ProxyBus(iw, port1);
  const shared = new ProxyBus(is, p3, { shared: true });
  const gotWorker = collect(worker);
  try {
  // page transport -> worker: a good message, garbage, one for someone else
  other.send(null, { type: 'hello', payload: Float32Array.of(3) });
  other.sendRaw(new ArrayBuffer(5)); // garbage
  other.send('x', { type: 'private' });
  await waitFor(() => other.stats.sent === 3, 'the two messages signed and posted');
  await clock.advance(1);
  await waitFor(() => relay.stats.toWorker + relay.stats.unverified === 3, 'three buffers at the relay');
  await waitFor(() => worker.stats.received === 2, 'two buffers into the worker');
  assert.equal(relay.stats.toWorker, 2, 'the relay forwarded the signed buffers');
  assert.equal(relay.stats.unverified, 1, 'and dropped the garbage');
  assert.equal(pageSide.detached, 2, 'each buffer was transferred into the worker');
  assert.deepEqual(gotWorker.map((m) => m.type), ['hello']);
  assert.equal(worker.stats.notForMe, 1);
  // worker -> page transport -> others
  worker.send(null, { type: 'reply', payload: Float32Array.of(4, 5) });
  await waitFor(() => relay.stats.fromWorker === 1, 'a buffer out of the worker');
  await clock.advance(1);
  await waitFor(() => gotOther.length === 1, 'the reply verified at the other end');
  assert.deepEqual(gotOther.map((m) => [m.type, m.from, Array.from(m.payload)]), [['reply', iw.id, [4, 5]]]);
  // non-buffer traffic on the port: counted by a dedicated port, ignored on a shared one
  port2.postMessage({ cmd: 'ui' });
  await waitFor(() => worker.stats.malformed === 1, 'the stray message counted');
  p4.postMessage({ cmd: 'ui' });
  p4.postMessage(encodeMessage({ type: 'x', from: 'z', to: null })); // after the stray one, on the same port
  await waitFor(() => shared.stats.received === 1, 'the buffer behind the stray message');
  assert.equal(shared.stats.malformed, 0);
  } finally {
    relay.close();
    for (const x of [worker, shared]) x.close();
    for (const p of [port1, port2, p3, p4]) p.close();
  }
});

// ---- a cohort through the hop, on real time -------------------------------------------------

// Real time: beats short enough to move along, but silence limits (drop,
// takeover: 100 beats = 3 s) and the step deadline (60 s) far above any
// stall of a loaded machine, so nothing here depends on its speed; unanimous
// up to 4 so every tab's bucket is in every step.
const PATIENT = { heartbeatMs: 30, dropBeats: 100, takeoverBeats: 100, collectMs: 60_000, unanimousUpTo: 4 };

/** One "tab": a rank on a ProxyBus in the worker role, relayed by its page onto a BroadcastChannel. */
function tab(channel, identity, { minMembers, maxSteps }) {
  const id = identity.id;
  const { port1, port2 } = new MessageChannel();
  const workerWatch = watchTransfers(port1);
  const pageWatch = watchTransfers(port2);
  const pageBus = new BroadcastChannelBus(channel, `${id}#page`);
  const relay = proxyRelay(port2, pageBus);
  const bus = new ProxyBus(identity, port1);
  const compute = stubCompute(id, { batch: 3 });
  const rank = new Rank({ bus, compute, params: Float32Array.from({ length: 32 }, (_, i) => (i % 7) - id.charCodeAt(0) / 50), policy: PATIENT, discoverMs: 1500, minMembers, maxSteps, lr: 0.1 });
  return {
    id,
    rank,
    bus,
    relay,
    workerWatch,
    pageWatch,
    close() {
      rank.stop({ silent: true });
      relay.close();
      bus.close();
      pageBus.close();
      port1.close();
      port2.close();
    },
  };
}

test('a cohort and an elastic join through the encoded proxy hop (real transfers, real time)', async () => {
  const channel = `rlx-proxy-cohort-${process.pid}-${Math.random()}`;
  const keys = await identities(4);
  const tabs = keys.slice(0, 3).map((k) => tab(channel, k, { minMembers: 3, maxSteps: 15 }));
  try {
    for (const t of tabs) t.rank.start();
    const leader = tabs[0].rank;
    const synced = (ranks) => ranks.every((r) => r.version === leader.version && !leader.collect && (r === leader || r.role === 'follower'));
    await waitFor(() => leader.role === 'leader' && leader.step === 15 && synced(tabs.map((t) => t.rank)), '15 steps');
    for (const t of tabs) {
      assert.equal(t.rank.hash, leader.hash, `${t.id} bit-identical`);
      assert.ok(Buffer.from(t.rank.params.buffer).equals(Buffer.from(leader.params.buffer)));
    }
    assert.ok(leader.history.every((h) => h.contributors.length === 3));

    // elastic join through the same kind of hop
    const late = tab(channel, keys[3], {});
    tabs.push(late);
    leader.maxSteps = 25;
    late.rank.start();
    await waitFor(() => leader.step === 25 && late.rank.role === 'follower' && synced(tabs.map((t) => t.rank)), 'the join and 10 more steps');
    assert.equal(late.rank.hash, leader.hash);
    assert.equal(late.rank.stats.elections, 0);
    const after = leader.history.filter((h) => h.members === 4);
    assert.ok(after.length > 0 && after.every((h) => h.contributors.length === 4), 'the newcomer contributed to every step it was a member of');

    for (const t of tabs) {
      // every message crossed the hop as a transferred buffer, in both directions
      assert.ok(t.workerWatch.posts > 10);
      assert.equal(t.workerWatch.detached, t.workerWatch.posts, `${t.id}: worker->page transfers`);
      assert.equal(t.pageWatch.detached, t.pageWatch.posts, `${t.id}: page->worker transfers`);
      assert.equal(t.bus.stats.malformed + t.bus.stats.truncated, 0);
      assert.equal(t.rank.stats.handlerErrors, 0);
    }
  } finally {
    for (const t of tabs) t.close();
  }
});

// ---- what signing costs -----------------------------------------------------------------------

test('signing and verifying a 2-rank step: the time it adds, reported (not asserted)', async (t) => {
  const [leader, follower] = await identities(2);
  const verifier = new Verifier();
  for (const [model, n] of [['mnist-cnn', 5258], ['mnist-mlp', 101_770]]) {
    const payload = Float32Array.from({ length: n }, (_, i) => Math.sin(i));
    const msg = (who, type) => encodeMessage({ type, from: who.id, to: null, seq: 1, term: 1, version: 7, step: 7, go: true, loss: 0.5, samples: 32, pk: who.pk, sig: SIG_PLACEHOLDER, payload });
    const rounds = 40;
    let ms = 0;
    for (let i = 0; i < rounds + 5; i++) {
      const p = msg(leader, 'params');
      const g = msg(follower, 'grad');
      const t0 = performance.now();
      // a step's critical path: the params signed, verified; the bucket signed, verified
      await signBuffer(leader, p);
      assert.ok((await verifier.check(p)).ok);
      await signBuffer(follower, g);
      assert.ok((await verifier.check(g)).ok);
      if (i >= 5) ms += performance.now() - t0;
    }
    t.diagnostic(`${model} (${n} parameters, ${(4 * n / 1024).toFixed(0)} KiB a message): signing + verifying one step's params and bucket: ${(ms / rounds).toFixed(2)} ms`);
  }
});
