// llm_webgpu.test.mjs - GGUF language models on WebGPU under Dawn (npm
// `webgpu`; SwiftShader on CPU machines): loadGguf's backend 'webgpu'
// (web/runtime/llm_webgpu.js over web/pkg/rlx_llm_gpu.wasm, the step plans
// run by web/runtime/webgpu.js) against the CPU module (rlx_llm.wasm) on
// the seeded test models of build/lm/ (make lm-fixtures):
//  - half of the q8_0, q4_0, q4_K and f16 models of the architectures
//    (tests/common/lm_names.mjs; Chromium checks the other half): the
//    logits after a prompt are the CPU's within LOGIT_TOL and greedy
//    generation gives the CPU's ids and text;
//  - the fused steps a hardware GPU runs (llm_graph.c's fuse) on one model
//    of each architecture: the same logits and tokens, fewer dispatches;
//  - a prompt of 93 tokens (steps of 64, 16, 4, 4, 4 and 1: the tiled
//    prompt kernel and every step size at its position) and eval after it;
//  - a context that fills up ends both runs the same way ('context'),
//    reset and a second run repeat the first, eval appends at the position;
//  - a kept conversation (GgufModel.chat): three turns greedy, two sampled,
//    give the CPU's tokens and evaluate only the tokens after the cache;
//    the third greedy turn, under a grammar, gives the CPU's tokens;
//  - LoRA adapters (build/rlx make-lora, an f16 one and an f32 one with
//    scales): the CPU's logits and greedy tokens with the same adapters;
//    the logits differ from the plain model's (an adapter left out fails);
//  - 'auto' keeps the CPU where WebGPU is missing or a software adapter and
//    says why; 'webgpu' without WebGPU is an RlxError with reason
//    'unavailable'; bad options are RlxErrors naming them.
// LOGIT_TOL: both sides compute in f32 from the same weights; the GPU sums
// in other orders (8 values per thread, then partial sums per row; online
// softmax), which moves a logit by a few 1e-5 here (worst seen 4e-5), while
// a wrong block decode or cache position moves them by more than 0.1.
// Build first: make wasm lm-fixtures.  The Vulkan driver environment for
// Dawn is added when missing, by re-running this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dawnDevice } from '../../tools/dawn_node.mjs';
import { dawnTestFile } from '../common/dawn_gate.mjs';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';
import { LM_NAMES, lmHalf } from '../common/lm_names.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GPU_WASM = `${ROOT}web/pkg/rlx_llm_gpu.wasm`;
const CLI = `${ROOT}build/rlx`;
const fixture = (name) => `${ROOT}build/lm/${name}.gguf`;
const LOGIT_TOL = 1e-3; // |gpu - cpu| <= LOGIT_TOL * (1 + |cpu|), see above
const PROMPT = 'The small river ran past the old mill';
const LONG = 'The small river ran past the old mill, and the miller\'s daughter counted the sacks: 12, 24, 36, 48. ' +
  'She wrote the numbers in a blue notebook, then she wrote them again, because the first page got wet. ' +
  '"Why do you count everything?" her brother asked.';

const rlxError = (re, reason) => (err) => {
  assert.ok(err instanceof RlxError, `expected an RlxError, got ${err?.name}: ${err?.message}`);
  assert.match(err.message, re);
  if (reason) assert.equal(err.reason, reason);
  return true;
};

function closeLogits(got, want, what) {
  assert.equal(got.length, want.length, `${what}: logits length`);
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i]));
    assert.ok(Number.isFinite(got[i]) && err <= LOGIT_TOL, `${what}: logit ${i}: gpu ${got[i]} vs cpu ${want[i]}`);
    worst = Math.max(worst, err);
  }
  return worst;
}

