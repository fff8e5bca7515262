// llm_common.js - what the language-model runtime files (llm.js,
// llm_module.js, llm_source.js, llm_worker_client.js) share: the status
// codes (the library's, from ./constants.js, and FATAL), argument errors
// and option checks (RlxError naming the function and the argument),
// whether this is Node, the clock, and letting queued events in.
import { FATAL_STATUS, describe, fail, isNode } from './loader.js';
import { STATUS as RLX_STATUS } from './constants.js';

export const STATUS = Object.freeze({ ...RLX_STATUS, FATAL: FATAL_STATUS });
export const now = () => (typeof performance === 'object' ? performance.now() : Date.now());

export { fail, isNode };

export function intOption(fn, what, v, min, max, dflt) {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min || v > max) throw fail(fn, `${what} must be an integer from ${min} to ${max}, got ${describe(v)}`);
  return v;
}

export function numberOption(fn, what, v, test, rule, dflt) {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || !test(v)) throw fail(fn, `${what} must be ${rule}, got ${describe(v)}`);
  return v;
}

export function functionOption(fn, what, v) {
  if (v !== undefined && typeof v !== 'function') throw fail(fn, `${what} must be a function, got ${describe(v)}`);
  return v;
}

/** Lets queued events in (a Worker's 'stop' message, a page's clicks) without setTimeout's clamp. */
export function yieldToEvents() {
  if (isNode) return new Promise((resolve) => setImmediate(resolve));
  if (typeof MessageChannel === 'function') {
    return new Promise((resolve) => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { ch.port1.close(); resolve(); };
      ch.port2.postMessage(0);
    });
  }
  return new Promise((resolve) => setTimeout(resolve, 0));
}
