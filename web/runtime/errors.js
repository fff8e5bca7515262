// errors.js - RlxError, the one error class of RLX for the web: the runtime
// (loader.js re-exports it) and the tab cluster (web/cluster/) throw it. A
// small module of its own so that Workers and pages can import it without
// the loader.

import { STATUS_NAME } from './constants.js';

/** rlx_status_name's name of a status code; '' for anything else (only a number is looked up). */
function nameOf(status) {
  return typeof status === 'number' && Object.hasOwn(STATUS_NAME, status) ? STATUS_NAME[status] : '';
}

/** An error from RLX: `status` is the rlx_status code, `statusName` its name (by default rlx_status_name's). */
export class RlxError extends Error {
  constructor(status, message, statusName = nameOf(status)) {
    const text = (v) => (typeof v === 'string' && v ? v : null);
    super(text(message) ?? text(statusName) ?? `rlx status ${typeof status === 'number' ? status : '?'}`);
    this.name = 'RlxError';
    this.status = status;
    this.statusName = statusName;
  }
}
