// fabric.js - the page's transport when it has more than one: the tabs of
// this browser (a BroadcastChannel) and the peers of a WebRTC room
// (mesh.js), joined into one wire transport for proxyRelay (bus.js), so a
// cohort can hold tabs that only share a browser and devices that only share
// a room. The page that is in both bridges them: what arrives on one link is
// delivered to this tab's Worker and forwarded to the other links.
//
// Every wire buffer carries its sender's rank id (`from`), a per-sender
// `seq` (bus.js) and the sender's signature (auth.js). A buffer is verified
// before anything else (free when the link that brought it verified it
// already: BroadcastChannelBus, MeshLink do), in arrival order; one that
// fails is dropped (stats.unverified). A verified buffer met twice (a second
// bridging tab, a direct copy and a forwarded one) is delivered and
// forwarded once: the duplicate set keys on the verified (from, seq), so a
// forged copy cannot pre-empt the real one. Only the header is read;
// payloads pass untouched. Forwarding from the tab
// link into the room skips senders that are in the room themselves (they sent
// it there already); a buffer never goes back out on the link it came from.
//
//   const fabric = new Fabric(selfRankId);
//   fabric.add('tabs', broadcastChannelBus);   // any transport with sendRaw / onRaw / close
//   fabric.add('room', meshLink);              // meshLink.hasRank(id) tells who is in the room
//   proxyRelay(port, fabric);
import { peekHeader } from './wire.js';
import { SeenSet, Verifier, verifiedHeader, markCopy } from './auth.js';

export { SeenSet } from './auth.js';

export class Fabric {
  constructor(selfId) {
    this.selfId = selfId;
    this.links = new Map();
    this.stats = { delivered: 0, forwarded: 0, duplicates: 0, unreadable: 0, unverified: 0 };
    this._handlers = new Set();
    this._seen = new SeenSet();
    this._closed = false;
    this._verifier = new Verifier();
    this._chain = Promise.resolve();
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
    const known = verifiedHeader(buf);
    const checked = known ? { ok: true, header: known } : this._verifier.check(buf);
    this._chain = this._chain.then(() => checked).then((r) => {
      if (this._closed) return;
      if (!r.ok) {
        this.stats.unverified++;
        return;
      }
      this._verified(from, buf, r.header);
    });
  }

  _verified(from, buf, h) {
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
        link.sendRaw(markCopy(buf.slice(0), h)); // a copy: the original is transferred into the Worker below
      }
    }
    if (forMe) this._deliver(buf);
  }

  _deliver(buf) {
    this.stats.delivered++;
    for (const fn of this._handlers) fn(buf);
  }
}
