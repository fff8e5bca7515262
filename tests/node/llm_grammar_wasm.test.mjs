// llm_grammar_wasm.test.mjs - output held to a grammar in JS
// (web/runtime/llm_grammar.js through rlx_llm.wasm) on the seeded test
// models of build/lm/ (make lm-fixtures), which write noise unconstrained:
// with a GBNF grammar (a choice of words, a list of numbers) every seeded
// generation, chat reply and streamed piece sequence is accepted by a
// recogniser written here; the grammar is parsed once per call and freed
// after it however it ends (the end, an abort, an error); under four JSON
// schemas (an object with required and optional properties, an array of 1
// to 3 items, an enum, nested objects through $ref) every generation that
// ended on end-of-generation parses with JSON.parse and passes a small
// validator written here; createChatCompletion's response_format
// json_object and json_schema, streamed and not, give such JSON in OpenAI's
// shapes; bad options are RlxErrors naming the function and the option,
// with the parser's message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORDS = 'root ::= ("north" | "south" | "east" | "west") "!"';
const LIST = 'root ::= "[" num ("," " "? num){0,3} "]"\nnum ::= "-"? [0-9]{1,3}'; // at most 25 characters
const SEEDS = [0, 1, 2, 3];

// The recognisers: a whole text of each grammar, and a text that can still become one.
const isWords = (t) => /^(north|south|east|west)!$/.test(t);
const isList = (t) => /^\[-?\d{1,3}(, ?-?\d{1,3}){0,3}\]$/.test(t);
const isListPrefix = (t) => isList(t) || /^(\[(-?\d{1,3}, ?){0,3}-?\d{0,3})?$/.test(t);

const rlxError = (re) => (err) => {
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, re);
  return true;
};

const models = {};
async function model(name) {
  models[name] ??= loadGguf(`${ROOT}build/lm/${name}.gguf`, { backend: 'cpu', nCtx: 256 });
  return models[name];
}
test.after(async () => { for (const m of Object.values(models)) (await m).free(); });

/** Counts the module's grammar parses and frees on m while run() runs. */
async function counted(m, run) {
  const mod = m.mod;
  const call = mod.call;
  const n = { parse: 0, free: 0 };
  mod.call = (name, ...args) => {
    if (name === 'rlx_llm_grammar_parse' || name === 'rlx_llm_grammar_from_json_schema') n.parse++;
    if (name === 'rlx_llm_grammar_free') n.free++;
    return call.call(mod, name, ...args);
  };
  try {
    await run();
  } finally {
    mod.call = call;
  }
  return n;
}

for (const name of ['qwen2-q8_0', 'llama-q4_0']) {
  test(`${name}: every seeded generation under a GBNF grammar is a text of it`, async () => {
    const m = await model(name);
    const free = await m.generate('Which way?', { temperature: 1.5, seed: 0, maxTokens: 12 });
    assert.ok(!isWords(free.text) && !isListPrefix(free.text), `unconstrained, the model writes noise: ${JSON.stringify(free.text)}`);
    for (const seed of SEEDS) {
      const r = await m.generate('Which way?', { temperature: 1.5, seed, grammar: WORDS, maxTokens: 16 });
      assert.ok(isWords(r.text), `seed ${seed}: ${JSON.stringify(r.text)}`);
      assert.equal(r.stoppedBy, 'eog', 'nothing follows the "!": only an end-of-generation token can');
    }
    for (const seed of SEEDS) {
      const r = await m.generate('Numbers:', { temperature: 1, seed, grammar: LIST, maxTokens: 32 });
      assert.ok(isList(r.text), `seed ${seed}: ${JSON.stringify(r.text)}`);
      assert.equal(r.stoppedBy, 'eog', 'a whole list comes within 26 tokens, then only the end');
    }
  });
}

