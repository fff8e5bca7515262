// nostr_relay.test.mjs - tools/nostr_relay.mjs against hostile clients: the
// connections in all and from one address are capped (a 503 at the upgrade,
// other addresses still served; other loopback addresses stand for other
// machines), a REQ past the subscription count or bytes of a connection is
// answered CLOSED (and closes the subscription it would have replaced; a
// replaced or closed one frees its place), a client that never reads is
// dropped once its queued output passes the cap while others are still
// served, a silent connection is closed at the idle timeout while a talking
// one stays, and the CLI prints its limits and takes them as flags. (The
// protocol itself: tests/node/cluster_mesh.test.mjs.) Every wait is for an
// event, with a generous bound; small limits keep it quick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { WebSocket } from 'ws';
import { startRelay, LIMITS } from '../../tools/nostr_relay.mjs';
import { REPO } from '../browser/server.mjs';

const WAIT = 30000; // ms: a bound on events that take well under a second, never a measurement
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(cond, what) {
  const end = Date.now() + WAIT;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** A WebSocket client once open: { ws, inbox, send(msg), closed (a promise of { code, reason }) }, or a
 * rejection with the HTTP status that refused the upgrade. */
function client(url, options = {}) {
  const ws = new WebSocket(url, options);
  const inbox = [];
  ws.on('message', (d) => inbox.push(JSON.parse(String(d))));
  const closed = new Promise((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, inbox, closed, send: (m) => ws.send(JSON.stringify(m)) }));
    ws.once('unexpected-response', (req, res) => {
      req.destroy();
      reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode }));
    });
    ws.once('error', reject);
  });
}

async function refusedWith(promise) {
  try {
    const c = await promise;
    c.ws.terminate();
    return 'accepted';
  } catch (e) {
    return e.status ?? e.message;
  }
}

/** One masked WebSocket text frame (mask key 0: the payload as is). */
function frame(text) {
  const body = Buffer.from(text);
  const n = body.length;
  const len = n < 126 ? Buffer.from([0x80 | n]) : n < 65536 ? Buffer.from([0x80 | 126, n >> 8, n & 255])
    : Buffer.concat([Buffer.from([0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; })()]);
  return Buffer.concat([Buffer.from([0x81]), len, Buffer.alloc(4), body]);
}

test('connections: at most maxConnections, at most maxPerAddress from one address; a place freed is taken again', async (t) => {
  const relay = await startRelay({ maxConnections: 4, maxPerAddress: 2 });
  t.after(() => relay.close());
  const a = [await client(relay.url), await client(relay.url)];
  assert.equal(await refusedWith(client(relay.url)), 503, 'a third connection from 127.0.0.1');
  const b = [await client(relay.url, { localAddress: '127.0.0.2' }), await client(relay.url, { localAddress: '127.0.0.2' })];
  assert.equal(await refusedWith(client(relay.url, { localAddress: '127.0.0.3' })), 503, 'a fifth connection in all');
  assert.equal(relay.stats.refused, 2);
  a[0].ws.close();
  await a[0].closed;
  await until(() => relay.stats.open === 3, 'the relay seeing the close');
  const again = await client(relay.url);
  again.send(['REQ', 's', {}]);
  await until(() => again.inbox.length === 1, 'EOSE on the new connection');
  for (const c of [a[1], ...b, again]) c.ws.terminate();
});

test('subscriptions: a REQ past the count or the bytes of a connection is answered CLOSED', async (t) => {
  const relay = await startRelay({ maxSubscriptions: 3, maxSubscriptionBytes: 1000 });
  t.after(() => relay.close());
  const c = await client(relay.url);
  for (const id of ['s1', 's2', 's3', 's4', 's2']) c.send(['REQ', id, { kinds: [1] }]);
  await until(() => c.inbox.length === 5, 'five answers');
  assert.deepEqual(c.inbox.map((m) => m.slice(0, 2)), [['EOSE', 's1'], ['EOSE', 's2'], ['EOSE', 's3'], ['CLOSED', 's4'], ['EOSE', 's2']],
    'the fourth is refused; replacing s2 is not a new one');
  assert.match(c.inbox[3][2], /^error: too many subscriptions \(at most 3 per connection\)$/);
  c.send(['CLOSE', 's1']);
  c.send(['REQ', 's4', { kinds: [1] }]);
  await until(() => c.inbox.length === 6, 'an answer');
  assert.deepEqual(c.inbox[5], ['EOSE', 's4'], 'a closed subscription frees its place');
  c.send(['REQ', 's2', { ids: ['x'.repeat(1000)] }]);
  await until(() => c.inbox.length === 7, 'an answer');
  assert.deepEqual(c.inbox[6].slice(0, 2), ['CLOSED', 's2']);
  assert.match(c.inbox[6][2], /^error: subscriptions too large/);
  const ev = { id: 'e', pubkey: 'p', kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: '', sig: '' };
  c.send(['EVENT', ev]);
  await until(() => c.inbox.some((m) => m[0] === 'OK'), 'OK');
  c.ws.send('not json'); // its NOTICE comes after every EVENT of ev
  await until(() => c.inbox.some((m) => m[0] === 'NOTICE'), 'NOTICE');
  assert.deepEqual(c.inbox.filter((m) => m[0] === 'EVENT').map((m) => m[1]).sort(), ['s3', 's4'], 'the s2 that was CLOSED is closed');
  c.ws.terminate();
});

