// relay_watch.js - which signalling relays the page's WebRTC room reaches,
// for the "Across devices" panel (room_ui.js). Trystero's Nostr strategy
// keeps one WebSocket per relay URL (its getRelaySockets(): { url: WebSocket },
// a new socket object on every reconnection attempt) and reports failures
// only on the console. This listens to each socket's open, error and close
// events, so a relay that refuses the connection or whose name does not
// resolve is named as soon as its socket fails, and one still connecting
// waitMs after the watch began is named too; a relay that connects later
// (Trystero retries for about two minutes) leaves the list at once.
//
//   const watch = new RelayWatch({ sockets: trystero.getRelaySockets, onChange, waitMs = RELAY_WAIT_MS });
//   watch.poll()        picks up the sockets Trystero made since (call it every second or so)
//   watch.relays()      [{ url, state: 'connected' | 'connecting' | 'unreachable', why }]
//   watch.unreachable() the unreachable ones; watch.close() stops listening
// Page side; `sockets` may be missing (another ?p2p= module): then it lists nothing.

export const RELAY_WAIT_MS = 8000;
const OPEN = 1;

export class RelayWatch {
  constructor({ sockets, waitMs = RELAY_WAIT_MS, now = () => Date.now(), onChange = () => {} } = {}) {
    this._sockets = typeof sockets === 'function' ? sockets : () => ({});
    this.waitMs = waitMs;
    this._now = now;
    this._onChange = onChange;
    this._began = now();
    this._state = new Map(); // url -> { socket (the one listened to), open, failed (why, until it opens) }
    this._closed = false;
    this._timer = setTimeout(() => this._changed(), waitMs);
    this.poll();
  }

  poll() {
    if (this._closed) return;
    let sockets;
    try {
      sockets = this._sockets() ?? {};
    } catch {
      return;
    }
    for (const [url, socket] of Object.entries(sockets)) {
      let st = this._state.get(url);
      if (!st) this._state.set(url, st = { socket: null, open: false, failed: null });
      if (!socket || st.socket === socket) continue;
      st.socket = socket;
      const opened = () => {
        if (st.socket !== socket) return;
        Object.assign(st, { open: true, failed: null });
        this._changed();
      };
      const failed = () => {
        if (st.socket !== socket) return;
        st.failed = st.open ? 'connection lost' : st.failed ?? 'connection failed';
        st.open = false;
        this._changed();
      };
      socket.addEventListener?.('open', opened);
      socket.addEventListener?.('error', failed);
      socket.addEventListener?.('close', failed);
      if (socket.readyState === OPEN) opened();
      else if (socket.readyState > OPEN) failed(); // closing or closed before we looked
    }
  }

  relays() {
    const waited = this._now() - this._began >= this.waitMs;
    return [...this._state].map(([url, st]) => {
      if (st.open) return { url, state: 'connected', why: '' };
      if (st.failed) return { url, state: 'unreachable', why: st.failed };
      if (waited) return { url, state: 'unreachable', why: `no answer after ${Math.round(this.waitMs / 1000)} s` };
      return { url, state: 'connecting', why: '' };
    });
  }

  unreachable() {
    return this.relays().filter((r) => r.state === 'unreachable');
  }

  close() {
    this._closed = true;
    clearTimeout(this._timer);
  }

  _changed() {
    if (!this._closed) this._onChange(this);
  }
}
