// llm_page.test.mjs - web/generate.html in Debian's chromium (headless,
// playwright-core) against tools/serve.py: a test model (web/data/lm/, made
// by make) loads through the Worker with its info shown, greedy generation
// streams the same tokens as web/runtime/llm.js gives in Node for the same
// file, bad sampling fields are refused next to them with nothing run, a
// URL that is not http(s) is refused, a picked .gguf file loads, Stop ends a
// running generation in the Worker, and GgufWorker hands the model's
// RlxErrors back with their messages.  The prompt's tokens and the context
// used and left are shown (a prompt longer than the context is refused
// before running); the backend selector offers the CPU, WebGPU, WebGL2 and
// auto: on WebGPU and on WebGL2 (SwiftShader here) the Worker generates the
// same greedy tokens, with a warning that gives the software renderer's
// slowdown against the CPU (measured at load: only its form is checked) and
// a "compiling GPU pipelines" stage once the bytes are in; auto says why it
// stays on the CPU; a file that is not a model, loaded after a good one,
// leaves that one in use (Generate still runs it) with the reason next to
// the file picker; the sampling fields' messages name them by their labels
// and one token is "1 token"; a .gguf file
// dropped on the page loads (anything else is refused next to the picker),
// is kept in the Origin Private File System and offered again after a
// reload, where it loads to the same greedy tokens, until Forget; a full
// quota or no OPFS is said and the model loads all the same.  Screenshots:
// build/screens/generate.png, generate-kept.png (the offer after a reload).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer, launch, newPage, valueOf, missing, screenshot } from './helpers.mjs';
import { loadGguf } from '../../web/runtime/llm.js';

const FIXTURE = 'llama-q4_0';
const FILE = fileURLToPath(new URL(`../../web/data/lm/${FIXTURE}.gguf`, import.meta.url));
const LLM_WASM = new URL('../../web/pkg/rlx_llm.wasm', import.meta.url);
const PROMPT = 'The miller counted the sacks';
const TOKENS = 6;
const why = missing() ?? (!existsSync(LLM_WASM) ? 'missing web/pkg/rlx_llm.wasm: run `make wasm`' : null) ??
  (!existsSync(FILE) ? `missing ${FILE}: run make lm-web-fixtures` : null);
let server;
let browser;
let expected; // Node's greedy run of PROMPT on FIXTURE
let expectedXq8; // and with 8-bit activations (xq8)
let info;     // and the model's info there

