// llm_memory.test.mjs - a model loaded into rlx_llm.wasm takes about the
// file's bytes plus its KV cache of wasm memory, not more: the weights are
// used in place in the buffer the file was streamed into, and the step
// sessions never make host copies of params they are bound to (a wasm
// memory only grows, so even a transient copy would stay as peak memory).
// On the largest test model (qwen3 f32, 7.1 MiB) a second copy of the
// weights would put the memory ~7 MiB over the bound asserted here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadGguf } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MIB = 2 ** 20;

for (const name of ['qwen3-f32', 'llama-q8_0']) {
  test(`${name}: wasm memory after load <= 1.15 x (file + KV cache) + the module's first 4 MiB`, async () => {
    const bytes = readFileSync(`${ROOT}build/lm/${name}.gguf`);
    const m = await loadGguf(new Uint8Array(bytes), { nCtx: 512, threads: 1 }); // rlx_llm.wasm (the threaded build adds a stack per Worker)
    try {
      const memory = m.mod.memory.buffer.byteLength;
      const bound = 1.15 * (bytes.length + m.info.kvBytes) + 4 * MIB;
      assert.ok(m.info.kvBytes > 0, 'kvBytes is reported');
      assert.ok(memory <= bound, `wasm memory ${(memory / MIB).toFixed(2)} MiB > ${(bound / MIB).toFixed(2)} MiB ` +
        `(file ${(bytes.length / MIB).toFixed(2)} MiB, KV cache ${(m.info.kvBytes / MIB).toFixed(2)} MiB)`);
      // Generation allocates nothing that size: the memory stays within the bound.
      await m.generate('hello there', { maxTokens: 8 });
      assert.ok(m.mod.memory.buffer.byteLength <= bound, 'memory after generating stays within the bound');
    } finally {
      m.free();
    }
  });
}
