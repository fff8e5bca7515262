// llm_worker.js - a module Worker holding one GGUF model for GgufWorker
// (llm.js): requests { id, op, ... } are answered { id, ok, value } or
// { id, ok: false, error: { message, status, statusName } }; on the way,
// { id, event: 'progress', loaded, total, ... } (loadGguf's onProgress) while loading and { id, event:
// 'token', text, tokenId } per generated token (generate, chat: their
// options, grammar and jsonSchema among them, go to the model as sent), { id, event:
// 'chunk', chunk } per chat.completion.chunk (createChatCompletion with
// stream: true), { id, event: 'progress',
// step, steps, loss, ... } after each fine-tuning step (the adapter's
// bytes are transferred back with the result).  { op: 'stop' } ends the
// running generation at once, and a fine-tuning after its current step
// (both let messages in while they run).
import { loadGguf, RlxError } from './llm.js';
import { STATUS } from './llm_common.js';

let model = null;
let loading = null; // the load in progress (a second load waits for it)
let abort = null;   // the running generation's or fine-tuning's AbortController

function errorOf(err) {
  if (err instanceof RlxError) return { message: err.message, status: err.status, statusName: err.statusName };
  return { message: String(err?.message ?? err), status: STATUS.FATAL, statusName: 'fatal' };
}

function needModel(op) {
  if (!model) throw new RlxError(STATUS.STATE, `GgufWorker.${op}: no model loaded (call load() first)`, 'bad state');
  return model;
}

/** run(signal) with the signal that { op: 'stop' } aborts. */
async function stoppable(run) {
  const own = new AbortController();
  abort = own;
  try {
    return await run(own.signal);
  } finally {
    if (abort === own) abort = null;
  }
}

const OPS = {
  async load(msg, post) {
    abort?.abort();
    while (loading) await loading.catch(() => {});
    model?.free();
    model = null;
    const opts = { ...(msg.options ?? {}), onProgress: (p) => post({ event: 'progress', ...p }) };
    loading = loadGguf(msg.source, opts);
    try {
      model = await loading;
    } finally {
      loading = null;
    }
    return model.info;
  },
  tokenize: (msg) => needModel('tokenize').tokenize(msg.text, msg.options),
  detokenize: (msg) => needModel('detokenize').detokenize(msg.ids),
  reset: () => needModel('reset').reset(),
  free() {
    abort?.abort();
    model?.free();
    model = null;
  },
  async generate(msg, post) {
    const m = needModel('generate');
    const options = msg.options === undefined ? {} : msg.options;
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      return m.generate(msg.prompt, options); // the model's own message for a bad options argument
    }
    return stoppable((signal) => m.generate(msg.prompt, { ...options, signal, onToken: (text, tokenId) => post({ event: 'token', text, tokenId }) }));
  },
  async chat(msg, post) {
    const m = needModel('chat');
    const options = msg.options === undefined ? {} : msg.options;
    if (options === null || typeof options !== 'object' || Array.isArray(options)) return m.chat(msg.messages, options);
    return stoppable((signal) => m.chat(msg.messages, { ...options, signal, onToken: (text, tokenId) => post({ event: 'token', text, tokenId }) }));
  },
  chatPrompt: (msg) => needModel('chatPrompt').chatPrompt(msg.messages, msg.options),
  chatTemplate: () => needModel('chatTemplate').chatTemplate,
  async createChatCompletion(msg, post) {
    const m = needModel('createChatCompletion');
    const req = msg.request;
    if (req === null || typeof req !== 'object' || Array.isArray(req)) return m.createChatCompletion(req);
    return stoppable(async (signal) => {
      const r = await m.createChatCompletion({ ...req, signal });
      if (!req.stream) return r;
      for await (const chunk of r) post({ event: 'chunk', chunk });
      return null;
    });
  },
  async finetune(msg, post) {
    const m = needModel('finetune');
    const options = msg.options === undefined ? {} : msg.options;
    if (options === null || typeof options !== 'object' || Array.isArray(options)) return m.finetune(msg.data, options);
    return stoppable((signal) => m.finetune(msg.data, { ...options, signal, onProgress: (p) => post({ event: 'progress', ...p }) }));
  },
};

self.onmessage = async (event) => {
  const msg = event.data ?? {};
  if (msg.op === 'stop') {
    abort?.abort();
    return;
  }
  const post = (data, transfer = []) => self.postMessage({ id: msg.id, ...data }, transfer);
  try {
    if (!Object.hasOwn(OPS, msg.op)) throw new RlxError(STATUS.INVALID_ARG, `GgufWorker: unknown request ${String(msg.op)}`, 'invalid argument');
    const value = await OPS[msg.op](msg, post);
    post({ ok: true, value }, value?.adapter instanceof Uint8Array ? [value.adapter.buffer] : []);
  } catch (err) {
    post({ ok: false, error: errorOf(err) });
  }
};
