// chat-view.js - generate.html's chat mode: a conversation with the loaded
// model in its chat template (GgufWorker.chat, runtime/llm_chat.js: the KV
// cache is kept between turns, so a new turn evaluates only what follows
// the cached prefix), a system prompt, Send / Stop / Regenerate / Clear,
// the reply streamed into the conversation, the template in force and why,
// the context used, and each reply's tokens (cached, evaluated, generated)
// and speed. Regenerate sends the same conversation again without its last
// reply (the cache rolls back to it); Clear forgets the conversation.
// JSON replies: each reply is held to JSON that follows the schema box's
// JSON schema (any JSON object when it is empty: chat()'s jsonSchema,
// runtime/llm_grammar.js) and shown as the model wrote it; a schema the
// module refuses is shown under the box with the parser's message.
//
//   const chat = new ChatView({ model: () => lm, sampling: () => readFields(...), setBusy });
//   chat.modelChanged(info, lm.chatTemplate);   after each load
import { show, status, showError } from './page-status.js';
import { notStarted } from './fields.js';
import { ANY_OBJECT_SCHEMA } from './runtime/llm_grammar.js';

const $ = (id) => document.getElementById(id);
const tokens = (n) => `${n.toLocaleString('en-US')} token${n === 1 ? '' : 's'}`;
const FINISHED = { stop: 'the end of the reply', length: 'max tokens or a full context', abort: 'Stop' };

export class ChatView {
  /**
   * model(): the GgufWorker in use or null; sampling(): readFields' result
   * for the sampling fields; setBusy(on, generating): the page's busy state.
   */
  constructor({ model, sampling, setBusy }) {
    this.model = model;
    this.sampling = sampling;
    this.setBusy = setBusy;
    this.history = []; // [{ role: 'user' | 'assistant', content }] after the system prompt
    this.nCtx = 0;
    $('send').addEventListener('click', () => this.send($('message').value));
    $('regenerate').addEventListener('click', () => this.regenerate());
    $('clear').addEventListener('click', () => {
      this.clear();
      this.setBusy(false); // the buttons follow the empty conversation
    });
    $('chat-stop').addEventListener('click', () => {
      this.model()?.stop();
      status('stopping', 'Stopping...');
    });
    $('json-mode').addEventListener('change', () => { $('json-schema-box').hidden = !$('json-mode').checked; });
    $('json-schema').addEventListener('input', () => { $('json-schema-error').textContent = ''; });
    $('message').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !$('send').disabled) {
        e.preventDefault();
        this.send($('message').value);
      }
    });
  }

  /** A model loaded: its context and the chat template in force (GgufWorker.chatTemplate). */
  modelChanged(info, template) {
    this.nCtx = info.nCtx;
    this.clear();
    const t = template ?? { name: '-', source: '', why: '' };
    show('chat-template', t.name, `${t.name}${t.source ? ` (${t.source}${t.why ? `: ${t.why}` : ''})` : ''}`);
  }

  /** Sets the chat buttons for the page's state (busy: a load or a reply runs). */
  enable(loaded, busy, generating) {
    $('send').disabled = !loaded || busy;
    $('regenerate').disabled = !loaded || busy || !this.history.some((m) => m.role === 'assistant');
    $('clear').disabled = busy || this.history.length === 0;
    $('chat-stop').disabled = !generating;
  }

  messages() {
    const system = $('system').value.trim();
    return [...(system ? [{ role: 'system', content: system }] : []), ...this.history];
  }

  /** chat()'s options for the JSON mode: { jsonSchema } (the box's text, or any JSON object), or none. */
  jsonOptions() {
    if (!$('json-mode').checked) return {};
    const schema = $('json-schema').value.trim();
    return { jsonSchema: schema === '' ? ANY_OBJECT_SCHEMA : schema };
  }

  /** A schema the module refused: its message under the box, and the message sent back in its box (to send again once fixed). */
  schemaRefused(err) {
    $('json-schema-error').textContent = err.message;
    if (this.history.at(-1)?.role !== 'user' || $('message').value.trim() !== '') return;
    $('message').value = this.history.pop().content;
    $('conversation').lastElementChild?.remove();
  }

  clear() {
    this.history = [];
    $('conversation').replaceChildren();
    for (const id of ['chat-used', 'chat-stats']) show(id, '', '-');
    show('chat-size', this.nCtx, this.nCtx ? this.nCtx.toLocaleString('en-US') : '-');
  }

  /** Appends a message's row to the conversation view: its text element. */
  bubble(role, text) {
    const row = document.createElement('div');
    row.className = `msg msg-${role}`;
    row.dataset.role = role;
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = role === 'user' ? 'you' : 'model';
    const body = document.createElement('div');
    body.className = 'text';
    body.textContent = text;
    row.append(who, body);
    $('conversation').append(row);
    row.scrollIntoView({ block: 'nearest' });
    return body;
  }

  send(text) {
    $('message-error').textContent = '';
    if (text.trim() === '') {
      $('message-error').textContent = 'write a message';
      return;
    }
    this.history.push({ role: 'user', content: text });
    this.bubble('user', text);
    $('message').value = '';
    return this.reply();
  }

  regenerate() {
    if (this.history.at(-1)?.role === 'assistant') {
      this.history.pop();
      $('conversation').lastElementChild?.remove();
    }
    return this.reply();
  }

  /** The model's reply to the conversation so far, streamed into a new row. */
  async reply() {
    const lm = this.model();
    const f = this.sampling();
    if (!lm) return;
    if (!f.ok) {
      status('error', notStarted(f.errors));
      return;
    }
    $('error').textContent = '';
    $('json-schema-error').textContent = '';
    this.setBusy(true, true);
    status('running', 'Reading the conversation...');
    const body = this.bubble('assistant', '');
    body.dataset.state = 'running';
    let n = 0;
    try {
      const r = await lm.chat(this.messages(), {
        ...f.values,
        ...this.jsonOptions(),
        onToken: (piece) => {
          n++;
          body.textContent += piece;
          status('running', `Replying: ${tokens(n)}...`);
        },
      });
      body.textContent = r.text;
      body.dataset.state = r.finishReason;
      this.history.push({ role: 'assistant', content: r.text });
      const s = r.stats;
      show('chat-used', s.promptTokens + s.generatedTokens, (s.promptTokens + s.generatedTokens).toLocaleString('en-US'));
      const rate = s.generateTokensPerSecond ? `, ${s.generateTokensPerSecond.toFixed(1)} tokens/s` : '';
      const dropped = s.droppedMessages ? `; ${s.droppedMessages} oldest message${s.droppedMessages === 1 ? '' : 's'} left out to fit` : '';
      show('chat-stats', s.evaluatedTokens, `${tokens(s.promptTokens)} in the prompt, ${s.cachedTokens.toLocaleString('en-US')} from the cache, ` +
        `${s.evaluatedTokens.toLocaleString('en-US')} evaluated; ${tokens(s.generatedTokens)} generated${rate}${dropped}`);
      status(r.finishReason === 'abort' ? 'stopped' : 'finished',
        `${r.finishReason === 'abort' ? 'Stopped' : 'Replied'}: ${tokens(s.generatedTokens)} (ended by ${FINISHED[r.finishReason] ?? r.finishReason}).`);
    } catch (err) {
      body.parentElement.remove(); // no reply: the conversation stays as it was before it
      showError(err);
      if (/options\.jsonSchema\b/.test(err?.message ?? '')) this.schemaRefused(err);
    } finally {
      this.setBusy(false);
    }
  }
}
