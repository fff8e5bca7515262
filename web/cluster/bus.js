// bus.js - the transports a rank talks through. Every bus has one interface:
//
//   bus.id                         this endpoint's rank id
//   bus.send(to, msg)              to: a rank id, or null to broadcast; msg: a plain
//                                  object, optionally with a Float32Array `payload`
//                                  (wire buses stamp from, to and a per-sender seq)
//   bus.onMessage(fn) -> off()     fn(msg) gets msg.from / msg.to stamped by the bus
//   bus.close()
//   bus.stats                      counters (sent, received, malformed, ...)
//
// Wire buses (BroadcastChannelBus, ProxyBus, a wire-mode InProcessHub
// endpoint) carry each message as one wire.js ArrayBuffer and also offer
// sendRaw(buf) / onRaw(fn) so a relay can forward buffers without parsing them.
//
// Signed buses. A wire bus built with an identity (auth.js createIdentity;
// its id is the bus id) signs every message it sends; a verifying bus drops
// and counts (stats.unsigned / wrongId / badSignature) every buffer whose
// signature does not verify under its `from`, and (for its message
// handlers) every (from, seq) met before (stats.duplicates). WebCrypto is
// asynchronous, so each signing bus signs as soon as send() is called but
// posts through one promise chain (this._out): buffers leave in the order
// of the send() calls (drained() says when they all left: a thread that is
// about to compute synchronously waits for it, or the signatures would wait
// for the compute). Likewise a verifying bus starts each check on
// arrival and delivers through one chain (this._in): messages reach the
// handlers in the order they arrived, so each sender's order is kept.
// BroadcastChannelBus always verifies. ProxyBus trusts its port: the page's
// proxyRelay verified every buffer before it entered the port. The
// in-process hub models the wire with trusted ids (no keys), for speed.
//
// - BroadcastChannelBus: tabs (or Workers) of one browser on one channel name.
// - InProcessHub: many endpoints in one JS realm for tests and simulations;
//   structured-clone semantics, simulated delays, drops, partitions, and
//   per-endpoint clocks (so a frozen tab's deliveries wait until it thaws).
// - ProxyBus + proxyRelay: a Worker runs the rank on a ProxyBus; its page runs
//   proxyRelay(port, transport), which moves each message between the Worker
//   and the page's transport (e.g. a WebRTC mesh, which a Worker cannot open)
//   as one transferred ArrayBuffer: the page never decodes or copies a bucket.
import { encodeMessage, decodeMessage, WireError } from './wire.js';
import { realClock } from './clock.js';
import { isIdentity, signBuffer, sealLead, SIG_PLACEHOLDER, Verifier, verifiedHeader, SeenSet } from './auth.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

function emptyStats() {
  return {
    sent: 0,
    received: 0,
    bytesOut: 0,
    bytesIn: 0,
    malformed: 0,
    oversized: 0,
    truncated: 0,
    notForMe: 0,
    handlerErrors: 0,
    sendErrors: 0,
    unsigned: 0,
    wrongId: 0,
    badSignature: 0,
    duplicates: 0,
  };
}

function checkId(id) {
  if (typeof id !== 'string' || id.length === 0 || id.length > 128) {
    throw new RlxError(STATUS.INVALID_ARG, 'bus id must be a non-empty string of at most 128 characters');
  }
  return id;
}

function callAll(handlers, arg, stats) {
  for (const fn of handlers) {
    try {
      fn(arg);
    } catch (err) {
      stats.handlerErrors++;
      stats.lastError = String(err?.stack ?? err);
    }
  }
}

/**
 * Base of the transports that carry wire.js buffers. Subclasses implement
 * _post(buf, to) and call _receive(data) for whatever arrives.
 * idOrIdentity: an auth.js identity (the bus signs) or a plain id (it cannot
 * sign: a trusted hub endpoint, or a relay that only forwards buffers).
 * verify: check every buffer's signature (see the top of the file).
 */
