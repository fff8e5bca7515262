// llm_gpu.test.mjs - GGUF language models on Chromium's GPU backends
// (headless, SwiftShader; flags in helpers.mjs), on the page's main thread,
// for the q8_0, q4_0, q4_K and f16 test models (build/lm, through a route;
// WebGPU: one per architecture from the half that
// tests/node/llm_webgpu.test.mjs leaves out; WebGL2: one half, every
// architecture and every type; tests/common/lm_names.mjs),
// each also loaded on the CPU module:
// WebGPU: loadGguf(..., { backend: 'webgpu' }) (rlx_llm_gpu.wasm,
// web/runtime/llm_webgpu.js): the logits after a prompt agree within
// LOGIT_TOL (as tests/node/llm_webgpu.test.mjs: f32 on both sides, sums in
// other orders) and greedy generation gives the CPU's ids and text; 'auto'
// stays on the CPU on this software adapter and says so.
// WebGL2: loadGguf(..., { backend: 'webgl' }) (rlx_llm_webgl.wasm,
// web/runtime/llm_webgl.js): after a 21-token prompt (steps of 16, 4 and
// 1 tokens, which share the weight and KV cache textures) and after one
// decoded token the logits agree within LOGIT_TOL, and greedy generation
// gives the CPU's ids and text (and after a 69-token prompt, steps of 64, 4
// and 1, for llama-q8_0); the GPU memory is the file's weight bytes
// plus the f32 KV cache (plus each step's own textures).  Refused: a step
// position outside the context (before it runs), WebGL2 missing (reason
// 'unavailable').  'auto' stays on the CPU with SwiftShader's WebGL2 and
// WebGPU and says why for each; with a hardware renderer (faked) and no
// hardware WebGPU it takes WebGL2. LoRA at generation on WebGL2: two
// adapters (build/rlx make-lora, f16 and f32, scales 0.5 and 0.75) give the
// CPU's logits (with the same adapters) and greedy tokens, logits far from
// the plain model's (WebGPU's twin under Dawn: tests/node/llm_webgpu.test.mjs).
// (generate.html's GPU choices, in a Worker: llm_page.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lmSuite, REPO } from './helpers.mjs';
import { LM_NAMES, lmHalf, lmHalfPerArch } from '../common/lm_names.mjs';

const GL_NAMES = lmHalf(0);
const GPU_NAMES = lmHalfPerArch(1);
const LOGIT_TOL = 1e-3;
const PROMPT = 'The small river ran past the old mill';
const TEXT = `${PROMPT}, and the miller counted the sacks of grain by the door`;
const PROMPT_TOKENS = 21; // WebGL2: 16 + 4 + 1
const suite = lmSuite(LM_NAMES, ['rlx_llm_gpu.wasm', 'rlx_llm_webgl.wasm']);
const [why, whyGl] = suite.whys;

test(`${GPU_NAMES.length} test models on WebGPU in Chromium: logits within ${LOGIT_TOL} and greedy tokens equal to the CPU's`,
  { skip: why ?? false, timeout: 600000 }, async (t) => {
    const { page, problems } = await suite.page();
    const got = await page.evaluate(async ({ names, prompt }) => {
      const { loadGguf } = await import('./runtime/llm.js');
      // one device for every model: the pipelines are compiled once
      const adapter = await navigator.gpu.requestAdapter();
      const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxBufferSize: adapter.limits.maxBufferSize } });
      const out = [];
      for (const name of names) {
        const cpu = await loadGguf(`./lm/${name}.gguf`, { backend: 'cpu' });
        const g = await loadGguf(`./lm/${name}.gguf`, { backend: 'webgpu', gpu: device });
        try {
          const ids = cpu.tokenize(prompt);
          const want = cpu.logits(ids);
          const logits = await g.logits(ids);
          let worst = 0;
          let bad = null;
          for (let i = 0; i < want.length; i++) {
            const err = Math.abs(logits[i] - want[i]) / (1 + Math.abs(want[i]));
            worst = Math.max(worst, err); // NaN stays NaN, and fails below
            if (!Number.isFinite(logits[i]) && bad === null) bad = i;
          }
          const a = await cpu.generate(prompt, { maxTokens: 4 });
          const b = await g.generate(prompt, { maxTokens: 4 });
          out.push({ name, backend: g.info.backend, software: g.info.software, worst, bad, cpu: a.ids, gpu: b.ids,
            cpuText: a.text, gpuText: b.text, rate: b.stats.generateTokensPerSecond });
        } finally {
          g.free();
          cpu.free();
        }
      }
      const auto = await loadGguf(`./lm/${names[0]}.gguf`);
      out.push({ auto: auto.info.backend, fallbacks: auto.info.fallbacks });
      auto.free();
      return out;
    }, { names: GPU_NAMES, prompt: PROMPT });
    const autoRow = got.pop();
    let worst = 0;
    for (const [i, name] of GPU_NAMES.entries()) {
      const r = got[i];
      assert.equal(r.name, name);
      assert.equal(r.backend, 'webgpu');
      assert.equal(r.software, 'SwiftShader');
      assert.equal(r.bad, null, `${name}: a logit is not finite`);
      assert.ok(r.worst <= LOGIT_TOL, `${name}: logits differ by ${r.worst} (relative) from the CPU's`);
      assert.deepEqual(r.gpu, r.cpu, `${name}: greedy ids on WebGPU vs the CPU`);
      assert.equal(r.gpuText, r.cpuText);
      worst = Math.max(worst, r.worst);
    }
    assert.equal(autoRow.auto, 'cpu', "'auto' keeps the CPU on a software adapter");
    assert.match(autoRow.fallbacks[0].reason, /SwiftShader, a software renderer/);
    t.diagnostic(`worst logit difference ${worst.toExponential(2)}; WebGPU generation ${got.map((r) => r.rate.toFixed(1)).join(', ')} tokens/s`);
    assert.deepEqual(problems, []);
    await page.close();
  });

