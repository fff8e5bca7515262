// gguf-picker.js - the base-model picker that generate.html and
// finetune.html share: a test model on this server (#model, filled from
// test-models.js), a picked (#file) or dropped (#drop-zone, gguf-drop.js)
// .gguf file (several: the parts of a split model, x-00001-of-0000N.gguf),
// any http(s) URL (#url; another origin must allow this one: CORS, see
// runtime/llm_download.js), a URL cached in this browser (#cached,
// gguf-cached.js) and the file kept in this browser (#kept..., gguf-kept.js);
// the control used last is the source.  loadText says how a load goes.  The backend selector's rule and the "runs on" words for a
// loaded model's info (its backend, renderer and why not the others) are
// here too.
import { choiceRule } from './fields.js';
import { acceptDrops } from './gguf-drop.js';
import { KeptFile, mib } from './gguf-kept.js';
import { CachedUrls, urlName } from './gguf-cached.js';
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

/** The status text of a load's progress event (loadGguf's onProgress) for the model called name. */
export function loadText(name, e) {
  const part = e.parts ? ` (part ${e.part} of ${e.parts})` : '';
  if (e.stage === 'resume') return `Loading ${name}${part}: the download stopped (${e.reason}); resuming from ${mib(e.at)}, attempt ${e.attempt} of ${e.retries}...`;
  if (e.stage === 'restart') return `Loading ${name}${part}: downloading again from the start (${e.reason})...`;
  if (e.stage === 'cached') return `Loading ${name}${part} from this browser's cache${e.checked ? ' (the server has the same file)' : ' (the server was not reached)'}...`;
  if (e.stage === 'stale') return `Loading ${name}${part}: ${e.reason}; downloading it again...`;
  return `Loading ${name}${part}: ${mib(e.loaded)}${e.total ? ` of ${mib(e.total)}` : ''}...`;
}

export class ModelPicker {
  /**
   * isBusy(): whether a drop must wait (then `waitFor` says for what);
   * load(): load the source picked now (a drop, or the kept file's offer).
   */
  constructor({ isBusy, load, waitFor }) {
    this.source = 'model'; // the control used last: 'model' | 'file' | 'url' | 'kept' | 'cached'
    this.chosen = null;    // the .gguf file picked or dropped last (an Array: the parts of a split model)
    this.cachedUrl = null; // the cached URL offered last
    this.hasUrl = Boolean($('url'));
    this.kept = new KeptFile(() => { if (!isBusy()) { this.source = 'kept'; load(); } });
    this.cached = new CachedUrls((url) => { if (!isBusy()) { this.source = 'cached'; this.cachedUrl = url; load(); } });
    for (const name of TEST_MODELS) $('model').append(new Option(name, name));
    $('model').addEventListener('change', () => { this.source = 'model'; });
    $('file').addEventListener('change', () => {
      const files = [...($('file').files ?? [])];
      this.source = 'file';
      this.chosen = files.length > 1 ? files : files[0] ?? null;
    });
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
      if (Array.isArray(this.chosen)) return { src: this.chosen, name: `${this.chosen[0].name} and ${this.chosen.length - 1} more` };
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
      if (!url || !/^https?:$/.test(url.protocol)) {
        $('url-error').textContent = 'an http(s) URL (a server on another origin must allow this page: Access-Control-Allow-Origin)';
        return null;
      }
      return { src: url.href, name: urlName(url.href), downloaded: true };
    }
    if (this.source === 'cached') return { src: this.cachedUrl, name: urlName(this.cachedUrl), downloaded: true };
    const name = $('model').value;
    if (!name) { $('model-error').textContent = `pick a test model${this.hasUrl ? ', a file or a URL' : ' or a file'}`; return null; }
    return { src: testModelUrl(name).href, name: `${name}.gguf` };
  }

  /** Keeps a picked file in this browser after it loaded (the kept offer then shows it); a download is cached already. */
  keepLoaded(picked) {
    return picked.keep ? this.kept.keep(picked.src) : picked.downloaded ? this.cached.refresh() : Promise.resolve();
  }
}
