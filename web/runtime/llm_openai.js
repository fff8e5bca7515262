// llm_openai.js - GgufModel.createChatCompletion: OpenAI's chat completions
// request and response shapes over GgufModel.chat (llm_chat.js), so code
// written for OpenAI's API (or WebLLM's, wllama's) runs on a local model.
//
//   const r = await model.createChatCompletion({ messages, max_tokens: 64 });
//   r.choices[0].message.content; r.choices[0].finish_reason; r.usage.total_tokens;
//   for await (const chunk of await model.createChatCompletion({ messages, stream: true }))
//     out.append(chunk.choices[0]?.delta.content ?? '');
//
// Request: messages, model (echoed back; default the file's name), stream,
// stream_options ({ include_usage }), max_tokens (or max_completion_tokens),
// temperature, top_p, seed, stop (a string or up to 16 strings), n (1),
// response_format ({ type: 'text' }, { type: 'json_object' }: the reply is a
// JSON object, or { type: 'json_schema', json_schema: { name, description?,
// schema?, strict? } }: the reply follows the schema (any JSON object
// without one); both through chat()'s jsonSchema, llm_grammar.js), and
// signal (an AbortSignal, ours).  Left out,
// sampling is the library's default (greedy, 64 tokens).  Anything else is
// an RlxError naming createChatCompletion and the option.  finish_reason is
// 'stop' (an end-of-generation token or a stop string), 'length'
// (max_tokens or a full context), or 'abort' (the signal; ours).  The
// conversation keeps its KV cache between calls as chat() does.
import { describe, optionsArg } from './loader.js';
import { fail, numberOption, intOption } from './llm_common.js';
import { chat } from './llm_chat.js';
import { checkMessages } from './llm_chat_template.js';
import { ANY_OBJECT_SCHEMA, SCHEMA_SOURCE } from './llm_grammar.js';

const KNOWN = ['messages', 'model', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'seed',
  'stop', 'n', 'response_format', 'signal'];
const MAX_STOP = 16; // as generate()'s
const JSON_SCHEMA_KEYS = ['name', 'description', 'schema', 'strict'];
const SCHEMA_NAME = /^[A-Za-z0-9_-]{1,64}$/; // OpenAI's rule for json_schema.name

