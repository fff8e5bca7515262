// describe-demo.js - wires index.html's "Describe a model in code" section:
// shows the source of describe-model.js and runs it on Run with the chosen
// backend.  The numbers shown carry their full value in data-value, and the
// losses of every step are in #describe-log's data-losses (the browser
// tests read them).
import { run } from './describe-model.js';

const $ = (id) => document.getElementById(id);

function show(id, value, text = String(value)) {
  $(id).textContent = text;
  $(id).dataset.value = String(value);
}

fetch(new URL('./describe-model.js', import.meta.url))
  .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`))))
  .then((text) => { $('describe-source').textContent = text; })
  .catch((err) => { $('describe-source').textContent = `(cannot load the source: ${err.message})`; });

$('describe-run').addEventListener('click', async () => {
  const button = $('describe-run');
  button.disabled = true;
  $('describe-error').textContent = '';
  $('describe-log').textContent = '';
  delete $('describe-log').dataset.losses;
  for (const id of ['describe-used', 'describe-loss0', 'describe-loss']) show(id, '', '-');
  show('describe-status', 'running');
  const log = (line) => { $('describe-log').textContent += `${line}\n`; };
  try {
    const r = await run({ backend: $('describe-backend').value, log });
    show('describe-used', r.backend);
    show('describe-loss0', r.losses[0], r.losses[0].toFixed(6));
    show('describe-loss', r.losses.at(-1), r.losses.at(-1).toFixed(6));
    $('describe-log').dataset.losses = JSON.stringify(r.losses);
    $('describe-log').dataset.sizes = JSON.stringify(r.outputSizes);
    $('describe-log').dataset.nodes = String(r.nodes);
    $('describe-log').dataset.fallbacks = JSON.stringify(r.fallbacks);
    show('describe-status', 'done');
  } catch (err) {
    $('describe-error').textContent = `Error: ${err?.message ?? err}`;
    show('describe-status', 'error');
  } finally {
    button.disabled = false;
  }
});
