// fabric.js - the page's transport when it has more than one: the tabs of
// this browser (a BroadcastChannel) and the peers of a WebRTC room
// (mesh.js), joined into one wire transport for proxyRelay (bus.js), so a
// cohort can hold tabs that only share a browser and devices that only share
// a room. The page that is in both bridges them: what arrives on one link is
// delivered to this tab's Worker and forwarded to the other links.
//
// Every wire buffer carries its sender's rank id (`from`) and a per-sender
// `seq` (bus.js), so a buffer met twice (a second bridging tab, a direct copy
// and a forwarded one) is delivered and forwarded once. Only the header is
// read (wire.js peekHeader); payloads pass untouched. Forwarding from the tab
// link into the room skips senders that are in the room themselves (they sent
// it there already); a buffer never goes back out on the link it came from.
//
//   const fabric = new Fabric(selfRankId);
//   fabric.add('tabs', broadcastChannelBus);   // any transport with sendRaw / onRaw / close
//   fabric.add('room', meshLink);              // meshLink.hasRank(id) tells who is in the room
//   proxyRelay(port, fabric);
import { peekHeader } from './wire.js';

const SEEN_PER_SENDER = 512; // seqs remembered per sender
const MAX_SENDERS = 4096;

/** The (from, seq) pairs met lately: first(header) is true the first time. Buffers without a seq always pass. */
export class SeenSet {
  constructor() {
    this._seen = new Map(); // sender id -> Set of recent seqs (insertion-ordered)
  }

  first(h) {
    if (typeof h.from !== 'string' || !Number.isSafeInteger(h.seq)) return true;
    let seen = this._seen.get(h.from);
    if (!seen) {
      if (this._seen.size >= MAX_SENDERS) this._seen.delete(this._seen.keys().next().value);
      seen = new Set();
      this._seen.set(h.from, seen);
    }
    if (seen.has(h.seq)) return false;
    seen.add(h.seq);
    if (seen.size > SEEN_PER_SENDER) seen.delete(seen.values().next().value);
    return true;
  }
}

export class Fabric {
  constructor(selfId) {
    this.selfId = selfId;
    this.links = new Map();
    this.stats = { delivered: 0, forwarded: 0, duplicates: 0, unreadable: 0 };
    this._handlers = new Set();
    this._seen = new SeenSet();
    this._closed = false;
  }

  /** Adds (or replaces) a link: a wire transport with sendRaw(buf) and onRaw(fn). */
  add(name, link) {
    this.remove(name);
    const off = link.onRaw((buf) => this._arrived(name, buf));
    this.links.set(name, { link, off });
    return link;
  }

  remove(name) {
    const entry = this.links.get(name);
    if (!entry) return;
    entry.off?.();
    this.links.delete(name);
  }

  has(name) {
    return this.links.has(name);
  }

  /** From this tab's Worker: out on every link. */
  sendRaw(buf) {
    if (this._closed) return false;
    const h = peekHeader(buf);
    if (h) this._firstTime(h);
    for (const { link } of this.links.values()) link.sendRaw(buf);
    return true;
  }

  onRaw(fn) {
    this._handlers.add(fn);
    return () => this._handlers.delete(fn);
  }

  close() {
    this._closed = true;
    for (const name of [...this.links.keys()]) this.remove(name);
    this._handlers.clear();
  }

  /** True the first time (from, seq) is met. Buffers without a seq always pass. */
  _firstTime(h) {
    return this._seen.first(h);
  }

  _arrived(from, buf) {
    if (this._closed || !(buf instanceof ArrayBuffer)) return;
    const h = peekHeader(buf);
    if (!h) {
      this.stats.unreadable++;
      this._deliver(buf); // the Worker's bus counts it as malformed
      return;
    }
    if (h.from === this.selfId || !this._firstTime(h)) {
      this.stats.duplicates++;
      return;
    }
    const forMe = h.to == null || h.to === this.selfId;
    if (h.to !== this.selfId) {
      for (const [name, { link }] of this.links) {
        if (name === from) continue;
        const knows = typeof link.hasRank === 'function';
        if (knows && link.hasRank(h.from)) continue; // the sender reaches that link itself
        if (h.to != null && knows && !link.hasRank(h.to)) continue; // the addressee is not there
        this.stats.forwarded++;
        link.sendRaw(buf.slice(0)); // a copy: the original is transferred into the Worker below
      }
    }
    if (forMe) this._deliver(buf);
  }

  _deliver(buf) {
    this.stats.delivered++;
    for (const fn of this._handlers) fn(buf);
  }
}
