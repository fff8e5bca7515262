#!/usr/bin/env node
// nostr_relay.mjs - a tiny local Nostr relay (npm `ws`), enough for Trystero's
// signalling, so a room works with no internet: a LAN (or a test inside a
// loopback-only network namespace) points the cluster page at it with
// ?relays=ws://HOST:PORT.
//
// It speaks the NIP-01 subset Trystero uses and nothing more:
//   ["REQ", subId, filter...]  stores the subscription (replacing one of the
//                              same id on that connection), replies ["EOSE", subId]
//   ["EVENT", event]           replies ["OK", id, true, ""] and forwards
//                              ["EVENT", subId, event] to every matching
//                              subscription, the sender's own included
//   ["CLOSE", subId]           drops the subscription
// Filters match on ids / authors (prefixes), kinds, "#<letter>" tags (Trystero
// uses "#x"), since / until; limit is ignored. Nothing is stored or replayed:
// EOSE follows every REQ at once and only live events are forwarded, so
// `since` gets a slack (sinceSlackS, default 600 s) against clock skew between
// LAN devices. Signatures are not checked: this is a trusted local relay. It
// must never be exposed to the internet and is no general-purpose relay.
//
// Still, no client can take it over (LIMITS below, each an option):
// connections in all and from one address (beyond them the upgrade gets a
// 503), subscriptions and their bytes per connection (a REQ past either is
// answered ["CLOSED", subId, "error: ..."]), output queued for one client (a
// reader that falls that far behind is dropped), and idle time (a connection
// that sends nothing that long is closed).
//
// Module:  const relay = await startRelay({ port: 0, host: '127.0.0.1' });
//          relay.url ('ws://127.0.0.1:PORT'), relay.port, relay.stats, relay.limits, await relay.close()
// CLI:     node tools/nostr_relay.mjs [--port 7777] [--host 127.0.0.1] [--tls [DIR]] [--quiet]
//                                     [--max-connections N] [--max-per-address N] [--max-subscriptions N]
//                                     [--max-subscription-bytes N] [--max-buffered-bytes N] [--idle-timeout S]
//          prints "nostr relay on ws://HOST:PORT" first (and the LAN URLs to
//          pass as ?relays= when bound to 0.0.0.0), then its limits; runs until SIGINT/SIGTERM.
//          --tls serves wss:// with DIR/cert.pem + DIR/key.pem (default
//          build/tls/, the certificate `tools/serve.py --tls` makes). A page on
//          another device must be https (Trystero needs crypto.subtle, which
//          only a secure context has), and an https page may only open wss://
//          relays, so a LAN room with no internet needs both --tls.
// Binds 127.0.0.1 unless told otherwise.
import { WebSocketServer } from 'ws';
import { createServer } from 'node:https';
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { fileURLToPath } from 'node:url';

const OPEN = 1;

/** The defaults of startRelay's limits (the CLI flag of each: --max-connections ...). */
export const LIMITS = {
  maxConnections: 256, // WebSocket connections at once
  maxPerAddress: 64, // of those from one client address
  maxSubscriptions: 32, // open subscriptions per connection (Trystero keeps a few)
  maxSubscriptionBytes: 64 << 10, // the REQ messages of a connection's open subscriptions, in bytes
  maxBufferedBytes: 4 << 20, // output queued for one client before it is dropped
  idleTimeoutS: 120, // a connection that sends nothing this long is closed (Trystero announces every ~5 s)
  maxPayload: 1 << 20, // bytes of one message
};

