// llm_chat.js - GgufModel.chat: a conversation that keeps its KV cache, on
// every backend (the CPU, WebGPU and WebGL2 run the same generation path,
// GgufModel.run, told how many prompt tokens the cache already holds).
//
//   const r = await model.chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }]);
//   r.text; r.stats.cachedTokens; r.stats.evaluatedTokens; r.finishReason; r.template;
//   for await (const { text } of model.chat(messages, { maxTokens: 64 })) out.append(text);
//
// Each call gets the whole conversation so far (OpenAI style).  The prompt
// is the messages in the model's chat template (llm_chat_template.js) with
// the generation prompt, tokenized with the template's specials parsed and
// the messages' text not; only the tokens after its longest common prefix
// with what the cache holds are evaluated, so earlier turns are never
// recomputed, and an edited or removed turn rolls the cache back to where
// the prompt first differs.  A reply passed back unchanged as an assistant
// message keeps the tokens it was generated as.  When the prompt plus
// maxTokens leaves no room in the context: overflow 'refuse' (the default)
// refuses a prompt that does not fit, 'drop' leaves out the oldest whole
// turns after the system prompt first.  As include/rlx_llm_chat.h's C
// session does; eval(), reset() or generate() on the model in between
// invalidate what the conversation knows of the cache (it then recomputes).
import { describe, optionsArg } from './loader.js';
import { fail, intOption } from './llm_common.js';
import { checkMessages, chooseTemplate, render, tokenizeParts } from './llm_chat_template.js';

const OVERFLOW = ['refuse', 'drop'];
/** chat()'s options beside generate()'s. */
export const CHAT_OPTIONS = Object.freeze(['template', 'jinja', 'overflow']);
const MAX_KEPT = 256; // replies kept with their generated tokens
/** A generation's stoppedBy as a chat's finishReason (OpenAI's finish_reason, plus 'abort'). */
export const FINISH_REASON = Object.freeze({ maxTokens: 'length', context: 'length', eog: 'stop', stop: 'stop', callback: 'abort', abort: 'abort' });

/** The prompt's ids: the rendering's spans tokenized, a kept reply's ids in place of its text. */
function promptIds(fn, model, rendered, messages, kept) {
  const ids = rendered.addBos ? [model.info.bos] : [];
  const used = new Set();
  const append = (list) => { for (const id of list) ids.push(id); };
  let span = [];
  let continued = false;
  for (const part of rendered.parts) {
    const msg = part.msg >= 0 ? messages[part.msg] : null;
    const k = msg?.role === 'assistant' && msg.content === part.text ? kept.findLast((r) => r.text === part.text) : undefined;
    if (!k) {
      span.push(part);
      continue;
    }
    append(tokenizeParts(fn, model, span, continued));
    append(k.ids);
    used.add(k);
    span = [];
    continued = true;
  }
  append(tokenizeParts(fn, model, span, continued));
  return { ids, used };
}

/** The prompt under the overflow policy: { ids, used, template, dropped (messages left out) }. */
function fitPrompt(fn, model, choice, messages, maxTokens, overflow, kept) {
  const hasSystem = messages[0].role === 'system';
  const nCtx = model.info.nCtx;
  let first = hasSystem ? 1 : 0;
  for (;;) {
    const view = hasSystem ? [messages[0], ...messages.slice(first)] : messages.slice(first);
    const rendered = render(fn, model, choice, view, true);
    const p = promptIds(fn, model, rendered, view, kept);
    if (overflow === 'drop' && p.ids.length + maxTokens > nCtx) {
      let next = first + 1; // the next user message: a whole turn goes
      while (next < messages.length && messages[next].role !== 'user') next++;
      if (next < messages.length) {
        first = next;
        continue;
      }
    }
    const dropped = first - (hasSystem ? 1 : 0);
    if (p.ids.length >= nCtx) {
      throw fail(fn, `the conversation needs ${p.ids.length} tokens and the context holds ${nCtx}` +
        `${dropped ? ' even without its oldest turns' : ''}: start a new conversation, shorten it, load the model with a larger ` +
        `nCtx${overflow === 'refuse' ? " or let the oldest turns be dropped (options.overflow 'drop')" : ''}`);
    }
    return { ...p, template: rendered.template, dropped };
  }
}

/** The model's kept conversation: the ids its KV cache holds (while the context epoch is unchanged) and the replies kept. */
function chatState(model) {
  model.chatState ??= { cache: [], epoch: -1, kept: [] };
  return model.chatState;
}

