// llm_json_schema.js - the JSON Schema converter, a wasm module of its own
// (web/pkg/rlx_json_schema.wasm: src/web_json_schema/exports.c over
// include/rlx_llm_grammar.h), so that no language-model module carries it.
// It is loaded on the first options.jsonSchema, once per realm for each
// source (a cached Promise, shared by calls that come while it loads; a
// failed load is forgotten, so a later call tries again), compiled and
// instantiated as the model's module is (llm_module.js), and turns a
// schema's JSON text into GBNF text, which the model's module then parses
// (llm_grammar.js).  loadGguf's options.schemaWasm gives another source.
import { LlmModule, LlmWasi, compileModule } from './llm_module.js';
import { instantiateModule } from './threads.js';
import { RlxError } from './loader.js';
import { STATUS } from './llm_common.js';

/** The converter's default file, beside the language-model modules. */
export const SCHEMA_WASM = new URL('../pkg/rlx_json_schema.wasm', import.meta.url);

const byUrl = new Map();        // a URL's or path's text -> Promise<LlmModule>
const byObject = new WeakMap(); // bytes or a WebAssembly.Module given -> Promise<LlmModule>

async function instantiateConverter(source) {
  const { instance } = await instantiateModule('jsonSchema', await compileModule(source), new LlmWasi(),
    { given: 'the converter', plain: 'rlx_json_schema.wasm' });
  if (typeof instance.exports.rlx_llm_json_schema_to_gbnf !== 'function') {
    throw new Error('it is not rlx_json_schema.wasm (no rlx_llm_json_schema_to_gbnf export)');
  }
  return new LlmModule(instance, 'simd128');
}

/** The converter of source, loaded once (see the top of this file). */
function converter(source) {
  const isUrl = typeof source === 'string' || source instanceof URL;
  const cache = isUrl ? byUrl : byObject;
  const key = isUrl ? String(source) : source;
  let p = cache.get(key);
  if (!p) {
    p = instantiateConverter(source);
    cache.set(key, p);
    p.catch(() => { if (cache.get(key) === p) cache.delete(key); });
  }
  return { p, forget: () => { if (cache.get(key) === p) cache.delete(key); } };
}

/**
 * The GBNF text of a JSON schema's text, for fn's option (its errors:
 * "fn: option: json schema: <where>: <problem>", the converter's message;
 * a converter that cannot be loaded: "fn: option needs the JSON Schema
 * converter, which cannot be loaded from <source> ...").  source: loadGguf's
 * options.schemaWasm, or undefined for the default file.
 */
export async function jsonSchemaToGbnf(fn, option, text, source = undefined) {
  const { p, forget } = converter(source ?? SCHEMA_WASM);
  let conv;
  try {
    conv = await p;
  } catch (err) {
    const from = source === undefined || typeof source === 'string' || source instanceof URL
      ? String(source ?? SCHEMA_WASM).slice(0, 200) : "loadGguf's options.schemaWasm";
    const e = new RlxError(STATUS.UNSUPPORTED, `${fn}: ${option} needs the JSON Schema converter, which cannot be loaded from ` +
      `${from} (loadGguf's options.schemaWasm gives where it is): ${err?.message ?? err}`, 'unsupported');
    e.cause = err;
    throw e;
  }
  try {
    return conv.scoped((t) => {
      const { ptr, len } = t.str(text);
      const out = t.alloc(8); // the text, its bytes
      conv.i32(out, 2).fill(0);
      conv.check(conv.call('rlx_llm_json_schema_to_gbnf', ptr, len, out, out + 4), `${fn}: ${option}: `);
      const [gbnf, n] = conv.i32(out, 2);
      try {
        return conv.text(gbnf >>> 0, n >>> 0);
      } finally {
        conv.call('rlx_llm_text_free', gbnf);
      }
    });
  } finally {
    if (conv.dead) forget(); // a trap ended this instance: the next call loads a fresh one
  }
}
