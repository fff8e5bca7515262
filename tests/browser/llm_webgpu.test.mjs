// llm_webgpu.test.mjs - GGUF language models on Chromium's WebGPU (headless,
// SwiftShader; flags in helpers.mjs): on the page's main thread, the q8_0,
// q4_0, q4_K and f16 test models of each architecture (build/lm, through a
// route) load with loadGguf(..., { backend: 'webgpu' }) (rlx_llm_gpu.wasm,
// web/runtime/llm_webgpu.js) and with the CPU module; the logits after a
// prompt agree within LOGIT_TOL (as tests/node/llm_webgpu.test.mjs: f32 on
// both sides, sums in other orders) and greedy generation gives the CPU's
// ids and text.  'auto' stays on the CPU on this software adapter and says
// so.  (generate.html's WebGPU choice, in a Worker: llm_page.test.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startServer, launch, newPage, missing, REPO } from './helpers.mjs';

const NAMES = ['llama', 'qwen2', 'qwen3'].flatMap((a) => ['q8_0', 'q4_0', 'q4_k', 'f16'].map((t) => `${a}-${t}`));
const LOGIT_TOL = 1e-3;
const PROMPT = 'The small river ran past the old mill';
const why = missing() ?? (!existsSync(`${REPO}web/pkg/rlx_llm_gpu.wasm`) ? 'missing web/pkg/rlx_llm_gpu.wasm: run `make wasm`' : null) ??
  (NAMES.some((n) => !existsSync(`${REPO}build/lm/${n}.gguf`)) ? 'missing build/lm fixtures: run make lm-fixtures' : null);

let server;
let browser;

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

test(`${NAMES.length} test models on WebGPU in Chromium: logits within ${LOGIT_TOL} and greedy tokens equal to the CPU's`,
  { skip: why ?? false, timeout: 600000 }, async (t) => {
    const { page, problems } = await newPage(browser);
    await page.route('**/lm/*.gguf', (route) => {
      const name = new URL(route.request().url()).pathname.split('/').pop();
      route.fulfill({ path: `${REPO}build/lm/${name}`, contentType: 'application/octet-stream' });
    });
    await page.goto(`${server.url}generate.html`);
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
    }, { names: NAMES, prompt: PROMPT });
    const autoRow = got.pop();
    let worst = 0;
    for (const [i, name] of NAMES.entries()) {
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