test(`${GL_NAMES.length} test models on WebGL2 in Chromium: logits within ${LOGIT_TOL} and greedy tokens equal to the CPU's`,
  { skip: whyGl ?? false, timeout: 600000 }, async (t) => {
    const { page, problems } = await suite.page();
    const got = await page.evaluate(async ({ names, text, n }) => {
      const { loadGguf } = await import('./runtime/llm.js');
      const worstOf = (logits, want) => {
        let worst = 0;
        let bad = null;
        for (let i = 0; i < want.length; i++) {
          worst = Math.max(worst, Math.abs(logits[i] - want[i]) / (1 + Math.abs(want[i]))); // NaN stays NaN, and fails
          if (!Number.isFinite(logits[i]) && bad === null) bad = i;
        }
        return { worst, bad };
      };
      const out = [];
      for (const name of names) {
        const cpu = await loadGguf(`./lm/${name}.gguf`, { backend: 'cpu' });
        const t0 = performance.now();
        const g = await loadGguf(`./lm/${name}.gguf`, { backend: 'webgl' });
        const loadMs = performance.now() - t0;
        try {
          const ids = cpu.tokenize(text).slice(0, n);
          const prompt = worstOf(await g.logits(ids), cpu.logits(ids));
          const next = (ids[ids.length - 1] * 7 + 3) % cpu.info.nVocab;
          const decode = worstOf(await g.eval([next]), cpu.eval([next]));
          const a = await cpu.generate(ids.slice(0, 5), { maxTokens: 3 });
          const b = await g.generate(ids.slice(0, 5), { maxTokens: 3 });
          out.push({ name, n: ids.length, backend: g.info.backend, software: g.info.software, prompt, decode, cpu: a.ids, gl: b.ids,
            cpuText: a.text, glText: b.text, rate: b.stats.generateTokensPerSecond, loadMs, mem: g.gpu.gpuBytes(),
            weightBytes: g.info.weightBytes, kvBytes: g.info.kvBytes });
        } finally {
          g.free();
          cpu.free();
        }
      }
      return out;
    }, { names: GL_NAMES, text: TEXT, n: PROMPT_TOKENS });
    let worst = 0;
    for (const [i, name] of GL_NAMES.entries()) {
      const r = got[i];
      assert.equal(r.name, name);
      assert.equal(r.n, PROMPT_TOKENS, `${name}: the text gives ${PROMPT_TOKENS} tokens or more`);
      assert.equal(r.backend, 'webgl');
      assert.equal(r.software, 'SwiftShader');
      for (const k of ['prompt', 'decode']) {
        assert.equal(r[k].bad, null, `${name}: a logit after the ${k} is not finite`);
        assert.ok(r[k].worst <= LOGIT_TOL, `${name}: logits after the ${k} differ by ${r[k].worst} (relative) from the CPU's`);
        worst = Math.max(worst, r[k].worst);
      }
      assert.deepEqual(r.gl, r.cpu, `${name}: greedy ids on WebGL2 vs the CPU`);
      assert.equal(r.glText, r.cpuText);
      // GPU memory: the weights at the file's bytes (words textures pad to whole texels and rows), the f32 KV cache.
      assert.ok(r.mem.weights >= r.weightBytes && r.mem.weights <= r.weightBytes * 1.02 + 65536,
        `${name}: weight textures ${r.mem.weights} bytes for ${r.weightBytes} bytes of weights`);
      assert.ok(r.mem.cache >= r.kvBytes && r.mem.cache <= r.kvBytes * 1.02 + 65536, `${name}: cache textures ${r.mem.cache} for ${r.kvBytes}`);
      assert.deepEqual(Object.keys(r.mem.steps).map(Number).sort((a, b) => a - b), [1, 4, 16], `${name}: the step sizes made`);
    }
    const mem = got.map((r) => `${r.name} ${(r.mem.weights / 1024).toFixed(0)}+${(r.mem.cache / 1024).toFixed(0)}+` +
      `${(Object.values(r.mem.steps).reduce((a, b) => a + b, 0) / 1024).toFixed(0)} KiB`).join(', ');
    t.diagnostic(`worst logit difference ${worst.toExponential(2)}; WebGL2 generation ` +
      `${got.map((r) => r.rate.toFixed(1)).join(', ')} tokens/s; loads ${got.map((r) => (r.loadMs / 1000).toFixed(1)).join(', ')} s`);
    t.diagnostic(`GPU memory (weights + cache + steps): ${mem}`);
    assert.deepEqual(problems, []);
    await page.close();
  });

