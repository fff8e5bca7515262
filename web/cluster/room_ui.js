// room_ui.js - the "Across devices" panel of cluster.html: open or join a
// WebRTC room (mesh.js MeshLink over the bundled Trystero), add it to the
// page's fabric (fabric.js) so the rank in the Worker reaches the room's
// peers as it reaches this browser's tabs, and show what a user needs to get
// a second device in and to see why one does not connect: the join URL and
// its QR code (qr.js), the ICE preflight (before any peer exists), one row
// per peer (handshake, connection state, selected candidate pair, candidates
// gathered and received, bytes), per-peer failures with the case that
// applies, refusals (another model or protocol) with their reason, and the
// signalling relays that do not answer (relay_watch.js), named within
// RELAY_WAIT_MS with what to do.
//
// Open a room (and Join) put this tab's rank in the room's cohort: onEnter()
// starts it when none runs, and its first step waits for ROOM_MIN ranks, as
// the join URL's does (min=): the opener and the first device that joins
// train from the cohort's first step, and neither trains alone first.
//
// URL options: ?room=ID&password=P (join on load), &relays=ws://...,wss://...
// (signalling relays), &turn=url|user|cred;... (TURN after the default STUN),
// &ice=relay (relay candidates only: everything through TURN), &stun=none or
// &stun=stun:host:port,... (instead of the default public STUN servers; none: a
// LAN or loopback-only room), &p2p=URL (another Trystero module), &mesh=partial|full|auto
// (the room's connections, partial_mesh.js: a full mesh up to policy.meshAbove peers,
// a partial mesh of the tree's links and a ring above; &fanout= applies to both). No
// RTCPeerConnection is made in the Worker: this runs on the page. A bad URL
// option is named when the page loads (urlProblem()), not only at Join.
import { loadTrystero, parseTurn, parseRelays, iceConfig, preflightFor, classifyIce, DEFAULT_TRYSTERO_URL,
  DEFAULT_ICE_SERVERS } from './mesh.js';
import { RoomMesh } from './partial_mesh.js';
import { meshFor, meshOverrides, topologyOverrides, DEFAULT_POLICY } from './policy.js';
import { drawQr } from './qr.js';
import { checkSettings, newRoom } from './settings.js';
import { RelayWatch } from './relay_watch.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

/** Ranks the first step of a room's cohort waits for: the opener and one device. */
export const ROOM_MIN = 2;

const $ = (id) => document.getElementById(id);
const short = (id) => (id ? id.slice(0, 8) : '-');
const DIAG_MS = 1000;

function show(id, value, text = String(value)) {
  const el = $(id);
  el.textContent = text;
  el.dataset.value = value === null || value === undefined ? '' : String(value);
}

function cell(tr, text) {
  const td = document.createElement('td');
  td.textContent = text;
  tr.append(td);
}

const pair = (p) => (p ? `${p.local?.candidateType ?? '?'} ${p.local?.protocol ?? ''} -> ${p.remote?.candidateType ?? '?'}` : '-');
const counts = (c) => (c ? `${c.total} (h${c.host} s${c.srflx} r${c.relay})` : '-');

