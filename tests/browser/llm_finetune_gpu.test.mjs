// llm_finetune_gpu.test.mjs - LoRA fine-tuning on Chromium's GPU backends
// (headless, SwiftShader; flags in helpers.mjs), on the page's main thread:
// tests/common/llm_finetune_case.mjs (3 steps of two windows, the loss
// without an update, the pairs read back and written into the C object)
// against the same module's CPU steps, losses and pairs within FT_TOL:
// WebGPU (web/runtime/llm_finetune_webgpu.js over rlx_llm_train_gpu.wasm)
// on one case tests/node/llm_finetune_webgpu.test.mjs leaves to Chromium
// (the same WGSL runs the others under Dawn), WebGL2
// (llm_finetune_webgl.js over rlx_llm_train_webgl.wasm) on another (every
// architecture and type of the WebGL2 plans runs through the C reference
// executor in tests/c/test_llm_finetune_device.c); and
// GgufModel.finetune on a model loaded with { train: true, backend: 'webgl' }
// (the steps on WebGL2 by default) gives the CPU run's losses and
// validation losses; a cluster rank of the fine-tuning task on WebGL2
// (web/cluster/task_llm.js) computes the CPU rank's bucket at adapters with
// B != 0 (as a Node test checks a WebGPU rank under Dawn).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lmSuite, REPO } from './helpers.mjs';
import { FT_GPU_CASES } from '../common/lm_names.mjs';
import { FT_TOL } from '../common/llm_finetune_case.mjs';

const WEBGPU_CASES = [FT_GPU_CASES[5]]; // qwen3-f32, AdamW (Dawn runs the even cases)
const WEBGL_CASES = [FT_GPU_CASES[1]]; // llama-q8_0, SGD
const cases = (list) => list.map(([name, optimizer]) => `${name} (${optimizer})`).join(", ");
const suite = lmSuite(FT_GPU_CASES.map(([n]) => n), ['rlx_llm_train_gpu.wasm', 'rlx_llm_train_webgl.wasm']);
const [why, whyGl] = suite.whys;

/** generate.html with the shared case served at ./rlx-tests/llm_finetune_case.mjs. */
async function casePage() {
  const { page, problems } = await suite.page();
  await page.route('**/rlx-tests/llm_finetune_case.mjs', (route) =>
    route.fulfill({ path: `${REPO}tests/common/llm_finetune_case.mjs`, contentType: 'text/javascript' }));
  return { page, problems };
}

function check(r, name, optimizer, backend) {
  const what = `${name}, ${optimizer} on ${backend}`;
  assert.equal(r.error, undefined, `${what}: ${r.error}`);
  for (let s = 0; s < r.cpu.length; s++) {
    assert.ok(Math.abs(r.gpu[s] - r.cpu[s]) <= FT_TOL * Math.abs(r.cpu[s]), `${what}: step ${s}: loss ${r.gpu[s]} vs the CPU's ${r.cpu[s]}`);
  }
  assert.ok(r.cpu[2] < r.cpu[0], `${what}: the loss goes down (${r.cpu})`);
  assert.ok(Math.abs(r.evalGpu - r.evalCpu) <= FT_TOL * Math.abs(r.evalCpu), `${what}: eval ${r.evalGpu} vs the CPU's ${r.evalCpu}`);
  assert.ok(r.pairErr <= FT_TOL, `${what}: pairs differ by ${r.pairErr} (relative)`);
  assert.equal(r.syncErr, 0, `${what}: syncToHost writes the pairs read back`);
}

test(`fine-tuning on WebGPU in Chromium: ${cases(WEBGPU_CASES)}: the CPU's losses and pairs within ${FT_TOL}`,
  { skip: why ?? false, timeout: 600000 }, async () => {
    const { page, problems } = await casePage();
    const got = await page.evaluate(async (cases) => {
      const { loadGguf } = await import('./runtime/llm.js');
      const { LlmFinetuneWebGpu } = await import('./runtime/llm_finetune_webgpu.js');
      const { finetuneAgainstCpu } = await import('./rlx-tests/llm_finetune_case.mjs');
      const adapter = await navigator.gpu.requestAdapter();
      const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
        maxBufferSize: adapter.limits.maxBufferSize } });
      const out = [];
      for (const [name, optimizer] of cases) {
        const model = await loadGguf(`./lm/${name}.gguf`, { backend: 'cpu', wasm: './pkg/rlx_llm_train_gpu.wasm', nCtx: 64 });
        try {
          out.push(await finetuneAgainstCpu(model, (mod, ft, seq) => new LlmFinetuneWebGpu(mod, ft, device, seq), optimizer));
        } catch (err) {
          out.push({ error: String(err?.stack ?? err) });
        } finally {
          model.free();
        }
      }
      return out;
    }, WEBGPU_CASES);
    WEBGPU_CASES.forEach(([name, optimizer], i) => check(got[i], name, optimizer, 'WebGPU'));
    assert.deepEqual(problems, []);
    await page.close();
  });

