// gguf-picker.js - the base-model picker that generate.html and
// finetune.html share: a test model on this server (#model, filled from
// test-models.js), a picked (#file) or dropped (#drop-zone, gguf-drop.js)
// .gguf file, a URL on this server (#url, where the page has one) and the
// file kept in this browser (#kept..., gguf-kept.js); the control used last
// is the source.  The backend selector's rule and the "runs on" words for a
// loaded model's info (its backend, renderer and why not the others) are
// here too.
import { choiceRule } from './fields.js';
import { acceptDrops } from './gguf-drop.js';
import { KeptFile } from './gguf-kept.js';
import { gpuName } from './software-gpu.js';
import { TEST_MODELS, testModelUrl } from './test-models.js';

const $ = (id) => document.getElementById(id);

/** A backend of the selector; a listed but disabled one is refused with its reason. */
export function backendRule(text, el) {
  const off = [...el.options].find((o) => o.value === text && o.disabled);
  return off ? { error: `${off.value} is ${off.dataset.reason}` } : choiceRule()(text, el);
}

/** The URL rule of ?model=: one of the test models. */
export const modelRule = (text) => (TEST_MODELS.includes(text) ? { value: text } : { error: `not one of ${TEST_MODELS.join(', ')}` });

/** What runs a loaded model (info of GgufWorker.load): 'WebGL2 (SwiftShader) (not webgpu: ...)', 'CPU (wasm)', ... */
export function backendText(info) {
  const why = info.fallbacks.map((f) => `not ${f.backend}: ${f.reason}`).join('; ');
  const gpu = gpuName(info.backend);
  return `${gpu ? `${gpu}${info.software ? ` (${info.software})` : ''}` : 'CPU (wasm)'}${info.xq8 ? ', 8-bit activations' : ''}${why ? ` (${why})` : ''}`;
}

export class ModelPicker {
  /**
   * isBusy(): whether a drop must wait (then `waitFor` says for what);
   * load(): load the source picked now (a drop, or the kept file's offer).
   */
  constructor({ isBusy, load, waitFor }) {
    this.source = 'model'; // the control used last: 'model' | 'file' | 'url' | 'kept'
    this.chosen = null;    // the .gguf file picked or dropped last
    this.hasUrl = Boolean($('url'));
    this.kept = new KeptFile(() => { if (!isBusy()) { this.source = 'kept'; load(); } });
    for (const name of TEST_MODELS) $('model').append(new Option(name, name));
    $('model').addEventListener('change', () => { this.source = 'model'; });
    $('file').addEventListener('change', () => { this.source = 'file'; this.chosen = $('file').files?.[0] ?? null; });
    $('url')?.addEventListener('input', () => { this.source = 'url'; });
    acceptDrops($('drop-zone'), {
      onFile: (file) => {
        if (isBusy()) { $('file-error').textContent = `${file.name}: wait until ${waitFor}, then drop it again`; return; }
        this.source = 'file';
        this.chosen = file;
        try { // the picker shows the dropped file where the browser allows it
          const dt = new DataTransfer();
          dt.items.add(file);
          $('file').files = dt.files;
        } catch { /* the picker keeps its own text */ }
        load();
      },
      onRefuse: (message) => { $('file-error').textContent = message; },
    });
  }

  /** The source picked: { src, name, keep?, from? }, or null with the reason next to its control. */
  pick() {
    for (const id of ['model', 'file', 'url']) if ($(`${id}-error`)) $(`${id}-error`).textContent = '';
    if (this.source === 'file') {
      if (this.chosen) return { src: this.chosen, name: this.chosen.name, keep: true };
      $('file-error').textContent = 'choose a .gguf file';
      return null;
    }
    if (this.source === 'kept') {
      if (this.kept.file) return { src: this.kept.file, name: this.kept.file.name, from: ' from this browser\'s storage' };
      $('file-error').textContent = 'no file is kept in this browser now: choose a .gguf file';
      return null;
    }
    if (this.source === 'url') {
      const text = $('url').value.trim();
      if (!text) { $('url-error').textContent = 'enter a URL'; return null; }
      let url;
      try { url = new URL(text, location.href); } catch { url = null; }
      if (!url || url.origin !== location.origin) {
        $('url-error').textContent = `only this server's URLs (${location.origin}/...)`;
        return null;
      }
      return { src: url.href, name: url.pathname.split('/').pop() };
    }
    const name = $('model').value;
    if (!name) { $('model-error').textContent = `pick a test model${this.hasUrl ? ', a file or a URL' : ' or a file'}`; return null; }
    return { src: testModelUrl(name).href, name: `${name}.gguf` };
  }

  /** Keeps a picked file in this browser after it loaded (the kept offer then shows it). */
  keepLoaded(picked) {
    return picked.keep ? this.kept.keep(picked.src) : Promise.resolve();
  }
}
