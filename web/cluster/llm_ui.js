// llm_ui.js - cluster.html's fine-tuning task: the base GGUF (a test model
// that `make` puts in web/data/lm/, or a file the user picks), the training
// text (the test corpus, pasted text or a picked file) and the LoRA settings
// (settings.js checkLora), read into bytes and hashed here, so the page knows
// the task's identity (task_key.js llmSlug) before its Worker loads anything:
// the room's handshake and the goodbye carry it. Also the adapter download.
//
//   applyLlmQuery($, query)            ?task=llm&base=NAME&text=corpus|paste&rank=&alpha=&targets=&seq=
//   const c = await llmChoice($);      { llm: { model, text, name, textName, format, ...lora }, slug, errors }
//   llmJoinQuery($)                   the choice's keys for a room's join URL
//   saveAdapter(bytes)                 the browser saves it as adapter.gguf
import { checkLora, LORA_DEFAULTS } from './settings.js';
import { llmSlug, sha256Hex } from './task_key.js';
import { TEST_MODELS, testModelUrl } from '../test-models.js';

const CORPUS = new URL('../data/lm/corpus.txt', import.meta.url); // make copies tests/llm/corpus.txt there
const LORA_FIELDS = { rank: 'llm-rank', alpha: 'llm-alpha', targets: 'llm-targets', seq: 'llm-seq' };

/** Fills the base select and the LoRA fields, and takes the URL's task options. */
export function applyLlmQuery($, query) {
  const sel = $('llm-base');
  for (const name of TEST_MODELS) sel.append(new Option(`${name} (test model)`, name));
  sel.append(new Option('a file of this device...', 'file'));
  for (const [k, id] of Object.entries(LORA_FIELDS)) $(id).value = query.get(k) ?? String(LORA_DEFAULTS[k]);
  if (query.get('base')) sel.value = query.get('base');
  if (query.get('text')) $('llm-text').value = query.get('text');
  if (query.get('task') === 'llm') $('task').value = 'llm';
  const sync = () => {
    const llm = $('task').value === 'llm';
    $('llm-controls').hidden = !llm;
    $('model').closest('label').hidden = llm;
    $('llm-file').hidden = sel.value !== 'file';
    $('llm-paste').hidden = $('llm-text').value !== 'paste';
    $('llm-text-file').hidden = $('llm-text').value !== 'file';
  };
  for (const id of ['task', 'llm-base', 'llm-text']) $(id).addEventListener('change', sync);
  sync();
}

/** Whether the form asks for a fine-tuning run. */
export const isLlm = ($) => $('task').value === 'llm';

async function fetchBytes(url, what) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${what} (${url.pathname.replace(/^.*\/data\//, 'web/data/')}) answered ${res.status}: run make`);
  return res.arrayBuffer();
}

/** The form's fine-tuning choice as bytes and settings, with its identity (see the top of the file). */
export async function llmChoice($) {
  const errors = [];
  const { settings: lora, errors: loraErrors } = checkLora(Object.fromEntries(Object.entries(LORA_FIELDS).map(([k, id]) => [k, $(id).value])));
  errors.push(...loraErrors);
  let model = null, name = '', text = null, textName = '', format = 'text';
  try {
    const base = $('llm-base').value;
    if (base === 'file') {
      const f = $('llm-file').files?.[0];
      if (!f) throw new Error('pick the base model file (a .gguf)');
      model = await f.arrayBuffer();
      name = f.name;
    } else {
      if (!TEST_MODELS.includes(base)) throw new Error(`${JSON.stringify(base.slice(0, 32))} is not one of ${TEST_MODELS.join(', ')} or a file`);
      model = await fetchBytes(testModelUrl(base), `the test model ${base}`);
      name = base;
    }
  } catch (err) {
    errors.push(`base model: ${err.message}`);
  }
  try {
    const src = $('llm-text').value;
    if (src === 'paste') {
      const v = $('llm-paste').value;
      if (!v.trim()) throw new Error('paste some text first');
      text = new TextEncoder().encode(v).buffer;
      textName = 'pasted text';
    } else if (src === 'file') {
      const f = $('llm-text-file').files?.[0];
      if (!f) throw new Error('pick a text or JSONL file');
      text = await f.arrayBuffer();
      textName = f.name;
      if (/\.jsonl$/i.test(f.name)) format = 'jsonl';
    } else {
      text = await fetchBytes(CORPUS, 'the test corpus');
      textName = 'the test corpus';
    }
  } catch (err) {
    errors.push(`training text: ${err.message}`);
  }
  if (errors.length) return { llm: null, slug: null, errors };
  const [baseSha, dataSha] = await Promise.all([sha256Hex(model), sha256Hex(text)]);
  const slug = llmSlug({ baseSha, dataSha, ...lora });
  return { llm: { model, text, name, textName, format, ...lora }, slug, errors };
}

/** The join URL's keys of a fine-tuning choice (pasted text and picked files must be given on the other device too). */
export function llmJoinQuery($) {
  const q = { task: 'llm', base: $('llm-base').value, text: $('llm-text').value };
  for (const [k, id] of Object.entries(LORA_FIELDS)) q[k] = $(id).value;
  return q;
}

/** Offers bytes as adapter.gguf to the browser's downloads. */
export function saveAdapter(bytes) {
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = 'adapter.gguf';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
