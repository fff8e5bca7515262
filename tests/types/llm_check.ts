// llm_check.ts - compile-time test of the SDK's language-model types
// (loadGguf and its interfaces in web/rlx.d.ts): every call as documented
// type-checks under --strict, the @ts-expect-error lines must be rejected.
// Run by tests/node/llm_wasm.test.mjs; never executed.
import { loadGguf, RlxError } from '../../web/rlx.js';
import type { GgufModel, GgufInfo, GenerateResult, GenerateOptions, GeneratedPiece, FinetuneResult, FinetuneProgress, ChatMessage, ChatResult,
  ChatTemplate, ChatCompletion, ChatCompletionChunk } from '../../web/rlx.js';

export async function main(file: File): Promise<void> {
  const model: GgufModel = await loadGguf(file, { nCtx: 512, onProgress: ({ loaded, total }) => console.log(loaded, total ?? '?') });
  await loadGguf('model.gguf');
  const fast: boolean = (await loadGguf('model.gguf', { backend: 'cpu', xq8: true })).info.xq8;
  void fast;
  const threaded = (await loadGguf('model.gguf', { threads: 2 })).info;
  const threads: number = threaded.threads, threadsWhy: string = threaded.threadsWhy;
  void threads, void threadsWhy;
  const adapted: number = (await loadGguf('model.gguf', { lora: [{ source: 'style.gguf', scale: 0.5 }, { source: file }] })).info.nLora;
  void adapted;
  await loadGguf(new URL('https://example.com/m.gguf'));
  await loadGguf(new Uint8Array(8), { wasm: new URL('./pkg/rlx_llm.wasm', import.meta.url) });
  const info: GgufInfo = model.info;
  const arch: string = info.arch;
  const params: number = info.nParams;
  const tied: boolean = info.tiedOutput;
  const ids: number[] = model.tokenize('Hello', { addBos: false, special: true });
  const text: string = model.detokenize(ids);
  const logits: Float32Array = await model.eval(ids);
  const opts: GenerateOptions = { maxTokens: 8, temperature: 0.7, topK: 40, topP: 0.9, minP: 0.05, repeatPenalty: 1.1,
    repeatLastN: 64, seed: 1n, stop: ['\n'], onToken: (piece: string, id: number) => { console.log(piece, id); },
    signal: new AbortController().signal };
  const r: GenerateResult = await model.generate('Once upon a time', opts);
  const r2: GenerateResult = await model.generate(new Int32Array([1, 2, 3]), { onToken: () => false });
  const why: 'maxTokens' | 'eog' | 'stop' | 'context' | 'callback' | 'abort' = r.stoppedBy;
  for await (const piece of model.generate('Once', { maxTokens: 4 })) {
    const p: GeneratedPiece = piece;
    console.log(p.text, p.id);
  }
  const first: Float32Array = await model.logits([1, 2]);
  await loadGguf(file, { backend: 'cpu' });
  const onGpu = await loadGguf(file, { backend: 'webgpu', gpu: navigator.gpu, gpuWasm: './pkg/rlx_llm_gpu.wasm' });
  const runsOn: 'cpu' | 'webgpu' | 'webgl' = onGpu.info.backend;
  const onGl = await loadGguf(file, { backend: 'webgl', webglWasm: new URL('./pkg/rlx_llm_webgl.wasm', location.href) });
  const glLogits: Float32Array = await onGl.logits([1, 2]);
  const notTaken: 'webgpu' | 'webgl' | undefined = onGl.info.fallbacks[0]?.backend;
  console.log(glLogits, notTaken);
  console.log(runsOn, onGpu.info.fallbacks.map((f) => f.reason), onGpu.info.software ?? 'hardware');
  console.log(first);
  const trainable = await loadGguf(file, { train: true, trainWasm: './pkg/rlx_llm_train.wasm', schemaWasm: './pkg/rlx_json_schema.wasm' });
  const tuned: FinetuneResult = await trainable.finetune('some text', { rank: 4, alpha: 8, targets: ['attn_q', 'attn_v'], seq: 32,
    batch: 2, steps: 10, lr: 1e-3, optimizer: 'sgd', seed: 1n, shuffle: false, validFraction: 0.2, evalEvery: 5,
    adapterIn: new Uint8Array(8), backend: 'cpu', signal: new AbortController().signal,
    onProgress: (p: FinetuneProgress) => console.log(p.step, p.steps, p.loss, p.validLoss ?? '-', p.tokensPerSecond, p.etaSeconds) });
  await trainable.finetune({ jsonl: new Uint8Array(8), valid: { jsonl: '{}' } });
  await trainable.finetune({ text: 'train', valid: 'valid' }, { targets: 'all' });
  const adapterBytes: Uint8Array = tuned.adapter;
  const lastValid: number | undefined = tuned.validLosses.at(-1)?.loss;
  console.log(adapterBytes, lastValid, tuned.losses[0], tuned.steps, tuned.stopped);
  const messages: ChatMessage[] = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }];
  const reply: ChatResult = await model.chat(messages, { maxTokens: 16, temperature: 0, overflow: 'drop', template: 'chatml', signal: new AbortController().signal });
  const reused: number = reply.stats.cachedTokens + reply.stats.evaluatedTokens + reply.stats.droppedMessages;
  const finish: 'stop' | 'length' | 'abort' = reply.finishReason;
  for await (const piece of model.chat(messages, { jinja: '{{ messages[0].content }}' })) console.log(piece.text);
  const inForce: ChatTemplate | null = model.chatTemplate;
  const prompt: { text: string; ids: number[] } = await model.chatPrompt(messages, { addGenerationPrompt: false });
  const completion: ChatCompletion = await model.createChatCompletion({ messages, max_tokens: 8, temperature: 0.7, top_p: 0.9, seed: 1, stop: '\n' });
  const content: string = completion.choices[0].message.content;
  await model.createChatCompletion({ messages, response_format: { type: 'json_object' } });
  await model.createChatCompletion({ messages, response_format: { type: 'json_schema', json_schema: { name: 'reply', schema: { type: 'object' }, strict: true } } });
  await model.generate('x', { grammar: 'root ::= "yes" | "no"' });
  await model.chat(messages, { jsonSchema: { type: 'array', items: { type: 'integer' } } });
  await model.chat(messages, { jsonSchema: '{"type": "string"}' });
  for await (const chunk of await model.createChatCompletion({ messages, stream: true, stream_options: { include_usage: true } })) {
    const c: ChatCompletionChunk = chunk;
    console.log(c.choices[0]?.delta.content ?? '', c.usage?.total_tokens);
  }
  console.log(reused, finish, inForce?.why, prompt.ids, content, reply.template.source);
  const rate: number | null = r2.stats.generateTokensPerSecond;
  const pos: number = model.position;
  model.reset();
  model.free();
  console.log(arch, params, tied, text, logits, why, rate, pos, RlxError);
  // @ts-expect-error a number is no source
  await loadGguf(42);
  // @ts-expect-error threads is a number
  await loadGguf(file, { threads: '2' });
  // @ts-expect-error nCtx is a number
  await loadGguf(file, { nCtx: '512' });
  // @ts-expect-error stop strings are an array
  await model.generate('x', { stop: '\n' });
  // @ts-expect-error an adapter is { source, scale }
  await loadGguf(file, { lora: ['style.gguf'] });
  // @ts-expect-error no such backend
  await loadGguf(file, { backend: 'cuda' });
  // @ts-expect-error gpu is a GPU or a GPUDevice
  await loadGguf(file, { backend: 'webgpu', gpu: 'nvidia' });
  // @ts-expect-error no such optimizer
  await trainable.finetune('x', { optimizer: 'adam' });
  // @ts-expect-error data is text, bytes, { text } or { jsonl }
  await trainable.finetune({ csv: 'a,b' });
  // @ts-expect-error no such role
  await model.chat([{ role: 'tool', content: 'x' }]);
  // @ts-expect-error overflow is 'refuse' or 'drop'
  await model.chat(messages, { overflow: 'wrap' });
  // @ts-expect-error json_schema needs its json_schema
  await model.createChatCompletion({ messages, response_format: { type: 'json_schema' } });
  // @ts-expect-error a grammar is GBNF text
  await model.generate('x', { grammar: { root: 'a' } });
  // @ts-expect-error the info is read-only
  model.info = info;
}