test('streamed pieces and chat replies follow the grammar; one parse and one free per call', async () => {
  const m = await model('qwen2-q8_0');
  const pieces = [];
  const n = await counted(m, async () => {
    const g = m.generate('Numbers:', { temperature: 1, seed: 5, grammar: LIST, maxTokens: 8 });
    for await (const { text } of g) pieces.push(text);
    assert.equal(pieces.join(''), (await g).text);
    const c = await m.chat([{ role: 'user', content: 'Which way?' }], { temperature: 1.5, seed: 2, grammar: WORDS });
    assert.ok(isWords(c.text), JSON.stringify(c.text));
    assert.equal(c.finishReason, 'stop');
  });
  assert.ok(isListPrefix(pieces.join('')), JSON.stringify(pieces));
  assert.deepEqual(n, { parse: 2, free: 2 });
});

test('the grammar is freed when a generation is aborted, stopped by onToken, or fails', async () => {
  const m = await model('qwen2-q8_0');
  const n = await counted(m, async () => {
    const ac = new AbortController();
    const a = await m.generate('Numbers:', { temperature: 1, seed: 1, grammar: LIST, maxTokens: 24, signal: ac.signal, onToken: () => ac.abort() });
    assert.equal(a.stoppedBy, 'abort');
    const early = m.generate('Numbers:', { grammar: LIST, maxTokens: 24 });
    for await (const _ of early) break;
    assert.equal((await early).stoppedBy, 'abort');
    await assert.rejects(m.generate('Numbers:', { grammar: LIST, onToken: () => { throw new Error('from onToken'); } }), /from onToken/);
    // the generator refuses the prompt (it fills the context) after the grammar was parsed
    await assert.rejects(m.generate(new Array(300).fill(1), { grammar: LIST }), rlxError(/^GgufModel\.generate: rlx_llm_generator_new: a prompt of 300 tokens/));
  });
  assert.deepEqual(n, { parse: 4, free: 4 });
  const after = await m.generate('Numbers:', { temperature: 1, seed: 3, grammar: LIST, maxTokens: 24 });
  assert.ok(isListPrefix(after.text) && after.ids.length > 0, `the model still runs: ${JSON.stringify(after.text)}`);
});

test('bad grammar options: RlxErrors naming the function and the option', async () => {
  const m = await model('qwen2-q8_0');
  const cyclic = { type: 'object' };
  cyclic.self = cyclic;
  const cases = [
    [{ grammar: 5 }, /^GgufModel\.generate: options\.grammar must be GBNF text \(a string with a root rule\), got number 5/],
    [{ grammar: '  ' }, /^GgufModel\.generate: options\.grammar must be GBNF text/],
    [{ grammar: 'root ::= (' }, /^GgufModel\.generate: options\.grammar: grammar: line 1, column 10: a '\(' without its '\)'/],
    [{ grammar: WORDS, jsonSchema: { type: 'object' } }, /^GgufModel\.generate: options\.grammar and options\.jsonSchema both constrain the output: give one of them/],
    [{ jsonSchema: 5 }, /^GgufModel\.generate: options\.jsonSchema must be a JSON schema: an object or its JSON text, got number 5/],
    [{ jsonSchema: [] }, /^GgufModel\.generate: options\.jsonSchema must be a JSON schema/],
    [{ jsonSchema: cyclic }, /^GgufModel\.generate: options\.jsonSchema cannot be written as JSON: /],
  ];
  for (const [options, re] of cases) await assert.rejects(m.generate('x', options), rlxError(re));
  await assert.rejects(m.chat([{ role: 'user', content: 'hi' }], { grammar: 'start ::= "a"' }),
    rlxError(/^GgufModel\.chat: options\.grammar: grammar: no 'root' rule/));
  assert.ok((await m.generate('x', { maxTokens: 2 })).ids.length > 0, 'the model still runs');
});