export class WireBus {
  constructor(idOrIdentity, { limits, verify = false, verifier = null } = {}) {
    this.identity = isIdentity(idOrIdentity) ? idOrIdentity : null;
    this.id = checkId(this.identity ? this.identity.id : idOrIdentity);
    this.limits = limits;
    this.closed = false;
    this.stats = emptyStats();
    this._handlers = new Set();
    this._rawHandlers = new Set();
    this._seq = 0;
    this.verifier = verify ? verifier ?? new Verifier() : null;
    this._seen = new SeenSet();
    this._out = Promise.resolve();
    this._signing = 0; // sends not yet out of this._out
    this._in = Promise.resolve();
    this._leads = new WeakMap(); // a lead's fields -> Promise of its signed text (one signature for every child)
  }

  send(to, msg) {
    if (this.closed) return false;
    if (this.verifier && !this.identity) return this._sendError('this bus has no identity to sign with (it only relays)');
    // seq: per-sender message number, so a relay that meets a message twice
    // (over two transports) can tell a copy from a new one (fabric.js)
    const { sig: _sig, pk: _pk, ...rest } = msg;
    const header = { ...rest, from: this.id, to: to ?? null, seq: ++this._seq };
    if (!this.identity) {
      const buf = this._encode(header);
      if (buf) this._sent(buf, to ?? null);
      return !!buf;
    }
    const signed = this._signed(header);
    this._signing++;
    this._out = this._out.then(() => signed).then(
      (buf) => {
        this._signing--;
        return buf && !this.closed && this._sent(buf, to ?? null);
      },
      (err) => {
        this._signing--;
        return this._sendError(`signing failed: ${err?.message ?? err}`);
      },
    );
    return true;
  }

  /**
   * null when every message sent so far has left, else a promise of that.
   * WebCrypto hands a signature back on this thread, so a long synchronous
   * task (a Worker's compute) started before it holds the message back until
   * it ends: such a caller waits for this first (worker.js).
   */
  drained() {
    return this._signing ? this._out : null;
  }

  async _signed(header) {
    if (header.lead !== null && typeof header.lead === 'object') {
      // a relayed lead goes on as the text it was verified as; our own is signed once per step
      let text = typeof header.lead.text === 'string' ? header.lead.text : this._leads.get(header.lead);
      if (!text) {
        text = sealLead(this.identity, header.lead, header.payload);
        this._leads.set(header.lead, text);
      }
      header = { ...header, lead: await text };
    }
    const buf = this._encode({ ...header, pk: this.identity.pk, sig: SIG_PLACEHOLDER });
    return buf && signBuffer(this.identity, buf);
  }

  _encode(header) {
    try {
      return encodeMessage(header, this.limits);
    } catch (err) {
      this._sendError(err.message);
      return null;
    }
  }

  _sendError(why) {
    this.stats.sendErrors++;
    this.stats.lastError = why;
    return false;
  }

  _sent(buf, to) {
    this.stats.sent++;
    this.stats.bytesOut += buf.byteLength;
    this._post(buf, to);
  }

  /** Forwards an already-encoded buffer untouched (relays use this). */
  sendRaw(buf, to = null) {
    if (this.closed) return false;
    this.stats.sent++;
    this.stats.bytesOut += buf?.byteLength ?? 0;
    this._post(buf, to);
    return true;
  }

  onMessage(fn) {
    this._handlers.add(fn);
    return () => this._handlers.delete(fn);
  }

  /**
   * Receives every incoming buffer undecoded (verified, on a verifying bus).
   * An endpoint with raw handlers is a relay: it hands buffers on (possibly
   * transferring them) and does not decode them for message handlers.
   */
  onRaw(fn) {
    this._rawHandlers.add(fn);
    return () => this._rawHandlers.delete(fn);
  }

  close() {
    this.closed = true;
    this._handlers.clear();
    this._rawHandlers.clear();
  }

