// llm_lora_wasm.test.mjs - LoRA adapters through web/runtime/llm.js
// (loadGguf's options.lora) and web/pkg/rlx_llm.wasm in Node, on the seeded
// test models of build/lm/ with adapters written by build/rlx make-lora:
// greedy generation with adapters equals the native CLI's with --lora (which
// tests/cli/llm_lora_ref.mjs checks against llama.cpp) and differs from the
// plain model's; an adapter from bytes equals the same file from a path;
// the info counts them; bad options are RlxErrors naming options.lora, and
// an adapter the library refuses is named by its source.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = `${ROOT}build/rlx`;
const fixture = (name) => `${ROOT}build/lm/${name}.gguf`;
const dir = mkdtempSync(join(tmpdir(), 'rlx-lora-wasm-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** An adapter for the fixture from build/rlx make-lora: its path. */
function makeLora(name, model, args) {
  const out = join(dir, `${name}.gguf`);
  execFileSync(CLI, ['make-lora', '--model', fixture(model), '--out', out, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  return out;
}

/** The native CLI's greedy ids after the prompt ids, with --lora FILE:SCALE for each adapter. */
function nativeIds(model, promptIds, n, adapters) {
  const out = execFileSync(CLI, ['generate', '--model', fixture(model), '--prompt-ids', promptIds.join(','), '--max-tokens',
    String(n), '--ids', ...adapters.flatMap(({ source, scale }) => ['--lora', `${source}:${scale}`])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return JSON.parse(out.trimEnd().split('\n').at(-1)).ids;
}

const rlxError = (re) => (err) => {
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, re);
  return true;
};

const greedy = async (model, ids) => (await model.generate(ids, { maxTokens: 12, temperature: 0 })).ids;

for (const [model, type] of [['qwen2-f32', 'f32'], ['llama-q8_0', 'f16']]) {
  test(`${model} with ${type} adapters: greedy = the native CLI's, not the plain model's; bytes = path`, async () => {
    const a = makeLora(`${model}-a`, model, ['--targets', 'attn_q,attn_v,ffn_down', '--rank', '4', '--alpha', '8', '--type', type]);
    const b = makeLora(`${model}-b`, model, ['--targets', 'attn_k,attn_output,ffn_gate,ffn_up', '--rank', '2', '--seed', '3', '--type', type]);
    const adapters = [{ source: a, scale: 0.5 }, { source: b, scale: 0.75 }];
    const plain = await loadGguf(fixture(model), { backend: 'cpu' });
    const adapted = await loadGguf(fixture(model), { backend: 'cpu', lora: adapters });
    const fromBytes = await loadGguf(fixture(model), { backend: 'cpu', lora: [{ source: new Uint8Array(readFileSync(a)), scale: 0.5 },
      { source: new Uint8Array(readFileSync(b)).buffer, scale: 0.75 }] });
    try {
      assert.equal(plain.info.nLora, 0);
      assert.equal(adapted.info.nLora, 2);
      assert.equal(adapted.info.nLoraPairs, 7 * adapted.info.nLayer);
      assert.ok(adapted.info.loraBytes > 0);
      const prompt = adapted.tokenize('The miller counted the sacks');
      const ids = await greedy(adapted, prompt);
      assert.deepEqual(ids, nativeIds(model, prompt, 12, adapters), 'wasm vs native --lora');
      assert.notDeepEqual(ids, await greedy(plain, prompt), 'the adapters change the greedy tokens');
      assert.deepEqual(await greedy(fromBytes, prompt), ids, 'bytes vs path');
      assert.deepEqual(Array.from(await adapted.logits(prompt)), Array.from(await fromBytes.logits(prompt)));
    } finally {
      plain.free();
      adapted.free();
      fromBytes.free();
    }
  });
}

test('options.lora refusals name the option or the adapter', async () => {
  const model = fixture('qwen2-f32');
  const other = makeLora('llama-for-qwen2', 'llama-f32', []);
  await assert.rejects(loadGguf(model, { lora: 'a.gguf' }), rlxError(/loadGguf: options\.lora must be an array/));
  await assert.rejects(loadGguf(model, { lora: [null] }), rlxError(/options\.lora\[0\] must be \{ source, scale \}/));
  await assert.rejects(loadGguf(model, { lora: [{ source: 42 }] }), rlxError(/options\.lora\[0\]\.source must be a URL or path/));
  await assert.rejects(loadGguf(model, { lora: [{ source: other, scale: NaN }] }), rlxError(/options\.lora\[0\]\.scale must be a finite number/));
  await assert.rejects(loadGguf(model, { lora: [{ source: join(dir, 'none.gguf') }] }), rlxError(/none\.gguf/));
  await assert.rejects(loadGguf(model, { lora: [{ source: new Uint8Array(0) }] }), rlxError(/options\.lora\[0\]: bytes is empty/));
  await assert.rejects(loadGguf(model, { lora: [{ source: other }] }),
    rlxError(/options\.lora\[0\] \(.*llama-for-qwen2\.gguf\): 'general\.architecture' is 'llama'; a LoRA adapter for this model has 'qwen2'/));
  await assert.rejects(loadGguf(model, { lora: [{ source: new Uint8Array(readFileSync(model)) }] }),
    rlxError(/options\.lora\[0\] \(bytes\): the file has no 'general\.type' string/));
});
