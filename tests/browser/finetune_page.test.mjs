// finetune_page.test.mjs - web/finetune.html in Debian's chromium (headless,
// playwright-core) against tools/serve.py: a test model (web/data/lm/) loads
// in the Worker with the training module, Train shows the greedy text
// before, steps with their loss, the plot and tokens per second; Stop ends
// the run after its current step with the adapter of the steps so far,
// whose greedy text with the adapter is shown; the downloaded adapter.gguf
// is read by the C loader (`rlx gguf-info`, `rlx generate --lora`); kept in
// this browser, generate.html offers it and loads the model with it; a bad
// setting is refused next to its field with nothing run.  In the same
// browser: backend WebGL2 picked by name (SwiftShader) trains 2 steps in
// the Worker, the page saying what runs, with the losses (and the last
// validation loss) of the same run on the CPU module in Node within GPU_TOL; 'auto' keeps the CPU there and
// says why.  Screenshot: build/screens/finetune.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, launch, newPage, missing, screenshot, REPO } from './helpers.mjs';
import { loadGguf } from '../../web/runtime/llm.js';

const FIXTURE = 'llama-q4_0';
const FILE = fileURLToPath(new URL(`../../web/data/lm/${FIXTURE}.gguf`, import.meta.url));
const TRAIN_WASM = new URL('../../web/pkg/rlx_llm_train.wasm', import.meta.url);
const CLI = `${REPO}build/rlx`;
const GPU_TOL = 1e-4; // relative, a loss on the GPU against the CPU's (f32 both, other summation orders)
const why = missing() ?? (!existsSync(TRAIN_WASM) ? 'missing web/pkg/rlx_llm_train.wasm: run `make wasm`' : null) ??
  (!existsSync(FILE) ? `missing ${FILE}: run make lm-web-fixtures` : null) ?? (!existsSync(CLI) ? 'missing build/rlx' : null);
let server, browser, dir;