test("WebGL2: a 69-token prompt (steps 64, 4, 1) as on the CPU; refusals: a step position outside the context, no WebGL2; " +
  "'auto' on SwiftShader and on a hardware renderer",
  { skip: whyGl ?? false, timeout: 120000 }, async () => {
    const { page, problems } = await suite.page();
    const got = await page.evaluate(async () => {
      const { loadGguf } = await import('./runtime/llm.js');
      const caught = async (f) => {
        try {
          await f();
          return null;
        } catch (err) {
          return { name: err.name, message: err.message, reason: err.reason ?? null };
        }
      };
      const r = {};
      // the 64-token step too: a 69-token prompt's logits
      const cpu = await loadGguf('./lm/llama-q8_0.gguf', { backend: 'cpu' });
      const long = await loadGguf('./lm/llama-q8_0.gguf', { backend: 'webgl' });
      const ids = Array.from({ length: 69 }, (_, i) => (i * 37 + 11) % cpu.info.nVocab);
      const want = cpu.logits(ids), logits = await long.logits(ids);
      r.long = want.reduce((worst, w, i) => Math.max(worst, Math.abs(logits[i] - w) / (1 + Math.abs(w))), 0);
      r.longSteps = Object.keys(long.gpu.gpuBytes().steps).map(Number).sort((a, b) => a - b);
      long.free();
      cpu.free();
      const g = await loadGguf('./lm/llama-q4_0.gguf', { backend: 'webgl', nCtx: 8 });
      r.negative = await caught(() => g.gpu.runStep('step', 3, [1], -1, true));
      r.past = await caught(() => g.gpu.runStep('step', 2, [1, 2, 3, 4], 5, true));
      r.fits = (await g.gpu.runStep('step', 2, [1, 2, 3, 4], 4, true)).length === g.info.nVocab;
      r.full = await caught(() => g.eval(Array.from({ length: 9 }, () => 1)));
      g.free();
      // auto here: SwiftShader's WebGPU and WebGL2 are both software, so the CPU
      const auto = await loadGguf('./lm/llama-q4_0.gguf');
      r.auto = { backend: auto.info.backend, fallbacks: auto.info.fallbacks };
      auto.free();
      // a hardware renderer (the renderer strings faked) and a software WebGPU: auto takes WebGL2
      const proto = WebGL2RenderingContext.prototype, getParameter = proto.getParameter;
      proto.getParameter = function (p) {
        return p === 0x9246 || p === this.RENDERER ? 'ANGLE (NVIDIA, NVIDIA H200 Direct3D11)' : getParameter.call(this, p);
      };
      try {
        const hw = await loadGguf('./lm/llama-q4_0.gguf');
        r.hardware = { backend: hw.info.backend, fallbacks: hw.info.fallbacks, software: hw.info.software ?? null };
        hw.free();
      } finally {
        proto.getParameter = getParameter;
      }
      // no WebGL2: getContext('webgl2') gives null
      const getContext = OffscreenCanvas.prototype.getContext;
      OffscreenCanvas.prototype.getContext = function (kind, ...rest) { return kind === 'webgl2' ? null : getContext.call(this, kind, ...rest); };
      try {
        r.none = await caught(() => loadGguf('./lm/llama-q4_0.gguf', { backend: 'webgl' }));
        const cpu = await loadGguf('./lm/llama-q4_0.gguf', { backend: 'auto' });
        r.noneAuto = cpu.info.fallbacks;
        cpu.free();
      } finally {
        OffscreenCanvas.prototype.getContext = getContext;
      }
      return r;
    });
    assert.ok(got.long <= LOGIT_TOL, `a 69-token prompt's logits differ by ${got.long} from the CPU's`);
    assert.deepEqual(got.longSteps, [1, 4, 64]);
    assert.match(got.negative.message, /^step: pos must be an integer from 0 to 7 \(a 1-token step in a context of 8\), got -1$/);
    assert.match(got.past.message, /^step: pos must be an integer from 0 to 4 \(a 4-token step in a context of 8\), got 5$/);
    assert.ok(got.fits, 'the last position a step fits at runs');
    assert.match(got.full.message, /GgufModel\.eval: 9 tokens at position 0 do not fit the context of 8 tokens/);
    assert.equal(got.auto.backend, 'cpu');
    assert.deepEqual(got.auto.fallbacks.map((f) => f.backend), ['webgpu', 'webgl']);
    assert.match(got.auto.fallbacks[1].reason, /^the WebGL2 renderer is SwiftShader, a software renderer: slower than the wasm CPU path/);
    assert.deepEqual(got.hardware, { backend: 'webgl', software: null, fallbacks: got.auto.fallbacks.slice(0, 1) });
    assert.equal(got.none.reason, 'unavailable');
    assert.match(got.none.message,
      /^loadGguf: options\.backend 'webgl': WebGL2 cannot run the model here: WebGL2 is not available here \(getContext\("webgl2"\) gave null\)$/);
    assert.deepEqual(got.noneAuto.map((f) => f.backend), ['webgpu', 'webgl']);
    assert.match(got.noneAuto[1].reason, /^WebGL2 is not available here/);
    assert.deepEqual(problems, []);
    await page.close();
  });