export class RoomPanel {
  /**
   * fabric: the page's Fabric; model(): { slug, paramCount } of the model
   * chosen now; query: the page's URLSearchParams; onChange(): the room
   * state changed (the page re-enables controls); onEnter(): Open a room or
   * Join put this page in a room (the page starts its rank); prepare():
   * awaited before joining (a fine-tuning choice is read and hashed, so
   * model() names it); joinQuery(): the task's keys of the join URL
   * (default { model: model().slug }).
   */
  constructor({ fabric, model, query, onChange = () => {}, onEnter = () => {}, prepare = async () => {}, joinQuery = null }) {
    this.fabric = fabric;
    this.model = model;
    this.prepare = prepare;
    this.joinQuery = joinQuery ?? (() => ({ model: this.model().slug }));
    this.query = query;
    this.onChange = onChange;
    this.onEnter = onEnter;
    this.relayWatch = null;
    this.link = null;
    this.joinedAt = null;
    this.connectedAt = null;
    this.preflight = null;
    this.failures = [];
    this.refusals = [];
    this.lastDiagnostics = null;
    this._timer = 0;
    this._config = null;
    $('room-open').addEventListener('click', () => this.open());
    $('room-join').addEventListener('click', () => this.join().then(() => this.link && this.onEnter()));
    $('room-leave').addEventListener('click', () => this.leave());
    $('room-copy').addEventListener('click', () => navigator.clipboard?.writeText($('room-url').dataset.value ?? ''));
    $('room-id').value = query.get('room') ?? '';
    $('room-password').value = query.get('password') ?? '';
    this._render();
    const problem = this.urlProblem();
    if (problem) this._error(`In the URL: ${problem}.`);
  }

  get joined() {
    return !!this.link;
  }

  /** What is wrong with the room's URL options (a sentence naming the option), or ''. */
  urlProblem() {
    try {
      this._urlConfig();
      return '';
    } catch (err) {
      return err.message;
    }
  }

  /** The options of the URL, checked: { relays, turn, relayOnly, p2p } or throws an RlxError (INVALID_ARG). */
  _urlConfig() {
    const q = this.query;
    const named = (key, parse) => {
      try {
        return parse();
      } catch (err) {
        throw new RlxError(STATUS.INVALID_ARG, `${key}: ${err.message.replace(new RegExp(`^${key}: `), '')}`);
      }
    };
    const relays = q.get('relays') ? named('relays', () => parseRelays(q.get('relays'))) : [];
    const turn = q.get('turn') ? parseTurn(q.get('turn')) : [];
    const relayOnly = q.get('ice') === 'relay';
    if (q.get('ice') && !relayOnly) throw new RlxError(STATUS.INVALID_ARG, `ice: ${JSON.stringify(q.get('ice'))} is not "relay" (the only option)`);
    if (relayOnly && !turn.length) throw new RlxError(STATUS.INVALID_ARG, 'ice=relay needs a TURN server: add &turn=turn:HOST:PORT|USER|CREDENTIAL');
    const p2p = q.get('p2p') ? named('p2p', () => {
      try {
        return new URL(q.get('p2p'), location.href).href;
      } catch {
        throw new RlxError(STATUS.INVALID_ARG, `${JSON.stringify(q.get('p2p'))} is not a URL`);
      }
    }) : DEFAULT_TRYSTERO_URL;
    const stunText = q.get('stun');
    let stun = DEFAULT_ICE_SERVERS;
    if (stunText === 'none') stun = [];
    else if (stunText) {
      stun = stunText.split(',').map((u) => u.trim()).filter(Boolean).map((urls) => {
        if (!/^stuns?:[^\s,]+$/i.test(urls)) throw new RlxError(STATUS.INVALID_ARG, `stun: ${JSON.stringify(urls)} is not a stun: URL (or use stun=none)`);
        return { urls };
      });
    }
    const mesh = meshOverrides({ mesh: q.get('mesh') ?? '' });
    const topo = topologyOverrides({ fanout: q.get('fanout') ?? '' });
    const errors = [...mesh.errors, ...topo.errors];
    if (errors.length) throw new RlxError(STATUS.INVALID_ARG, errors.join('; '));
    return { relays, turn, relayOnly, p2p, stun, meshPolicy: { ...mesh.overrides, ...topo.overrides } };
  }

  /** A fresh room id and password, then join it; the page's rank goes in with it (onEnter). */
  async open() {
    const { room, password } = newRoom();
    $('room-id').value = room;
    $('room-password').value = password;
    await this.join();
    if (this.link) this.onEnter();
  }