const missing = [GPU_WASM, CLI, ...LM_NAMES.map(fixture)].filter((f) => !existsSync(f));
if (dawnTestFile('llm webgpu', import.meta.url, { missing, make: 'make wasm lm-fixtures', timeout: 1_800_000 })) {
  const { gpu, device } = await dawnDevice();
  // One device for every model: the pipelines are compiled once per device.
  const onGpu = (name, options = {}) => loadGguf(fixture(name), { backend: 'webgpu', gpu: device, ...options });
  const onCpu = (name, options = {}) => loadGguf(fixture(name), { backend: 'cpu', simd: 'simd128', ...options });
  let worstLogit = 0;

  for (const name of lmHalf(0)) {
    test(`${name}: logits within ${LOGIT_TOL} and greedy tokens equal to the CPU's`, async () => {
      const cpu = await onCpu(name);
      const g = await onGpu(name);
      try {
        assert.equal(g.info.backend, 'webgpu');
        assert.equal(g.info.software, 'SwiftShader');
        const ids = cpu.tokenize(PROMPT);
        worstLogit = Math.max(worstLogit, closeLogits(await g.logits(ids), cpu.logits(ids), name));
        assert.equal(g.position, ids.length);
        const want = await cpu.generate(PROMPT, { maxTokens: 4 });
        const got = await g.generate(PROMPT, { maxTokens: 4 });
        assert.deepEqual(got.ids, want.ids);
        assert.equal(got.text, want.text);
        assert.equal(got.stoppedBy, want.stoppedBy);
        assert.equal(got.stats.promptTokens, ids.length);
        assert.ok(got.stats.generateTokensPerSecond > 0);
      } finally {
        g.free();
        cpu.free();
      }
    });
  }

  // A software adapter runs the plain steps; a hardware one the fused steps
  // (norms in the products, rotations in attention_kv), checked here by
  // asking for them: the CPU's logits and tokens, 4 L + 1 fewer dispatches.
  for (const name of ['llama-q8_0', 'qwen2-q4_0', 'qwen3-q4_k']) {
    test(`${name}: the fused steps give the CPU's logits and greedy tokens with 4 L + 1 fewer dispatches per token`, async () => {
      const cpu = await onCpu(name);
      const g = await onGpu(name);
      try {
        assert.equal(g.gpu.fuse, false, 'a software adapter runs the plain steps');
        const last = g.gpu.sizes.length - 1;
        const plain = (await g.gpu.step('test', last)).dispatchCount;
        g.gpu.free();
        g.gpu.fuse = true;
        const fused = (await g.gpu.step('test', last)).dispatchCount;
        assert.equal(plain - fused, 4 * g.info.nLayer + 1, `dispatches per token: plain ${plain}, fused ${fused}`);
        const ids = cpu.tokenize(LONG);
        worstLogit = Math.max(worstLogit, closeLogits(await g.logits(ids), cpu.logits(ids), `${name} fused`));
        const want = await cpu.generate(PROMPT, { maxTokens: 6 });
        const got = await g.generate(PROMPT, { maxTokens: 6 });
        assert.deepEqual([got.ids, got.text], [want.ids, want.text]);
      } finally {
        g.free();
        cpu.free();
      }
    });
  }

  test('llama-q8_0: a 93-token prompt (steps 64, 16, 4, 4, 4, 1) and eval after it', async () => {
    const name = 'llama-q8_0';
    const cpu = await onCpu(name);
    const g = await onGpu(name);
    try {
      const ids = cpu.tokenize(LONG).slice(0, 93);
      assert.equal(ids.length, 93, 'the prompt has 93 tokens');
      worstLogit = Math.max(worstLogit, closeLogits(await g.logits(ids), cpu.logits(ids), name));
      // eval appends at the position, as on the CPU
      closeLogits(await g.eval([5, 6]), cpu.eval([5, 6]), `${name} after eval`);
      assert.equal(g.position, ids.length + 2);
    } finally {
      g.free();
      cpu.free();
    }
  });

  test('a full context ends the run as on the CPU; reset and a second run repeat the first', async () => {
    const cpu = await onCpu('qwen2-q8_0', { nCtx: 12 });
    const g = await onGpu('qwen2-q8_0', { nCtx: 12 });
    try {
      const want = await cpu.generate(PROMPT, { maxTokens: 40 });
      const got = await g.generate(PROMPT, { maxTokens: 40 });
      assert.equal(want.stoppedBy, 'context');
      assert.equal(got.stoppedBy, 'context');
      assert.deepEqual(got.ids, want.ids);
      await assert.rejects(g.eval([1]), rlxError(/GgufModel\.eval: 1 tokens at position 12 do not fit the context of 12/));
      g.reset();
      assert.equal(g.position, 0);
      const again = await g.generate(PROMPT, { maxTokens: 40 });
      assert.deepEqual(again.ids, want.ids);
    } finally {
      g.free();
      cpu.free();
    }
  });

  test('greedy decoding on the GPU (argmax there, steps ahead of the host) ends where the CPU ends', async () => {
    const cpu = await onCpu('llama-q8_0');
    const g = await onGpu('llama-q8_0');
    try {
      const want = await cpu.generate(PROMPT, { maxTokens: 12 });
      const got = await g.generate(PROMPT, { maxTokens: 12 });
      assert.deepEqual(got.ids, want.ids);
      assert.equal(got.text, want.text);
      assert.equal(got.stoppedBy, 'maxTokens');
      assert.equal(g.position, cpu.position, 'the last token is sampled, not evaluated, on both');
      assert.ok(g.gpu.argmax, 'the argmax ran on the GPU');
      // the steps the GPU ran past the end left nothing the next eval reads
      closeLogits(await g.eval([7, 8]), cpu.eval([7, 8]), 'eval after a greedy run');
      // a stop string in the middle: the same cut, though the GPU had run steps ahead
      const stop = want.text.slice(Math.floor(want.text.length / 2), Math.floor(want.text.length / 2) + 3);
      const cutWant = await cpu.generate(PROMPT, { maxTokens: 12, stop: [stop] });
      const cutGot = await g.generate(PROMPT, { maxTokens: 12, stop: [stop] });
      assert.equal(cutWant.stoppedBy, 'stop');
      assert.deepEqual([cutGot.stoppedBy, cutGot.text, cutGot.ids], [cutWant.stoppedBy, cutWant.text, cutWant.ids]);
      assert.equal(g.position, cpu.position);
      // a repetition penalty is not a plain argmax: the logits come back to the host's sampler
      const penWant = await cpu.generate(PROMPT, { maxTokens: 12, repeatPenalty: 1.5 });
      const penGot = await g.generate(PROMPT, { maxTokens: 12, repeatPenalty: 1.5 });
      assert.deepEqual(penGot.ids, penWant.ids);
      // stopped by the caller after 3 tokens: nothing left running, the model usable at once
      let seen = 0;
      const early = await g.generate(PROMPT, { maxTokens: 12, onToken: () => ++seen < 3 });
      assert.equal(early.stoppedBy, 'callback');
      assert.deepEqual(early.ids, want.ids.slice(0, 3));
      closeLogits(await g.logits([3, 4, 5]), cpu.logits([3, 4, 5]), 'logits after a stopped run');
    } finally {
      g.free();
      cpu.free();
    }
  });

  test('a kept conversation on WebGPU: three chat turns give the CPU\'s tokens and reuse the same cached tokens', async () => {
    const cpu = await onCpu('qwen2-q8_0');
    const g = await onGpu('qwen2-q8_0');
    try {
      // the GPU's argmax over three turns, then the host's sampler over two (each turn compiles plans: kept short)
      for (const [options, turns] of [[{ temperature: 0 }, 3], [{ temperature: 0.8, seed: 5 }, 2]]) {
        const msgs = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: PROMPT }];
        for (let turn = 1; turn <= turns; turn++) {
          // the last greedy turn under a grammar: the host's sampler masks the GPU's logits (no argmax on the GPU)
          const underGrammar = options.temperature === 0 && turn === turns;
          const o = underGrammar ? { ...options, maxTokens: 8, grammar: 'root ::= ("north" | "south" | "east" | "west") "!"' } : { ...options, maxTokens: 6 };
          const want = await cpu.chat(msgs, o);
          const got = await g.chat(msgs, o);
          if (underGrammar) assert.match(got.text, /^(north|south|east|west)!$/);
          assert.deepEqual(got.ids, want.ids, `turn ${turn}`);
          assert.deepEqual(got.stats.cachedTokens, want.stats.cachedTokens, `turn ${turn}`);
          assert.equal(got.stats.evaluatedTokens, got.stats.promptTokens - got.stats.cachedTokens);
          if (turn > 1) assert.ok(got.stats.cachedTokens > 0, `turn ${turn} reused the cache`);
          msgs.push({ role: 'assistant', content: got.text }, { role: 'user', content: `and ${turn}?` });
        }
      }
    } finally {
      g.free();
      cpu.free();
    }
  });

  test('llama-q8_0 with two LoRA adapters: the CPU\'s logits and greedy tokens with them, not the plain model\'s logits', async (t) => {
    const prompt = 'The small river'; // steps of 4 and 1 tokens: few plans to compile
    const dir = mkdtempSync(join(tmpdir(), 'rlx-lora-webgpu-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const makeLora = (file, args) => {
      execFileSync(CLI, ['make-lora', '--model', fixture('llama-q8_0'), '--out', join(dir, file), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      return join(dir, file);
    };
    const lora = [
      { source: makeLora('a.gguf', ['--targets', 'attn_q,attn_v', '--rank', '2', '--alpha', '8', '--type', 'f16']), scale: 0.5 },
      { source: makeLora('b.gguf', ['--targets', 'ffn_down', '--rank', '2', '--seed', '3']), scale: 0.75 },
    ];
    const cpu = await onCpu('llama-q8_0', { lora });
    const g = await onGpu('llama-q8_0', { lora });
    const plain = await onCpu('llama-q8_0');
    try {
      assert.equal(g.info.backend, 'webgpu');
      assert.deepEqual([g.info.nLora, g.info.nLoraPairs], [2, 3 * g.info.nLayer]);
      const ids = cpu.tokenize(prompt);
      const want = cpu.logits(ids);
      worstLogit = Math.max(worstLogit, closeLogits(await g.logits(ids), want, 'llama-q8_0 with adapters'));
      const moved = plain.logits(ids).reduce((m, v, i) => Math.max(m, Math.abs(v - want[i]) / (1 + Math.abs(want[i]))), 0);
      assert.ok(moved > 100 * LOGIT_TOL, `the adapters move the logits (by ${moved})`);
      g.reset();
      const got = await g.generate(prompt, { maxTokens: 3 }); // a few decoding steps: each costs seconds on SwiftShader
      assert.deepEqual(got.ids, (await cpu.generate(prompt, { maxTokens: 3 })).ids);
    } finally {
      g.free();
      cpu.free();
      plain.free();
    }
  });

  test("backend 'auto' keeps the CPU where WebGPU is missing or a software adapter, and says why", async () => {
    const none = await loadGguf(fixture('qwen3-q4_k'), { simd: 'simd128' }); // Node has no navigator.gpu
    assert.equal(none.info.backend, 'cpu');
    assert.match(none.info.fallbacks[0].reason, /no navigator\.gpu/);
    assert.equal(none.info.fallbacks[0].backend, 'webgpu');
    none.free();
    const soft = await loadGguf(fixture('qwen3-q4_k'), { gpu, simd: 'simd128' });
    assert.equal(soft.info.backend, 'cpu');
    assert.match(soft.info.fallbacks[0].reason, /SwiftShader, a software renderer/);
    assert.ok(soft.logits([1, 2]) instanceof Float32Array, 'the CPU path answers synchronously');
    soft.free();
  });

  test("backend 'webgpu' without WebGPU, bad options and a lost device are RlxErrors naming them", async () => {
    await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'webgpu' }),
      rlxError(/^loadGguf: options\.backend 'webgpu': WebGPU cannot run the model here: WebGPU is not available here \(no navigator\.gpu\)/,
        'unavailable'));
    await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'webgpu', gpu: 42 }), rlxError(/options\.gpu must be a GPUDevice or a GPU/));
    await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'webgpu', gpu: device, gpuWasm: `${ROOT}web/pkg/rlx_llm.wasm` }),
      rlxError(/options\.gpuWasm is not rlx_llm_gpu\.wasm/));
    await assert.rejects(loadGguf(fixture('qwen3-q4_k'), { backend: 'webgl' }),
      rlxError(/^loadGguf: options\.backend 'webgl': WebGL2 cannot run the model here: WebGL2 is not available here/, 'unavailable'));
    const own = (await dawnDevice()).device;
    const g = await onGpu('qwen3-q4_k', { gpu: own });
    const ids = g.tokenize(PROMPT);
    await g.logits(ids);
    own.destroy();
    await own.lost;
    await assert.rejects(g.generate(ids, { maxTokens: 2 }), (err) => err instanceof RlxError && err.reason === 'device-lost');
    g.free();
  });

  test('llm webgpu summary', (t) => t.diagnostic(`worst logit difference ${worstLogit.toExponential(2)} (tolerance ${LOGIT_TOL})`));
}
