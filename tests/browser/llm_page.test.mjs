// llm_page.test.mjs - web/generate.html in Debian's chromium (headless,
// playwright-core) against tools/serve.py: a test model (web/data/lm/, made
// by make) loads through the Worker with its info shown, greedy generation
// streams the same tokens as web/runtime/llm.js gives in Node for the same
// file, bad sampling fields are refused next to them with nothing run, a
// URL off this server is refused, a picked .gguf file loads, Stop ends a running generation in the
// Worker, and GgufWorker hands the model's RlxErrors back with their
// messages.  Screenshot: build/screens/generate.png.
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

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const state = (page) => page.$eval('#status', (el) => el.dataset.state);
const settled = (page, states, timeout = 20000) => page.waitForFunction((s) => s.includes(document.getElementById('status').dataset.state),
  states, { timeout });

test(`generate.html: ${FIXTURE} loads in the Worker and greedy tokens match Node's`, { skip: why ?? false, timeout: 60000 }, async (t) => {
  const model = await loadGguf(FILE);
  const expected = await model.generate(PROMPT, { maxTokens: TOKENS, temperature: 0 });
  const info = model.info;
  model.free();

  const { page, problems } = await newPage(browser);
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto(`${server.url}generate.html?model=${FIXTURE}&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  assert.equal(await valueOf(page, '#i-arch'), info.arch);
  assert.equal(Number(await valueOf(page, '#i-vocab')), info.nVocab);
  assert.equal(Number(await valueOf(page, '#i-params')), info.nParams);
  assert.match(await page.textContent('#i-types'), /q4_0/);
  assert.equal(await page.$eval('#load-progress', (el) => el.value), 1);

  await page.fill('#prompt', PROMPT);
  await page.fill('#maxTokens', String(TOKENS));
  await page.fill('#temperature', '0');
  await page.click('#generate');
  await settled(page, ['finished', 'stopped', 'error']);
  assert.equal(await state(page), 'finished', await page.textContent('#error'));
  const ids = JSON.parse(await page.$eval('#output', (el) => el.dataset.ids));
  assert.deepEqual(ids, expected.ids, 'the page generates the tokens Node does');
  assert.equal(await page.textContent('#output'), expected.text);
  assert.equal(Number(await valueOf(page, '#r-prompt')), expected.promptIds.length);
  assert.equal(Number(await valueOf(page, '#r-gen')), expected.ids.length);
  const promptRate = Number(await valueOf(page, '#r-prompt-rate'));
  const genRate = Number(await valueOf(page, '#r-gen-rate'));
  assert.ok(promptRate > 0 && genRate > 0, `tokens/s shown: prompt ${promptRate}, generation ${genRate}`);
  t.diagnostic(`Chromium (Worker), ${FIXTURE}: prompt ${promptRate.toFixed(0)} tokens/s, generation ${genRate.toFixed(0)} tokens/s; ` +
    `Node: prompt ${expected.stats.promptTokensPerSecond.toFixed(0)}, generation ${expected.stats.generateTokensPerSecond.toFixed(0)}`);
  await screenshot(page, 'generate');
  assert.deepEqual(problems, []);
  await page.close();
});

test('generate.html: bad sampling fields and a URL off this server are refused next to their fields', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html?model=${FIXTURE}&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  await page.fill('#temperature', '-1');
  await page.fill('#topP', '1.5');
  await page.fill('#maxTokens', '0');
  await page.click('#generate');
  assert.equal(await state(page), 'error');
  assert.match(await page.textContent('#temperature-error'), /from 0 to 100/);
  assert.match(await page.textContent('#topP-error'), /from 0 to 1/);
  assert.match(await page.textContent('#maxTokens-error'), /outside 1 to 100000/);
  assert.equal(await page.textContent('#output'), '', 'nothing ran');
  await page.fill('#url', 'https://example.com/model.gguf');
  await page.click('#load');
  assert.match(await page.textContent('#url-error'), /only this server's URLs/);
  assert.equal(await valueOf(page, '#i-arch'), 'llama', 'the loaded model stays');
  // A file picked from disk: a File, read by the Worker with stream().
  const qwen = fileURLToPath(new URL('../../web/data/lm/qwen3-q4_k.gguf', import.meta.url));
  await page.setInputFiles('#file', qwen);
  await page.click('#load');
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  assert.match(await page.textContent('#status'), /^Loaded qwen3-q4_k\.gguf \(1\.02 MiB\)/);
  assert.equal(await valueOf(page, '#i-arch'), 'qwen3');
  assert.match(await page.textContent('#i-types'), /q4_K/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('generate.html: Stop ends a running generation in the Worker; GgufWorker passes RlxErrors back', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}generate.html?model=${FIXTURE}&autoload=1`);
  await settled(page, ['ready', 'error']);
  assert.equal(await state(page), 'ready', await page.textContent('#error'));
  // Sampled, as many tokens as the context holds (512): Stop comes long before the end.
  await page.fill('#maxTokens', '100000');
  await page.fill('#temperature', '0.8');
  await page.click('#generate');
  await page.waitForFunction(() => Number(document.getElementById('r-gen').dataset.value) >= 2, null, { timeout: 10000 });
  await page.click('#stop-run');
  await settled(page, ['finished', 'stopped', 'error']);
  assert.equal(await state(page), 'stopped', await page.textContent('#error'));
  assert.equal(await valueOf(page, '#r-stopped'), 'abort');
  const made = Number(await valueOf(page, '#r-gen'));
  assert.ok(made >= 2 && made < 500, `${made} tokens before Stop took effect`);
  assert.equal(JSON.parse(await page.$eval('#output', (el) => el.dataset.ids)).length, made);
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