  /** Joins the room of the form fields (a second call while in one is ignored). */
  async join() {
    if (this.link) return;
    this._error('');
    try {
      await this.prepare();
    } catch (err) {
      return this._error(`Cannot join: ${err.message}`);
    }
    if (this.link) return;
    const { settings, errors } = checkSettings({ model: this.model().slug, batch: 1, lr: 1, room: $('room-id').value.trim(),
      password: $('room-password').value }, { models: [this.model().slug] });
    if (!settings.room) errors.push('room: enter a room id, or press Open a room');
    if (errors.length) return this._error(`Cannot join: ${errors.join('; ')}.`);
    let config;
    let trystero;
    try {
      config = this._urlConfig();
    } catch (err) {
      return this._error(`Cannot join: ${err.message}.`);
    }
    show('room-state', 'joining', 'loading the WebRTC module...');
    try {
      trystero = await loadTrystero(config.p2p);
    } catch (err) {
      show('room-state', 'error', 'not in a room');
      return this._error(`Cannot join: the WebRTC module ${config.p2p} did not load: ${err.message}`);
    }
    const rtcConfig = iceConfig({ turn: config.turn, relayOnly: config.relayOnly, stun: config.stun });
    this._config = { ...config, rtcConfig, room: settings.room, password: settings.password };
    // the preflight runs before any peer exists, beside the join
    preflightFor(rtcConfig).then((p) => {
      this.preflight = p;
      if (this.link) this.link.preflight = p;
      this._renderPreflight();
    }, (err) => show('preflight', 'error', `preflight failed: ${err.message}`));
    const { slug, paramCount } = this.model();
    try {
      this.link = new RoomMesh({ trystero, roomId: settings.room, password: settings.password, relayUrls: config.relays, rtcConfig,
        slug, paramCount, selfRank: () => this.fabric.selfId, identity: () => this.fabric.identity ?? null, policy: config.meshPolicy, onEvent: (type, detail) => this._event(type, detail) });
    } catch (err) {
      show('room-state', 'error', 'not in a room');
      return this._error(`Cannot join: ${err.message}`);
    }
    this.joinedAt = performance.now();
    this.connectedAt = null;
    this.failures = [];
    this.refusals = [];
    this.fabric.add('room', this.link);
    this.relayWatch = new RelayWatch({ sockets: trystero.getRelaySockets, onChange: () => this._renderRelays() });
    this._timer = setInterval(() => this._diagnose(), DIAG_MS);
    this._render();
    this.onChange();
  }

  async leave() {
    if (!this.link) return;
    clearInterval(this._timer);
    this.relayWatch?.close();
    this.relayWatch = null;
    this._renderRelays();
    this.fabric.remove('room');
    const link = this.link;
    this.link = null;
    await link.close();
    this._render();
    this.onChange();
  }

  /** The join URL: this page with the room, the model and the transport options, and autostart. */
  joinUrl() {
    const c = this._config;
    const u = new URL(location.pathname, location.href);
    u.searchParams.set('room', c.room);
    if (c.password) u.searchParams.set('password', c.password);
    for (const [k, v] of Object.entries(this.joinQuery())) u.searchParams.set(k, v);
    for (const key of ['relays', 'turn', 'ice', 'stun', 'p2p', 'mesh', 'fanout']) if (this.query.get(key)) u.searchParams.set(key, this.query.get(key));
    u.searchParams.set('min', String(ROOM_MIN));
    u.searchParams.set('autostart', '1');
    return u.href;
  }

  /** For the tests and the debug hook. */
  snapshot() {
    return {
      joined: this.joined,
      room: this._config?.room ?? null,
      accepted: this.link?.acceptedCount ?? 0,
      connectMs: this.connectedAt !== null ? this.connectedAt - this.joinedAt : null,
      preflight: this.preflight,
      diagnostics: this.lastDiagnostics,
      failures: this.failures.slice(),
      refusals: this.refusals.slice(),
      stats: this.link ? { sent: this.link.stats.sent, received: this.link.stats.received, bytesOut: this.link.stats.bytesOut, bytesIn: this.link.stats.bytesIn } : null,
      connections: this.link?.connections() ?? null, // mode, held, accepted, overlay links (partial_mesh.js)
      overlay: this.link?.debug?.() ?? null, // the partial mesh's roster and each link's peers
      relays: this.relayWatch?.relays() ?? [],
      url: this.joined ? this.joinUrl() : null,
    };
  }

