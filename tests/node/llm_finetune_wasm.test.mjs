// llm_finetune_wasm.test.mjs - GgufModel.finetune (web/runtime/llm_finetune.js)
// on the training build of the language-model module (rlx_llm_train.wasm,
// or its relaxed-SIMD build under RLX_TEST_SIMD=relaxed) in Node, on the
// tiny llama of build/lm (make lm-fixtures), against the native `build/rlx
// finetune` with the same options:
//   * 3 SGD and 3 AdamW steps: each step's loss and validation loss equal
//     the CLI's progress lines (printed to 4 decimals: within 1e-5
//     relative or half the last digit) and the adapter's numbers the CLI's
//     adapter's within 1e-4 (the rest of the file byte for byte); the
//     adapter loads in the C loader (`rlx generate --lora`) and in
//     loadGguf's options.lora; adapterIn resumes as the CLI's --adapter-in;
//   * 40 steps on a repeated sentence cut the loss 5x and more, and greedy
//     generation with the adapter continues the sentence;
//   * options.signal stops after the current step with a whole adapter;
//   * every bad input is an RlxError naming its argument, a loss that is
//     not finite ends the run without an adapter (at the CLI's step), and a
//     model loaded without { train: true } is refused with what to do.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = `${ROOT}build/rlx`;
const LM = `${ROOT}build/lm/llama-f32.gguf`;
const SIMD = process.env.RLX_TEST_SIMD ?? 'simd128';
const dir = mkdtempSync(join(tmpdir(), 'rlx-finetune-wasm-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SENTENCE = 'The small river ran past the old mill. ';
const TRAIN = SENTENCE.repeat(12), VALID = SENTENCE.repeat(3);
writeFileSync(join(dir, 'train.txt'), TRAIN);
writeFileSync(join(dir, 'valid.txt'), VALID);
const CORPUS = readFileSync(`${ROOT}tests/llm/corpus.txt`, 'utf8');

const load = (options = {}) => loadGguf(LM, { train: true, simd: SIMD, nCtx: 64, ...options });
const rlxError = (re) => (err) => {
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, re);
  return true;
};

/** Runs `rlx finetune` and parses its progress lines: { losses, valid: [{ step, loss }], adapter (its path) }. */
function native(name, args) {
  const out = join(dir, `${name}.gguf`);
  const r = spawnSync(CLI, ['finetune', '--model', LM, '--out', out, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, `rlx finetune: ${r.stderr}`);
  const losses = [], valid = [];
  for (const line of r.stderr.split('\n')) {
    const m = /^step (\d+)\/\d+ {2}loss ([0-9.]+)(?: {2}valid ([0-9.]+))?/.exec(line);
    if (!m) continue;
    losses.push(Number(m[2]));
    if (m[3]) valid.push({ step: Number(m[1]), loss: Number(m[3]) });
  }
  return { losses, valid, adapter: out };
}

/** |a - b| within 1e-5 relative, or half the last of 4 printed decimals. */
const printedClose = (a, b) => Math.abs(a - b) <= Math.max(1e-5 * Math.abs(b), 5e-5);

/** The two adapter files: the same bytes but for f32 words within tol (the tensors' numbers). */
function assertAdapterClose(got, want, tol) {
  assert.equal(got.length, want.length, 'adapter sizes');
  const g = new DataView(got.buffer, got.byteOffset, got.byteLength), w = new DataView(want.buffer, want.byteOffset, want.byteLength);
  let differing = 0;
  for (let i = 0; i + 4 <= got.length; i += 4) {
    if (g.getUint32(i, true) === w.getUint32(i, true)) continue;
    const a = g.getFloat32(i, true), b = w.getFloat32(i, true);
    assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `adapter word at byte ${i}: ${a} vs the CLI's ${b}`);
    differing++;
  }
  return differing;
}

for (const optimizer of ['sgd', 'adamw']) {
  test(`${SIMD}: 3 ${optimizer} steps equal rlx finetune's (losses, validation, adapter); the adapter loads in C and in loadGguf`, async () => {
    const lr = optimizer === 'sgd' ? 0.05 : 3e-3;
    const want = native(`cli-${optimizer}`, ['--data', join(dir, 'train.txt'), '--valid', join(dir, 'valid.txt'), '--seq', '24',
      '--batch', '2', '--steps', '3', '--optimizer', optimizer, '--lr', String(lr), '--rank', '4', '--alpha', '8',
      '--targets', 'attn_q,attn_v,ffn_down', '--seed', '5', '--eval-every', '2']);
    assert.equal(want.losses.length, 3);
    const model = await load();
    try {
      assert.equal(model.info.simd, SIMD);
      const progress = [];
      const r = await model.finetune({ text: TRAIN, valid: VALID }, { seq: 24, batch: 2, steps: 3, optimizer, lr, rank: 4, alpha: 8,
        targets: ['attn_q', 'attn_v', 'ffn_down'], seed: 5, evalEvery: 2, onProgress: (p) => progress.push(p) });
      assert.equal(r.steps, 3);
      assert.equal(r.stopped, false);
      r.losses.forEach((l, i) => assert.ok(printedClose(l, want.losses[i]), `step ${i + 1}: ${l} vs the CLI's ${want.losses[i]}`));
      assert.deepEqual(r.validLosses.map((v) => v.step), want.valid.map((v) => v.step));
      r.validLosses.forEach((v, i) => assert.ok(printedClose(v.loss, want.valid[i].loss), `validation at ${v.step}: ${v.loss} vs ${want.valid[i].loss}`));
      assert.deepEqual(progress.map((p) => p.step), [1, 2, 3]);
      assert.deepEqual(progress.map((p) => p.loss), r.losses);
      assert.ok(progress.every((p) => p.steps === 3 && p.tokensPerSecond > 0 && p.etaSeconds >= 0));
      assert.equal(progress[2].etaSeconds, 0);
      const cliAdapter = readFileSync(want.adapter);
      const differing = assertAdapterClose(r.adapter, cliAdapter, 1e-4);
      assert.ok(differing < r.adapter.length / 4, 'the adapters share their header');
      // the C loader and loadGguf read it
      const file = join(dir, `wasm-${optimizer}.gguf`);
      writeFileSync(file, r.adapter);
      execFileSync(CLI, ['generate', '--model', LM, '--lora', file, '--prompt', 'The small', '--max-tokens', '4'], { stdio: 'ignore' });
      const adapted = await loadGguf(LM, { backend: 'cpu', simd: SIMD, nCtx: 64, lora: [{ source: r.adapter }] });
      try {
        assert.equal(adapted.info.nLora, 1);
        assert.equal(adapted.info.nLoraPairs, 3 * adapted.info.nLayer);
      } finally {
        adapted.free();
      }
      if (optimizer === 'adamw') { // adapterIn resumes as --adapter-in does
        const resumed = native('cli-resumed', ['--data', join(dir, 'train.txt'), '--valid', join(dir, 'valid.txt'), '--seq', '24',
          '--batch', '2', '--steps', '1', '--lr', String(lr), '--rank', '4', '--alpha', '8', '--targets', 'attn_q,attn_v,ffn_down',
          '--seed', '5', '--adapter-in', want.adapter]);
        const again = await model.finetune({ text: TRAIN, valid: VALID }, { seq: 24, batch: 2, steps: 1, lr, rank: 4, alpha: 8,
          targets: 'attn_q,attn_v,ffn_down', seed: 5, adapterIn: new Uint8Array(cliAdapter) });
        assert.ok(printedClose(again.losses[0], resumed.losses[0]), `resumed: ${again.losses[0]} vs the CLI's ${resumed.losses[0]}`);
        assert.ok(again.losses[0] < r.losses[0], 'the resumed run starts below a fresh one');
      }
    } finally {
      model.free();
    }
  });
}

test(`${SIMD}: 40 steps cut the loss 5x, generation then continues the sentence; a signal stops with a whole adapter`, async () => {
  const model = await load();
  try {
    const prompt = 'The small river';
    const before = await model.generate(prompt, { maxTokens: 16 });
    const r = await model.finetune({ text: TRAIN, valid: VALID }, { seq: 24, batch: 4, steps: 40, lr: 3e-3, evalEvery: 10 });
    assert.equal(r.losses.length, 40);
    assert.ok(r.losses[39] * 5 <= r.losses[0], `the loss went from ${r.losses[0]} to ${r.losses[39]}`);
    assert.deepEqual(r.validLosses.map((v) => v.step), [10, 20, 30, 40]);
    const adapted = await loadGguf(LM, { backend: 'cpu', simd: SIMD, nCtx: 64, lora: [{ source: r.adapter }] });
    try {
      const after = await adapted.generate(prompt, { maxTokens: 16 });
      const want = ' ran past the old mill. The small river ran';
      assert.ok(after.text.startsWith(want), `with the adapter: '${after.text}'`);
      assert.ok(!before.text.startsWith(want), `the base model already continues it: '${before.text}'`);
    } finally {
      adapted.free();
    }
    // a signal: stops after the current step, returns what it has
    const ac = new AbortController();
    const s = await model.finetune(TRAIN, { seq: 24, batch: 2, steps: 50, lr: 3e-3,
      onProgress: ({ step }) => { if (step === 2) ac.abort(); }, signal: ac.signal });
    assert.equal(s.steps, 2);
    assert.equal(s.stopped, true);
    assert.equal(s.losses.length, 2);
    assert.equal(s.validLosses.at(-1).step, 2, 'the validation loss is taken at the stop');
    const file = join(dir, 'stopped.gguf');
    writeFileSync(file, s.adapter);
    execFileSync(CLI, ['generate', '--model', LM, '--lora', file, '--prompt', 'The small', '--max-tokens', '2'], { stdio: 'ignore' });
  } finally {
    model.free();
  }
});

test(`${SIMD}: bad inputs are RlxErrors naming the argument; no training module, no finetune`, async () => {
  const model = await load();
  const plain = await loadGguf(LM, { backend: 'cpu', nCtx: 64 });
  try {
    const ft = (data, o) => model.finetune(data, { seq: 16, steps: 1, ...o });
    await assert.rejects(plain.finetune(CORPUS), rlxError(/GgufModel\.finetune: this model was loaded without the training module; load it with loadGguf\(source, \{ train: true \}\)/));
    await assert.rejects(ft(CORPUS, { rank: 0 }), rlxError(/finetune: options\.rank must be an integer from 1/));
    await assert.rejects(ft(CORPUS, { rank: 4096 }), rlxError(/finetune: options\.rank: .*rank/));
    await assert.rejects(ft(CORPUS, { targets: 'attn_q,attn_z' }), rlxError(/finetune: options\.targets: .*attn_z/));
    await assert.rejects(ft(CORPUS, { seq: 100000 }), rlxError(/finetune: options\.seq 100000 is above the model's context \(512\)/));
    await assert.rejects(ft(CORPUS, { lr: NaN }), rlxError(/finetune: options\.lr must be a number from 0 to 10, got number NaN/));
    await assert.rejects(ft(CORPUS, { optimizer: 'adam' }), rlxError(/finetune: options\.optimizer must be 'adamw' or 'sgd'/));
    await assert.rejects(ft(CORPUS, { validFraction: 1 }), rlxError(/finetune: options\.validFraction/));
    await assert.rejects(ft(CORPUS, { batch: 0 }), rlxError(/finetune: options\.batch/));
    await assert.rejects(ft(CORPUS, { signal: {} }), rlxError(/finetune: options\.signal must be an AbortSignal/));
    await assert.rejects(ft(CORPUS, { epochs: 2 }), rlxError(/finetune: options\.epochs is not an option/));
    await assert.rejects(ft(CORPUS, { backend: 'webgpu' }), rlxError(/finetune: options\.backend 'webgpu' needs the model loaded on WebGPU with its training build: loadGguf\(source, \{ train: true, backend: 'webgpu' \}\) \(this one is on 'cpu'\)/));
    await assert.rejects(ft(CORPUS, { backend: 'webgl' }), rlxError(/finetune: options\.backend 'webgl' needs the model loaded on WebGL2/));
    await assert.rejects(ft(CORPUS, { backend: 'tpu' }), rlxError(/finetune: options\.backend must be 'cpu', 'webgpu', 'webgl'/));
    await assert.rejects(ft('The small river.', {}), rlxError(/finetune: data: .*tokens/));
    await assert.rejects(ft(42, {}), rlxError(/finetune: data must be a string or bytes/));
    await assert.rejects(ft({ jsonl: '{"prompt": "a", "completion": "b"}\n{"prompt": 1}\n' }, {}), rlxError(/finetune: data\.jsonl: .*line 2/));
    await assert.rejects(ft({ text: CORPUS, valid: { jsonl: 'not json\n' } }, {}), rlxError(/finetune: data\.valid\.jsonl: .*line 1/));
    await assert.rejects(ft(CORPUS, { adapterIn: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]) }), rlxError(/finetune: options\.adapterIn/));
    await assert.rejects(ft(CORPUS, { adapterIn: 42 }), rlxError(/finetune: options\.adapterIn must be/));
    await assert.rejects(loadGguf(LM, { train: true, backend: 'webgpu' }), rlxError(/loadGguf: options.backend 'webgpu': WebGPU cannot run the model here: WebGPU is not available here/));
    await assert.rejects(loadGguf(LM, { train: 1 }), rlxError(/loadGguf: options\.train must be true or false/));
    // a loss that is not finite ends the run without an adapter, as the CLI's does (it diverges at the same step)
    const diverging = ['--optimizer', 'sgd', '--lr', '10', '--alpha', '1000000', '--rank', '1', '--targets', 'all', '--seq', '24', '--steps', '20'];
    const cli = spawnSync(CLI, ['finetune', '--model', LM, '--data', join(dir, 'train.txt'), '--out', join(dir, 'nan.gguf'), ...diverging], { encoding: 'utf8' });
    const at = /the training loss is -?nan at step (\d+)/.exec(cli.stderr);
    assert.ok(at && cli.status !== 0, `the CLI does not diverge here: ${cli.stderr.slice(-300)}`);
    await assert.rejects(model.finetune(TRAIN, { optimizer: 'sgd', lr: 10, alpha: 1e6, rank: 1, targets: 'all', seq: 24, steps: 20 }),
      rlxError(new RegExp(`finetune: the training loss is NaN at step ${at[1]} \\(try a lower options\\.lr\\); no adapter made`)));
    // after the refusals the model still trains, and nothing was left half made
    const r = await ft(CORPUS, { steps: 1 });
    assert.equal(r.steps, 1);
  } finally {
    model.free();
    plain.free();
  }
});