before(async () => {
  if (why) return;
  const model = await loadGguf(FILE);
  expected = await model.generate(PROMPT, { maxTokens: TOKENS, temperature: 0 });
  info = model.info;
  model.free();
  const xq8 = await loadGguf(FILE, { xq8: true });
  expectedXq8 = await xq8.generate(PROMPT, { maxTokens: TOKENS, temperature: 0 });
  xq8.free();
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const state = (page) => page.$eval('#status', (el) => el.dataset.state);
const settled = (page, states, timeout = 20000) => page.waitForFunction((s) => s.includes(document.getElementById('status').dataset.state),
  states, { timeout });
const storeSays = (page, states) => page.waitForFunction((s) => s.includes(document.getElementById('store-note').dataset.state),
  states, { timeout: 90000 });
const contextIs = (page, id, n) => page.waitForFunction(([i, v]) => document.getElementById(i).dataset.value === String(v),
  [id, n], { timeout: 60000 });

/** Greedy generation of PROMPT on the page: { ids, text } once finished. */
async function greedy(page) {
  await page.fill('#prompt', PROMPT);
  await page.fill('#maxTokens', String(TOKENS));
  await page.fill('#temperature', '0');
  await page.click('#generate');
  await settled(page, ['finished', 'stopped', 'error']);
  assert.equal(await state(page), 'finished', await page.textContent('#error'));
  return { ids: JSON.parse(await page.$eval('#output', (el) => el.dataset.ids)), text: await page.textContent('#output') };
}

/**
 * Drags files over the page and drops them, as a user's drop does: each a File built in the page from
 * a URL's bytes ({ name, url }) or a text ({ name, text }).  Resolves to whether the drop zone showed.
 */
function drop(page, files) {
  return page.evaluate(async (list) => {
    const dt = new DataTransfer();
    for (const f of list) dt.items.add(new File([f.url ? await (await fetch(f.url)).arrayBuffer() : f.text], f.name));
    const fire = (type) => document.body.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    fire('dragenter');
    fire('dragover');
    const shown = getComputedStyle(document.getElementById('drop-zone')).display !== 'none';
    fire('drop');
    return shown;
  }, files);
}

test(`generate.html: ${FIXTURE} loads in the Worker and greedy tokens match Node's`, { skip: why ?? false, timeout: 300000 }, async (t) => {
  const { page, problems } = await newPage(browser);
  // Each state and text of the status, in order (from each page load on).
  await page.addInitScript(() => {
    window.statuses = [];
    new MutationObserver(() => {
      const el = document.getElementById('status');
      const last = window.statuses.at(-1);
      if (el && last !== `${el.dataset.state}|${el.textContent}`) window.statuses.push(`${el.dataset.state}|${el.textContent}`);
    }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
  });
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  assert.equal(await valueOf(page, '#i-arch'), info.arch);
  assert.equal(Number(await valueOf(page, '#i-vocab')), info.nVocab);
  assert.equal(await valueOf(page, '#i-simd'), 'relaxed', 'Chromium has relaxed SIMD: the Worker loads rlx_llm_relaxed.wasm');
  assert.equal(Number(await valueOf(page, '#i-params')), info.nParams);
  assert.match(await page.textContent('#i-types'), /q4_0/);
  assert.equal(await page.$eval('#load-progress', (el) => el.value), 1);
  // The backend: the CPU (the default), WebGPU, WebGL2 and auto.
  assert.deepEqual(await page.$$eval('#backend option', (os) => os.map((o) => [o.value, o.disabled])),
    [['cpu', false], ['webgpu', false], ['webgl', false], ['auto', false]]);
  assert.equal(await page.$eval('#backend', (el) => el.value), 'cpu');
  assert.equal(await valueOf(page, '#i-backend'), 'cpu');
  assert.equal(await page.textContent('#software-warning'), '', 'no software-GPU warning on the CPU');

  // The prompt's tokens and the context left, as typed; then what the run used.
  const P = expected.promptIds.length;
  await page.fill('#prompt', PROMPT);
  await contextIs(page, 'c-prompt', P);
  assert.equal(Number(await valueOf(page, '#c-size')), info.nCtx);
  assert.equal(Number(await valueOf(page, '#c-left')), info.nCtx - P);
  const { ids, text } = await greedy(page);
  assert.deepEqual(ids, expected.ids, 'the page generates the tokens Node does');
  assert.equal(text, expected.text);
  assert.equal(Number(await valueOf(page, '#c-used')), P + expected.ids.length);
  assert.equal(Number(await valueOf(page, '#c-left')), info.nCtx - P - expected.ids.length);
  assert.equal(Number(await valueOf(page, '#r-prompt')), expected.promptIds.length);
  assert.equal(Number(await valueOf(page, '#r-gen')), expected.ids.length);
  const promptRate = Number(await valueOf(page, '#r-prompt-rate'));
  const genRate = Number(await valueOf(page, '#r-gen-rate'));
  assert.ok(promptRate > 0 && genRate > 0, `tokens/s shown: prompt ${promptRate}, generation ${genRate}`);
  t.diagnostic(`Chromium (Worker), ${FIXTURE}: prompt ${promptRate.toFixed(0)} tokens/s, generation ${genRate.toFixed(0)} tokens/s; ` +
    `Node: prompt ${expected.stats.promptTokensPerSecond.toFixed(0)}, generation ${expected.stats.generateTokensPerSecond.toFixed(0)}`);
  await screenshot(page, 'generate');
  // WebGPU and WebGL2 (an OffscreenCanvas's context) asked for in the URL: the Worker runs the steps there, to the same tokens.
  for (const [backend, shown] of [['webgpu', /WebGPU \(SwiftShader\)/], ['webgl', /WebGL2 \(SwiftShader\)/]]) {
    await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&backend=${backend}&autoload=1`);
    await settled(page, ['ready', 'error'], 150000); // compiling on SwiftShader, then a few tokens timed on it and on the CPU
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.equal(await valueOf(page, '#i-backend'), backend);
    assert.match(await page.textContent('#i-backend'), shown);
    const name = { webgpu: 'WebGPU', webgl: 'WebGL2' }[backend];
    assert.match(await page.textContent('#software-warning'), new RegExp(`^${name} here is SwiftShader, a software renderer \\(no graphics hardware\\): ` +
      '\\d+(\\.\\d)?x (slower than the CPU|faster than the CPU here); a generated token took [\\d.]+ ms on it and [\\d.]+ ms on the CPU ' +
      '\\(measured in this run\\)\\.'));
    assert.ok(Number(await page.$eval('#software-warning', (el) => el.dataset.ratio)) > 0, 'the ratio is kept in data-ratio');
    // Once the bytes are in, a stage of its own while the GPU pipelines compile; then the comparison with the CPU.
    const seen = (await page.evaluate(() => window.statuses)).map((x) => x.split('|'));
    const full = seen.findIndex(([st, text]) => st === 'loading' && /: 0\.80 MiB of 0\.80 MiB\.\.\.$/.test(text));
    const compiling = seen.findIndex(([st, text]) => st === 'compiling' && /^Compiling GPU pipelines for /.test(text));
    const measuring = seen.findIndex(([st]) => st === 'measuring');
    assert.ok(full >= 0 && compiling > full && measuring > compiling, `statuses: ${JSON.stringify(seen)}`);
    assert.match(await page.textContent('#status'), /^Loaded .* in [\d.]+ s, [\d.]+ s of it compiling GPU pipelines\.$/);
    const onGpu = await greedy(page);
    assert.deepEqual(onGpu.ids, expected.ids, `${backend} in the Worker generates the tokens Node does on the CPU`);
    assert.equal(onGpu.text, expected.text);
  }
  // auto: the CPU on this software adapter, with the reason shown.
  await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&backend=auto&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await valueOf(page, '#i-backend'), 'cpu');
  assert.match(await page.textContent('#i-backend'),
    /not webgpu: the WebGPU adapter is SwiftShader, a software renderer.*; not webgl: the WebGL2 renderer is SwiftShader, a software renderer/);
  // 8-bit activations (the checkbox, here from the URL): Node's xq8 tokens; a bad value is refused
  await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&xq8=1&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  assert.equal(await page.$eval('#xq8', (el) => el.checked), true);
  assert.match(await page.textContent('#i-backend'), /^CPU \(wasm\), 8-bit activations$/);
  assert.deepEqual((await greedy(page)).ids, expectedXq8.ids, 'xq8 in the Worker generates the tokens Node does with xq8');
  assert.notDeepEqual(expectedXq8.ids, expected.ids, 'the rounding changes this model\'s greedy tokens');
  await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&xq8=2`);
  await page.waitForFunction(() => document.getElementById('error').textContent !== '');
  assert.match(await page.textContent('#error'), /URL parameter xq8=2: must be 1 or 0/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('generate.html: bad sampling fields and a URL that is not http(s) are refused next to their fields', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  await page.fill('#temperature', '-1');
  await page.fill('#topP', '1.5');
  await page.fill('#maxTokens', '0');
  await page.click('#generate');
  assert.equal(await state(page), 'error');
  assert.equal(await page.textContent('#status'), 'Not started: fix max tokens, temperature, top-p (marked above).');
  assert.match(await page.textContent('#temperature-error'), /from 0 to 100/);
  assert.match(await page.textContent('#topP-error'), /from 0 to 1/);
  assert.match(await page.textContent('#maxTokens-error'), /outside 1 to 100000/);
  assert.equal(await page.textContent('#output'), '', 'nothing ran');
  await page.fill('#url', 'ftp://example.com/model.gguf');
  await page.click('#load');
  assert.match(await page.textContent('#url-error'), /^an http\(s\) URL/);
  assert.equal(await valueOf(page, '#i-arch'), 'llama', 'the loaded model stays');
  // A file that is not a model: refused next to the picker; the model loaded before stays and generates.
  await page.setInputFiles('#file', { name: 'notamodel.gguf', mimeType: 'application/octet-stream', buffer: Buffer.from('hello, not a model') });
  await page.click('#load');
  await settled(page, ['ready', 'error']);
  assert.match(await page.textContent('#file-error'), /notamodel\.gguf: GGUF: not a GGUF file \(magic 'hell', want 'GGUF'\)/);
  assert.equal(await page.textContent('#error'), '', 'the message is next to the picker, not in the general box');
  assert.equal(await page.textContent('#status'),
    `Not loaded: notamodel.gguf (the reason is next to the file picker). ${FIXTURE}.gguf is still loaded: Generate uses it.`);
  assert.equal(await page.isEnabled('#generate'), true);
  assert.equal(await valueOf(page, '#i-arch'), 'llama');
  await page.fill('#topP', '1');
  assert.deepEqual((await greedy(page)).ids, expected.ids, 'Generate runs the model loaded before');
  await page.fill('#maxTokens', '1');
  await page.click('#generate');
  await settled(page, ['finished', 'stopped', 'error']);
  assert.match(await page.textContent('#status'), /^Finished: 1 token \(ended by /);
  assert.match(await page.$eval('#repeatLastN', (el) => el.closest('label').textContent), /-1: all/, 'the hint says what -1 means');
  // A file picked from disk: a File, read by the Worker with stream(); with 8 positions of context,
  // and a browser whose storage quota is full (writes into OPFS fail): the model loads all the same.
  await page.evaluate(() => {
    FileSystemFileHandle.prototype.createWritable = async () => new WritableStream({
      write() { throw new DOMException('The quota has been exceeded.', 'QuotaExceededError'); },
    });
  });
  const qwen = fileURLToPath(new URL('../../web/data/lm/qwen3-q4_k.gguf', import.meta.url));
  await page.fill('#nCtx', '8');
  await page.setInputFiles('#file', qwen);
  await page.click('#load');
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  assert.match(await page.textContent('#status'), /^Loaded qwen3-q4_k\.gguf \(1\.02 MiB\)/);
  assert.equal(await valueOf(page, '#i-arch'), 'qwen3');
  assert.match(await page.textContent('#i-types'), /q4_K/);
  await storeSays(page, ['not-kept']);
  assert.match(await page.textContent('#store-note'), /^Not kept in this browser: the storage quota .* is exceeded; the model is loaded all the same/);
  assert.equal(await page.isVisible('#kept'), false);

  // A prompt longer than the context (8): marked as it is typed, refused before running.
  await page.fill('#temperature', '0');
  await page.fill('#topP', '1');
  await page.fill('#maxTokens', '4');
  await page.fill('#prompt', 'The miller counted the sacks twice, then the sacks counted the miller.');
  await page.waitForFunction(() => Number(document.getElementById('c-prompt').dataset.value) > 8, null, { timeout: 60000 });
  assert.equal(Number(await valueOf(page, '#c-left')), 0);
  assert.match(await page.textContent('#prompt-error'), /^the prompt is \d+ tokens, longer than the context \(8\)/);
  const lastRun = () => page.evaluate(() => [document.getElementById('output').dataset.ids, document.getElementById('r-stopped').textContent]);
  const before = await lastRun(); // the run made with the llama model above
  await page.click('#generate');
  await settled(page, ['error', 'finished', 'stopped']);
  assert.match(await page.textContent('#status'), /^Not started: the prompt is \d+ tokens; the context holds 8/);
  assert.deepEqual(await lastRun(), before, 'nothing ran');

  // No OPFS at all: said, and the file loads from the disk.
  await page.evaluate(() => { delete StorageManager.prototype.getDirectory; });
  await page.click('#load');
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  await storeSays(page, ['unavailable']);
  assert.match(await page.textContent('#store-note'), /^Files are not kept in this browser: this browser has no Origin Private File System/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('generate.html: Stop ends a running generation in the Worker; GgufWorker passes RlxErrors back', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html?mode=complete&model=${FIXTURE}&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  // Sampled, as many tokens as the context holds (512): Stop comes long before the end.
  await page.fill('#maxTokens', '100000');
  await page.fill('#temperature', '0.8');
  await page.click('#generate');
  // Stop is clicked in the page as the second token shows (this tiny model makes the 512 in a fraction of
  // a second), with the context line read at that moment.
  const [promptTokens, usedWhileRunning] = await page.evaluate(() => new Promise((resolve, reject) => {
    const gen = document.getElementById('r-gen');
    const timer = setTimeout(() => reject(new Error(`no second token in 60 s (r-gen ${gen.dataset.value})`)), 60000);
    const seen = new MutationObserver(() => {
      if (!(Number(gen.dataset.value) >= 2)) return;
      seen.disconnect();
      clearTimeout(timer);
      const line = ['c-prompt', 'c-used'].map((id) => Number(document.getElementById(id).dataset.value));
      document.getElementById('stop-run').click();
      resolve(line);
    });
    seen.observe(gen, { attributes: true, childList: true, subtree: true, characterData: true });
  }));
  assert.ok(usedWhileRunning >= promptTokens + 2, `context used while running: ${usedWhileRunning} (prompt ${promptTokens})`);
  await settled(page, ['finished', 'stopped', 'error']);
  assert.equal(await state(page), 'stopped', await page.textContent('#error'));
  assert.equal(await valueOf(page, '#r-stopped'), 'abort');
  const made = Number(await valueOf(page, '#r-gen'));
  assert.ok(made >= 2 && made < 500, `${made} tokens before Stop took effect`);
  assert.equal(JSON.parse(await page.$eval('#output', (el) => el.dataset.ids)).length, made);
  assert.equal(Number(await valueOf(page, '#c-used')), promptTokens + made);
  // The Worker client: the model's own RlxErrors come back with their messages.
  const errors = await page.evaluate(async (name) => {
    const { GgufWorker, RlxError } = await import('./runtime/llm.js');
    const lm = new GgufWorker();
    const caught = async (p) => p.then(() => 'resolved', (e) => `${e instanceof RlxError} ${e.message}`);
    const before = await caught(lm.generate('x'));
    await lm.load(`./data/lm/${name}.gguf`);
    const out = [before, await caught(lm.generate('x', { topP: 2 })), await caught(lm.tokenize(5)), await caught(lm.load(42))];
    lm.terminate();
    return out;
  }, FIXTURE);
  assert.match(errors[0], /^true GgufWorker\.generate: no model loaded/);
  assert.match(errors[1], /^true GgufModel\.generate: options\.topP must be a number from 0 to 1/);
  assert.match(errors[2], /^true GgufModel\.tokenize: text must be a string/);
  assert.match(errors[3], /^true GgufWorker\.load: source must be a URL, a File or Blob/);
  assert.deepEqual(problems, []);
  await page.close();
});

test(`generate.html: a dropped ${FIXTURE} loads, is kept in OPFS across a reload, loads from there to the same tokens, and Forget removes it`,
  { skip: why ?? false, timeout: 240000 }, async () => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}generate.html?mode=complete`);
    await storeSays(page, ['none']);
    assert.equal(await page.isVisible('#kept'), false);
    // Refused next to the picker, nothing loads: a file that is not .gguf, two files, a .gguf that is not GGUF.
    for (const [files, message] of [
      [[{ name: 'notes.txt', text: 'hello' }], /^notes\.txt is not a \.gguf file$/],
      [[{ name: 'a.gguf', text: 'GGUF' }, { name: 'b.gguf', text: 'GGUF' }], /^2 files were dropped; drop one \.gguf file$/],
      [[{ name: 'fake.gguf', text: 'hello' }], /^fake\.gguf is not a GGUF file/],
    ]) {
      assert.equal(await drop(page, files), true, 'the drop zone shows while dragging');
      await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('file-error').textContent), message.source,
        { timeout: 10000 }).catch(() => {}); // the message next to the picker (checked below)
      assert.match(await page.textContent('#file-error'), message);
      assert.equal(await state(page), 'idle', 'nothing loads');
    }
    assert.equal(await drop(page, [{ name: `${FIXTURE}.gguf`, url: `./data/lm/${FIXTURE}.gguf` }]), true);
    assert.equal(await page.isVisible('#drop-zone'), false, 'the drop zone hides after the drop');
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.match(await page.textContent('#status'), new RegExp(`^Loaded ${FIXTURE}\\.gguf \\(0\\.80 MiB\\) in`));
    assert.equal(await page.textContent('#file-error'), '');
    await storeSays(page, ['kept', 'not-kept']);
    assert.match(await page.textContent('#store-note'), new RegExp(`^Kept ${FIXTURE}\\.gguf in this browser.* This site stores [\\d.]+ MiB in this browser \\(quota `));

    // After a reload: offered, loaded from OPFS (no disk), the same greedy tokens as Node.
    await page.reload();
    await storeSays(page, ['kept', 'unavailable']);
    assert.equal(await page.isVisible('#kept-load'), true);
    assert.equal(await page.textContent('#kept-load'), `load ${FIXTURE}.gguf (0.80 MiB) kept in this browser`);
    await screenshot(page, 'generate-kept');
    await page.click('#kept-load');
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.match(await page.textContent('#status'), new RegExp(`^Loaded ${FIXTURE}\\.gguf \\(0\\.80 MiB\\) from this browser's storage in`));
    assert.deepEqual((await greedy(page)).ids, expected.ids, 'the kept file generates the tokens Node does');

    await page.click('#kept-forget');
    await storeSays(page, ['none', 'error']);
    assert.match(await page.textContent('#store-note'), new RegExp(`^Forgot ${FIXTURE}\\.gguf\\.`));
    assert.equal(await page.isVisible('#kept'), false);
    await page.reload();
    await storeSays(page, ['none', 'kept']);
    assert.equal(await page.isVisible('#kept'), false, 'nothing offered after Forget and a reload');
    assert.deepEqual(problems, []);
    await page.close();
  });