  _event(type, d) {
    if (type === 'peer-accepted' && this.connectedAt === null) this.connectedAt = performance.now();
    if (type === 'peer-accepted') this._healed(d.peerId);
    if (type === 'peer-refused') {
      this.refusals.push({ peerId: d.peerId, reason: d.reason, side: d.side });
      this._renderRefusals();
    }
    if (type === 'peer-failed') {
      const diagnosis = classifyIce({ preflight: this.preflight, peer: d.diagnostics ?? null });
      this.failures.push({ peerId: d.peerId, message: d.message, case: d.case ?? diagnosis.case });
      this._error(d.message);
    }
    if (type === 'peer-accepted' || type === 'peer-leave' || type === 'peer-refused' || type === 'peer-failed') this._render();
  }

  /** A peer that failed and then connected: its failure goes, and the message with it when it is the one shown. */
  _healed(peerId) {
    const gone = this.failures.filter((f) => f.peerId === peerId);
    if (!gone.length) return;
    this.failures = this.failures.filter((f) => f.peerId !== peerId);
    if (gone.some((f) => f.message === $('room-error').textContent)) this._error('');
  }

  async _diagnose() {
    if (!this.link) return;
    this.relayWatch?.poll();
    try {
      this.lastDiagnostics = await this.link.diagnostics();
    } catch (err) {
      this._error(`diagnostics failed: ${err.message}`);
      return;
    }
    this._renderPeers();
    this._renderState();
  }

  _error(text) {
    show('room-error', text, text);
  }

  _render() {
    const on = this.joined;
    $('room-open').disabled = on;
    $('room-join').disabled = on;
    $('room-leave').disabled = !on;
    $('room-id').disabled = on;
    $('room-password').disabled = on;
    $('room-share').hidden = !on;
    if (on) {
      const url = this.joinUrl();
      show('room-url', url, url);
      try {
        drawQr($('room-qr'), url, { scale: 4 });
        $('room-qr').dataset.value = url;
      } catch (err) {
        this._error(`QR code: ${err.message}`);
      }
    }
    this._renderState();
  }

  _renderState() {
    this._renderMesh();
    if (!this.link) {
      show('room-state', 'none', 'not in a room (tabs of this browser still train together)');
      return;
    }
    const n = this.link.acceptedCount;
    const ms = this.connectedAt !== null ? `, first peer after ${Math.round(this.connectedAt - this.joinedAt)} ms` : '';
    show('room-state', n > 0 ? 'connected' : 'waiting',
      `room ${this._config.room}: ${n} peer${n === 1 ? '' : 's'} connected${ms}${this._config.relayOnly ? ' (relay only)' : ''}`);
  }

  /** The policy panel's room connections: the threshold, the fan-out, and what this page holds now. */
  _renderMesh() {
    let policy;
    try {
      policy = this._config?.meshPolicy ?? this._urlConfig().meshPolicy;
    } catch {
      return; // the URL's error is shown when joining
    }
    const { meshAbove } = meshFor(1, policy);
    const k = policy.fanout ?? DEFAULT_POLICY.fanout;
    const rule = meshAbove === 0 ? 'always a partial mesh' : Number.isFinite(meshAbove)
      ? `every peer connected up to ${meshAbove} peers, then a partial mesh` : 'always a full mesh';
    const c = this.link?.connections();
    const now = c ? `; this page: ${c.mode} mesh, ${c.held} connection${c.held === 1 ? '' : 's'}` : '';
    show('mesh', c ? `${c.mode}:${c.held}` : `${meshAbove}`, `${rule} (the tree's links and a ring: at most ${k} + 3 per peer)${now}`);
  }

