// llm_types.test.mjs - every GGUF test model (build/lm: llama, qwen2 and qwen3
// in every weight type, a tied output, the exported transformer) in Debian's
// chromium: loaded with web/runtime/llm.js on the page's main thread, each
// tokenizes the corpus as llama.cpp does (tests/llama_ref/expected/) and
// decodes greedily to the native CLI's tokens (build/rlx generate); a few,
// one per architecture, also through GgufWorker in a Worker.  The page gets
// the files from build/lm through a route, so nothing is copied into web/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startServer, launch, lmPage as servedLmPage, missing, REPO } from './helpers.mjs';

const EXPECTED = `${REPO}tests/llama_ref/expected`;
const CLI = `${REPO}build/rlx`;
const TOKENS = 6;
const IN_WORKER = ['llama-q4_k', 'qwen2-q6_k', 'qwen3-bf16'];
const names = existsSync(EXPECTED) ? readdirSync(EXPECTED).map((f) => f.replace(/\.json$/, '')).sort() : [];
const why = missing() ?? (!existsSync(`${REPO}web/pkg/rlx_llm.wasm`) ? 'missing web/pkg/rlx_llm.wasm: run `make wasm`' : null) ??
  (!existsSync(CLI) ? 'missing build/rlx: run make' : null) ??
  (names.some((n) => !existsSync(`${REPO}build/lm/${n}.gguf`)) ? 'missing build/lm fixtures: run make lm-fixtures' : null);

let server;
let browser;
const cases = []; // { name, texts, ids (llama.cpp's), promptIds, greedy (the CLI's) }

before(async () => {
  if (why) return;
  for (const name of names) {
    const ref = JSON.parse(readFileSync(`${EXPECTED}/${name}.json`, 'utf8'));
    const promptIds = ref.generate[0].prompt_ids;
    const out = execFileSync(CLI, ['generate', '--model', `${REPO}build/lm/${name}.gguf`, '--prompt-ids', promptIds.join(','),
      '--max-tokens', String(TOKENS), '--ids'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    cases.push({ name, texts: ref.tokenize.map((t) => t.text), ids: ref.tokenize.map((t) => t.ids), promptIds,
      greedy: JSON.parse(out.trimEnd().split('\n').at(-1)).ids });
  }
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const lmPage = () => servedLmPage(browser, server);

test(`every test model (${names.length}) loads in Chromium, tokenizes as llama.cpp and decodes as the native CLI`, { skip: why ?? false, timeout: 300000 }, async () => {
  assert.ok(names.length >= 36, `${names.length} reference files`);
  const { page, problems } = await lmPage();
  const got = await page.evaluate(async ({ cases, tokens }) => {
    const { loadGguf } = await import('./runtime/llm.js');
    const out = [];
    for (const c of cases) {
      const model = await loadGguf(`./lm/${c.name}.gguf`);
      try {
        const ids = c.texts.map((t) => model.tokenize(t));
        const r = await model.generate(c.promptIds, { maxTokens: tokens, temperature: 0 });
        out.push({ name: c.name, arch: model.info.arch, ids, greedy: r.ids });
      } finally {
        model.free();
      }
    }
    return out;
  }, { cases: cases.map(({ name, texts, promptIds }) => ({ name, texts, promptIds })), tokens: TOKENS });
  for (const [i, c] of cases.entries()) {
    assert.equal(got[i].name, c.name);
    assert.deepEqual(got[i].ids, c.ids, `${c.name}: tokenize in Chromium vs llama.cpp`);
    assert.deepEqual(got[i].greedy, c.greedy, `${c.name}: greedy in Chromium vs the native CLI`);
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test(`in a Worker too (GgufWorker): ${IN_WORKER.join(', ')}`, { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await lmPage();
  const got = await page.evaluate(async ({ names, cases, tokens }) => {
    const { GgufWorker } = await import('./runtime/llm.js');
    const worker = new GgufWorker();
    const out = [];
    try {
      for (const name of names) {
        const c = cases.find((k) => k.name === name);
        await worker.load(new URL(`./lm/${name}.gguf`, location.href).href);
        const r = await worker.generate(c.promptIds, { maxTokens: tokens, temperature: 0 });
        out.push({ name, greedy: r.ids, first: await worker.tokenize(c.text) });
      }
    } finally {
      worker.terminate();
    }
    return out;
  }, { names: IN_WORKER, cases: cases.map(({ name, texts, promptIds }) => ({ name, promptIds, text: texts[0] })), tokens: TOKENS });
  for (const g of got) {
    const c = cases.find((k) => k.name === g.name);
    assert.deepEqual(g.greedy, c.greedy, `${g.name}: greedy in the Worker vs the native CLI`);
    assert.deepEqual(g.first, c.ids[0], `${g.name}: tokenize in the Worker vs llama.cpp`);
  }
  assert.deepEqual(problems, []);
  await page.close();
});