test('a client that never reads is dropped once its queued output passes the cap; the others are served', async (t) => {
  const relay = await startRelay({ maxBufferedBytes: 256 << 10 });
  t.after(() => relay.close());
  const { port } = relay;
  const sock = net.connect(port, '127.0.0.1');
  t.after(() => sock.destroy());
  let gone = false;
  sock.on('error', () => { gone = true; });
  sock.on('close', () => { gone = true; });
  await new Promise((r) => sock.once('connect', r));
  sock.write(`GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  await new Promise((r) => sock.once('data', r)); // the 101
  sock.pause(); // and never read again
  sock.write(frame(JSON.stringify(['REQ', 'all', {}])));
  const content = 'x'.repeat(60000);
  // Each event comes back to us as OK plus EVENT; the relay must give up well before 100 MB.
  for (let i = 0; !gone && i < 1700; i++) {
    const ev = { id: `e${i}`, pubkey: 'p', kind: 1, created_at: 0, tags: [], content, sig: '' };
    if (!sock.write(frame(JSON.stringify(['EVENT', ev])))) await Promise.race([new Promise((r) => sock.once('drain', r)), sleep(200)]);
  }
  await until(() => relay.stats.dropped === 1, 'the relay dropping the client that does not read');
  const other = await client(relay.url);
  other.send(['REQ', 's', {}]);
  await until(() => other.inbox.length === 1, 'EOSE for another client');
  other.ws.terminate();
});

test('a connection that sends nothing for idleTimeoutS is closed; one that talks stays', async (t) => {
  const relay = await startRelay({ idleTimeoutS: 4 });
  t.after(() => relay.close());
  const talker = await client(relay.url);
  const timer = setInterval(() => talker.send(['REQ', 's', {}]), 100);
  t.after(() => clearInterval(timer));
  const silent = await client(relay.url);
  let closed = null;
  silent.closed.then((c) => { closed = c; });
  await until(() => closed, 'the relay closing the silent connection');
  const { code, reason } = closed;
  assert.equal(code, 1000);
  assert.match(reason, /^idle for 4 s$/);
  assert.equal(talker.ws.readyState, WebSocket.OPEN, 'the talking connection was closed too');
  assert.equal(relay.stats.idle, 1);
  clearInterval(timer);
  talker.ws.terminate();
});

test('the CLI prints its limits and takes them as flags; a bad value is a usage error', async () => {
  const child = spawn(process.execPath, ['tools/nostr_relay.mjs', '--port', '0', '--quiet', '--max-subscriptions', '5',
    '--idle-timeout', '7', '--max-buffered-bytes', String(1 << 20)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  try {
    await until(() => /limits: .*\n/.test(out), 'the limits line');
    assert.match(out, new RegExp(`^ {2}limits: ${LIMITS.maxConnections} connections \\(${LIMITS.maxPerAddress} per address\\), ` +
      '5 subscriptions \\(64 KiB\\) per connection, 1 MiB queued per client, idle 7 s, 1 MiB per message$', 'm'));
  } finally {
    child.kill();
  }
  for (const args of [['--idle-timeout', '0'], ['--max-connections', 'many'], ['--nope']]) {
    const r = spawnSync(process.execPath, ['tools/nostr_relay.mjs', '--port', '0', ...args], { cwd: REPO, encoding: 'utf8', timeout: WAIT });
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, /usage: /);
  }
});