  _receive(data) {
    if (this.closed) return;
    this.stats.received++;
    this.stats.bytesIn += data?.byteLength ?? 0;
    if (!this.verifier) {
      this._accept(data, null);
      return;
    }
    if (!(data instanceof ArrayBuffer)) {
      this._accept(data, null); // counted as malformed below
      return;
    }
    const checked = this.verifier.check(data); // started now, delivered in arrival order
    this._in = this._in.then(() => checked).then((r) => {
      if (this.closed) return;
      if (!r.ok) {
        this.stats[r.code]++;
        this.stats.lastError = r.why;
        return;
      }
      this._accept(data, r.header);
    });
  }

  _accept(data, verified) {
    if (this._rawHandlers.size) {
      if (!this.verifier || verified) callAll(this._rawHandlers, data, this.stats);
      else this.stats.malformed++;
      return;
    }
    let msg;
    try {
      msg = decodeMessage(data, this.limits);
    } catch (err) {
      const code = err instanceof WireError ? err.code : 'malformed';
      this.stats[code] = (this.stats[code] ?? 0) + 1;
      this.stats.lastError = err.message;
      return;
    }
    if (typeof msg.from !== 'string' || (msg.to != null && typeof msg.to !== 'string')) {
      this.stats.malformed++;
      this.stats.lastError = 'message without a valid from/to';
      return;
    }
    if (msg.from === this.id) return; // our own echo
    if (msg.to != null && msg.to !== this.id) {
      this.stats.notForMe++;
      return;
    }
    if (this.verifier && !this._seen.first(msg)) {
      this.stats.duplicates++;
      return;
    }
    if (typeof msg.lead === 'string') {
      // a tree step's lead, verified with the buffer (here, or by the relay in front of a trusted port)
      try {
        msg.lead = { ...JSON.parse(msg.lead), text: msg.lead };
      } catch {
        this.stats.malformed++;
        return;
      }
    }
    callAll(this._handlers, msg, this.stats);
  }

  _post() {
    throw new RlxError(STATUS.UNSUPPORTED, 'WireBus subclasses implement _post');
  }
}

/** Tabs and Workers of one browser (same origin) on one channel name. */
export class BroadcastChannelBus extends WireBus {
  constructor(name, idOrIdentity, { BroadcastChannelImpl = globalThis.BroadcastChannel, limits, verifier } = {}) {
    super(idOrIdentity, { limits, verify: true, verifier });
    if (typeof BroadcastChannelImpl !== 'function') throw new RlxError(STATUS.UNSUPPORTED, 'BroadcastChannel is not available here');
    this.channel = new BroadcastChannelImpl(name);
    this.channel.onmessage = (ev) => this._receive(ev.data);
    this.channel.onmessageerror = () => {
      this.stats.received++;
      this.stats.malformed++;
    };
  }

  _post(buf) {
    try {
      this.channel.postMessage(buf); // structured clone: every tab gets its own copy
    } catch (err) {
      this.stats.sendErrors++;
      this.stats.lastError = String(err);
    }
  }

  close() {
    if (this.closed) return;
    super.close();
    this.channel.close();
  }
}

function listen(port, fn) {
  if (typeof port.addEventListener === 'function') {
    port.addEventListener('message', fn);
    port.start?.();
    return () => port.removeEventListener('message', fn);
  }
  if (typeof port.on === 'function') {
    const wrap = (data) => fn({ data });
    port.on('message', wrap);
    return () => port.off('message', wrap);
  }
  throw new RlxError(STATUS.INVALID_ARG, 'port must support addEventListener or on');
}

/**
 * The Worker's end of the Worker<->page hop. `port` is a MessagePort (or the
 * Worker global `self`); each message is encoded once and its buffer is
 * transferred, so after send() the sender's copy is detached. With
 * { shared: true } non-buffer messages on the port (the page's control
 * messages) are ignored instead of being counted as malformed.
 */
