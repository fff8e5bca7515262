// llm_finetune_threads.test.mjs - LoRA fine-tuning on the training build's
// threaded build (web/pkg/rlx_llm_train_threads.wasm, tools/wasm_threads.mk:
// helper Workers on a shared memory, web/runtime/llm_threads.js) in Node, on
// the tiny llama of build/lm (make lm-fixtures): 3 AdamW steps with
// validation give bitwise the same losses, validation losses and adapter
// bytes on the one-thread build and on the threaded build at 1, 2 and 3
// threads; loadGguf({ train: true }) picks the threaded build for threads >
// 1 and says why in info; freeing the models leaves no Worker running;
// without a shared memory it falls back to the one-thread training build
// with the reason.  RLX_TEST_SIMD=relaxed runs it on the relaxed-SIMD builds
// (Node 20 needs --experimental-wasm-relaxed-simd).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadGguf } from '../../web/runtime/llm.js';
import { MODULE_FILES } from '../../web/runtime/simd.js';
import { liveThreadWorkers } from '../../web/runtime/llm_threads.js';

const SIMD = process.env.RLX_TEST_SIMD ?? 'simd128';
if (!['simd128', 'relaxed'].includes(SIMD)) throw new Error(`RLX_TEST_SIMD must be simd128 or relaxed, got ${SIMD}`);
const LM = fileURLToPath(new URL('../../build/lm/llama-f32.gguf', import.meta.url));
const SENTENCE = 'The small river ran past the old mill. ';
const DATA = { text: SENTENCE.repeat(12), valid: SENTENCE.repeat(3) };
// 2 x 24 tokens a step: the model's matmuls (48 rows of 256 and 512) are well above the pool's split threshold
const OPTIONS = { seq: 24, batch: 2, steps: 3, lr: 3e-3, rank: 4, alpha: 8, targets: 'attn_q,attn_v,ffn_down', seed: 5, evalEvery: 2 };

/** A fresh model's fine-tuning run: { info, losses, valid, adapter }. */
async function finetune(options) {
  const model = await loadGguf(LM, { train: true, simd: SIMD, nCtx: 64, ...options });
  try {
    const r = await model.finetune(DATA, OPTIONS);
    return { info: model.info, losses: r.losses, valid: r.validLosses, adapter: r.adapter };
  } finally {
    model.free();
  }
}

/** Waits (a few seconds at most) until every helper Worker has exited. */
async function noWorkerLeft() {
  for (let i = 0; i < 200 && liveThreadWorkers() > 0; i++) await new Promise((r) => setTimeout(r, 25));
  assert.equal(liveThreadWorkers(), 0, 'Workers of freed models are still running');
}

test(`${SIMD}: 3 LoRA steps give bitwise the same losses and adapter on 1, 2 and 3 threads as the one-thread build`, async () => {
  const ref = await finetune({ threads: 1 });
  assert.equal(ref.info.threads, 1);
  assert.equal(ref.info.threadsWhy, 'options.threads is 1');
  assert.equal(ref.losses.length, 3);
  const runs = { 'threaded build, 1 thread': await finetune({ threads: 1, trainWasm: MODULE_FILES.llmTrainThreads[SIMD] }) };
  for (const threads of [2, 3]) runs[`${threads} threads`] = await finetune({ threads });
  for (const [what, r] of Object.entries(runs)) {
    assert.deepEqual(r.losses, ref.losses, `${what}: losses`);
    assert.deepEqual(r.valid, ref.valid, `${what}: validation losses`);
    assert.ok(Buffer.from(r.adapter).equals(Buffer.from(ref.adapter)), `${what}: adapter bytes`);
    assert.equal(r.info.simd, SIMD);
  }
  assert.equal(runs['threaded build, 1 thread'].info.threads, 1);
  assert.equal(runs['threaded build, 1 thread'].info.threadsWhy, 'options.trainWasm is a threaded build: 1 thread(s)');
  assert.equal(runs['2 threads'].info.threads, 2);
  assert.match(runs['2 threads'].info.threadsWhy, /^2 threads: the calling thread and 1 Worker on a shared memory/);
  assert.equal(runs['3 threads'].info.threads, 3);
  await noWorkerLeft();
});

test(`${SIMD}: without a shared memory, train falls back to the one-thread training build and says why`, async () => {
  const Memory = WebAssembly.Memory;
  WebAssembly.Memory = function (desc) {
    if (desc?.shared) throw new RangeError('WebAssembly.Memory(): could not allocate memory');
    return new Memory(desc);
  };
  try {
    const model = await loadGguf(LM, { train: true, simd: SIMD, nCtx: 64, threads: 2 });
    try {
      assert.equal(model.info.threads, 1);
      assert.match(model.info.threadsWhy, /^cannot reserve the threaded build's shared memory .*; one thread runs$/);
      const r = await model.finetune(DATA, { ...OPTIONS, steps: 1, evalEvery: 1 });
      assert.equal(r.steps, 1);
    } finally {
      model.free();
    }
  } finally {
    WebAssembly.Memory = Memory;
  }
  assert.equal(liveThreadWorkers(), 0);
});