/** The limits as one line, for the CLI's start-up output. */
export function describeLimits(l) {
  const size = (n) => (n % (1 << 20) === 0 ? `${n / (1 << 20)} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);
  return `limits: ${l.maxConnections} connections (${l.maxPerAddress} per address), ${l.maxSubscriptions} subscriptions ` +
    `(${size(l.maxSubscriptionBytes)}) per connection, ${size(l.maxBufferedBytes)} queued per client, idle ${l.idleTimeoutS} s, ` +
    `${size(l.maxPayload)} per message`;
}

/** True when one NIP-01 filter matches an event (limit is ignored). */
export function matchFilter(filter, ev, { sinceSlackS = 0 } = {}) {
  if (!filter || typeof filter !== 'object') return false;
  const prefixed = (list, value) => Array.isArray(list) && typeof value === 'string' && list.some((p) => typeof p === 'string' && value.startsWith(p));
  if (filter.ids !== undefined && !prefixed(filter.ids, ev.id)) return false;
  if (filter.authors !== undefined && !prefixed(filter.authors, ev.pubkey)) return false;
  if (filter.kinds !== undefined && !(Array.isArray(filter.kinds) && filter.kinds.includes(ev.kind))) return false;
  if (typeof filter.since === 'number' && !(ev.created_at >= filter.since - sinceSlackS)) return false;
  if (typeof filter.until === 'number' && !(ev.created_at <= filter.until)) return false;
  for (const [key, wanted] of Object.entries(filter)) {
    if (key.length !== 2 || key[0] !== '#') continue;
    if (!Array.isArray(wanted)) return false;
    const have = (ev.tags ?? []).filter((t) => Array.isArray(t) && t[0] === key[1]).map((t) => t[1]);
    if (!wanted.some((w) => have.includes(w))) return false;
  }
  return true;
}

function isEvent(ev) {
  return ev && typeof ev === 'object' && typeof ev.id === 'string' && Number.isInteger(ev.kind) &&
    Array.isArray(ev.tags) && typeof ev.created_at === 'number';
}

/**
 * Starts the relay; resolves once it listens. Options: port (0: a free one),
 * host ('127.0.0.1'), tls ({ cert, key } PEM text: wss://), sinceSlackS (600),
 * log (fn(line) or null), and any of LIMITS.
 */
export function startRelay({ port = 0, host = '127.0.0.1', tls = null, sinceSlackS = 600, log = null, ...options } = {}) {
  const limits = { ...LIMITS, ...options };
  const { maxPayload } = limits;
  const stats = { connections: 0, open: 0, reqs: 0, closes: 0, events: 0, forwarded: 0, notices: 0, refused: 0, dropped: 0, idle: 0 };
  const clients = new Set(); // { ws, address, idle (timer), subs: Map(subId -> { filters, bytes }), subBytes }
  const perAddress = new Map(); // client address -> open connections
  // Over TLS a plain GET answers too, so a device can open the URL once to accept the certificate.
  const https = tls ? createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('RLX local Nostr relay: certificate accepted; use it as ?relays=wss://HOST:PORT\n');
  }) : null;
  // Refused before the upgrade, with an HTTP status; counted in 'connection', which follows at once.
  const verifyClient = ({ req }, done) => {
    const why = clients.size >= limits.maxConnections ? 'too many connections'
      : (perAddress.get(req.socket.remoteAddress) ?? 0) >= limits.maxPerAddress ? 'too many connections from your address' : null;
    if (why) stats.refused++;
    done(!why, 503, why);
  };
  const wss = https ? new WebSocketServer({ server: https, maxPayload, verifyClient })
    : new WebSocketServer({ port, host, maxPayload, verifyClient });
  const listener = https ?? wss;
  if (https) https.listen(port, host);

  const send = (client, msg) => {
    if (client.ws.readyState !== OPEN) return;
    client.ws.send(JSON.stringify(msg));
    if (client.ws.bufferedAmount > limits.maxBufferedBytes) {
      stats.dropped++;
      log?.(`- ${client.address}: ${client.ws.bufferedAmount} bytes queued, dropped`);
      client.ws.terminate(); // it does not read: no close handshake to wait for
    }
  };
  const notice = (client, text) => {
    stats.notices++;
    send(client, ['NOTICE', text]);
  };

  function unsubscribe(client, subId) {
    client.subBytes -= client.subs.get(subId)?.bytes ?? 0;
    client.subs.delete(subId);
  }

  function onMessage(client, data) {
    client.idle.refresh();
    let msg;
    try {
      msg = JSON.parse(String(data));
    } catch {
      return notice(client, 'invalid: message is not JSON');
    }
    if (!Array.isArray(msg) || typeof msg[0] !== 'string') return notice(client, 'invalid: expected a JSON array');
    const [type, ...rest] = msg;
    if (type === 'REQ') {
      const [subId, ...filters] = rest;
      if (typeof subId !== 'string' || !subId) return notice(client, 'invalid: REQ needs a subscription id');
      const old = client.subs.get(subId);
      const bytes = data.length;
      const refusal = !old && client.subs.size >= limits.maxSubscriptions ? `too many subscriptions (at most ${limits.maxSubscriptions} per connection)`
        : client.subBytes - (old?.bytes ?? 0) + bytes > limits.maxSubscriptionBytes ? `subscriptions too large (at most ${limits.maxSubscriptionBytes} bytes per connection)`
          : null;
      unsubscribe(client, subId); // a refused REQ closes the subscription it would have replaced
      if (refusal) return send(client, ['CLOSED', subId, `error: ${refusal}`]);
      stats.reqs++;
      client.subBytes += bytes;
      client.subs.set(subId, { filters: filters.filter((f) => f && typeof f === 'object'), bytes });
      send(client, ['EOSE', subId]);
    } else if (type === 'CLOSE') {
      stats.closes++;
      unsubscribe(client, rest[0]);
    } else if (type === 'EVENT') {
      const ev = rest[0];
      if (!isEvent(ev)) {
        if (typeof ev?.id === 'string') send(client, ['OK', ev.id, false, 'invalid: malformed event']);
        return notice(client, 'invalid: malformed event');
      }
      stats.events++;
      send(client, ['OK', ev.id, true, '']);
      for (const other of clients) {
        for (const [subId, { filters }] of other.subs) {
          if (filters.some((f) => matchFilter(f, ev, { sinceSlackS }))) {
            stats.forwarded++;
            send(other, ['EVENT', subId, ev]);
          }
        }
      }
    } else {
      notice(client, `unsupported: ${type}`);
    }
  }

  wss.on('connection', (ws, req) => {
    const address = req.socket.remoteAddress;
    const idle = setTimeout(() => {
      stats.idle++;
      ws.close(1000, `idle for ${limits.idleTimeoutS} s`); // ws destroys the socket if the close handshake stalls
    }, limits.idleTimeoutS * 1000);
    const client = { ws, address, idle, subs: new Map(), subBytes: 0 };
    clients.add(client);
    perAddress.set(address, (perAddress.get(address) ?? 0) + 1);
    stats.connections++;
    stats.open++;
    log?.(`+ ${address}`);
    ws.on('message', (data) => onMessage(client, data));
    ws.on('error', () => {});
    ws.on('close', () => {
      clearTimeout(idle);
      clients.delete(client);
      const left = perAddress.get(address) - 1;
      if (left) perAddress.set(address, left);
      else perAddress.delete(address);
      stats.open--;
    });
  });

  return new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.once('listening', () => {
      listener.off('error', reject);
      listener.on('error', (err) => log?.(`error: ${err.message}`));
      const addr = listener.address();
      const shownHost = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve({
        url: `${tls ? 'wss' : 'ws'}://${shownHost}:${addr.port}`,
        host: addr.address,
        port: addr.port,
        stats,
        limits,
        close: () => new Promise((done) => {
          for (const c of clients) c.ws.terminate();
          wss.close(() => (https ? https.close(() => done()) : done()));
        }),
      });
    });
  });
}