function completionId() {
  const bytes = new Uint8Array(12);
  globalThis.crypto.getRandomValues(bytes);
  return `chatcmpl-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The request checked and turned into chat()'s options. */
function chatOptions(fn, model, req) {
  for (const k of Object.keys(req)) {
    if (!KNOWN.includes(k)) throw fail(fn, `unknown option ${k} (known: ${KNOWN.join(', ')})`);
  }
  if (req.model !== undefined && typeof req.model !== 'string') throw fail(fn, `model must be a string, got ${describe(req.model)}`);
  if (req.stream !== undefined && typeof req.stream !== 'boolean') throw fail(fn, `stream must be true or false, got ${describe(req.stream)}`);
  const so = optionsArg(fn, req.stream_options ?? undefined, 'stream_options');
  for (const k of Object.keys(so)) if (k !== 'include_usage') throw fail(fn, `unknown option stream_options.${k} (known: include_usage)`);
  if (so.include_usage !== undefined && typeof so.include_usage !== 'boolean') {
    throw fail(fn, `stream_options.include_usage must be true or false, got ${describe(so.include_usage)}`);
  }
  if (req.stream_options != null && !req.stream) throw fail(fn, 'stream_options is only for stream: true');
  if (req.n !== undefined && req.n !== 1) throw fail(fn, `n must be 1 (one choice per request), got ${describe(req.n)}`);
  if (req.max_tokens !== undefined && req.max_completion_tokens !== undefined) throw fail(fn, 'max_tokens and max_completion_tokens are the same option: give one');
  const jsonSchema = responseFormat(fn, req.response_format);
  let stop = req.stop ?? undefined;
  if (typeof stop === 'string') stop = [stop];
  else if (stop !== undefined && !Array.isArray(stop)) throw fail(fn, `stop must be a string or an Array of strings, got ${describe(stop)}`);
  if (stop?.length > MAX_STOP) throw fail(fn, `stop has ${stop.length} strings; at most ${MAX_STOP}`);
  stop?.forEach((s, i) => { if (typeof s !== 'string' || s === '') throw fail(fn, `stop[${i}] must be a non-empty string, got ${describe(s)}`); });
  if (req.signal !== undefined && (req.signal === null || typeof req.signal !== 'object' || typeof req.signal.aborted !== 'boolean')) {
    throw fail(fn, `signal must be an AbortSignal, got ${describe(req.signal)}`);
  }
  const o = {};
  const maxTokens = req.max_tokens ?? req.max_completion_tokens;
  if (maxTokens !== undefined && maxTokens !== null) {
    o.maxTokens = intOption(fn, req.max_tokens !== undefined ? 'max_tokens' : 'max_completion_tokens', maxTokens, 0, 1 << 24, 0);
  }
  if (req.temperature != null) o.temperature = numberOption(fn, 'temperature', req.temperature, (v) => v >= 0 && v <= 2, 'a number from 0 to 2', 0);
  if (req.top_p != null) o.topP = numberOption(fn, 'top_p', req.top_p, (v) => v >= 0 && v <= 1, 'a number from 0 to 1', 1);
  if (req.seed != null) o.seed = intOption(fn, 'seed', req.seed, 0, Number.MAX_SAFE_INTEGER, 0);
  if (stop !== undefined) o.stop = stop;
  if (jsonSchema !== undefined) {
    o.jsonSchema = jsonSchema;
    o[SCHEMA_SOURCE] = jsonSchema === ANY_OBJECT_SCHEMA ? 'response_format' : 'response_format.json_schema.schema';
  }
  if (req.signal !== undefined) o.signal = req.signal;
  return { options: o, stream: req.stream === true, usage: so.include_usage === true };
}

/** response_format checked as OpenAI does: chat()'s jsonSchema for the reply, or undefined for text. */
function responseFormat(fn, rf) {
  if (rf === undefined || rf === null) return undefined;
  const shapes = "{ type: 'text' }, { type: 'json_object' } or { type: 'json_schema', json_schema: { name, schema } }";
  if (typeof rf !== 'object' || Array.isArray(rf)) throw fail(fn, `response_format must be ${shapes}, got ${describe(rf)}`);
  const only = (obj, what, keys) => {
    for (const k of Object.keys(obj)) if (!keys.includes(k)) throw fail(fn, `unknown option ${what}.${k} (known: ${keys.join(', ')})`);
  };
  if (rf.type === 'text' || rf.type === 'json_object') {
    only(rf, 'response_format', ['type']);
    return rf.type === 'text' ? undefined : ANY_OBJECT_SCHEMA;
  }
  if (rf.type !== 'json_schema') throw fail(fn, `response_format.type must be 'text', 'json_object' or 'json_schema', got ${describe(rf.type)}`);
  only(rf, 'response_format', ['type', 'json_schema']);
  const js = rf.json_schema;
  if (js === null || typeof js !== 'object' || Array.isArray(js)) {
    throw fail(fn, `response_format.json_schema must be an object { name, description?, schema?, strict? }, got ${describe(js)}`);
  }
  only(js, 'response_format.json_schema', JSON_SCHEMA_KEYS);
  if (typeof js.name !== 'string' || !SCHEMA_NAME.test(js.name)) {
    throw fail(fn, `response_format.json_schema.name must be 1 to 64 letters, digits, underscores or dashes, got ${describe(js.name)}`);
  }
  if (js.description !== undefined && typeof js.description !== 'string') {
    throw fail(fn, `response_format.json_schema.description must be a string, got ${describe(js.description)}`);
  }
  if (js.strict !== undefined && js.strict !== null && typeof js.strict !== 'boolean') {
    throw fail(fn, `response_format.json_schema.strict must be true, false or null, got ${describe(js.strict)}`);
  }
  if (js.schema === undefined || js.schema === null) return ANY_OBJECT_SCHEMA;
  if (typeof js.schema !== 'object' || Array.isArray(js.schema)) {
    throw fail(fn, `response_format.json_schema.schema must be a JSON schema object, got ${describe(js.schema)}`);
  }
  return js.schema;
}

function usageOf(r) {
  return { prompt_tokens: r.stats.promptTokens, completion_tokens: r.stats.generatedTokens,
    total_tokens: r.stats.promptTokens + r.stats.generatedTokens };
}

/**
 * model.createChatCompletion(request): a Promise of a 'chat.completion'
 * object, or with stream: true a Promise of an async iterable of
 * 'chat.completion.chunk' objects (the first delta { role: 'assistant',
 * content: '' }, then { content } pieces, then {} with the finish_reason;
 * then, with stream_options.include_usage, one with choices [] and usage).
 */
export async function createChatCompletion(model, request) {
  const fn = 'GgufModel.createChatCompletion';
  const req = optionsArg(fn, request, 'request');
  if (req.messages === undefined) throw fail(fn, 'messages is missing (an Array of { role, content })');
  checkMessages(fn, req.messages);
  const { options, stream, usage } = chatOptions(fn, model, req);
  const head = { id: completionId(), created: Math.floor(Date.now() / 1000), model: req.model ?? model.info.name ?? '' };
  const generation = chat(model, req.messages, options, fn);
  if (!stream) {
    const r = await generation;
    return {
      ...head, object: 'chat.completion', system_fingerprint: null,
      choices: [{ index: 0, message: { role: 'assistant', content: r.text }, logprobs: null, finish_reason: r.finishReason }],
      usage: usageOf(r),
    };
  }
  const chunk = (delta, finish) => ({ ...head, object: 'chat.completion.chunk', system_fingerprint: null,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  return (async function* chunks() {
    yield chunk({ role: 'assistant', content: '' }, null);
    for await (const { text } of generation) if (text) yield chunk({ content: text }, null);
    const r = await generation;
    yield chunk({}, r.finishReason);
    if (usage) yield { ...head, object: 'chat.completion.chunk', system_fingerprint: null, choices: [], usage: usageOf(r) };
  })();
}