test('WebGL2 with two LoRA adapters: the CPU\'s logits and greedy tokens with them, not the plain model\'s logits',
  { skip: whyGl ?? false, timeout: 300000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'rlx-lora-webgl-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const makeLora = (file, args) => execFileSync(`${REPO}build/rlx`, ['make-lora', '--model', `${REPO}build/lm/llama-q8_0.gguf`,
      '--out', join(dir, file), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    makeLora('a.gguf', ['--targets', 'attn_q,attn_v', '--rank', '2', '--alpha', '8', '--type', 'f16']);
    makeLora('b.gguf', ['--targets', 'ffn_down', '--rank', '2', '--seed', '3']);
    const { page, problems } = await suite.page();
    await page.route('**/rlx-lora/*.gguf', (route) => route.fulfill({ path: join(dir, new URL(route.request().url()).pathname.split('/').pop()) }));
    const r = await page.evaluate(async (prompt) => {
      const { loadGguf } = await import('./runtime/llm.js');
      const lora = [{ source: './rlx-lora/a.gguf', scale: 0.5 }, { source: './rlx-lora/b.gguf', scale: 0.75 }];
      const cpu = await loadGguf('./lm/llama-q8_0.gguf', { backend: 'cpu', lora });
      const gl = await loadGguf('./lm/llama-q8_0.gguf', { backend: 'webgl', lora });
      const plain = await loadGguf('./lm/llama-q8_0.gguf', { backend: 'cpu' });
      try {
        const ids = cpu.tokenize(prompt);
        const want = cpu.logits(ids);
        const got = await gl.logits(ids);
        const base = plain.logits(ids);
        let worst = 0, moved = 0;
        for (let i = 0; i < want.length; i++) {
          worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
          moved = Math.max(moved, Math.abs(base[i] - want[i]) / (1 + Math.abs(want[i])));
        }
        gl.reset();
        const a = await cpu.generate(prompt, { maxTokens: 3 });
        const b = await gl.generate(prompt, { maxTokens: 3 });
        return { backend: gl.info.backend, lora: [gl.info.nLora, gl.info.nLoraPairs, 3 * gl.info.nLayer], worst, moved, cpu: a.ids, gl: b.ids };
      } finally {
        gl.free();
        cpu.free();
        plain.free();
      }
    }, 'The small river'); // steps of 4 and 1 tokens: few plans to compile
    assert.equal(r.backend, 'webgl');
    assert.deepEqual(r.lora.slice(0, 2), [2, r.lora[2]]);
    assert.ok(r.worst <= LOGIT_TOL, `logits with the adapters differ by ${r.worst} (relative) from the CPU's`);
    assert.ok(r.moved > 100 * LOGIT_TOL, `the adapters move the logits (by ${r.moved})`);
    assert.deepEqual(r.gl, r.cpu, 'greedy ids with the adapters on WebGL2 vs the CPU');
    assert.deepEqual(problems, []);
    await page.close();
  });
