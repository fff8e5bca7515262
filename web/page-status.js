// page-status.js - how the training and generation pages show a value, the
// run's state and an error: #status carries data-state (what tests wait
// for), a shown value keeps its full precision in data-value.
const $ = (id) => document.getElementById(id);

/** Puts text in element id, the value itself in its data-value. */
export function show(id, value, text = String(value)) {
  $(id).textContent = text;
  $(id).dataset.value = String(value);
}

/** The page's state (data-state of #status) and its sentence. */
export function status(state, text) {
  $('status').dataset.state = state;
  $('status').textContent = text;
}

/** An error in #error, and the state 'error'. */
export function showError(err) {
  $('error').textContent = `Error: ${err?.message ?? err}`;
  status('error', 'Stopped by an error (see above).');
}
