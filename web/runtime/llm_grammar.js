// llm_grammar.js - output held to a grammar: generate()'s and chat()'s
// options.grammar (GBNF text: the syntax of docs/language-models.md,
// Grammars) and options.jsonSchema (a JSON schema, an object or its JSON
// text), one at most.  A JSON schema is first written as GBNF text by the
// JSON Schema converter, a module of its own loaded on first use
// (llm_json_schema.js).  The model's module parses the GBNF text
// (src/web_llm/grammar.c over include/rlx_llm_grammar.h) once per call into
// a grammar the generator holds every token to; the caller frees it when
// the generation ends, however it ends.  llm_openai.js maps response_format
// onto jsonSchema.
import { RlxError, describe } from './loader.js';
import { STATUS, fail } from './llm_common.js';
import { jsonSchemaToGbnf } from './llm_json_schema.js';

/** The options that constrain the output (generate() and chat() take them; GgufWorker passes them on). */
export const GRAMMAR_OPTIONS = Object.freeze(['grammar', 'jsonSchema']);
/** An options key (not listed by Object.keys) naming where a caller's jsonSchema came from, for its errors (llm_openai.js). */
export const SCHEMA_SOURCE = Symbol('jsonSchema source');
/** The JSON schema of any JSON object (createChatCompletion's json_object, generate.html's empty schema box). */
export const ANY_OBJECT_SCHEMA = Object.freeze({ type: 'object' });

/**
 * options.grammar / options.jsonSchema checked (fn names the caller):
 * null when neither is given, else { option, text, schema } (the option's
 * name, its text, and whether that text is a JSON schema).
 */
export function grammarOption(fn, o) {
  const given = GRAMMAR_OPTIONS.filter((k) => o[k] !== undefined);
  if (given.length > 1) throw fail(fn, 'options.grammar and options.jsonSchema both constrain the output: give one of them');
  if (o.grammar !== undefined) {
    if (typeof o.grammar !== 'string' || o.grammar.trim() === '') {
      throw fail(fn, `options.grammar must be GBNF text (a string with a root rule), got ${describe(o.grammar)}`);
    }
    return { option: 'options.grammar', text: o.grammar, schema: false };
  }
  if (o.jsonSchema === undefined) return null;
  const s = o.jsonSchema;
  const option = o[SCHEMA_SOURCE] ?? 'options.jsonSchema';
  let text = s;
  if (s !== null && typeof s === 'object' && !Array.isArray(s) && !ArrayBuffer.isView(s)) {
    try {
      text = JSON.stringify(s);
    } catch (err) {
      throw fail(fn, `${option} cannot be written as JSON: ${err?.message ?? err}`);
    }
  } else if (typeof s !== 'string' || s.trim() === '') {
    throw fail(fn, `${option} must be a JSON schema: an object or its JSON text, got ${describe(s)}`);
  }
  return { option, text, schema: true };
}

/**
 * The grammar of spec (grammarOption's) parsed in the module mod: a
 * Promise of its pointer, to free with freeGrammar after the generator.
 * A JSON schema is converted to GBNF text first (schemaWasm: loadGguf's
 * options.schemaWasm, where the converter is).  A refusal is an RlxError
 * "fn: option: <the converter's or the parser's message>".
 */
export async function parseGrammar(fn, mod, spec, schemaWasm = undefined) {
  const parser = 'rlx_llm_grammar_parse';
  if (typeof mod.e[parser] !== 'function') {
    throw new RlxError(STATUS.UNSUPPORTED, `${fn}: ${spec.option} needs the module's ${parser}, which this build ` +
      'does not export (load the model with the current web/pkg modules)', 'unsupported');
  }
  const text = spec.schema ? await jsonSchemaToGbnf(fn, spec.option, spec.text, schemaWasm) : spec.text;
  return mod.scoped((t) => {
    const { ptr, len } = t.str(text);
    const out = t.alloc(4);
    mod.i32(out, 1)[0] = 0;
    mod.check(mod.call(parser, ptr, len, out), `${fn}: ${spec.option}: `);
    return mod.i32(out, 1)[0] >>> 0;
  });
}

/** Frees a grammar of parseGrammar (0: none); nothing to do once the module is gone. */
export function freeGrammar(mod, grammar) {
  if (grammar && !mod.dead) mod.call('rlx_llm_grammar_free', grammar);
}
