// llm_chat_template.js - a conversation written in a GGUF model's chat
// template, for llm_chat.js.  The file's tokenizer.chat_template (or
// options.jinja) is rendered by @huggingface/jinja (web/vendor/jinja.js,
// bundled from npm by make, imported on first use) with messages,
// add_generation_prompt, bos_token and eos_token; when the file has none,
// when Jinja cannot load, parse or render it, or when the rendering does
// not hold each message's text verbatim (or trimmed), the built-in template
// of the C library (src/models/chat_template.c, through src/web_llm/chat.c)
// detected from it (chatml without one) renders instead, or the one named
// by options.template.  Every choice says which template is in force and
// why: { name, source: 'file' | 'option' | 'builtin' | 'named', why }.
//
// The rendering is cut into parts, the template's own text (its special
// tokens parsed when tokenized) and each message's text (never parsed: a
// user typing "<|im_end|>" gets ordinary tokens).  For Jinja the cut comes
// from a second rendering with each content replaced by a marker: the
// marked rendering with the contents put back must equal the real one.
import { RlxError, describe } from './loader.js';
import { STATUS, fail } from './llm_common.js';

const JINJA_URL = new URL('../vendor/jinja.js', import.meta.url);
const ROLES = ['system', 'user', 'assistant'];
const MAX_MESSAGES = 1 << 16;
const MARK = (i) => `\u{F8F0}${i}\u{F8F1}`; // private-use characters around the message's index
const MARKS = /\u{F8F0}(\d+)\u{F8F1}/gu;

let jinja = null; // the Promise of the module
function loadJinja() {
  jinja ??= import(JINJA_URL.href).catch((err) => {
    jinja = null;
    throw new Error(`web/vendor/jinja.js did not load (${err?.message ?? err}; run make web/vendor/jinja.js)`);
  });
  return jinja;
}

/** messages checked: an Array of { role: 'system' | 'user' | 'assistant', content: string }, the system prompt first only. */
export function checkMessages(fn, messages, lastUser = true) {
  if (!Array.isArray(messages)) throw fail(fn, `messages must be an Array of { role, content }, got ${describe(messages)}`);
  if (messages.length === 0) throw fail(fn, 'messages is empty (give at least one user message)');
  if (messages.length > MAX_MESSAGES) throw fail(fn, `messages has ${messages.length} entries; at most ${MAX_MESSAGES}`);
  messages.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw fail(fn, `messages[${i}] must be an object { role, content }, got ${describe(m)}`);
    if (!ROLES.includes(m.role)) throw fail(fn, `messages[${i}].role must be 'system', 'user' or 'assistant', got ${describe(m.role)}`);
    if (typeof m.content !== 'string') {
      throw fail(fn, `messages[${i}].content must be a string (content parts are not supported), got ${describe(m.content)}`);
    }
    if (m.role === 'system' && i > 0) throw fail(fn, `messages[${i}] is a system message; only the first message may be`);
  });
  if (lastUser && messages[messages.length - 1].role !== 'user') {
    throw fail(fn, `the last message must be a user message (it is '${messages[messages.length - 1].role}')`);
  }
  return messages.map(({ role, content }) => ({ role, content }));
}

/** The built-in templates' names. */
export function builtinTemplates(mod) {
  const names = [];
  for (let i = 0; ; i++) {
    const p = mod.call('rlx_llm_chat_template_name', i) >>> 0;
    if (!p) return names;
    names.push(mod.cstring(p));
  }
}

/** The text an export returns as (pointer, its length written to a last argument), or null (a NULL pointer). */
function lengthText(mod, name, ...args) {
  return mod.scoped((t) => {
    const len = t.alloc(4);
    const p = mod.call(name, ...args, len) >>> 0;
    return p ? mod.text(p, mod.i32(len, 1)[0] >>> 0) : null; // text(): a copy out of a shared memory too
  });
}

const tokenText = (mod, handle, id) => lengthText(mod, 'rlx_llm_token_text', handle, id) ?? '';

/** The file's tokenizer.chat_template, or null. */
export const fileTemplate = (mod, handle) => lengthText(mod, 'rlx_llm_chat_template_text', handle);

