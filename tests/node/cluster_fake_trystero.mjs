// cluster_fake_trystero.mjs - an in-process stand-in for Trystero 0.25 for
// the mesh tests (cluster_mesh.test.mjs: one room per module;
// cluster_partial_mesh.test.mjs: many rooms per module). Modules of one
// FakeNet connect when they join a room of the same app id and room id
// (and password). As in Trystero 0.25, two modules hold ONE connection
// (a FakePC per side) whatever number of rooms they share: a room joined
// while the two are connected comes up at once, and the connection stays
// open after they left every room they shared (Trystero keeps it ~2
// minutes) until one side closes it; then the other side's rooms drop the
// peer (its data channel closed), and rooms both still hold connect again
// (as the next announcement would). crash(selfId) kills a module silently:
// its messages stop, and the others notice after crashDetectMs (ICE consent).
// connectionsOf(selfId) counts its open connections. block(a, b) makes every
// new connection between two modules fail (nothing tries again by itself:
// Trystero would at its next announcement, a minute later); unblock(a, b).

/** A stand-in RTCPeerConnection whose getStats reports a selected host pair. */
export class StatsPC {
  connectionState = 'connected';
  iceConnectionState = 'connected';
  iceGatheringState = 'complete';
  signalingState = 'stable';
  async getStats() {
    return new Map([
      ['T', { id: 'T', type: 'transport', selectedCandidatePairId: 'P', bytesSent: 10, bytesReceived: 20 }],
      ['P', { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R', state: 'succeeded', currentRoundTripTime: 0.002 }],
      ['L', { id: 'L', type: 'local-candidate', candidateType: 'host', protocol: 'udp', address: '127.0.0.1', port: 1 }],
      ['R', { id: 'R', type: 'remote-candidate', candidateType: 'host', protocol: 'udp', address: '127.0.0.1', port: 2 }],
      ['L2', { id: 'L2', type: 'local-candidate', candidateType: 'srflx', protocol: 'udp', address: '1.2.3.4', port: 3 }],
    ]);
  }
}

/** One side of a connection between two modules. */
class FakePC extends StatsPC {
  constructor(net, key) {
    super();
    this.net = net;
    this.key = key;
  }

  close() {
    this.net._closePair(this.key);
  }
}

const pairKey = (a, b) => (a < b ? `${a}|${b}` : `${b}|${a}`);

export class FakeNet {
  constructor({ signalMs = 1, crashDetectMs = 1000 } = {}) {
    this.rooms = new Set();
    this.log = []; // { from, to, action, bytes }
    this.n = 0;
    this.signalMs = signalMs; // a first connection between two modules: signalling and ICE
    this.crashDetectMs = crashDetectMs;
    this.pairs = new Map(); // pairKey -> { open, sides: { [selfId]: FakePC } }
    this.crashed = new Set();
    this.blocked = new Set(); // pairKeys whose new connections fail
    this.opened = 0;
  }

  /** A module: form 'object' (0.25+) or 'tuple'; events 'property' or 'function'; mute: joins but never answers. */
  module({ form = 'object', events = 'property', mute = false, id } = {}) {
    const net = this;
    const selfId = id ?? `peer${++this.n}`.padEnd(20, 'x');
    return {
      selfId,
      joinRoom(config, roomId, callbacks = {}) {
        if (net.crashed.has(selfId)) return new FakeRoom(net, selfId, config, roomId, callbacks, { form, events, mute: true }).api; // a dead process
        for (const r of net.rooms) if (r.selfId === selfId && r.roomId === roomId && r.config.appId === config.appId) return r.api;
        const room = new FakeRoom(net, selfId, config, roomId, callbacks, { form, events, mute });
        net._join(room);
        return room.api;
      },
    };
  }

  _join(room) {
    for (const other of this.rooms) {
      if (other.config.appId !== room.config.appId || other.roomId !== room.roomId || other.selfId === room.selfId) continue;
      if ((other.config.password ?? '') !== (room.config.password ?? '')) {
        setTimeout(() => {
          room.callbacks.onJoinError?.({ error: 'incorrect room password when decrypting offer', peerId: other.selfId });
          other.callbacks.onJoinError?.({ error: 'incorrect room password when decrypting offer', peerId: room.selfId });
        }, 1);
        continue;
      }
      this._pairUp(room, other);
    }
    this.rooms.add(room);
  }

  /** Two rooms of one name at two modules: attach them over the modules' connection, making one if there is none. */
  _pairUp(room, other) {
    const key = pairKey(room.selfId, other.selfId);
    const pair = this.pairs.get(key);
    const delay = pair?.open ? 1 : this.signalMs;
    setTimeout(() => {
      if (!this.rooms.has(room) || !this.rooms.has(other) || room.peers.has(other.selfId)) return;
      if (this.crashed.has(room.selfId) || this.crashed.has(other.selfId)) return;
      let p = this.pairs.get(key);
      if (!p?.open && this.blocked.has(key)) return;
      if (!p?.open) {
        p = { open: true, sides: { [room.selfId]: new FakePC(this, key), [other.selfId]: new FakePC(this, key) }, room: room.roomId, at: Date.now() };
        this.pairs.set(key, p);
        this.opened++;
      }
      room.peers.add(other.selfId);
      other.peers.add(room.selfId);
      other._fire('join', room.selfId);
      room._fire('join', other.selfId);
    }, delay);
  }

  pc(selfId, peerId) {
    const p = this.pairs.get(pairKey(selfId, peerId));
    return p?.open ? p.sides[selfId] : null;
  }

  _closePair(key) {
    const p = this.pairs.get(key);
    if (!p?.open) return;
    p.open = false;
    for (const pc of Object.values(p.sides)) pc.connectionState = pc.iceConnectionState = 'closed';
    const [a, b] = key.split('|');
    // the data channel closed: every room of either side drops the other
    const both = [];
    for (const r of this.rooms) {
      if ((r.selfId === a && r.peers.has(b)) || (r.selfId === b && r.peers.has(a))) {
        const other = r.selfId === a ? b : a;
        r.peers.delete(other);
        r._fire('leave', other);
      }
    }
    // rooms both still hold connect again (their next announcement)
    for (const r of this.rooms) {
      if (r.selfId !== a) continue;
      for (const o of this.rooms) if (o.selfId === b && o.roomId === r.roomId && o.config.appId === r.config.appId) both.push([r, o]);
    }
    for (const [r, o] of both) this._pairUp(r, o);
  }

  /** The module dies silently; the others' rooms drop it after crashDetectMs. */
  crash(selfId) {
    this.crashed.add(selfId);
    for (const r of [...this.rooms]) if (r.selfId === selfId) this.rooms.delete(r);
    setTimeout(() => {
      for (const [key, p] of this.pairs) {
        if (!p.open || !key.split('|').includes(selfId)) continue;
        p.open = false;
        for (const pc of Object.values(p.sides)) pc.connectionState = pc.iceConnectionState = 'closed';
      }
      for (const r of this.rooms) {
        if (!r.peers.has(selfId)) continue;
        r.peers.delete(selfId);
        r._fire('leave', selfId);
      }
    }, this.crashDetectMs);
  }

  block(a, b) {
    this.blocked.add(pairKey(a, b));
  }

  unblock(a, b) {
    this.blocked.delete(pairKey(a, b));
  }

  /** Open connections of a module. */
  connectionsOf(selfId) {
    let n = 0;
    for (const [key, p] of this.pairs) if (p.open && key.split('|').includes(selfId)) n++;
    return n;
  }

  /** The room of module selfId (its first one, or the one named roomId). */
  find(selfId, roomId = null) {
    for (const r of this.rooms) if (r.selfId === selfId && (roomId === null || r.roomId === roomId)) return r;
    return null;
  }

  /** Makes `room` report a connection failure for peerId (as Trystero's onJoinError does). */
  fail(selfId, peerId, error = `could not connect to peer ${peerId} after exchanging SDP; configure TURN servers`) {
    this.find(selfId).callbacks.onJoinError?.({ error, peerId, appId: 'x', roomId: 'y' });
  }

  sent(action, from = null) {
    return this.log.filter((e) => e.action === action && (from === null || e.from === from));
  }
}

class FakeRoom {
  constructor(net, selfId, config, roomId, callbacks, { form, events, mute }) {
    Object.assign(this, { net, selfId, config, roomId, callbacks, form, mute });
    this.peers = new Set();
    this.handlers = new Map();
    this.joinFn = null;
    this.leaveFn = null;
    const room = this;
    const api = {
      makeAction: (name) => room._action(name),
      leave: async () => room._leave(),
      getPeers: () => Object.fromEntries([...room.peers].map((id) => [id, net.pc(selfId, id) ?? new StatsPC()])),
    };
    if (events === 'property') {
      Object.defineProperty(api, 'onPeerJoin', { get: () => room.joinFn, set: (fn) => { room.joinFn = fn; }, enumerable: true });
      Object.defineProperty(api, 'onPeerLeave', { get: () => room.leaveFn, set: (fn) => { room.leaveFn = fn; }, enumerable: true });
    } else {
      api.onPeerJoin = (fn) => { room.joinFn = fn; };
      api.onPeerLeave = (fn) => { room.leaveFn = fn; };
    }
    this.api = api;
  }

  _fire(kind, peerId) {
    (kind === 'join' ? this.joinFn : this.leaveFn)?.(peerId);
  }

  _deliver(name, data, to) {
    if (this.mute || this.net.crashed.has(this.selfId)) return;
    const target = this.net.find(to, this.roomId);
    if (!target || !target.peers.has(this.selfId) || target.config.appId !== this.config.appId) return;
    const binary = data instanceof ArrayBuffer || ArrayBuffer.isView(data);
    const bytes = binary ? new Uint8Array(data instanceof ArrayBuffer ? data : data.buffer, data.byteOffset ?? 0, data.byteLength) : null;
    const copy = binary ? new Uint8Array(bytes) : JSON.parse(JSON.stringify(data)); // Trystero hands binary back as a Uint8Array
    this.net.log.push({ from: this.selfId, to, action: name, bytes: binary ? bytes.byteLength : 0, data: binary ? null : copy, room: this.roomId });
    setTimeout(() => {
      if (target.mute || !this.net.rooms.has(target)) return;
      const fn = target.handlers.get(name);
      if (!fn) return;
      if (target.form === 'object') fn(copy, { peerId: this.selfId });
      else fn(copy, this.selfId);
    }, 0);
  }

  _send(name, data, targets) {
    const list = targets == null ? [...this.peers] : [].concat(targets);
    const bytes = data?.byteLength ?? 0;
    if (this.net.bytesPerMs && bytes > 0) {
      // Like Trystero under backpressure: a large send takes a while, a small one overtakes it.
      return new Promise((done) => setTimeout(() => {
        for (const to of list) this._deliver(name, data, to);
        done();
      }, bytes / this.net.bytesPerMs));
    }
    for (const to of list) this._deliver(name, data, to);
    return Promise.resolve();
  }

  _action(name) {
    if (this.form === 'tuple') {
      return [(data, targets) => this._send(name, data, targets), (fn) => this.handlers.set(name, fn), () => {}];
    }
    const room = this;
    return {
      send: (data, options = {}) => room._send(name, data, options.target),
      get onMessage() { return room.handlers.get(name) ?? null; },
      set onMessage(fn) { room.handlers.set(name, fn); },
      onReceiveProgress: null,
    };
  }

  _leave() {
    if (!this.net.rooms.delete(this)) return;
    for (const id of this.peers) {
      const other = this.net.find(id, this.roomId);
      if (!other) continue;
      other.peers.delete(this.selfId);
      other._fire('leave', this.selfId);
    }
    this.peers.clear();
  }
}
