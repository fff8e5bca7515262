// chat_page.test.mjs - generate.html's chat mode (its default) in Debian's
// chromium (headless) against tools/serve.py: a test model loads in the
// Worker, the template in force is named, and a conversation of two turns,
// greedy, gives the replies web/runtime/llm.js's model.chat gives in Node
// for the same messages, with the second turn taking the first from the
// KV cache (the same cached count as Node's); Regenerate gives the same
// greedy reply again evaluating only the generation prompt's tail; Clear
// empties the conversation; an empty message is refused next to the box.
// JSON replies: a malformed schema is refused under its box with the
// parser's message (the message goes back to its box, the page goes on);
// with a schema the reply is the model's text and parses as JSON of it.
// Screenshots: build/screens/generate-chat.png, generate-chat-json.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer, launch, newPage, missing, screenshot } from './helpers.mjs';
import { loadGguf } from '../../web/runtime/llm.js';

const FIXTURE = 'qwen2-q8_0';
const FILE = fileURLToPath(new URL(`../../web/data/lm/${FIXTURE}.gguf`, import.meta.url));
const SYSTEM = 'You are a helpful assistant.'; // the page's default system prompt
const TURNS = ['Hello! Who are you?', 'And where is the mill?'];
const OPTIONS = { temperature: 0, maxTokens: 6 };
const SCHEMA = { type: 'object', properties: { way: { enum: ['north', 'south', 'east', 'west'] } }, required: ['way'], additionalProperties: false };
const why = missing() ?? (!existsSync(FILE) ? `missing ${FILE}: run make lm-web-fixtures` : null) ??
  (!existsSync(new URL('../../web/vendor/jinja.js', import.meta.url)) ? 'missing web/vendor/jinja.js: run make' : null);
let server;
let browser;
const expected = []; // Node's replies: { text, cachedTokens, evaluatedTokens }

before(async () => {
  if (why) return;
  const model = await loadGguf(FILE);
  const messages = [{ role: 'system', content: SYSTEM }];
  for (const content of TURNS) {
    messages.push({ role: 'user', content });
    const r = await model.chat(messages, OPTIONS);
    expected.push({ text: r.text, cachedTokens: r.stats.cachedTokens, evaluatedTokens: r.stats.evaluatedTokens });
    messages.push({ role: 'assistant', content: r.text });
  }
  model.free();
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const state = (page) => page.$eval('#status', (el) => el.dataset.state);
const settled = (page, states, timeout = 60000) => page.waitForFunction((s) => s.includes(document.getElementById('status').dataset.state),
  states, { timeout });
const replies = (page) => page.$$eval('#conversation .msg-assistant .text', (els) => els.map((e) => e.textContent));

async function send(page, text) {
  await page.fill('#message', text);
  await page.click('#send');
  await settled(page, ['finished', 'stopped', 'error']);
  assert.equal(await state(page), 'finished', await page.textContent('#error'));
}

test(`generate.html chat: ${FIXTURE}, two greedy turns give Node's replies, the second from the cache; Regenerate; Clear; JSON replies`,
  { skip: why ?? false, timeout: 180000 }, async () => {
    const { page, problems } = await newPage(browser);
    await page.goto(`${server.url}generate.html?model=${FIXTURE}&temperature=0&maxTokens=${OPTIONS.maxTokens}&autoload=1`);
    await settled(page, ['ready', 'error']);
    assert.equal(await state(page), 'ready', await page.textContent('#error'));
    assert.equal(await page.isVisible('#chat-section'), true, 'chat is the default mode');
    assert.equal(await page.isVisible('#prompt'), false);
    assert.match(await page.textContent('#chat-template'), /\S+ \((file|builtin|named|option)/);
    // an empty message: refused next to the box, nothing runs
    await page.fill('#message', '   ');
    await page.click('#send');
    assert.equal(await page.textContent('#message-error'), 'write a message');
    assert.equal(await page.$$eval('#conversation .msg', (els) => els.length), 0);

    await send(page, TURNS[0]);
    assert.deepEqual(await replies(page), [expected[0].text]);
    await send(page, TURNS[1]);
    assert.deepEqual(await replies(page), [expected[0].text, expected[1].text]);
    const stats = await page.textContent('#chat-stats');
    assert.ok(expected[1].cachedTokens > 0);
    assert.match(stats, new RegExp(`, ${expected[1].cachedTokens.toLocaleString('en-US')} from the cache, ${expected[1].evaluatedTokens.toLocaleString('en-US')} evaluated;`), stats);
    await screenshot(page, 'generate-chat');

    // Regenerate: the last reply again (greedy), its prompt taken from the cache up to the reply
    await page.click('#regenerate');
    await settled(page, ['finished', 'stopped', 'error']);
    assert.equal(await state(page), 'finished', await page.textContent('#error'));
    assert.deepEqual(await replies(page), [expected[0].text, expected[1].text]);
    const again = /([\d,]+) from the cache, ([\d,]+) evaluated/.exec(await page.textContent('#chat-stats'));
    assert.ok(Number(again[2].replace(/,/g, '')) < expected[1].evaluatedTokens, `Regenerate evaluated ${again[2]} tokens, the second turn ${expected[1].evaluatedTokens}`);

    await page.click('#clear');
    assert.equal(await page.$$eval('#conversation .msg', (els) => els.length), 0);
    assert.equal(await page.isEnabled('#regenerate'), false);
    assert.equal(await page.isEnabled('#send'), true);

    // JSON replies: a malformed schema is refused under its box, then a reply under a schema
    assert.equal(await page.isVisible('#json-schema'), false, 'the schema box shows in JSON mode only');
    await page.check('#json-mode');
    await page.fill('#maxTokens', '48');
    await page.fill('#json-schema', '{"type": "object", "properties": {"a": {"type": "strin"}}}');
    await page.fill('#message', 'Which way?');
    await page.click('#send');
    await settled(page, ['finished', 'stopped', 'error']);
    assert.equal(await state(page), 'error');
    assert.match(await page.textContent('#json-schema-error'), /^GgufModel\.chat: options\.jsonSchema: json schema: \/properties\/a\b/);
    assert.equal(await page.$$eval('#conversation .msg', (els) => els.length), 0, 'the refused turn left the conversation');
    assert.equal(await page.inputValue('#message'), 'Which way?', 'and its message went back to its box');
    await page.fill('#json-schema', JSON.stringify(SCHEMA));
    assert.equal(await page.textContent('#json-schema-error'), '', 'editing the schema clears its error');
    await page.click('#send');
    await settled(page, ['finished', 'stopped', 'error']);
    assert.equal(await state(page), 'finished', await page.textContent('#error'));
    const [reply] = await replies(page);
    const value = JSON.parse(reply); // the reply as the model wrote it
    assert.deepEqual(Object.keys(value), ['way']);
    assert.ok(SCHEMA.properties.way.enum.includes(value.way), reply);
    await screenshot(page, 'generate-chat-json');
    assert.deepEqual(problems, []);
    await page.close();
  });

