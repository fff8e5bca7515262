// llm_finetune_webgpu.test.mjs - LoRA fine-tuning on WebGPU under Dawn (npm
// `webgpu`; SwiftShader on CPU machines): web/runtime/llm_finetune_webgpu.js
// over web/pkg/rlx_llm_train_gpu.wasm against the same module's CPU steps
// (tests/common/llm_finetune_case.mjs: 3 steps of two windows, then the
// loss without an update and the pairs read back and written into the C
// object), for half of the cases (Chromium runs the other half:
// tests/browser/llm_finetune_gpu.test.mjs): losses and pairs within FT_TOL;
// every dispatch of the plans on the device (0 host steps); refusals of bad
// windows come from C with the CPU step's messages.  GgufModel.finetune on
// a model loaded with { train: true, backend: 'webgpu' } (the steps on
// WebGPU by default) gives the losses and validation losses of the same
// run on the CPU module within FT_TOL, and an adapter of the same size.
// The cluster's fine-tuning task (web/cluster/task_llm.js) with backend
// 'webgpu' (the gradients plan, LlmFinetuneGpu.grads) on the same device
// (its pipelines mostly compiled by then) in a cohort with a CPU rank
// (cluster_cohort_harness.mjs: protocol.js Ranks on a wire-mode hub) ends 3
// steps with bit-identical adapters on both, and at those adapters (B no
// longer zero) its loss and gradients of a shard equal the CPU task's within
// FT_TOL of the largest.
// Build first: make wasm lm-fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dawnDevice } from '../../tools/dawn_node.mjs';
import { dawnTestFile } from '../common/dawn_gate.mjs';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';
import { LlmFinetuneWebGpu } from '../../web/runtime/llm_finetune_webgpu.js';
import { finetuneAgainstCpu, FT_TOL, FT_SEQ } from '../common/llm_finetune_case.mjs';
import { FT_GPU_CASES } from '../common/lm_names.mjs';
import { trainCohort } from './cluster_cohort_harness.mjs';
import { createTask } from '../../web/cluster/task.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WASM = `${ROOT}web/pkg/rlx_llm_train_gpu.wasm`;
const fixture = (name) => `${ROOT}build/lm/${name}.gguf`;
const CASES = FT_GPU_CASES.filter((_, i) => i % 2 === 0);
const SENTENCE = 'The small river ran past the old mill. ';

