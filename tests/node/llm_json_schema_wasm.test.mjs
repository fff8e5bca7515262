// llm_json_schema_wasm.test.mjs - the JSON Schema converter is a module of
// its own (web/pkg/rlx_json_schema.wasm, web/runtime/llm_json_schema.js),
// loaded on the first options.jsonSchema: several calls on two models, two
// of them started together, instantiate it once, and the model's module
// has no converter; a converter that cannot be loaded (loadGguf's
// options.schemaWasm naming a missing file, or a module that is not the
// converter) is an RlxError naming the function and the option, while GBNF
// grammars still work on that model, and a failed load is not kept (the
// file put there afterwards loads on the next call).  Uses the
// seeded test models of build/lm/ (make lm-fixtures).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MODEL = `${ROOT}build/lm/qwen2-q8_0.gguf`;
const SCHEMA = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };

/** Counts instantiations of the converter (a module exporting rlx_llm_json_schema_to_gbnf) while run() runs. */
async function countConverters(run) {
  const instantiate = WebAssembly.instantiate;
  let n = 0;
  WebAssembly.instantiate = async (...args) => {
    const r = await instantiate.apply(WebAssembly, args);
    const instance = r instanceof WebAssembly.Instance ? r : r.instance;
    if (typeof instance.exports.rlx_llm_json_schema_to_gbnf === 'function') n++;
    return r;
  };
  try {
    await run();
  } finally {
    WebAssembly.instantiate = instantiate;
  }
  return n;
}

test('the converter is instantiated once for every jsonSchema call on two models; the model module has none', async () => {
  const models = [];
  try {
    const n = await countConverters(async () => {
      for (let i = 0; i < 2; i++) models.push(await loadGguf(MODEL, { backend: 'cpu', nCtx: 128 }));
      assert.equal(typeof models[0].mod.e.rlx_llm_json_schema_to_gbnf, 'undefined');
      assert.equal(typeof models[0].mod.e.rlx_llm_grammar_from_json_schema, 'undefined');
      const opts = (seed) => ({ jsonSchema: SCHEMA, seed, temperature: 1, maxTokens: 24 });
      // two calls at once, while the converter is still loading, then more on each model
      const first = await Promise.all(models.map((m, i) => m.generate('JSON:', opts(i))));
      const later = [await models[0].generate('JSON:', opts(2)), await models[1].chat([{ role: 'user', content: 'hi' }], opts(3))];
      for (const r of [...first, ...later]) {
        assert.match(r.text, /^\{/, `every reply is held to the schema: ${JSON.stringify(r.text)}`);
        if (r.stoppedBy === 'eog') assert.ok(Number.isInteger(JSON.parse(r.text).n), r.text);
      }
    });
    assert.equal(n, 1, 'one instantiation of rlx_json_schema.wasm in this realm');
  } finally {
    for (const m of models) m.free();
  }
});

test('a converter that cannot be loaded is refused naming the option; grammars still work; it loads once it is there', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlx-schema-'));
  const later = join(dir, 'rlx_json_schema.wasm'); // missing at first
  const notConverter = fileURLToPath(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
  try {
    for (const [schemaWasm, why] of [[later, /ENOENT|no such file/], [notConverter, /it is not rlx_json_schema\.wasm/]]) {
      const m = await loadGguf(MODEL, { backend: 'cpu', nCtx: 128, schemaWasm });
      try {
        await assert.rejects(m.generate('JSON:', { jsonSchema: SCHEMA, maxTokens: 4 }), (err) => {
          assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
          assert.match(err.message, /^GgufModel\.generate: options\.jsonSchema needs the JSON Schema converter, which cannot be loaded from /);
          assert.match(err.message, /options\.schemaWasm/);
          assert.match(err.message, why);
          return true;
        });
        const r = await m.generate('Which way?', { grammar: 'root ::= "north" | "south"', maxTokens: 16 });
        assert.ok(r.stoppedBy === 'eog' && /^(north|south)$/.test(r.text), `a GBNF grammar needs no converter: ${JSON.stringify(r)}`);
        if (schemaWasm === later) { // a failed load is not kept: once the file is there, the next call loads it
          copyFileSync(fileURLToPath(new URL('../../web/pkg/rlx_json_schema.wasm', import.meta.url)), later);
          const j = await m.generate('JSON:', { jsonSchema: SCHEMA, maxTokens: 4 });
          assert.match(j.text, /^\{/);
        }
      } finally {
        m.free();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await assert.rejects(loadGguf(MODEL, { schemaWasm: 42 }), /loadGguf: options\.schemaWasm must be a URL, a path, bytes or a WebAssembly\.Module, got number 42/);
});
