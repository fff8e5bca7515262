// llm_chat.test.mjs - chat in Debian's chromium: the bundled
// @huggingface/jinja (web/vendor/jinja.js) loads in a page and in a module
// Worker; GgufWorker.chat with a Jinja chat template answers as
// GgufModel.chat on the page does, keeps its KV cache (turn 2 evaluates
// only its new tokens), streams tokens, and stops on its signal; its
// createChatCompletion gives OpenAI's shapes, streamed through messages;
// in the Worker a grammar holds a generation to its words, a JSON schema's
// response_format gives JSON of it, and a malformed grammar is refused
// with the parser's message.
// On WebGL2 (SwiftShader) three turns give the CPU's tokens and reuse the
// same cached tokens, and a fourth turn under a grammar the CPU's tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { lmSuite, REPO } from './helpers.mjs';

const NAME = 'qwen2-q8_0';
const WAY = { type: 'object', properties: { way: { enum: ['north', 'south'] } }, required: ['way'], additionalProperties: false };
const suite = lmSuite([NAME], ['rlx_llm.wasm', 'rlx_llm_webgl.wasm']);
const why = suite.whys[0] ?? (existsSync(`${REPO}web/vendor/jinja.js`) ? null : 'missing web/vendor/jinja.js: run make');
const whyGl = suite.whys[1];