function lanAddresses() {
  return Object.values(networkInterfaces()).flat().filter((a) => a && a.family === 'IPv4' && !a.internal).map((a) => a.address);
}

const LIMIT_FLAGS = {
  '--max-connections': 'maxConnections', '--max-per-address': 'maxPerAddress', '--max-subscriptions': 'maxSubscriptions',
  '--max-subscription-bytes': 'maxSubscriptionBytes', '--max-buffered-bytes': 'maxBufferedBytes', '--idle-timeout': 'idleTimeoutS',
};
const USAGE = `usage: node tools/nostr_relay.mjs [--port 7777] [--host 127.0.0.1] [--tls [DIR]] [--quiet]${
  Object.entries(LIMIT_FLAGS).map(([flag, key]) => ` [${flag} ${LIMITS[key]}]`).join('')}`;

async function main(argv) {
  const args = { port: 7777, host: '127.0.0.1', quiet: false, tlsDir: null, limits: {} };
  const fail = (why) => {
    console.error(`nostr_relay.mjs: ${why}\n${USAGE}`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--port') args.port = Number(argv[++i]);
    else if (a === '--host') args.host = argv[++i];
    else if (a === '--quiet') args.quiet = true;
    else if (a === '--tls') args.tlsDir = argv[i + 1] && !argv[i + 1].startsWith('--') ? argv[++i] : fileURLToPath(new URL('../build/tls/', import.meta.url));
    else if (a in LIMIT_FLAGS) {
      const n = Number(argv[++i]);
      if (!(n > 0 && Number.isFinite(n))) fail(`${a} needs a positive number`);
      args.limits[LIMIT_FLAGS[a]] = n;
    } else if (a === '-h' || a === '--help') {
      console.log(USAGE);
      return;
    } else fail(`unknown argument ${a}`);
  }
  if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) fail('--port needs an integer 0-65535');
  let tls = null;
  if (args.tlsDir) {
    try {
      tls = { cert: readFileSync(`${args.tlsDir}/cert.pem`), key: readFileSync(`${args.tlsDir}/key.pem`) };
    } catch (err) {
      console.error(`nostr_relay.mjs: --tls: ${err.message} (make one with: python3 tools/serve.py --tls)`);
      process.exit(2);
    }
  }
  const relay = await startRelay({ port: args.port, host: args.host, tls, log: args.quiet ? null : (l) => console.log(l), ...args.limits });
  console.log(`nostr relay on ${relay.url}`);
  console.log(`  ${describeLimits(relay.limits)}`);
  const scheme = tls ? 'wss' : 'ws';
  if (args.host === '0.0.0.0' || args.host === '::') {
    for (const ip of lanAddresses()) console.log(`  LAN: add &relays=${scheme}://${ip}:${relay.port} to the join URL`);
  }
  if (!tls) console.log('  note: pages on other devices are https, and an https page can only open wss:// relays: use --tls');
  else console.log(`  note: open https://<this host>:${relay.port}/ once on each device to accept the self-signed certificate`);
  const stop = async () => {
    await relay.close();
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(`nostr_relay.mjs: ${err.message}`);
    process.exit(1);
  });
}