// ---- JSON schemas ----
const SCHEMAS = {
  'an object with required and optional properties': {
    type: 'object', additionalProperties: false, required: ['name', 'ok'],
    properties: { name: { type: 'string', maxLength: 6 }, age: { type: 'integer' }, ok: { type: 'boolean' } },
  },
  'an array of 1 to 3 integers': { type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 },
  'an enum': { enum: ['red', 'green', 42, null] },
  'nested objects through $ref': {
    $defs: { point: { type: 'object', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x', 'y'], additionalProperties: false } },
    type: 'object', additionalProperties: false, required: ['from', 'to'],
    properties: { from: { $ref: '#/$defs/point' }, to: { $ref: '#/$defs/point' } },
  },
};

/** A small validator of the keywords above (not the module's): the problem, or null. */
function invalid(v, s, root = s, at = '') {
  if (s.$ref) return invalid(v, s.$ref.slice(2).split('/').reduce((o, k) => o[k], root), root, at);
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return `${at}: ${JSON.stringify(v)} is not in the enum`;
  const type = v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) && s.type === 'integer' ? 'integer' : typeof v;
  if (s.type && s.type !== type) return `${at}: ${JSON.stringify(v)} is not of type ${s.type}`;
  if (type === 'string' && s.maxLength !== undefined && [...v].length > s.maxLength) return `${at}: longer than ${s.maxLength}`;
  if (type === 'array') {
    if (v.length < (s.minItems ?? 0) || v.length > (s.maxItems ?? Infinity)) return `${at}: ${v.length} items`;
    for (let i = 0; i < v.length; i++) { const p = s.items && invalid(v[i], s.items, root, `${at}/${i}`); if (p) return p; }
  }
  if (type === 'object') {
    for (const k of s.required ?? []) if (!(k in v)) return `${at}: no ${k}`;
    for (const [k, x] of Object.entries(v)) {
      if (!s.properties?.[k]) { if (s.additionalProperties === false) return `${at}: ${k} is not allowed`; continue; }
      const p = invalid(x, s.properties[k], root, `${at}/${k}`);
      if (p) return p;
    }
  }
  return null;
}

for (const [what, schema] of Object.entries(SCHEMAS)) {
  test(`jsonSchema, ${what}: every generation that ends is JSON of the schema`, async () => {
    const m = await model('llama-q4_0');
    let ended = 0;
    for (const seed of SEEDS) {
      const r = await m.generate('JSON:', { temperature: 1, seed, jsonSchema: seed % 2 ? JSON.stringify(schema) : schema, maxTokens: 64 });
      if (r.stoppedBy !== 'eog') continue;
      ended++;
      const problem = invalid(JSON.parse(r.text), schema);
      assert.equal(problem, null, `seed ${seed}: ${r.text}`);
    }
    assert.ok(ended >= 2, `${ended} of ${SEEDS.length} generations ended`);
  });
}

test('createChatCompletion: response_format json_object and json_schema, streamed and not, give JSON in OpenAI\'s shapes', async () => {
  const m = await model('qwen2-q8_0');
  const messages = [{ role: 'user', content: 'Hello there' }];
  const way = { type: 'object', properties: { way: { enum: ['north', 'south', 'east', 'west'] } }, required: ['way'], additionalProperties: false };
  const formats = [[{ type: 'json_object' }, { type: 'object' }], [{ type: 'json_schema', json_schema: { name: 'way', strict: true, schema: way } }, way]];
  for (const [response_format, schema] of formats) {
    const request = { messages, max_tokens: 64, temperature: 0, response_format };
    const want = await m.chat(messages, { maxTokens: 64, temperature: 0, jsonSchema: schema });
    const c = await m.createChatCompletion(request);
    assert.equal(c.object, 'chat.completion');
    assert.deepEqual(c.choices, [{ index: 0, message: { role: 'assistant', content: want.text }, logprobs: null, finish_reason: 'stop' }]);
    assert.equal(invalid(JSON.parse(c.choices[0].message.content), schema), null, c.choices[0].message.content);
    const chunks = [];
    for await (const ch of await m.createChatCompletion({ ...request, stream: true })) chunks.push(ch);
    assert.ok(chunks.every((ch) => ch.object === 'chat.completion.chunk' && ch.id === chunks[0].id));
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.equal(chunks.slice(1, -1).map((ch) => ch.choices[0].delta.content).join(''), want.text);
    assert.deepEqual(chunks.at(-1).choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
  }
  await assert.rejects(m.createChatCompletion({ messages, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'strin' } } } }),
    rlxError(/^GgufModel\.createChatCompletion: response_format\.json_schema\.schema: json schema: \/type: unknown type 'strin'/));
  await assert.rejects(m.generate('x', { jsonSchema: '{"type": ' }), rlxError(/^GgufModel\.generate: options\.jsonSchema: json schema: .* at byte 9/));
});
