// llm_worker_client.js - GgufWorker: a GGUF model in a module Worker
// (llm_worker.js runs loadGguf there), the same calls as GgufModel, each a
// Promise, with tokens and load progress arriving as messages.  llm.js
// exports it.
import { RlxError, describe, optionsArg } from './loader.js';
import { STATUS, fail, functionOption } from './llm_common.js';
import { grammarOption } from './llm_grammar.js';

/** A URL resolved against the page (the worker's own location is runtime/), as a string (a URL does not clone). */
const pageUrl = (s) => new URL(String(s), globalThis.document?.baseURI ?? globalThis.location?.href).href;
const isUrl = (s) => typeof s === 'string' || s instanceof URL;

/** RlxError from a Worker's { message, status, statusName }. */
function remoteError(e) {
  return new RlxError(e?.status ?? -1, e?.message ?? String(e), e?.statusName ?? '');
}

/**
 * A model in a module Worker (llm_worker.js): the same calls as GgufModel,
 * each a Promise; generate() streams its tokens to options.onToken as they
 * arrive, and stop() (or options.signal) ends it.
 *
 *   const lm = new GgufWorker();
 *   const info = await lm.load(file, { nCtx: 2048, onProgress });
 *   const r = await lm.generate('Hello', { maxTokens: 32, onToken: (text) => ... });
 *   const c = await lm.chat([{ role: 'user', content: 'Hi' }], { onToken });  // lm.chatTemplate says which template
 *   const j = await lm.chat(messages, { jsonSchema: { type: 'object' } });  // or grammar: GBNF text (llm_grammar.js)
 *   for await (const chunk of await lm.createChatCompletion({ messages, stream: true })) ...
 *   await lm.load(file, { train: true });
 *   const { adapter } = await lm.finetune(text, { steps: 30, onProgress, signal });
 *   lm.stop(); await lm.free(); lm.terminate();
 */
export class GgufWorker {
  constructor(workerUrl = undefined) {
    if (typeof Worker !== 'function') throw new RlxError(STATUS.STATE, 'GgufWorker: this environment has no Worker (use loadGguf directly)', 'bad state');
    this.worker = workerUrl === undefined
      ? new Worker(new URL('./llm_worker.js', import.meta.url), { type: 'module' })
      : new Worker(workerUrl, { type: 'module' });
    this.pending = new Map(); // id -> { resolve, reject, onEvent }
    this.nextId = 1;
    this.info = null;
    this.chatTemplate = null;
    this.worker.onmessage = (event) => {
      const msg = event.data ?? {};
      const entry = this.pending.get(msg.id);
      if (!entry) return;
      if (msg.event) { entry.onEvent?.(msg); return; }
      this.pending.delete(msg.id);
      if (msg.ok) entry.resolve(msg.value);
      else entry.reject(remoteError(msg.error));
    };
    this.worker.onerror = (event) => {
      const err = new RlxError(STATUS.FATAL, `GgufWorker: the worker failed: ${event.message ?? 'it could not start'}`, 'fatal');
      for (const entry of this.pending.values()) entry.reject(err);
      this.pending.clear();
    };
  }

