// sync_ui.js - the cohort-sync part of cluster.html: the few form fields
// (encoding, lockstep / periodic + H, aggregation, clip) and URL options
// (enc=, sync=, H=, agg=, clip=, and outerLr=, outerMomentum=, clipMax=,
// strikes= without a field) that settings.js checkScale checks, and the text
// of what the leader put in force. ui.js calls these; nothing here starts
// or trains anything.
import { encodingFor } from './compress.js';

const FIELDS = { enc: 'sync-enc', sync: 'sync-mode', H: 'sync-h', agg: 'sync-agg', clip: 'sync-clip' };
const URL_ONLY = ['outerLr', 'outerMomentum', 'clipMax', 'strikes'];

/** The raw sync settings: the form's fields, then URL-only options. */
export function scaleRaw($, query) {
  const raw = {};
  for (const [key, id] of Object.entries(FIELDS)) if ($(id)) raw[key] = $(id).value;
  for (const key of URL_ONLY) if (query.has(key)) raw[key] = query.get(key);
  return raw;
}

/** The URL's values of the fields' keys (h= for H= too), by key. */
export function scaleQuery(query) {
  const raw = {};
  for (const key of Object.keys(FIELDS)) {
    const v = query.get(key) ?? query.get(key.toLowerCase());
    if (v !== null) raw[key] = v;
  }
  return raw;
}

/** URL values into the fields but those of the keys in `skip` (refused: the field keeps its value). */
export function applyScaleQuery($, query, skip = new Set()) {
  for (const [key, v] of Object.entries(scaleQuery(query))) {
    const el = $(FIELDS[key]);
    if (skip.has(key) || !el) continue;
    if (el.tagName === 'SELECT' && ![...el.options].some((o) => o.value === v)) el.append(new Option(v, v));
    el.value = v;
  }
}

export function setScaleDisabled($, disabled) {
  for (const id of Object.values(FIELDS)) if ($(id)) $(id).disabled = disabled;
}

/** What the cohort's settings c mean, for `ranks` ranks: { enc, sync, agg } texts. */
export function scaleText(c, ranks) {
  const enc = c.enc ?? 'f32';
  const sent = encodingFor(enc, ranks);
  const encText = enc === 'auto' ? `auto: ${sent} at ${ranks} rank${ranks === 1 ? '' : 's'}` : sent;
  const sync = c.sync === 'periodic'
    ? `periodic: ${c.H} local steps, outer lr ${c.outerLr}, momentum ${c.outerMomentum}`
    : 'lockstep';
  const parts = [c.agg ?? 'mean'];
  if (c.clip > 0) parts.push(`clip ${c.clip}x median`);
  if (c.clipMax > 0) parts.push(`clip at ${c.clipMax}`);
  if ((c.agg && c.agg !== 'mean') || c.clip > 0 || c.clipMax > 0) parts.push(`exclude after ${c.strikes ?? 5} bad buckets`);
  return { enc: encText, sync, agg: parts.join(', ') };
}

/** Shows the sync settings in force (show: ui.js's (id, value, text)). */
export function renderScale(show, c, ranks) {
  const t = scaleText(c, ranks);
  show('cohort-enc', c.enc ?? 'f32', t.enc);
  show('cohort-sync', c.sync ?? 'lockstep', t.sync);
  show('cohort-agg', c.agg ?? 'mean', t.agg);
}
