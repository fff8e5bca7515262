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
// Module:  const relay = await startRelay({ port: 0, host: '127.0.0.1' });
//          relay.url ('ws://127.0.0.1:PORT'), relay.port, relay.stats, await relay.close()
// CLI:     node tools/nostr_relay.mjs [--port 7777] [--host 127.0.0.1] [--tls [DIR]] [--quiet]
//          prints "nostr relay on ws://HOST:PORT" first (and the LAN URLs to
//          pass as ?relays= when bound to 0.0.0.0); runs until SIGINT/SIGTERM.
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
 * maxPayload (bytes of one message, 1 MiB), log (fn(line) or null).
 */
export function startRelay({ port = 0, host = '127.0.0.1', tls = null, sinceSlackS = 600, maxPayload = 1 << 20, log = null } = {}) {
  const stats = { connections: 0, open: 0, reqs: 0, closes: 0, events: 0, forwarded: 0, notices: 0 };
  const clients = new Set(); // { ws, subs: Map(subId -> filters[]) }
  // Over TLS a plain GET answers too, so a device can open the URL once to accept the certificate.
  const https = tls ? createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('RLX local Nostr relay: certificate accepted; use it as ?relays=wss://HOST:PORT\n');
  }) : null;
  const wss = https ? new WebSocketServer({ server: https, maxPayload }) : new WebSocketServer({ port, host, maxPayload });
  const listener = https ?? wss;
  if (https) https.listen(port, host);

  const send = (client, msg) => {
    if (client.ws.readyState === OPEN) client.ws.send(JSON.stringify(msg));
  };
  const notice = (client, text) => {
    stats.notices++;
    send(client, ['NOTICE', text]);
  };

  function onMessage(client, data) {
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
      stats.reqs++;
      client.subs.set(subId, filters.filter((f) => f && typeof f === 'object'));
      send(client, ['EOSE', subId]);
    } else if (type === 'CLOSE') {
      stats.closes++;
      client.subs.delete(rest[0]);
    } else if (type === 'EVENT') {
      const ev = rest[0];
      if (!isEvent(ev)) {
        if (typeof ev?.id === 'string') send(client, ['OK', ev.id, false, 'invalid: malformed event']);
        return notice(client, 'invalid: malformed event');
      }
      stats.events++;
      send(client, ['OK', ev.id, true, '']);
      for (const other of clients) {
        for (const [subId, filters] of other.subs) {
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
    const client = { ws, subs: new Map() };
    clients.add(client);
    stats.connections++;
    stats.open++;
    log?.(`+ ${req.socket.remoteAddress}`);
    ws.on('message', (data) => onMessage(client, data));
    ws.on('error', () => {});
    ws.on('close', () => {
      clients.delete(client);
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

async function main(argv) {
  const args = { port: 7777, host: '127.0.0.1', quiet: false, tlsDir: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--port') args.port = Number(argv[++i]);
    else if (a === '--host') args.host = argv[++i];
    else if (a === '--quiet') args.quiet = true;
    else if (a === '--tls') args.tlsDir = argv[i + 1] && !argv[i + 1].startsWith('--') ? argv[++i] : fileURLToPath(new URL('../build/tls/', import.meta.url));
    else if (a === '-h' || a === '--help') {
      console.log('usage: node tools/nostr_relay.mjs [--port 7777] [--host 127.0.0.1] [--tls [DIR]] [--quiet]');
      return;
    } else {
      console.error(`nostr_relay.mjs: unknown argument ${a}`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(args.port) || args.port < 0 || args.port > 65535) {
    console.error('nostr_relay.mjs: --port needs an integer 0-65535');
    process.exit(2);
  }
  let tls = null;
  if (args.tlsDir) {
    try {
      tls = { cert: readFileSync(`${args.tlsDir}/cert.pem`), key: readFileSync(`${args.tlsDir}/key.pem`) };
    } catch (err) {
      console.error(`nostr_relay.mjs: --tls: ${err.message} (make one with: python3 tools/serve.py --tls)`);
      process.exit(2);
    }
  }
  const relay = await startRelay({ port: args.port, host: args.host, tls, log: args.quiet ? null : (l) => console.log(l) });
  console.log(`nostr relay on ${relay.url}`);
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