test(`fine-tuning on WebGL2 in Chromium: ${cases(WEBGL_CASES)}: the CPU's losses and pairs within ${FT_TOL}, and so does finetune()`,
  { skip: whyGl ?? false, timeout: 600000 }, async () => {
    const { page, problems } = await casePage();
    const got = await page.evaluate(async (cases) => {
      const { loadGguf } = await import('./runtime/llm.js');
      const { LlmFinetuneWebGl } = await import('./runtime/llm_finetune_webgl.js');
      const { webGlContext } = await import('./runtime/llm_webgl.js');
      const { finetuneAgainstCpu } = await import('./rlx-tests/llm_finetune_case.mjs');
      const out = [];
      for (const [name, optimizer] of cases) {
        const model = await loadGguf(`./lm/${name}.gguf`, { backend: 'cpu', wasm: './pkg/rlx_llm_train_webgl.wasm', nCtx: 64 });
        const { gl } = webGlContext('finetune');
        try {
          out.push(await finetuneAgainstCpu(model, (mod, ft, seq) => new LlmFinetuneWebGl(mod, ft, gl, seq), optimizer));
        } catch (err) {
          out.push({ error: String(err?.stack ?? err) });
        } finally {
          model.free();
          gl.getExtension('WEBGL_lose_context')?.loseContext(); // browsers cap live contexts
        }
      }
      // GgufModel.finetune on WebGL2 against the same run on the CPU module
      const options = { rank: 2, alpha: 4, seq: 8, batch: 2, steps: 2, lr: 1e-2, optimizer: 'sgd', shuffle: false };
      const data = { text: 'The small river ran past the old mill. '.repeat(4), valid: { text: 'The small river ran past the old mill. '.repeat(2) } };
      const cpu = await loadGguf('./lm/llama-q8_0.gguf', { train: true, backend: 'cpu', nCtx: 64 });
      const gl = await loadGguf('./lm/llama-q8_0.gguf', { train: true, backend: 'webgl', nCtx: 64 });
      try {
        const a = await cpu.finetune(data, options), b = await gl.finetune(data, options);
        out.push({ backend: gl.info.backend, cpu: a.losses, gl: b.losses, cpuValid: a.validLosses.map((v) => v.loss),
          glValid: b.validLosses.map((v) => v.loss), sizes: [a.adapter.length, b.adapter.length] });
      } finally {
        cpu.free();
        gl.free();
      }
      return out;
    }, WEBGL_CASES);
    WEBGL_CASES.forEach(([name, optimizer], i) => check(got[i], name, optimizer, 'WebGL2'));
    const run = got[WEBGL_CASES.length];
    assert.equal(run.backend, 'webgl');
    const close = (x, y) => Math.abs(x - y) <= FT_TOL * Math.abs(y);
    assert.ok(run.gl.length === 2 && run.gl.every((l, i) => close(l, run.cpu[i])), `finetune losses: webgl ${run.gl} vs cpu ${run.cpu}`);
    assert.ok(run.glValid.length > 0 && run.glValid.every((l, i) => close(l, run.cpuValid[i])), `validation: ${run.glValid} vs ${run.cpuValid}`);
    assert.equal(run.sizes[1], run.sizes[0]);
    assert.deepEqual(problems, []);
    await page.close();
  });

test('a cluster fine-tuning rank on WebGL2 computes the CPU rank\'s bucket (loss, scored tokens, gradients within FT_TOL of the largest)',
  { skip: whyGl ?? false, timeout: 300000 }, async () => {
    const { page, problems } = await casePage();
    const r = await page.evaluate(async () => {
      const { createLlmTask } = await import('./cluster/task_llm.js');
      const model = await (await fetch('./lm/llama-q8_0.gguf')).arrayBuffer();
      const opts = { model, text: new TextEncoder().encode('The small river ran past the old mill. '.repeat(8)), rank: 2, alpha: 4,
        targets: 'attn_q,attn_v', seq: 16, seed: 1 };
      const cpu = await createLlmTask(opts);
      const gl = await createLlmTask({ ...opts, backend: 'webgl' });
      try {
        // the initial adapters (B = 0) with every value nudged: A's gradients are then not zero
        const params = cpu.initParams().map((v, i) => v + 0.05 * Math.sin(1.7 * i + 0.3));
        const windows = cpu.indices(0, 0, 1, 2);
        const want = cpu.gradsOf(params, windows);
        const got = await gl.gradsOf(params, windows);
        let worst = 0, scale = 0;
        for (let i = 0; i < want.grads.length; i++) {
          scale = Math.max(scale, Math.abs(want.grads[i]));
          worst = Math.max(worst, Math.abs(got.grads[i] - want.grads[i]));
        }
        return { backends: [gl.backend, gl.fallback, got.backend], slugs: [gl.slug, cpu.slug], loss: [got.loss, want.loss],
          samples: [got.samples, want.samples], worst, scale, n: want.grads.length };
      } finally {
        gl.free();
        cpu.free();
      }
    });
    assert.deepEqual(r.backends, ['webgl', null, 'webgl']);
    assert.equal(r.slugs[0], r.slugs[1], 'the same task identity on both backends');
    assert.equal(r.samples[0], r.samples[1]);
    assert.ok(Math.abs(r.loss[0] - r.loss[1]) <= FT_TOL * Math.abs(r.loss[1]), `loss: webgl ${r.loss[0]} vs cpu ${r.loss[1]}`);
    assert.ok(r.scale > 0 && r.n > 0);
    assert.ok(r.worst <= FT_TOL * r.scale, `gradients differ by ${r.worst} (largest ${r.scale})`);
    assert.deepEqual(problems, []);
    await page.close();
  });