export class ProxyBus extends WireBus {
  constructor(idOrIdentity, port, { shared = false, limits } = {}) {
    super(idOrIdentity, { limits });
    this.port = port;
    this._off = listen(port, (ev) => {
      if (!(ev.data instanceof ArrayBuffer)) {
        if (shared) return;
        this.stats.received++;
        this.stats.malformed++;
        this.stats.lastError = 'non-ArrayBuffer message on the bus port';
        return;
      }
      this._receive(ev.data);
    });
  }

  _post(buf) {
    try {
      this.port.postMessage(buf, [buf]);
    } catch (err) {
      this.stats.sendErrors++;
      this.stats.lastError = String(err);
    }
  }

  close() {
    if (this.closed) return;
    super.close();
    this._off();
  }
}

/**
 * The page's end: forwards buffers between the Worker's port and a wire
 * transport, transferring them into the Worker. Payloads are never decoded
 * here; every buffer bound for the Worker is verified first (auth.js: free
 * when a verifying link of this page already did), in arrival order, and
 * one that fails is dropped (stats.unverified), so the Worker's ProxyBus
 * can trust its port. Returns { stats, close }.
 */
export function proxyRelay(port, transport, { verifier = new Verifier() } = {}) {
  if (typeof transport?.sendRaw !== 'function' || typeof transport?.onRaw !== 'function') {
    throw new RlxError(STATUS.INVALID_ARG, 'proxyRelay needs a wire transport (sendRaw/onRaw)');
  }
  const stats = { toWorker: 0, fromWorker: 0, rejected: 0, unverified: 0 };
  let chain = Promise.resolve();
  let closed = false;
  const offPort = listen(port, (ev) => {
    if (!(ev.data instanceof ArrayBuffer)) {
      stats.rejected++;
      return;
    }
    stats.fromWorker++;
    transport.sendRaw(ev.data);
  });
  const offTransport = transport.onRaw((buf) => {
    if (!(buf instanceof ArrayBuffer)) {
      stats.rejected++;
      return;
    }
    const checked = verifiedHeader(buf) ? { ok: true } : verifier.check(buf);
    chain = chain.then(() => checked).then((r) => {
      if (closed) return;
      if (!r.ok) {
        stats.unverified++;
        return;
      }
      stats.toWorker++;
      port.postMessage(buf, [buf]);
    });
  });
  return {
    stats,
    close() {
      closed = true;
      offPort();
      offTransport();
    },
  };
}

/**
 * An in-process network of endpoints. Options:
 *   clock      time source for deliveries (default realClock)
 *   delayMs    number, or fn(from, to, msg) -> ms (per recipient)
 *   drop       probability 0..1, or fn(from, to, msg) -> boolean
 *   seed       seed of the drop decisions (deterministic)
 *   wire       true: carry encoded ArrayBuffers (copied per recipient, like a
 *              BroadcastChannel) and give out WireBus endpoints; false: carry
 *              objects through structuredClone
 * partition([[a, b], [c]]) splits the network (ids not listed form one more
 * group); heal() joins it again. connect(id, { clock }) gives an endpoint
 * whose deliveries run on that clock (a FreezableClock models a frozen tab).
 */
export class InProcessHub {
  constructor({ clock = realClock, delayMs = 0, drop = 0, seed = 1, wire = false, limits } = {}) {
    this.clock = clock;
    this.delayMs = delayMs;
    this.drop = drop;
    this.wire = wire;
    this.limits = limits;
    this.endpoints = new Map();
    this.stats = { delivered: 0, dropped: 0, partitioned: 0 };
    this._rng = seed >>> 0 || 1;
    this._group = null;
  }