const missing = [WASM, ...CASES.map(([name]) => fixture(name))].filter((f) => !existsSync(f));
if (dawnTestFile('llm finetune webgpu', import.meta.url, { missing, make: 'make wasm lm-fixtures', timeout: 900_000 })) {
  const { device } = await dawnDevice();
  const open = (name) => loadGguf(fixture(name), { backend: 'cpu', wasm: WASM, nCtx: 64 });

  for (const [name, optimizer] of CASES) {
    test(`${name}, ${optimizer}: 3 steps on WebGPU give the CPU's losses and pairs within ${FT_TOL}`, async () => {
      const model = await open(name);
      try {
        let hosts = null;
        const r = await finetuneAgainstCpu(model, (mod, ft, seq) => {
          const g = new LlmFinetuneWebGpu(mod, ft, device, seq);
          const compile = g.compile.bind(g);
          g.compile = (n, train) => { // every plan: all of its steps on the device
            const ptr = compile(n, train);
            mod.scoped((t) => {
              const out = t.alloc(12);
              mod.check(mod.call('rlx_session_host_summary', ptr, out));
              hosts = [...(hosts ?? []), Array.from(mod.i32(out, 3))];
            });
            return ptr;
          };
          return g;
        }, optimizer);
        for (let s = 0; s < r.cpu.length; s++) {
          assert.ok(Math.abs(r.gpu[s] - r.cpu[s]) <= FT_TOL * Math.abs(r.cpu[s]), `step ${s}: loss webgpu ${r.gpu[s]} vs cpu ${r.cpu[s]}`);
        }
        assert.ok(r.cpu[2] < r.cpu[0], `the loss goes down (${r.cpu})`);
        assert.ok(Math.abs(r.evalGpu - r.evalCpu) <= FT_TOL * Math.abs(r.evalCpu), `eval: webgpu ${r.evalGpu} vs cpu ${r.evalCpu}`);
        assert.ok(r.pairErr <= FT_TOL, `pairs after 3 steps differ by ${r.pairErr} relative`);
        assert.equal(r.syncErr, 0, 'syncToHost writes the pairs read back');
        assert.ok(r.nPairs >= 6);
        assert.equal(hosts.length, 2, 'a step and a loss compiled');
        for (const [total, host] of hosts) assert.ok(total > 50 && host === 0, `${host} of ${total} steps on the host`);
      } finally {
        model.free();
      }
    });
  }

  test('GgufModel.finetune on WebGPU: the CPU\'s losses and validation losses', async () => {
    const options = { rank: 2, alpha: 4, seq: 16, batch: 2, steps: 3, lr: 1e-2, optimizer: 'sgd', targets: 'attn_q,attn_v', shuffle: false };
    const data = { text: SENTENCE.repeat(8), valid: { text: SENTENCE.repeat(3) } };
    const cpu = await loadGguf(fixture('llama-q8_0'), { train: true, backend: 'cpu', nCtx: 64 });
    const gpu = await loadGguf(fixture('llama-q8_0'), { train: true, backend: 'webgpu', gpu: device, nCtx: 64 });
    try {
      assert.equal(gpu.info.backend, 'webgpu');
      const a = await cpu.finetune(data, options);
      const b = await gpu.finetune(data, options);
      assert.equal(b.steps, 3);
      a.losses.forEach((l, i) => assert.ok(Math.abs(b.losses[i] - l) <= FT_TOL * Math.abs(l), `step ${i + 1}: ${b.losses[i]} vs ${l}`));
      assert.equal(b.validLosses.length, a.validLosses.length);
      a.validLosses.forEach((v, i) => assert.ok(Math.abs(b.validLosses[i].loss - v.loss) <= FT_TOL * Math.abs(v.loss), `validation ${v.step}`));
      assert.ok(a.losses[2] < a.losses[0]);
      assert.equal(b.adapter.length, a.adapter.length);
    } finally {
      cpu.free();
      gpu.free();
    }
  });

  test('a WebGPU rank and a CPU rank fine-tune with bit-identical adapters; its gradients are the CPU\'s', async () => {
    // the shapes of the GgufModel.finetune test above: its pipelines serve
    const opts = { model: readFileSync(fixture('llama-q8_0')), text: new TextEncoder().encode(SENTENCE.repeat(8)), rank: 2, alpha: 4, targets: 'attn_q,attn_v', seq: 16, seed: 1 };
    const cpu = await createTask('llm', opts);
    const gpu = await createTask('llm', { ...opts, backend: 'webgpu', gpu: device });
    try {
      assert.deepEqual([gpu.backend, gpu.fallback, gpu.slug], ['webgpu', null, cpu.slug]);
      const backends = new Set(); // where the cohort's buckets were computed
      for (const t of [cpu, gpu]) {
        const grads = t.grads.bind(t);
        const note = (g) => (backends.add(g.backend), g);
        t.grads = (p, ctx) => { const g = grads(p, ctx); return g instanceof Promise ? g.then(note) : note(g); };
      }
      const r = await trainCohort(null, { tasks: [cpu, gpu], ranks: 2, batch: 2, samples: 3 * 2 * 2, lr: 0.5 });
      assert.equal(r.halted, null);
      assert.equal(r.steps, 3);
      assert.ok(r.sameBytes, `adapters differ across the ranks: ${r.hashes}`);
      assert.deepEqual([...backends].sort(), ['cpu', 'webgpu'], 'each rank computed on its own backend');
      const params = r.cohort.find((x) => x.id === r.leader).params;
      const windows = cpu.indices(3, 0, 2, 2); // 2 windows: the gradients session the cohort compiled
      const want = cpu.gradsOf(params, windows);
      const got = await gpu.gradsOf(params, windows);
      assert.equal(got.backend, 'webgpu');
      assert.equal(got.samples, want.samples);
      assert.ok(Math.abs(got.loss - want.loss) <= FT_TOL * Math.abs(want.loss), `loss: webgpu ${got.loss} vs cpu ${want.loss}`);
      const scale = want.grads.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      assert.ok(scale > 0);
      let worst = 0;
      for (let i = 0; i < want.grads.length; i++) worst = Math.max(worst, Math.abs(got.grads[i] - want.grads[i]));
      assert.ok(worst <= FT_TOL * scale, `gradients differ by ${worst} (largest ${scale})`);
    } finally {
      gpu.free();
      cpu.free();
    }
  });

  test('bad windows are refused with the CPU step\'s messages, before anything runs', async () => {
    const model = await open(CASES[0][0]);
    const m = model.mod;
    const ft = m.scoped((t) => {
      const out = t.alloc(4);
      m.check(m.call('rlx_llm_finetune_new', model.handle, 2, 4, 0, FT_SEQ, 3, 1e-3, 0, 0, out));
      return m.i32(out, 1)[0] >>> 0;
    });
    const g = new LlmFinetuneWebGpu(m, ft, device, FT_SEQ);
    try {
      const ids = new Int32Array(FT_SEQ).fill(1);
      const refused = (re) => (err) => err instanceof RlxError && re.test(err.message);
      await assert.rejects(g.step(ids.subarray(1), ids.subarray(1)), refused(/whole windows of 8 tokens, got 7/));
      await assert.rejects(g.step(ids, ids.subarray(1)), refused(/targets must hold 8 ids/));
      await assert.rejects(g.step(Int32Array.of(1, 2, 3, 4, 5, 6, 7, 1e6), ids), refused(/ids\[7\] = 1000000 is outside the vocabulary/));
      await assert.rejects(g.step(ids, ids, new Float32Array(FT_SEQ).fill(NaN)), refused(/mask\[0\] = nan/));
      assert.equal(g.sessions.size, 0, 'nothing compiled');
      assert.throws(() => g.setLr(-1), refused(/lr must be a finite number >= 0/));
    } finally {
      g.free();
      m.call('rlx_llm_finetune_free', ft);
      model.free();
    }
  });
}