before(async () => {
  if (why) return;
  dir = mkdtempSync(join(tmpdir(), 'rlx-finetune-page-'));
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const state = (page, id = 'status') => page.$eval(`#${id}`, (el) => el.dataset.state);
const settled = (page, states, timeout = 60000, id = 'status') => page.waitForFunction(([s, i]) => s.includes(document.getElementById(i).dataset.state),
  [states, id], { timeout });

test(`finetune.html: ${FIXTURE} trains in the Worker, Stop keeps the adapter, it downloads, the C loader reads it, generate.html applies it`,
  { skip: why ?? false, timeout: 240000 }, async () => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}finetune.html?model=${FIXTURE}&steps=5000&seq=16&batch=2&lr=0.003&autoload=1`);
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.ok(await page.$eval('nav a[aria-current="page"]', (a) => a.getAttribute('href') === './finetune.html'));
    // a bad setting: refused next to its field, nothing run
    await page.fill('#rank', '0');
    await page.click('#train');
    assert.equal(await state(page), 'error');
    assert.match(await page.textContent('#rank-error'), /outside 1 to 1024/);
    assert.match(await page.textContent('#status'), /Not started: fix rank/);
    assert.equal(await page.textContent('#r-step'), '-');
    await page.fill('#rank', '4');
    // train, then Stop after a few steps
    await page.click('#train');
    await page.waitForFunction(() => Number(document.getElementById('r-step').dataset.value) >= 3, null, { timeout: 120000 });
    assert.ok((await page.textContent('#before')).length > 0, 'the greedy text before training');
    await page.click('#stop-run');
    await settled(page, ['stopped', 'finished', 'error'], 120000);
    assert.equal(await state(page), 'stopped', await page.textContent('#error'));
    const steps = Number(await page.$eval('#r-step', (el) => el.dataset.value));
    assert.ok(steps >= 3 && steps < 5000, `${steps} steps`);
    assert.match(await page.textContent('#status'), new RegExp(`^Stopped after ${steps} steps: training loss [0-9.]+ -> [0-9.]+\\.$`));
    assert.ok(Number(await page.$eval('#r-loss', (el) => el.dataset.value)) > 0);
    assert.ok(Number(await page.$eval('#r-rate', (el) => el.dataset.value)) > 0, 'tokens per second');
    assert.ok(Number(await page.$eval('#r-valid', (el) => el.dataset.value)) > 0, 'the validation loss at the stop');
    assert.ok((await page.textContent('#after')).length > 0, 'the greedy text with the adapter');
    // download: the C loader reads it as a llama adapter and generates with it
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    assert.equal(download.suggestedFilename(), 'adapter.gguf');
    const file = join(dir, 'adapter.gguf');
    await download.saveAs(file);
    assert.match(execFileSync(CLI, ['gguf-info', file], { encoding: 'utf8' }), /an adapter for llama models \(adapter\.type 'lora', alpha 16\)/);
    const text = execFileSync(CLI, ['generate', '--model', FILE, '--lora', file, '--prompt', 'The small river', '--max-tokens', '4'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.ok(text.length > 0);
    // kept in this browser: generate.html offers it and loads the model with it
    await page.click('#keep-adapter');
    await settled(page, ['kept', 'not-kept'], 30000, 'adapter-note');
    assert.equal(await state(page, 'adapter-note'), 'kept', await page.textContent('#adapter-note'));
    await screenshot(page, 'finetune');
    assert.deepEqual(problems, []);
    await page.goto(`${server.url}generate.html?model=${FIXTURE}`);
    await page.waitForFunction(() => !document.getElementById('lora-kept').disabled, null, { timeout: 30000 });
    assert.match(await page.textContent('#lora-name'), /apply adapter\.gguf \([0-9.]+ MiB\) kept by finetune\.html/);
    await page.check('#lora-kept');
    await page.click('#load');
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.match(await page.textContent('#status'), /with the LoRA adapter adapter\.gguf \(4 products\)/);
    await page.close();
  });

test(`finetune.html: ${FIXTURE} on WebGL2 picked by name trains 2 steps with the CPU's losses within ${GPU_TOL}; auto keeps the CPU and says why`,
  { skip: why ?? false, timeout: 240000 }, async () => {
    const { page, problems } = await newPage(browser);
    const settings = { rank: 2, alpha: 16, targets: 'attn_q,attn_v', lr: 0.003, steps: 2, seq: 8, batch: 2 };
    // a one-word prompt: the greedy text before runs the decoding step only (no prompt plans to compile)
    await page.goto(`${server.url}finetune.html?model=${FIXTURE}&backend=webgl&${new URLSearchParams(settings)}&prompt=The&autoload=1`);
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.equal(await page.$eval('#r-backend', (el) => el.dataset.value), 'webgl');
    assert.match(await page.textContent('#status'), /training runs on WebGL2 \(SwiftShader\)/);
    await page.click('#train');
    await settled(page, ['finished', 'stopped', 'error'], 200000);
    assert.equal(await state(page), 'finished', await page.textContent('#error'));
    const losses = JSON.parse(await page.$eval('#loss-chart', (el) => el.dataset.losses));
    const cpu = await loadGguf(FILE, { train: true, backend: 'cpu' });
    try {
      const want = await cpu.finetune(await page.inputValue('#text'), { ...settings, evalEvery: 1 });
      assert.equal(losses.length, want.losses.length);
      want.losses.forEach((l, i) => assert.ok(Math.abs(losses[i] - l) <= GPU_TOL * Math.abs(l), `step ${i + 1}: webgl ${losses[i]} vs cpu ${l}`));
      const valid = Number(await page.$eval('#r-valid', (el) => el.dataset.value)), v = want.validLosses.at(-1).loss;
      assert.ok(Math.abs(valid - v) <= GPU_TOL * Math.abs(v), `validation: webgl ${valid} vs cpu ${v}`);
    } finally {
      cpu.free();
    }
    // auto on a software renderer: the CPU, with the reasons
    await page.selectOption('#backend', 'auto');
    await page.click('#load');
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.equal(await page.$eval('#r-backend', (el) => el.dataset.value), 'cpu');
    assert.match(await page.textContent('#r-backend'), /^CPU \(wasm\) \(not webgpu: the WebGPU adapter is SwiftShader, a software renderer.*; not webgl: the WebGL2 renderer is SwiftShader/);
    assert.deepEqual(problems, []);
    await page.close();
  });
