// gguf-kept.js - generate.html's view of the GGUF file kept in this browser
// (gguf-store.js): the offer "load NAME (SIZE) kept in this browser" with
// Forget (#kept, #kept-load, #kept-forget), and a note (#store-note) of what
// just happened and what this site stores; its data-state is none | keeping
// | kept | not-kept | unavailable (no OPFS here) | error.
import * as store from './gguf-store.js';

const $ = (id) => document.getElementById(id);
/** bytes as the pages show them: '0.80 MiB', '512 MiB'. */
export const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(bytes < 2 ** 24 ? 2 : 0)} MiB`;
const size = (bytes) => (bytes < 2 ** 30 ? mib(bytes) : `${(bytes / 2 ** 30).toFixed(1)} GiB`);

function note(state, text) {
  $('store-note').dataset.state = state;
  $('store-note').textContent = text;
}

export class KeptFile {
  /** onLoad(): the offer was clicked (load this.file). */
  constructor(onLoad) {
    this.file = null; // the kept File (in OPFS), or null
    $('kept-load').addEventListener('click', () => onLoad());
    $('kept-forget').addEventListener('click', () => this.forget());
  }

  /** Shows the kept file (or none) and what this site stores; state and message: what just happened. */
  async refresh(state = undefined, message = '') {
    const { file, reason } = await store.kept();
    this.file = file;
    $('kept').hidden = !file;
    if (file) $('kept-load').textContent = `load ${file.name} (${mib(file.size)}) kept in this browser`;
    if (reason) return note('unavailable', `Files are not kept in this browser: ${reason}. A chosen file is read from the disk each time.`);
    const use = await store.usage();
    const stored = use ? `This site stores ${size(use.usage)} in this browser (quota ${size(use.quota)}).` : '';
    return note(state ?? (file ? 'kept' : 'none'), [message, stored].filter(Boolean).join(' '));
  }

  /** Streams a file that loaded into OPFS in place of the kept one; a failure is said and changes nothing else. */
  async keep(file) {
    this.file = null;
    $('kept').hidden = true;
    note('keeping', `Keeping ${file.name} in this browser...`);
    const r = await store.keep(file, (n) => note('keeping', `Keeping ${file.name} in this browser: ${mib(n)} of ${mib(file.size)}...`));
    if (r.ok) await this.refresh('kept', `Kept ${file.name} in this browser: a reload offers it without the disk.`);
    else await this.refresh('not-kept', `Not kept in this browser: ${r.reason}; the model is loaded all the same.`);
  }

  async forget() {
    const name = this.file?.name ?? 'the kept file';
    const r = await store.forget();
    await this.refresh(r.ok ? 'none' : 'error', r.ok ? `Forgot ${name}.` : `Could not forget ${name}: ${r.reason}.`);
  }
}
