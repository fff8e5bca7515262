// llm_train_wasm.test.mjs - a smoke test of the training build of the
// language-model module (web/pkg/rlx_llm_train.wasm, src/web_llm_train/
// exports.c) through its raw exports, on the llama-f32 test model: data
// from bytes (windows counted), a fine-tuning object, SGD steps that lower
// the loss on the same windows, pair info, and the adapter written into
// memory as a GGUF file that the generation side opens again; a refusal
// comes back as a status with the library's message.  The SDK on top of
// these exports (llm_finetune.js) has its own tests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadGguf } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WASM = `${ROOT}web/pkg/rlx_llm_train.wasm`;
const MODEL = `${ROOT}build/lm/llama-f32.gguf`;

test('rlx_llm_train.wasm: data from bytes, SGD steps lower the loss, the adapter in memory loads back', async () => {
  const model = await loadGguf(MODEL, { backend: 'cpu', wasm: WASM, nCtx: 64 });
  const m = model.mod;
  try {
    const text = readFileSync(`${ROOT}tests/llm/corpus.txt`);
    const seq = 16, batch = 2;
    const r = m.scoped((t) => {
      const bytes = t.alloc(text.length);
      m.u8(bytes, text.length).set(text);
      const out = t.alloc(4);
      m.check(m.call('rlx_llm_data_new', model.handle, bytes, text.length, 1, 0, 0, 0, seq, 0, 1, 0, 0.1, out));
      const data = m.i32(out, 1)[0] >>> 0;
      const info = t.alloc(8 * 11);
      m.check(m.call('rlx_llm_data_info', data, info));
      const [dseq, nTrain, nValid] = m.f64(info, 3);
      assert.equal(dseq, seq);
      assert.ok(nTrain >= 2 && nValid >= 1, `${nTrain} training and ${nValid} validation windows`);
      const targets = t.str('attn_q,attn_v');
      m.check(m.call('rlx_llm_finetune_new', model.handle, 4, 8, targets.ptr, seq, 0, 0.05, 1, 0, out));
      const ft = m.i32(out, 1)[0] >>> 0;
      const n = batch * seq;
      const ids = t.alloc(4 * n), tg = t.alloc(4 * n), mask = t.alloc(4 * n), loss = t.alloc(4);
      m.check(m.call('rlx_llm_data_windows', data, 0, 0, batch, ids, tg, mask));
      const losses = [];
      for (let s = 0; s < 4; s++) {
        m.check(m.call('rlx_llm_finetune_step', ft, ids, tg, mask, batch, loss));
        losses.push(new Float32Array(m.memory.buffer, loss, 1)[0]);
      }
      const pairs = m.call('rlx_llm_finetune_pair_count', ft);
      assert.equal(pairs, 2 * model.info.nLayer);
      const name = t.alloc(4), pinfo = t.alloc(8 * 6);
      m.check(m.call('rlx_llm_finetune_pair', ft, 0, name, pinfo));
      assert.equal(m.cstring(m.i32(name, 1)[0]), 'blk.0.attn_q.weight');
      assert.deepEqual(Array.from(m.f64(pinfo, 6)).slice(3, 6), [4, 8, 2]);
      const size = t.alloc(4);
      m.check(m.call('rlx_llm_finetune_adapter', ft, model.handle, out, size));
      const p = m.i32(out, 1)[0] >>> 0, bytes2 = m.i32(size, 1)[0] >>> 0;
      const adapter = m.u8(p, bytes2).slice();
      m.free(p);
      // a refusal: rank 0, with the library's message
      const st = m.call('rlx_llm_finetune_new', model.handle, 0, 8, 0, seq, 0, 0.05, 1, 0, out);
      assert.ok(st < 0);
      assert.match(m.lastError(), /rank/);
      m.call('rlx_llm_finetune_free', ft);
      m.call('rlx_llm_data_free', data);
      return { losses, adapter };
    });
    assert.ok(r.losses.every(Number.isFinite));
    assert.ok(r.losses[3] < r.losses[0], `losses ${r.losses}`);
    assert.equal(new TextDecoder().decode(r.adapter.subarray(0, 4)), 'GGUF');
    const adapted = await loadGguf(MODEL, { backend: 'cpu', nCtx: 64, lora: [{ source: r.adapter }] });
    try {
      assert.equal(adapted.info.nLora, 1);
      assert.equal(adapted.info.nLoraPairs, 2 * adapted.info.nLayer);
    } finally {
      adapted.free();
    }
  } finally {
    model.free();
  }
});
