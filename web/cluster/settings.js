// settings.js - what a user may ask of cluster.html, checked in one place for
// the page (form and URL) and the Worker (whatever reaches it): model,
// backend, batch per rank, learning rate, step limit, first-step cohort size
// and the room fields. Every refusal is a plain sentence naming the setting
// and the accepted range; nothing here throws a stack at the user.
//
//   const { settings, errors } = checkSettings(raw, { models: ['mnist-cnn', ...] });
//   errors: [] or ['learning rate: ...', ...]; settings: the parsed values.

export const BACKENDS = Object.freeze(['auto', 'cpu', 'webgpu', 'webgl']);
export const LIMITS = Object.freeze({
  batch: [1, 512], // samples per rank and step (a 2 GB wasm memory holds far more; a step should stay short)
  lr: [0, 1e9], // exclusive of 0; a huge rate is allowed (it diverges, and the run says so)
  steps: [0, 1_000_000], // 0: never stop
  min: [1, 64], // ranks the first step waits for
});
const ROOM = /^[A-Za-z0-9_-]{4,64}$/;

function number(text) {
  if (typeof text === 'number') return text;
  if (typeof text !== 'string' || text.trim() === '') return NaN;
  return Number(text);
}

function integer(name, label, raw, [lo, hi], errors) {
  const v = number(raw);
  if (!Number.isInteger(v) || v < lo || v > hi) {
    errors.push(`${label}: ${JSON.stringify(String(raw ?? ''))} is not a whole number from ${lo} to ${hi.toLocaleString('en')}`);
    return null;
  }
  return v;
}

/**
 * raw: { model, backend, batch, lr, steps, min, room?, password? } as strings
 * (form or URL) or numbers; models: the known slugs. Returns
 * { settings: { model, backend, batch, lr, steps, min, room, password }, errors }.
 */
export function checkSettings(raw, { models = [] } = {}) {
  const errors = [];
  const model = String(raw.model ?? '');
  if (!models.includes(model)) {
    errors.push(`model: ${JSON.stringify(model)} is not one of ${models.join(', ') || '(no models loaded)'}`);
  }
  const backend = String(raw.backend ?? 'auto');
  if (!BACKENDS.includes(backend)) errors.push(`backend: ${JSON.stringify(backend)} is not one of ${BACKENDS.join(', ')}`);
  const batch = integer('batch', 'batch per rank', raw.batch, LIMITS.batch, errors);
  const lrValue = number(raw.lr);
  let lr = null;
  if (!Number.isFinite(lrValue) || lrValue <= LIMITS.lr[0] || lrValue > LIMITS.lr[1]) {
    errors.push(`learning rate: ${JSON.stringify(String(raw.lr ?? ''))} is not a number above 0 and at most ${LIMITS.lr[1].toExponential()}`);
  } else {
    lr = lrValue;
  }
  const steps = integer('steps', 'stop at step', raw.steps ?? '0', LIMITS.steps, errors);
  const min = integer('min', 'ranks to wait for', raw.min ?? '1', LIMITS.min, errors);
  const room = raw.room ? String(raw.room) : '';
  if (room && !ROOM.test(room)) errors.push('room: a room id is 4 to 64 letters, digits, - or _');
  const password = raw.password ? String(raw.password) : '';
  if (password.length > 256) errors.push('room password: at most 256 characters');
  return { settings: { model, backend, batch, lr, steps, min, room, password }, errors };
}

/** A fresh random room id and password (URL-safe). */
export function newRoom(cryptoImpl = globalThis.crypto) {
  const text = (n) => Array.from(cryptoImpl.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, '0')).join('');
  return { room: text(6), password: text(12) };
}
