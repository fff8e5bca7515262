#!/usr/bin/env node
// generate.mjs - text from a GGUF language model with the RLX JS SDK's
// loadGguf (web/rlx.js over web/pkg/rlx_llm.wasm), in Node: load the file,
// print what it is, stream a greedy continuation of a prompt with for await,
// then sample one with a seed.  The same as examples/c/generate.c and
// examples/python/generate.py; in the browser, web/generate.html.
//
// Checks (exit status 1 when one fails): the streamed pieces join to the
// result's text, which equals detokenize(ids) (SentencePiece's detokenize
// drops a leading space); greedy generation and the seeded sample repeat.
//
// Run: make wasm sdk lm-fixtures && node examples/js/generate.mjs [FILE.gguf] [PROMPT]
//      (default: build/lm/qwen2-q4_0.gguf)
import { loadGguf } from '../../web/rlx.js';

const path = process.argv[2] ?? new URL('../../build/lm/qwen2-q4_0.gguf', import.meta.url);
const prompt = process.argv[3] ?? 'The miller counted the sacks';
const model = await loadGguf(path);
const failed = [];
try {
  const { info } = model;
  console.log(`${path}: ${info.arch}, ${info.nLayer} layers, ${info.nEmbd} wide, vocabulary ${info.nVocab}, ${info.weightTypes}`);
  process.stdout.write(`greedy: ${prompt}`);
  const run = model.generate(prompt, { maxTokens: 32 });
  let streamed = '';
  for await (const { text } of run) {
    streamed += text;
    process.stdout.write(text);
  }
  const greedy = await run; // the same object is the result's Promise
  console.log(`\n  [${greedy.stats.promptTokens} prompt tokens, ${greedy.stats.generatedTokens} generated at ` +
    `${greedy.stats.generateTokensPerSecond?.toFixed(0)} tokens/s, stopped by ${greedy.stoppedBy}]`);
  const again = await model.generate(prompt, { maxTokens: 32 });
  const sample = { maxTokens: 32, temperature: 0.8, topK: 40, topP: 0.95, seed: 42 };
  const sampled = await model.generate(prompt, sample);
  console.log(`sampled (seed 42): ${prompt}${sampled.text}`);
  const resampled = await model.generate(prompt, sample);

  const detok = model.detokenize(greedy.ids);
  if (streamed !== greedy.text) failed.push('the streamed pieces are not the text');
  if (greedy.text !== detok && !(greedy.text.startsWith(' ') && greedy.text.slice(1) === detok)) failed.push('the text is not detokenize(ids)');
  if (again.text !== greedy.text) failed.push('greedy changed');
  if (resampled.ids.join() !== sampled.ids.join()) failed.push('seed 42 changed');
} finally {
  model.free();
}
for (const f of failed) console.error(f);
console.log(failed.length ? 'FAILED' : 'ok: the stream is the ids\' text; greedy and the seeded sample repeat');
process.exit(failed.length ? 1 : 0);