  request(op, args, onEvent) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      try {
        this.worker.postMessage({ id, op, ...args });
      } catch (err) {
        this.pending.delete(id);
        reject(fail(`GgufWorker.${op}`, `cannot send the arguments to the worker: ${err?.message ?? err}`));
      }
    });
  }

  /**
   * Loads a model (replacing one loaded before); resolves to its info.
   * source: a URL (resolved against the page), a File or Blob, bytes, or a
   * list of URLs or Files (the parts of a split model).  onProgress gets
   * loadGguf's events (resume, restart, cached, part ...).
   */
  async load(source, options = undefined) {
    const fn = 'GgufWorker.load';
    const o = optionsArg(fn, options);
    const onProgress = functionOption(fn, 'options.onProgress', o.onProgress);
    const one = (s) => (isUrl(s) ? pageUrl(s)
      : s instanceof ArrayBuffer || ArrayBuffer.isView(s) || (typeof Blob === 'function' && s instanceof Blob) ? s : null);
    const list = Array.isArray(source) || (typeof FileList === 'function' && source instanceof FileList) ? [...source] : null;
    const src = list ? list.map(one) : one(source);
    if (list ? !list.length || src.includes(null) : src === null) {
      throw fail(fn, `source must be a URL, a File or Blob, an ArrayBuffer or a Uint8Array, or a list of URLs or Files (a split model's parts), got ${describe(source)}`);
    }
    const { onProgress: _, ...rest } = o;
    if (Array.isArray(rest.lora)) rest.lora = rest.lora.map((a) => (isUrl(a?.source) ? { ...a, source: pageUrl(a.source) } : a));
    this.info = await this.request('load', { source: src, options: rest }, ({ id: _id, event: _e, ...p }) => onProgress?.(p));
    this.chatTemplate = await this.request('chatTemplate', {}); // as GgufModel.chatTemplate
    return this.info;
  }

  tokenize(text, options = undefined) { return this.request('tokenize', { text, options }); }
  detokenize(ids) { return this.request('detokenize', { ids }); }
  reset() { return this.request('reset', {}); }
  free() { return this.request('free', {}); }

  /** As GgufModel.generate; onToken(text, id) is called as the tokens arrive (its result does not stop the run: use stop()). */
  generate(prompt, options = undefined) { return this.streamed('generate', { prompt }, options); }

  /**
   * A generation op (generate, chat) with options.onToken fed by the
   * worker's token messages.  grammar / jsonSchema are checked here and
   * parsed in the worker (its model names a malformed one).
   */
  async streamed(op, args, options) {
    const fn = `GgufWorker.${op}`;
    const o = optionsArg(fn, options);
    const onToken = functionOption(fn, 'options.onToken', o.onToken);
    grammarOption(fn, o);
    const { onToken: _, signal, ...rest } = o;
    return this.stoppable(fn, signal, op, { ...args, options: rest }, (msg) => onToken?.(msg.text, msg.tokenId));
  }

  /** As GgufModel.chat, resolving to its result; onToken(text, id) as the tokens arrive, options.signal (or stop()) ends it. */
  chat(messages, options = undefined) { return this.streamed('chat', { messages }, options); }

  /** As GgufModel.chatPrompt. */
  chatPrompt(messages, options = undefined) { return this.request('chatPrompt', { messages, options }); }

  /**
   * As GgufModel.createChatCompletion: a Promise of the chat.completion, or
   * with stream: true of an async iterable of the chunks as the worker sends
   * them (leaving the loop early stops the reply); request.signal (or
   * stop()) ends it.
   */
  async createChatCompletion(request) {
    const fn = 'GgufWorker.createChatCompletion';
    const { signal, ...rest } = optionsArg(fn, request, 'request');
    if (!rest.stream) return this.stoppable(fn, signal, 'createChatCompletion', { request: rest });
    const queue = [];
    let wake = null;
    let ended = false;
    const run = this.stoppable(fn, signal, 'createChatCompletion', { request: rest }, (msg) => { queue.push(msg.chunk); wake?.(); });
    run.then(() => { ended = true; wake?.(); }, () => { ended = true; wake?.(); });
    // The request's own errors (bad options) reject here, before any chunk.
    await Promise.race([run, new Promise((resolve) => { wake = resolve; })]);
    const worker = this;
    return (async function* chunks() {
      let done = false;
      try {
        for (;;) {
          while (queue.length) yield queue.shift();
          if (ended) break;
          await new Promise((resolve) => { wake = resolve; });
        }
        await run; // a failure after the chunks
        done = true;
      } finally {
        if (!done && !ended) worker.stop();
      }
    })();
  }

  /**
   * As GgufModel.finetune (a model loaded with { train: true }):
   * onProgress is called as the steps' reports arrive, options.signal (or
   * stop()) ends the run after its current step, and the adapter's bytes
   * come back transferred.  adapterIn as a URL is resolved against the page.
   */
  async finetune(data, options = undefined) {
    const fn = 'GgufWorker.finetune';
    const o = optionsArg(fn, options);
    const onProgress = functionOption(fn, 'options.onProgress', o.onProgress);
    const { onProgress: _, signal, ...rest } = o;
    if (isUrl(rest.adapterIn)) rest.adapterIn = pageUrl(rest.adapterIn);
    return this.stoppable(fn, signal, 'finetune', { data, options: rest }, ({ id: _id, event: _e, ...p }) => onProgress?.(p));
  }

  /** A request that options.signal (an AbortSignal, checked) ends through stop(). */
  async stoppable(fn, signal, op, args, onEvent) {
    if (signal !== undefined && (signal === null || typeof signal !== 'object' || typeof signal.aborted !== 'boolean')) {
      throw fail(fn, `options.signal must be an AbortSignal, got ${describe(signal)}`);
    }
    const onAbort = () => this.stop();
    signal?.addEventListener?.('abort', onAbort);
    try {
      const run = this.request(op, args, onEvent);
      if (signal?.aborted) this.stop();
      return await run;
    } finally {
      signal?.removeEventListener?.('abort', onAbort);
    }
  }

  /** Ends the running generation (it resolves with stoppedBy 'abort'), or a fine-tuning after its current step. */
  stop() { this.worker.postMessage({ op: 'stop' }); }

  terminate() {
    this.worker.terminate();
    const err = new RlxError(STATUS.STATE, 'GgufWorker: terminated', 'bad state');
    for (const entry of this.pending.values()) entry.reject(err);
    this.pending.clear();
  }
}