  /** idOrIdentity: a plain id, or (wire mode) an auth.js identity: that endpoint signs what it sends. */
  connect(idOrIdentity, { clock } = {}) {
    const id = checkId(isIdentity(idOrIdentity) ? idOrIdentity.id : idOrIdentity);
    if (this.endpoints.has(id)) throw new RlxError(STATUS.STATE, `id ${id} is already connected`);
    if (id !== idOrIdentity && !this.wire) throw new RlxError(STATUS.INVALID_ARG, 'a signing endpoint needs a wire-mode hub');
    const ep = this.wire ? new HubWireBus(this, idOrIdentity, clock ?? this.clock) : new HubBus(this, id, clock ?? this.clock);
    this.endpoints.set(id, ep);
    return ep;
  }

  partition(groups) {
    this._group = new Map();
    groups.forEach((ids, g) => ids.forEach((id) => this._group.set(id, g)));
  }

  heal() {
    this._group = null;
  }

  _random() {
    // xorshift32: deterministic drops for a given seed
    let x = this._rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this._rng = x >>> 0;
    return this._rng / 4294967296;
  }

  _reachable(a, b) {
    if (!this._group) return true;
    return (this._group.get(a) ?? -1) === (this._group.get(b) ?? -1);
  }

  /** Schedules delivery of `item` (made per recipient by clone()) from -> to|everyone. */
  _route(fromId, to, msg, clone) {
    const targets = [];
    if (to != null && !this.wire) {
      const ep = this.endpoints.get(to);
      if (ep && !ep.closed) targets.push(ep);
    } else {
      for (const ep of this.endpoints.values()) if (ep.id !== fromId && !ep.closed) targets.push(ep);
    }
    for (const ep of targets) {
      if (!this._reachable(fromId, ep.id)) {
        this.stats.partitioned++;
        continue;
      }
      const dropped = typeof this.drop === 'function' ? this.drop(fromId, ep.id, msg) : this.drop > 0 && this._random() < this.drop;
      if (dropped) {
        this.stats.dropped++;
        continue;
      }
      const delay = typeof this.delayMs === 'function' ? this.delayMs(fromId, ep.id, msg) : this.delayMs;
      const item = clone(); // cloned at send time, as postMessage does
      ep.clock.setTimeout(() => {
        if (ep.closed) return;
        this.stats.delivered++;
        ep._receive(item);
      }, delay);
    }
  }
}

/** Object-mode hub endpoint: messages travel through structuredClone. */
class HubBus {
  constructor(hub, id, clock) {
    this.hub = hub;
    this.id = id;
    this.clock = clock;
    this.closed = false;
    this.stats = emptyStats();
    this._handlers = new Set();
  }

  send(to, msg) {
    if (this.closed) return false;
    const envelope = { ...msg, from: this.id, to: to ?? null };
    let first;
    try {
      first = structuredClone(envelope); // fails here, like postMessage, for uncloneable data
    } catch (err) {
      this.stats.sendErrors++;
      this.stats.lastError = String(err);
      return false;
    }
    this.stats.sent++;
    let used = false;
    this.hub._route(this.id, to ?? null, envelope, () => {
      if (!used) {
        used = true;
        return first;
      }
      return structuredClone(envelope);
    });
    return true;
  }

  onMessage(fn) {
    this._handlers.add(fn);
    return () => this._handlers.delete(fn);
  }

  close() {
    this.closed = true;
    this._handlers.clear();
    this.hub.endpoints.delete(this.id);
  }

  _receive(msg) {
    if (this.closed) return;
    this.stats.received++;
    callAll(this._handlers, msg, this.stats);
  }
}

/** Wire-mode hub endpoint: every other endpoint gets its own copy of the buffer. */
class HubWireBus extends WireBus {
  constructor(hub, idOrIdentity, clock) {
    super(idOrIdentity, { limits: hub.limits });
    this.hub = hub;
    this.clock = clock;
  }

  _post(buf, to) {
    this.hub._route(this.id, to, { to }, () => (buf instanceof ArrayBuffer ? buf.slice(0) : structuredClone(buf)));
  }

  close() {
    super.close();
    this.hub.endpoints.delete(this.id);
  }
}