/** The built-in template for the model: named (or null: detected from the file) -> { index, name, why }. */
function builtin(fn, mod, handle, name) {
  return mod.scoped((t) => {
    const nameStr = name === null ? 0 : t.str(name).ptr;
    const why = t.alloc(256);
    const index = t.alloc(4);
    mod.check(mod.call('rlx_llm_chat_template_choose', handle, nameStr, why, 256, index), `${fn}: `);
    const i = mod.i32(index, 1)[0];
    return { index: i, name: mod.cstring(mod.call('rlx_llm_chat_template_name', i)), why: mod.cstring(why) };
  });
}

/**
 * The template a model chats in: options.template (a built-in name),
 * options.jinja (a Jinja template instead of the file's), else the file's,
 * else the built-in detected.  Resolves to { name, source, why, jinja?
 * (the parsed Template), builtin? ({ index, name, why }) }.
 */
export async function chooseTemplate(fn, model, options = {}) {
  const { mod, handle } = model;
  if (typeof mod.e.rlx_llm_chat_render_parts !== 'function') {
    throw new RlxError(STATUS.UNSUPPORTED, `${fn}: this model was loaded with { train: true }, whose module has no chat; ` +
      'load it without train to chat', 'unsupported');
  }
  if (options.template !== undefined) {
    const names = builtinTemplates(mod);
    if (!names.includes(options.template)) {
      throw fail(fn, `options.template must be a built-in template (${names.join(', ')}), got ${describe(options.template)}`);
    }
    if (options.jinja !== undefined) throw fail(fn, 'options.template and options.jinja name two templates: give one');
    const b = builtin(fn, mod, handle, options.template);
    return { name: b.name, source: 'named', why: b.why, builtin: b };
  }
  const own = options.jinja !== undefined;
  if (own && typeof options.jinja !== 'string') throw fail(fn, `options.jinja must be a Jinja template (a string), got ${describe(options.jinja)}`);
  const text = own ? options.jinja : fileTemplate(mod, handle);
  if (text !== null) {
    try {
      const { Template } = await loadJinja();
      return { name: 'jinja', source: own ? 'option' : 'file', why: own ? 'options.jinja, rendered by @huggingface/jinja' :
        "the file's tokenizer.chat_template, rendered by @huggingface/jinja", jinja: new Template(text) };
    } catch (err) {
      if (own) throw fail(fn, `options.jinja cannot be used: ${err.message}`);
      return fallback(fn, model, `the file's tokenizer.chat_template cannot be used (${err.message})`);
    }
  }
  const b = builtin(fn, mod, handle, null);
  return { name: b.name, source: 'builtin', why: b.why, builtin: b };
}

/** The built-in template detected from the file, after its Jinja failed (reason: why). */
function fallback(fn, model, reason) {
  let b;
  try {
    b = builtin(fn, model.mod, model.handle, null);
  } catch (err) {
    throw new RlxError(err.status ?? STATUS.UNSUPPORTED, `${fn}: ${reason}, and no built-in template fits it: ` +
      `${err.message.replace(/^[^:]*: /, '')} (name one with options.template)`, err.statusName);
  }
  return { name: b.name, source: 'builtin', why: `${b.why}: ${reason}`, builtin: b };
}

/** The model's BOS and EOS texts (what bos_token and eos_token are). */
export function specialTexts(model) {
  const { mod, handle, info } = model;
  return { bos: info.bos >= 0 ? tokenText(mod, handle, info.bos) : '', eos: info.eos >= 0 ? tokenText(mod, handle, info.eos) : '' };
}

/**
 * messages rendered in choice's template (from chooseTemplate) -> { text,
 * parts: [{ text, special, msg }], addBos, template: { name, source, why } }.
 * A Jinja template that fails here falls back to the built-in one, saying why.
 */
