// fields.js - form fields and URL parameters checked, never silently
// changed: each rule reads one control, writes a plain message into the
// element `<id>-error` next to it (and marks the control aria-invalid), and
// returns the value or undefined.  A page collects them with readFields and
// runs nothing while any is bad; URL values go through the same rules and a
// bad one is reported instead of being replaced by a default.
//
//   const f = readFields({ steps: intRule(1, 20000), lr: numberRule({ gt: 0 }) });
//   if (!f.ok) return;   // the messages are on the page
//   applyQuery(query, { steps: intRule(1, 20000) }, report); // URL -> controls
//   status('error', notStarted(f.errors)); // "Not started: fix learning rate, test every (marked above)."

const $ = (id) => document.getElementById(id);

/** An integer in [min, max]. */
export function intRule(min, max, what = 'an integer') {
  return (text) => {
    if (text.trim() === '') return { error: `enter ${what} from ${min} to ${max}` };
    const v = Number(text);
    if (!Number.isInteger(v)) return { error: `${JSON.stringify(text)} is not ${what}` };
    if (v < min || v > max) return { error: `${v} is outside ${min} to ${max}` };
    return { value: v };
  };
}

/** A finite number, > gt (when given) and <= max (when given). */
export function numberRule({ gt, max } = {}) {
  return (text) => {
    if (text.trim() === '') return { error: 'enter a number' };
    const v = Number(text);
    if (!Number.isFinite(v)) return { error: `${JSON.stringify(text)} is not a number` };
    if (gt !== undefined && !(v > gt)) return { error: `must be greater than ${gt}` };
    if (max !== undefined && v > max) return { error: `must be at most ${max}` };
    return { value: v };
  };
}

/** One of the given values (a <select>'s options unless listed). */
export function choiceRule(values) {
  return (text, el) => {
    const allowed = values ?? [...el.options].filter((o) => !o.disabled).map((o) => o.value);
    return allowed.includes(text) ? { value: text } : { error: `${JSON.stringify(text)} is not one of ${allowed.join(', ')}` };
  };
}

function mark(id, error) {
  const el = $(id);
  const note = $(`${id}-error`);
  if (note) note.textContent = error ?? '';
  if (error) el.setAttribute('aria-invalid', 'true');
  else el.removeAttribute('aria-invalid');
}

/**
 * The name a person sees for control id: the text of its <label> (the
 * label's own words, without a trailing "(hint)" and without the options
 * or messages inside it), else its aria-label, else the id.
 */
export function labelOf(id) {
  const el = $(id);
  const label = el?.closest('label') ?? (el ? document.querySelector(`label[for="${id}"]`) : null);
  let text = '';
  for (const node of label?.childNodes ?? []) if (node.nodeType === Node.TEXT_NODE) text += node.textContent;
  text = text.replace(/\s+/g, ' ').trim().replace(/\s*\([^()]*\)$/, '');
  return text || el?.getAttribute('aria-label') || id;
}

/** The sentence for a run refused because of bad fields (readFields' errors, or { id: message }). */
export function notStarted(errors) {
  return `Not started: fix ${Object.keys(errors).map(labelOf).join(', ')} (marked above).`;
}

/** rules: { id: rule } -> { ok, values, errors } with every message shown next to its control. */
export function readFields(rules) {
  const values = {}, errors = {};
  for (const [id, rule] of Object.entries(rules)) {
    const el = $(id);
    const r = rule(String(el.value), el);
    mark(id, r.error);
    if (r.error) errors[id] = r.error;
    else values[id] = r.value;
  }
  return { ok: Object.keys(errors).length === 0, values, errors };
}

/**
 * URL parameters named like the controls: each good value is put in its
 * control (a rule with no control of its name just checks the value); each
 * bad or unknown one is reported through report(message) and left out.
 * Returns true when every parameter was good.
 */
export function applyQuery(query, rules, report, extra = []) {
  let good = true;
  for (const [key, raw] of query) {
    if (extra.includes(key)) continue;
    if (!Object.hasOwn(rules, key)) {
      report(`unknown URL parameter ${key}=${raw} (known: ${[...Object.keys(rules), ...extra].join(', ')})`);
      good = false;
      continue;
    }
    const el = $(key);
    const r = rules[key](raw, el);
    if (r.error) {
      report(`URL parameter ${key}=${raw}: ${r.error}`);
      good = false;
    } else if (el) {
      el.value = String(r.value);
    }
  }
  return good;
}
