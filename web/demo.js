// demo.js - the demo page's logic: loads RLX from ./pkg/rlx_web.wasm, builds
// a tiny MLP  x[B,4] -> matmul W1[4,H] + b1 -> relu -> matmul W2[H,O]  with
// random params, runs it on the CPU and shows the outputs, the plan's arena
// bytes and step count, and the GEMM path.  Errors are shown in the page.
import { loadRlx } from './runtime/loader.js';

const B = 3, IN = 4, H = 8, OUT = 2;
const TIMED_RUNS = 1000;
const $ = (id) => document.getElementById(id);

function randomArray(n, scale = 1) {
  return Float32Array.from({ length: n }, () => (Math.random() * 2 - 1) * scale);
}

function showError(err) {
  $('error').textContent = `Error: ${err.message ?? err}`;
  console.error(err);
}

/** Builds and compiles the MLP; the graph is freed once compiled. */
function buildMlp(rlx) {
  const g = rlx.graph();
  try {
    const x = g.input('x', [B, IN]);
    const w1 = g.param('w1', [IN, H]);
    const b1 = g.param('b1', [H]);
    const w2 = g.param('w2', [H, OUT]);
    const hidden = g.op('relu', [g.op('add', [g.op('matmul', [x, w1], [0, 0]), b1])]);
    const y = g.op('matmul', [hidden, w2], [0, 0]);
    return g.compile([y], { device: 'cpu' });
  } finally {
    g.free();
  }
}

function render(rlx, session, us) {
  const info = {
    'RLX version': rlx.version(),
    'GEMM path': rlx.gemmPath(),
    'arena bytes': session.arenaBytes,
    'steps per run': session.stepCount,
    'run time': `${(us).toFixed(2)} µs (mean of ${TIMED_RUNS} runs)`,
  };
  $('info').replaceChildren(...Object.entries(info).flatMap(([k, v]) => {
    const dt = document.createElement('dt');
    const dd = document.createElement('dd');
    dt.textContent = k;
    dd.textContent = String(v);
    return [dt, dd];
  }));
  const shape = session.outputShape(0);
  const y = session.output(0);
  $('shape').textContent = `[${shape.join(', ')}]`;
  const rows = [];
  for (let i = 0; i < shape[0]; i++) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.textContent = `row ${i}`;
    tr.append(th);
    for (let j = 0; j < shape[1]; j++) {
      const td = document.createElement('td');
      td.textContent = y[i * shape[1] + j].toFixed(5);
      tr.append(td);
    }
    rows.push(tr);
  }
  $('outputs').replaceChildren(...rows);
}

function runOnce(rlx, session) {
  $('error').textContent = '';
  session.setParam('w1', randomArray(IN * H, 0.5));
  session.setParam('b1', randomArray(H, 0.1));
  session.setParam('w2', randomArray(H * OUT, 0.5));
  session.setInput('x', randomArray(B * IN));
  const t0 = performance.now(); // browsers coarsen the clock: time many runs
  for (let i = 0; i < TIMED_RUNS; i++) session.run();
  render(rlx, session, ((performance.now() - t0) * 1000) / TIMED_RUNS);
}

async function main() {
  const rlx = await loadRlx(new URL('./pkg/rlx_web.wasm', import.meta.url));
  const session = buildMlp(rlx);
  runOnce(rlx, session);
  $('run').disabled = false;
  $('run').addEventListener('click', () => {
    try { runOnce(rlx, session); } catch (err) { showError(err); }
  });
}

main().catch(showError);
