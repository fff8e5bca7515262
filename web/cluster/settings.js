// settings.js - what a user may ask of cluster.html, checked in one place for
// the page (form and URL) and the Worker (whatever reaches it): model,
// backend, batch per rank, learning rate, step limit, first-step cohort size,
// the room fields, and how the cohort syncs (checkScale: payload encoding,
// lockstep or periodic averaging, aggregation rule and clipping; they
// travel in the leader's settings, see protocol.js). Every refusal is a
// plain sentence naming the setting and the accepted range; nothing here
// throws a stack at the user.
//
//   const { settings, errors } = checkSettings(raw, { models: ['mnist-cnn', ...] });
//   errors: [] or ['learning rate: ...', ...]; settings: the parsed values.
//   A refusal names the setting by its label (LABELS: the page's field labels);
//   with { byKey: true } by its key instead (raw from the URL: 'steps: "x" ...').

export const BACKENDS = Object.freeze(['auto', 'cpu', 'webgpu', 'webgl']);
export const LIMITS = Object.freeze({
  batch: [1, 512], // samples per rank and step (a 2 GB wasm memory holds far more; a step should stay short)
  lr: [0, 1e9], // exclusive of 0; a huge rate is allowed (it diverges, and the run says so)
  steps: [0, 1_000_000], // 0: never stop
  min: [1, 64], // ranks the first step waits for
});
const ROOM = /^[A-Za-z0-9_-]{4,64}$/;

// How the cohort syncs: defaults and ranges (compress.js, periodic.js, robust.js).
export const SCALE_DEFAULTS = Object.freeze({
  enc: 'auto', // auto: f32 up to 3 ranks, int8 from 4
  sync: 'lockstep',
  H: 8, // local steps per round in periodic mode
  outerLr: 0.7,
  outerMomentum: 0.9,
  agg: 'mean',
  clip: 0, // a multiple of the step's median bucket norm; 0: off
  clipMax: 0, // a fixed largest bucket norm; 0: off
  strikes: 5, // bad buckets in a row that exclude a peer (with agg or clip on)
});
export const SCALE_CHOICES = Object.freeze({
  enc: ['auto', 'f32', 'f16', 'int8'],
  sync: ['lockstep', 'periodic'],
  agg: ['mean', 'trimmed', 'median'],
});
export const SCALE_LIMITS = Object.freeze({
  H: [1, 1000],
  outerLr: [0, 10], // exclusive of 0
  outerMomentum: [0, 0.999],
  clip: [0, 1e6],
  clipMax: [0, 1e12],
  strikes: [1, 1000],
});
export const LABELS = Object.freeze({
  model: 'model', backend: 'backend', batch: 'batch per rank', lr: 'learning rate', steps: 'stop at step',
  min: 'ranks to wait for', room: 'room', password: 'room password',
  enc: 'encoding', sync: 'sync', H: 'local steps H', outerLr: 'outer learning rate', outerMomentum: 'outer momentum',
  agg: 'aggregation', clip: 'clip (x median norm)', clipMax: 'clip (largest norm)', strikes: 'strikes',
});
const labelOf = (byKey) => (key) => (byKey ? key : LABELS[key]);

// A fine-tuning run (task_llm.js): its settings field `model` is LLM_MODEL (the
// task's identity, base file and text hashes, replaces it in the handshake),
// and its LoRA shape, every rank's the same or refused.
export const LLM_MODEL = 'lora';
export const LORA_DEFAULTS = Object.freeze({ rank: 4, alpha: 8, targets: 'attn_q,attn_v', seq: 32 });
export const LORA_LIMITS = Object.freeze({ rank: [1, 256], alpha: [0, 1e4], seq: [2, 4096] });
export const LORA_TARGETS = Object.freeze(['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down']);
export const LORA_LABELS = Object.freeze({ rank: 'LoRA rank', alpha: 'LoRA alpha', targets: 'LoRA targets', seq: 'window length (tokens)' });

/** The LoRA settings of raw (missing ones take LORA_DEFAULTS): { settings, errors }. */
export function checkLora(raw = {}) {
  const errors = [];
  const pick = (k) => (raw[k] === undefined || raw[k] === null || raw[k] === '' ? LORA_DEFAULTS[k] : raw[k]);
  const rank = integer(LORA_LABELS.rank, pick('rank'), LORA_LIMITS.rank, errors);
  const seq = integer(LORA_LABELS.seq, pick('seq'), LORA_LIMITS.seq, errors);
  const alpha = number(pick('alpha'));
  if (!(alpha > LORA_LIMITS.alpha[0] && alpha <= LORA_LIMITS.alpha[1])) errors.push(`${LORA_LABELS.alpha}: ${JSON.stringify(String(raw.alpha).slice(0, 32))} is not a number above 0 and at most ${LORA_LIMITS.alpha[1]}`);
  const names = String(pick('targets')).split(',').map((t) => t.trim()).filter(Boolean);
  const bad = names.filter((t) => t !== 'all' && !LORA_TARGETS.includes(t));
  if (!names.length || bad.length) errors.push(`${LORA_LABELS.targets}: ${JSON.stringify(bad.join(',').slice(0, 64))} is not a comma list of ${LORA_TARGETS.join(', ')} or all`);
  return { settings: { rank, alpha, seq, targets: names.join(',') }, errors };
}

