// cluster_relay_watch.test.mjs - web/cluster/relay_watch.js against stand-in
// sockets shaped as Trystero's getRelaySockets() returns them (a URL -> socket
// map whose socket object is replaced on every reconnection attempt): a
// socket that fails is named at once, one that stays silent after waitMs is
// named then, a relay that connects later leaves the list, one that drops
// says so, and a module without getRelaySockets lists nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RelayWatch } from '../../web/cluster/relay_watch.js';

class FakeSocket extends EventTarget {
  readyState = 0;
  fire(type, state) {
    this.readyState = state;
    this.dispatchEvent(new Event(type));
  }
}

function setup() {
  let t = 0;
  const sockets = { 'ws://a': new FakeSocket(), 'ws://b': new FakeSocket(), 'ws://c': new FakeSocket() };
  let changes = 0;
  const watch = new RelayWatch({ sockets: () => sockets, waitMs: 8000, now: () => t, onChange: () => changes++ });
  return { watch, sockets, advance: (ms) => { t += ms; }, changes: () => changes };
}

const states = (watch) => Object.fromEntries(watch.relays().map((r) => [r.url, `${r.state}${r.why ? `: ${r.why}` : ''}`]));

test('a failed socket is named at once, a silent one after waitMs, a late connection leaves the list', () => {
  const { watch, sockets, advance, changes } = setup();
  try {
    sockets['ws://a'].fire('open', 1);
    sockets['ws://b'].fire('error', 3);
    sockets['ws://b'].fire('close', 3);
    assert.deepEqual(states(watch), { 'ws://a': 'connected', 'ws://b': 'unreachable: connection failed', 'ws://c': 'connecting' });
    assert.ok(changes() >= 2, 'events report at once');
    advance(8000);
    assert.deepEqual(watch.unreachable().map((r) => `${r.url} ${r.why}`), ['ws://b connection failed', 'ws://c no answer after 8 s']);
    // Trystero retries b with a new socket: still unreachable while it connects, gone from the list once open
    sockets['ws://b'] = new FakeSocket();
    watch.poll();
    assert.equal(states(watch)['ws://b'], 'unreachable: connection failed');
    sockets['ws://b'].fire('open', 1);
    sockets['ws://c'].fire('open', 1);
    assert.deepEqual(watch.unreachable(), []);
    // a connection that drops says so
    sockets['ws://a'].fire('close', 3);
    assert.equal(states(watch)['ws://a'], 'unreachable: connection lost');
  } finally {
    watch.close();
  }
});

test('sockets already closed when first seen, and a module without getRelaySockets', () => {
  const closed = new FakeSocket();
  closed.readyState = 3;
  const w = new RelayWatch({ sockets: () => ({ 'ws://x': closed }), now: () => 0 });
  assert.deepEqual(states(w), { 'ws://x': 'unreachable: connection failed' });
  w.close();
  const none = new RelayWatch({ sockets: undefined });
  assert.deepEqual(none.relays(), []);
  none.close();
});