test('GgufWorker.chat and createChatCompletion with a Jinja template, as GgufModel.chat on the page', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await suite.page();
  const jinja = readFileSync(`${REPO}tests/llm/chat_templates/chatml.jinja`, 'utf8');
  const got = await page.evaluate(async ({ name, jinja, WAY }) => {
    const { loadGguf, GgufWorker } = await import('./runtime/llm.js');
    const url = new URL(`./lm/${name}.gguf`, location.href).href;
    const turn1 = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello <|im_end|> there' }];
    const opts = { jinja, temperature: 0, maxTokens: 8 };
    const model = await loadGguf(url, { backend: 'cpu' });
    const page1 = await model.chat(turn1, opts);
    const turn2 = [...turn1, { role: 'assistant', content: page1.text }, { role: 'user', content: 'And?' }];
    const page2 = await model.chat(turn2, opts);
    model.free();
    const worker = new GgufWorker();
    try {
      await worker.load(url, { backend: 'cpu' });
      const pieces = [];
      const w1 = await worker.chat(turn1, { ...opts, onToken: (text) => pieces.push(text) });
      const w2 = await worker.chat(turn2, opts);
      const ac = new AbortController();
      const stopped = await worker.chat(turn2, { ...opts, maxTokens: 64, signal: ac.signal, onToken: () => ac.abort() });
      const c = await worker.createChatCompletion({ messages: turn1, max_tokens: 8, temperature: 0 });
      const chunks = [];
      for await (const chunk of await worker.createChatCompletion({ messages: turn1, max_tokens: 8, stream: true })) chunks.push(chunk);
      const words = await worker.generate('Which way?', { grammar: 'root ::= ("north" | "south") "!"', temperature: 1, seed: 2 });
      const json = await worker.createChatCompletion({ messages: turn1, max_tokens: 32, temperature: 0.8, seed: 1,
        response_format: { type: 'json_schema', json_schema: { name: 'way', schema: WAY } } });
      let refused = null;
      try { await worker.chat(turn1, { grammar: 'root ::= (' }); } catch (e) { refused = e.message; }
      let both = null;
      try { await worker.generate('x', { grammar: 'root ::= "a"', jsonSchema: {} }); } catch (e) { both = e.message; }
      return { page1, page2, w1, w2, pieces, stopped: stopped.stoppedBy, template: worker.chatTemplate, c, chunks, words: words.text, json, refused, both };
    } finally {
      worker.terminate();
    }
  }, { name: NAME, jinja, WAY });
  assert.equal(got.page1.template.source, 'option');
  assert.deepEqual(got.w1.ids, got.page1.ids, 'the Worker answers turn 1 as the page does');
  assert.deepEqual(got.w2.ids, got.page2.ids, 'and turn 2');
  assert.equal(got.pieces.join(''), got.w1.text);
  assert.equal(got.w2.stats.cachedTokens, got.page2.stats.cachedTokens);
  assert.ok(got.w2.stats.cachedTokens >= got.w1.stats.promptTokens, 'turn 2 reused turn 1 from the KV cache');
  assert.equal(got.w2.stats.evaluatedTokens, got.w2.stats.promptTokens - got.w2.stats.cachedTokens);
  assert.equal(got.stopped, 'abort');
  assert.deepEqual(got.template, { name: 'chatml', source: 'builtin', why: "chatml: the file has no tokenizer.chat_template (llama.cpp's default)" });
  assert.equal(got.c.object, 'chat.completion');
  assert.equal(got.c.choices[0].message.content, got.page1.text, 'the built-in chatml renders as the Jinja fixture');
  assert.deepEqual(got.chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  assert.equal(got.chunks.slice(1, -1).map((ch) => ch.choices[0].delta.content).join(''), got.page1.text);
  assert.equal(got.chunks.at(-1).choices[0].finish_reason, 'length');
  assert.match(got.words, /^(north|south)!$/);
  assert.equal(got.json.object, 'chat.completion');
  assert.equal(got.json.choices[0].finish_reason, 'stop');
  assert.ok(WAY.properties.way.enum.includes(JSON.parse(got.json.choices[0].message.content).way), got.json.choices[0].message.content);
  assert.match(got.refused, /^GgufModel\.chat: options\.grammar: grammar: line 1, column 10: a '\(' without its '\)'/);
  assert.match(got.both, /^GgufWorker\.generate: options\.grammar and options\.jsonSchema both constrain the output/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('three chat turns on WebGL2 give the CPU\'s tokens and reuse the same cached tokens, and a fourth under a grammar', { skip: whyGl ?? false, timeout: 300000 }, async () => {
  const { page, problems } = await suite.page();
  const got = await page.evaluate(async ({ name }) => {
    const { loadGguf } = await import('./runtime/llm.js');
    const cpu = await loadGguf(`./lm/${name}.gguf`, { backend: 'cpu' });
    const gl = await loadGguf(`./lm/${name}.gguf`, { backend: 'webgl' });
    const out = [];
    let underGrammar = null;
    try {
      const msgs = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'The small river ran past the old mill' }];
      for (let turn = 1; turn <= 3; turn++) {
        const want = await cpu.chat(msgs, { temperature: 0, maxTokens: 6 });
        const r = await gl.chat(msgs, { temperature: 0, maxTokens: 6 });
        out.push({ want: want.ids, got: r.ids, wantCached: want.stats.cachedTokens, stats: r.stats, backend: gl.info.backend });
        msgs.push({ role: 'assistant', content: r.text }, { role: 'user', content: `and ${turn}?` });
      }
      // a fourth turn under a grammar: the module masks WebGL2's logits, the CPU's tokens
      const options = { temperature: 0, maxTokens: 8, grammar: 'root ::= ("north" | "south") "!"' };
      const want = await cpu.chat(msgs, options);
      const r = await gl.chat(msgs, options);
      underGrammar = { want: want.ids, got: r.ids, text: r.text, stoppedBy: r.stoppedBy };
    } finally {
      gl.free();
      cpu.free();
    }
    return { turns: out, underGrammar };
  }, { name: NAME });
  for (const [i, t] of got.turns.entries()) {
    assert.equal(t.backend, 'webgl');
    assert.deepEqual(t.got, t.want, `turn ${i + 1}`);
    assert.equal(t.stats.cachedTokens, t.wantCached, `turn ${i + 1}`);
    assert.equal(t.stats.evaluatedTokens, t.stats.promptTokens - t.stats.cachedTokens);
    if (i > 0) assert.ok(t.stats.cachedTokens > 0, `turn ${i + 1} reused the cache`);
  }
  assert.deepEqual(got.underGrammar.got, got.underGrammar.want, 'under a grammar');
  assert.deepEqual([got.underGrammar.stoppedBy, /^(north|south)!$/.test(got.underGrammar.text)], ['eog', true], got.underGrammar.text);
  assert.deepEqual(problems, []);
  await page.close();
});