export function render(fn, model, choice, messages, addGenerationPrompt) {
  const { bos, eos } = specialTexts(model);
  const fileBos = model.info.addBos && model.info.bos >= 0;
  if (choice.jinja) {
    let why;
    try {
      const vars = (contents) => ({ messages: messages.map((m, i) => ({ role: m.role, content: contents(m, i) })),
        add_generation_prompt: addGenerationPrompt, bos_token: bos, eos_token: eos });
      const real = choice.jinja.render(vars((m) => m.content));
      const marked = choice.jinja.render(vars((m, i) => MARK(i)));
      for (const trim of [false, true]) {
        const parts = [];
        let last = 0;
        for (const hit of marked.matchAll(MARKS)) {
          const msg = Number(hit[1]);
          if (hit.index > last) parts.push({ text: marked.slice(last, hit.index), special: true, msg: -1 });
          const c = messages[msg]?.content ?? '';
          const content = trim ? c.trim() : c;
          if (content) parts.push({ text: content, special: false, msg });
          last = hit.index + hit[0].length;
        }
        if (last < marked.length) parts.push({ text: marked.slice(last), special: true, msg: -1 });
        if (parts.map((p) => p.text).join('') === real) {
          return { text: real, parts, addBos: fileBos && !(bos && real.startsWith(bos)), template: publicChoice(choice) };
        }
      }
      why = 'its rendering changes the messages\' text beyond trimming, so the text the user wrote cannot be told from the template\'s';
    } catch (err) {
      if (choice.source === 'option') throw fail(fn, `options.jinja failed to render: ${err.message}`);
      why = `it failed to render: ${err.message}`;
    }
    if (choice.source === 'option') throw fail(fn, `options.jinja cannot be used: ${why}`);
    return render(fn, model, fallback(fn, model, `the file's tokenizer.chat_template is not used (${why})`), messages, addGenerationPrompt);
  }
  return renderBuiltin(fn, model, choice, messages, addGenerationPrompt, bos, eos, fileBos);
}

function renderBuiltin(fn, model, choice, messages, addGenerationPrompt, bos, eos, fileBos) {
  const m = model.mod;
  return m.scoped((t) => {
    const roles = t.i32(messages.map((x) => t.str(x.role).ptr));
    const contents = t.i32(messages.map((x) => t.str(x.content).ptr));
    const out = t.alloc(4 * 6);
    const writesBos = t.alloc(4);
    try {
      m.check(m.call('rlx_llm_chat_render_parts', choice.builtin.index, roles, contents, messages.length, addGenerationPrompt ? 1 : 0,
        t.str(bos).ptr, t.str(eos).ptr, out, writesBos), `${fn}: `);
      const [text, , ends, special, msg, n] = Array.from(m.i32(out, 6), (v) => v >>> 0);
      const parts = [];
      let from = 0;
      for (let i = 0; i < n; i++) {
        const end = m.i32(ends, n)[i] >>> 0;
        parts.push({ text: m.text(text + from, end - from), special: m.u8(special, n)[i] === 1, msg: m.i32(msg, n)[i] });
        from = end;
      }
      return { text: parts.map((p) => p.text).join(''), parts, addBos: fileBos && m.i32(writesBos, 1)[0] === 0, template: publicChoice(choice) };
    } finally {
      m.call('rlx_llm_chat_render_parts', 0, 0, 0, -1, 0, 0, 0, 0, 0); // frees the module's copy
    }
  });
}

function publicChoice({ name, source, why }) { return Object.freeze({ name, source, why }); }

/** The template a model chats in by default, as { name, source, why } (name and source null, why the reason, when none fits). */
export async function templateInForce(fn, model) {
  try {
    return publicChoice(await chooseTemplate(fn, model));
  } catch (err) {
    return Object.freeze({ name: null, source: null, why: err.message });
  }
}

/** parts tokenized as one text (plain text across part boundaries as if uncut), specials parsed only in the template's parts. */
export function tokenizeParts(fn, model, parts, continued) {
  const m = model.mod;
  if (parts.length === 0) return [];
  return m.scoped((t) => {
    const bytes = parts.map((p) => m.encoder.encode(p.text));
    const len = bytes.reduce((s, b) => s + b.length, 0);
    const text = t.alloc(len + 1);
    const ends = t.alloc(4 * parts.length);
    const special = t.alloc(parts.length);
    let off = 0;
    bytes.forEach((b, i) => {
      m.u8(text + off, b.length).set(b);
      off += b.length;
      m.i32(ends, parts.length)[i] = off;
      m.u8(special, parts.length)[i] = parts[i].special ? 1 : 0;
    });
    const nPtr = t.alloc(4);
    let cap = len + 8;
    for (let attempt = 0; attempt < 2; attempt++) {
      const ids = t.alloc(4 * cap);
      const st = m.call('rlx_llm_tokenize_parts', model.handle, text, len, ends, special, parts.length, continued ? 1 : 0, ids, cap, nPtr);
      const n = m.i32(nPtr, 1)[0] >>> 0;
      if (st < 0 && n > cap && attempt === 0) { cap = n; continue; }
      m.check(st, `${fn}: `);
      return Array.from(m.i32(ids, n));
    }
    throw new RlxError(STATUS.STATE, `${fn}: the token count changed between two calls`, 'bad state');
  });
}
