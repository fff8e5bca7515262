// cluster_fabric.test.mjs - web/cluster/fabric.js: a cohort that spans the
// tabs of one browser (a BroadcastChannel-like medium) and the peers of a
// room (a mesh-like medium that knows which ranks are in it), joined by the
// tab that is in both. Real Ranks (protocol.js) with stub gradients run in
// "Workers" behind ProxyBus + proxyRelay over MessageChannels, as on the
// page. Checked: a BroadcastChannel-only tab and a room-only peer train in
// one cohort with bit-identical params; with two bridging tabs nothing loops
// and every buffer reaches each rank once; unicasts are not forwarded to a
// link that does not hold the addressee; payload bytes pass untouched. Every
// buffer is signed (auth.js) and waits are for events, not for time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Fabric } from '../../web/cluster/fabric.js';
import { ProxyBus, proxyRelay } from '../../web/cluster/bus.js';
import { Rank } from '../../web/cluster/protocol.js';
import { stubCompute } from '../../web/cluster/sim.js';
import { encodeMessage } from '../../web/cluster/wire.js';
import { signBuffer, SIG_PLACEHOLDER } from '../../web/cluster/auth.js';
import { waitFor, identities } from './cluster_wait.mjs';

/** A broadcast medium; with rooms: true its links answer hasRank() from the senders they have seen. */
class Medium {
  constructor({ room = false } = {}) {
    this.room = room;
    this.links = new Set();
    this.carried = 0;
  }

  link() {
    const medium = this;
    const handlers = new Set();
    const ranks = new Set(); // rank ids heard through this link (as a mesh learns them)
    const link = {
      sendRaw(buf) {
        for (const other of medium.links) {
          if (other === link) continue;
          medium.carried++;
          const copy = buf.slice(0);
          setImmediate(() => other._receive(copy));
        }
      },
      onRaw(fn) {
        handlers.add(fn);
        return () => handlers.delete(fn);
      },
      close() {
        medium.links.delete(link);
      },
      _receive(buf) {
        const n = new DataView(buf).getUint32(0, true);
        const h = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, n)));
        ranks.add(h.from);
        for (const fn of handlers) fn(buf);
      },
    };
    if (this.room) link.hasRank = (id) => ranks.has(id);
    this.links.add(link);
    return link;
  }
}

/** A rank in its "Worker" behind a ProxyBus, its page's Fabric over the given links. */
function tab(identity, links, opts = {}) {
  const id = identity.id;
  const { port1, port2 } = new MessageChannel();
  const fabric = new Fabric(id);
  for (const [name, link] of Object.entries(links)) fabric.add(name, link);
  const relay = proxyRelay(port2, fabric);
  const bus = new ProxyBus(identity, port1);
  const received = [];
  bus.onMessage((m) => received.push(`${m.from}#${m.seq}`));
  const rank = new Rank({ id, bus, compute: stubCompute(id), params: Float32Array.from({ length: 8 }, (_, i) => (i + id.charCodeAt(0)) / 100), ...opts });
  return { id, rank, fabric, received, close() { rank.stop({ silent: true }); relay.close(); fabric.close(); port1.close(); port2.close(); } };
}

/** msg signed as `identity` would send it (from, pk, sig stamped). */
function signed(identity, msg) {
  return signBuffer(identity, encodeMessage({ ...msg, from: identity.id, pk: identity.pk, sig: SIG_PLACEHOLDER }));
}

// Silence limits and the step deadline far above a loaded machine's stalls: every step waits for all 3 buckets.
const PATIENT = { dropBeats: 40, takeoverBeats: 40, collectMs: 60_000 };
const DISCOVER_MS = 750; // as with the default policy: a rank that claims early anyway loses to the lower id

const bytes = (f) => Buffer.from(f.buffer, f.byteOffset, f.byteLength);

for (const bridges of [1, 2]) {
  test(`a tab-only rank and a room-only rank train in one cohort through ${bridges} bridging tab(s)`, async () => {
    const tabs = new Medium();
    const room = new Medium({ room: true });
    const [a, b, c] = await identities(3);
    const ranks = [
      tab(a, { tabs: tabs.link(), room: room.link() }, { minMembers: 3, maxSteps: 8, policy: PATIENT, discoverMs: DISCOVER_MS }),
      bridges === 2 ? tab(b, { tabs: tabs.link(), room: room.link() }, { policy: PATIENT, discoverMs: DISCOVER_MS }) : tab(b, { tabs: tabs.link() }, { policy: PATIENT, discoverMs: DISCOVER_MS }),
      tab(c, { room: room.link() }, { policy: PATIENT, discoverMs: DISCOVER_MS }),
    ];
    try {
      for (const r of ranks) r.rank.start();
      await waitFor(() => ranks.every((r) => r.rank.step === 8 && r.rank.version === ranks[0].rank.version && r.rank.role !== 'joining'), '8 steps on every rank');
      for (const r of ranks) {
        assert.ok(bytes(r.rank.params).equals(bytes(ranks[0].rank.params)), `${r.id} params differ`);
        assert.equal(r.rank.leaderId, a.id);
        // every buffer reached this rank's Worker at most once
        assert.equal(new Set(r.received).size, r.received.length, `${r.id} got duplicates`);
      }
      const leaderSteps = ranks[0].rank.history.map((h) => h.contributors.length);
      assert.ok(leaderSteps.every((n) => n === 3), `every step had 3 buckets: ${leaderSteps}`);
      if (bridges === 2) assert.ok(ranks.some((r) => r.fabric.stats.duplicates > 0), 'two bridges meet copies and drop them');
    } finally {
      for (const r of ranks) r.close();
    }
  });
}

test('unicasts are not forwarded into a room that lacks the addressee; payloads pass untouched', async () => {
  const tabs = new Medium();
  const room = new Medium({ room: true });
  const [a, b] = await identities(2);
  const fabric = new Fabric(a.id);
  const roomLink = room.link();
  const tabLink = tabs.link();
  fabric.add('room', roomLink);
  fabric.add('tabs', tabLink);
  const delivered = [];
  fabric.onRaw((buf) => delivered.push(buf));
  const peerTab = tabs.link();
  const payload = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i));
  // a bucket from tab b to tab x (not in the room): not forwarded into the room, not delivered to a
  peerTab.sendRaw(await signed(b, { type: 'grad', to: 'x', seq: 1, payload }));
  // a broadcast from b: delivered to a and forwarded into the room, bytes intact
  const hb = await signed(b, { type: 'hb', to: null, seq: 2, payload });
  peerTab.sendRaw(hb);
  peerTab.sendRaw(hb.slice(0)); // a copy
  // and an unsigned one in b's name: dropped
  peerTab.sendRaw(encodeMessage({ type: 'hb', from: b.id, to: null, seq: 3 }));
  await waitFor(() => fabric.stats.delivered + fabric.stats.duplicates + fabric.stats.unverified >= 3, 'the four buffers handled');
  await waitFor(() => fabric.stats.unverified === 1, 'the unsigned buffer dropped');
  assert.equal(delivered.length, 1);
  assert.equal(fabric.stats.duplicates, 1);
  assert.equal(fabric.stats.forwarded, 1);
  const got = new Float32Array(delivered[0], delivered[0].byteLength - 4000, 1000);
  assert.ok(bytes(got).equals(bytes(payload)));
  fabric.close();
});