/** The sync settings of raw (missing ones take SCALE_DEFAULTS): { scale, errors }. */
export function checkScale(raw = {}, { byKey = false } = {}) {
  const errors = [];
  const scale = {};
  const labelFor = labelOf(byKey);
  for (const [key, def] of Object.entries(SCALE_DEFAULTS)) {
    const given = raw[key];
    const label = labelFor(key);
    if (given === undefined || given === null || given === '') {
      scale[key] = def;
    } else if (SCALE_CHOICES[key]) {
      const v = typeof given === 'string' || typeof given === 'number' ? String(given) : `(${typeof given})`;
      if (SCALE_CHOICES[key].includes(v)) scale[key] = v;
      else errors.push(`${label}: ${JSON.stringify(v.slice(0, 32))} is not one of ${SCALE_CHOICES[key].join(', ')}`);
    } else if (key === 'H' || key === 'strikes') {
      scale[key] = integer(label, given, SCALE_LIMITS[key], errors);
    } else {
      const v = number(given);
      const [lo, hi] = SCALE_LIMITS[key];
      const ok = Number.isFinite(v) && v <= hi && (key === 'outerLr' ? v > lo : v >= lo);
      if (ok) scale[key] = v;
      else errors.push(`${label}: ${JSON.stringify(typeof given === 'string' ? given.slice(0, 32) : typeof given)} is not a number ${key === 'outerLr' ? 'above' : 'from'} ${lo} ${key === 'outerLr' ? 'and at most' : 'to'} ${hi}`);
    }
  }
  return { scale, errors };
}

function number(text) {
  if (typeof text === 'number') return text;
  if (typeof text !== 'string' || text.trim() === '') return NaN;
  return Number(text);
}

function integer(label, raw, [lo, hi], errors) {
  const v = number(raw);
  if (!Number.isInteger(v) || v < lo || v > hi) {
    errors.push(`${label}: ${JSON.stringify(String(raw ?? ''))} is not a whole number from ${lo} to ${hi.toLocaleString('en')}`);
    return null;
  }
  return v;
}

/**
 * raw: { model, backend, batch, lr, steps, min, room?, password?, and the
 * keys of SCALE_DEFAULTS? } as strings (form or URL) or numbers; models: the
 * known slugs. Returns
 * { settings: { model, backend, batch, lr, steps, min, room, password, scale }, errors }.
 */
export function checkSettings(raw, { models = [], byKey = false } = {}) {
  const errors = [];
  const label = labelOf(byKey);
  const model = String(raw.model ?? '');
  if (!models.includes(model)) {
    errors.push(`${label('model')}: ${JSON.stringify(model)} is not one of ${models.join(', ') || '(no models loaded)'}`);
  }
  const backend = String(raw.backend ?? 'auto');
  if (!BACKENDS.includes(backend)) errors.push(`${label('backend')}: ${JSON.stringify(backend)} is not one of ${BACKENDS.join(', ')}`);
  const batch = integer(label('batch'), raw.batch, LIMITS.batch, errors);
  const lrValue = number(raw.lr);
  let lr = null;
  if (!Number.isFinite(lrValue) || lrValue <= LIMITS.lr[0] || lrValue > LIMITS.lr[1]) {
    errors.push(`${label('lr')}: ${JSON.stringify(String(raw.lr ?? ''))} is not a number above 0 and at most ${LIMITS.lr[1].toExponential()}`);
  } else {
    lr = lrValue;
  }
  const steps = integer(label('steps'), raw.steps ?? '0', LIMITS.steps, errors);
  const min = integer(label('min'), raw.min ?? '1', LIMITS.min, errors);
  const room = raw.room ? String(raw.room) : '';
  if (room && !ROOM.test(room)) errors.push(`${label('room')}: a room id is 4 to 64 letters, digits, - or _`);
  const password = raw.password ? String(raw.password) : '';
  if (password.length > 256) errors.push(`${label('password')}: at most 256 characters`);
  const { scale, errors: scaleErrors } = checkScale(raw, { byKey });
  errors.push(...scaleErrors);
  return { settings: { model, backend, batch, lr, steps, min, room, password, scale }, errors };
}

/** A fresh random room id and password (URL-safe). */
export function newRoom(cryptoImpl = globalThis.crypto) {
  const text = (n) => Array.from(cryptoImpl.getRandomValues(new Uint8Array(n)), (b) => b.toString(16).padStart(2, '0')).join('');
  return { room: text(6), password: text(12) };
}