  /** The relays that do not answer, by URL, and what to do; '' when every relay answers (relay_watch.js). */
  _renderRelays() {
    const el = $('room-relays');
    const all = this.relayWatch?.relays() ?? [];
    const bad = all.filter((r) => r.state === 'unreachable');
    const up = all.filter((r) => r.state === 'connected').length;
    el.hidden = all.length === 0;
    el.className = bad.length ? 'error' : 'note';
    el.dataset.value = bad.map((r) => r.url).join(' ');
    if (!bad.length) {
      el.textContent = all.length ? `Signalling relays: ${up} of ${all.length} connected.` : '';
      return;
    }
    el.textContent = `Signalling relay${bad.length > 1 ? 's' : ''} not reachable: ${bad.map((r) => `${r.url} (${r.why})`).join(', ')}; ` +
      `${up} of ${all.length} connected${up ? '' : ': no device can find this one'}. Devices meet through a signalling relay they ` +
      "share: check this device's network, or give every device the same reachable relays with " +
      '?relays=wss://HOST,wss://HOST2 in the page URL (node tools/nostr_relay.mjs runs one on a LAN).';
  }

  _renderPreflight() {
    const p = this.preflight;
    const refl = p.reflexive.length ? `; public address ${p.reflexive.join(', ')} (it is in screenshots too)` : '';
    const errs = p.errors.length ? `; ${p.errors.length} server error${p.errors.length > 1 ? 's' : ''} (${p.errors[0].errorCode} ${p.errors[0].errorText})` : '';
    show('preflight', `host=${p.host} srflx=${p.srflx} relay=${p.relay}`,
      `host ${p.host}, srflx ${p.srflx}, relay ${p.relay} in ${Math.round(p.ms)} ms${refl}${errs}`);
    const c = classifyIce({ preflight: p });
    show('preflight-case', c.case, c.case === 'unknown' ? '' : c.message);
  }

  _renderPeers() {
    const body = $('peers-table').tBodies[0];
    const d = this.lastDiagnostics;
    body.replaceChildren();
    for (const p of d?.peers ?? []) {
      const tr = document.createElement('tr');
      tr.dataset.peer = p.peerId;
      tr.dataset.state = p.connectionState ?? '';
      tr.dataset.pair = p.selectedPair ? `${p.selectedPair.local?.candidateType}/${p.selectedPair.remote?.candidateType}` : '';
      tr.dataset.handshake = p.handshake.state;
      cell(tr, short(p.peerId));
      cell(tr, p.handshake.state);
      cell(tr, p.connectionState ?? '-');
      cell(tr, pair(p.selectedPair));
      cell(tr, counts(p.localCandidates));
      cell(tr, counts(p.remoteCandidates));
      cell(tr, `${p.stats.bytesOut ?? 0} / ${p.stats.bytesIn ?? 0}`);
      body.append(tr);
      if (p.connectionState !== 'connected' && p.handshake.state !== 'refused') {
        const why = document.createElement('tr');
        why.className = 'reason';
        const td = document.createElement('td');
        td.colSpan = 7;
        const text = document.createElement('div'); // as wide as the screen, not the table (cluster.html)
        text.textContent = classifyIce({ preflight: this.preflight, peer: p }).message;
        td.append(text);
        why.append(td);
        body.append(why);
      }
    }
    $('peers-box').hidden = !(d?.peers?.length);
  }

  _renderRefusals() {
    $('room-refused').replaceChildren(...this.refusals.map((r) => {
      const li = document.createElement('li');
      li.dataset.side = r.side;
      li.textContent = `${short(r.peerId)} (${r.side === 'local' ? 'refused here' : 'refused us'}): ${r.reason}`;
      return li;
    }));
  }
}