function splitOptions(fn, options) {
  const o = optionsArg(fn, options);
  const overflow = o.overflow ?? 'refuse';
  if (!OVERFLOW.includes(overflow)) throw fail(fn, `options.overflow must be 'refuse' or 'drop', got ${describe(overflow)}`);
  const rest = { ...o };
  for (const k of CHAT_OPTIONS) delete rest[k];
  return { o, overflow, rest };
}

/**
 * model.chat(messages, options): a Generation (llm_stream.js) resolving to
 * { text, ids, promptIds, stoppedBy, finishReason ('stop' | 'length' |
 * 'abort'), template: { name, source, why }, stats: { promptTokens (the
 * whole prompt), cachedTokens (reused from the KV cache), evaluatedTokens,
 * generatedTokens, droppedMessages, and generate()'s timings } }.
 * options: generate()'s (grammar or jsonSchema among them) and
 * CHAT_OPTIONS.  fn: the caller named in errors (createChatCompletion).
 */
export function chat(model, messages, options = undefined, fn = 'GgufModel.chat') {
  return model.exclusive(fn, async (push, stopRequested) => {
    model.live(fn);
    const msgs = checkMessages(fn, messages);
    const { o, overflow, rest } = splitOptions(fn, options);
    const maxTokens = intOption(fn, 'options.maxTokens', o.maxTokens, 0, 1 << 24, model.defaults.maxTokens);
    const choice = await chooseTemplate(fn, model, o);
    const st = chatState(model);
    const p = fitPrompt(fn, model, choice, msgs, maxTokens, overflow, st.kept);
    model.chatTemplate = p.template;
    const m = model.mod;
    const cache = st.epoch === m.call('rlx_llm_context_epoch', model.handle) && st.cache.length <= model.position ? st.cache : [];
    let keep = 0;
    while (keep < cache.length && keep < p.ids.length && cache[keep] === p.ids[keep]) keep++;
    keep = Math.min(keep, p.ids.length - 1); // the last prompt token is evaluated: its logits start the reply
    st.cache = [];
    st.epoch = -1; // unknown until the generation has ended well
    const r = await model.run(fn, p.ids, rest, push, stopRequested, keep, CHAT_OPTIONS);
    const replied = model.position - p.ids.length; // the reply's tokens the cache holds (the last one sampled is not evaluated)
    if (replied >= 0 && replied <= r.ids.length) {
      st.cache = p.ids.concat(r.ids.slice(0, replied));
      st.epoch = m.call('rlx_llm_context_epoch', model.handle);
    }
    st.kept = st.kept.filter((k) => p.used.has(k)).slice(-(MAX_KEPT - 1));
    if (r.stoppedBy !== 'stop' && r.ids.length) st.kept.push({ text: r.text, ids: r.ids.slice() }); // a stop string cut its text
    const { promptTokens: evaluatedTokens, ...timings } = r.stats;
    return {
      text: r.text, ids: r.ids, promptIds: p.ids, stoppedBy: r.stoppedBy, finishReason: FINISH_REASON[r.stoppedBy], template: p.template,
      stats: { ...timings, promptTokens: p.ids.length, cachedTokens: keep, evaluatedTokens, droppedMessages: p.dropped },
    };
  });
}

/**
 * model.chatPrompt(messages, options): the prompt chat() would evaluate,
 * without running it: { text, ids, template }.  options: template, jinja,
 * addGenerationPrompt (default true).
 */
export async function chatPrompt(model, messages, options = undefined) {
  const fn = 'GgufModel.chatPrompt';
  model.live(fn);
  const o = optionsArg(fn, options);
  for (const k of Object.keys(o)) {
    if (!['template', 'jinja', 'addGenerationPrompt'].includes(k)) throw fail(fn, `unknown option ${k} (known: template, jinja, addGenerationPrompt)`);
  }
  if (o.addGenerationPrompt !== undefined && typeof o.addGenerationPrompt !== 'boolean') {
    throw fail(fn, `options.addGenerationPrompt must be true or false, got ${describe(o.addGenerationPrompt)}`);
  }
  const msgs = checkMessages(fn, messages, false);
  const choice = await chooseTemplate(fn, model, o);
  model.live(fn);
  const rendered = render(fn, model, choice, msgs, o.addGenerationPrompt ?? true);
  return { text: rendered.text, ids: promptIds(fn, model, rendered, msgs, []).ids, template: rendered.template };
}
