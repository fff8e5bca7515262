// llm_finetune_webgpu.mjs - LoRA fine-tuning speed on WebGPU in Node (Dawn,
// npm `webgpu`, or the module at $RLX_DAWN_MODULE), through
// web/runtime/llm_finetune_webgpu.js (web/pkg/rlx_llm_train_gpu.wasm: the
// whole step on the device, the loss read back).  The model is
// bench/llm.mjs's SmolLM-135M-shaped llama (bench/llm_models.mjs: 576 wide,
// 12 layers, 9 heads of 64 with 3 KV heads, feed-forward 1536, tied output,
// vocabulary 8192), or --model=FILE.  Rank 8 on attn_q and attn_v, windows
// of 128 tokens, 4 windows a step, AdamW at lr 2e-4: one step on the CPU
// (the same module) and on the GPU from the same start, whose losses must
// agree within 1e-4 (relative; the run stops otherwise), then a warm-up
// step and STEPS timed steps on the GPU; it prints training tokens/s
// (windows x 128 / the median step), the CPU's for its one step, and the
// dispatches of the GPU's step.
//
//   node bench/llm_finetune_webgpu.mjs [--type=q8_0|q4_0|...] [--model=FILE] [--steps=5] [--seq=128] [--batch=4] [--profile]
// --profile: then the GPU time of the step's kernels (timestamp queries).
//   RLX_BENCH_QUICK=1 node bench/llm_finetune_webgpu.mjs   a 256-wide 4-layer model, seq 32, batch 2, 2 steps
// Needs: web/pkg/rlx_llm_train_gpu.wasm; build/make_test_lm unless --model is given.
import path from 'node:path';
import { loadDawnGpu, withDawnEnv } from '../tools/dawn_node.mjs';
import { FINETUNE_PLAN } from '../web/runtime/constants.js';
import { loadGguf } from '../web/runtime/llm.js';
import { LlmFinetuneWebGpu } from '../web/runtime/llm_finetune_webgpu.js';
import { benchModel } from './llm_models.mjs';
import { profileKernels } from './webgpu_profile.mjs';

withDawnEnv(); // Dawn needs the Vulkan driver's environment at process start (CPU machines: SwiftShader)

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v = ''] = a.replace(/^--/, '').split('=');
  return [k, v];
}));
const QUICK = process.env.RLX_BENCH_QUICK === '1';
const TYPE = args.type ?? 'q8_0';
const STEPS = Number(args.steps ?? (QUICK ? 2 : 5));
const SEQ = Number(args.seq ?? (QUICK ? 32 : 128));
const BATCH = Number(args.batch ?? (QUICK ? 2 : 4));
const RANK = 8, ALPHA = 16, LR = 2e-4, TOL = 1e-4;
for (const [k, v] of [['steps', STEPS], ['seq', SEQ], ['batch', BATCH]]) if (!(Number.isInteger(v) && v >= 1)) throw new Error(`--${k} must be an integer >= 1`);

const file = args.model ? path.resolve(args.model) : benchModel(TYPE, { quick: QUICK, label: 'llm_finetune_webgpu bench' });
const gpu = await loadDawnGpu();
const adapter = await gpu.requestAdapter();
if (!adapter) throw new Error('llm_finetune_webgpu bench: no WebGPU adapter (Dawn needs a Vulkan driver)');
const ai = adapter.info ?? {};
const wantTimestamps = args.profile !== undefined && adapter.features.has('timestamp-query');
const device = await adapter.requestDevice({ requiredLimits: { maxBufferSize: adapter.limits.maxBufferSize,
  maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize }, requiredFeatures: wantTimestamps ? ['timestamp-query'] : [] });
const model = await loadGguf(file, { backend: 'cpu', wasm: new URL('../web/pkg/rlx_llm_train_gpu.wasm', import.meta.url), nCtx: SEQ });
const m = model.mod;
const make = () => m.scoped((t) => {
  const out = t.alloc(4);
  m.check(m.call('rlx_llm_finetune_new', model.handle, RANK, ALPHA, t.str('attn_q,attn_v').ptr, SEQ, 3, LR, 1, 0, out));
  return m.i32(out, 1)[0] >>> 0;
});
const ftCpu = make(), ftGpu = make();
const n = SEQ * BATCH, nVocab = model.info.nVocab;
const ids = new Int32Array(n), targets = new Int32Array(n);
for (let i = 0; i < n; i++) ids[i] = (i * 7919 + 13) % nVocab, targets[i] = (i * 104729 + 7) % nVocab;

// One step on the CPU (the module's own)
const tc = performance.now();
const cpuLoss = m.scoped((t) => {
  const loss = t.alloc(4);
  m.check(m.call('rlx_llm_finetune_step', ftCpu, t.i32(ids), t.i32(targets), 0, BATCH, loss));
  return new Float32Array(m.memory.buffer, loss, 1)[0];
});
const cpuSeconds = (performance.now() - tc) / 1000; // includes compiling the CPU plan

const steps = new LlmFinetuneWebGpu(m, ftGpu, device, SEQ);
const t0 = performance.now();
const first = await steps.step(ids, targets); // compiles, uploads the weights, builds the pipelines
const firstSeconds = (performance.now() - t0) / 1000;
const err = Math.abs(first - cpuLoss) / Math.abs(cpuLoss);
console.log(`llm_finetune_webgpu: ${path.basename(file)}, ${model.info.nLayer} layers of ${model.info.nEmbd}, rank ${RANK} on attn_q,attn_v, ` +
  `${BATCH} x ${SEQ} tokens a step; adapter ${ai.vendor ?? '?'} / ${ai.architecture ?? '?'} / ${ai.device ?? '?'}`);
console.log(`  first step: loss ${first.toFixed(6)} on WebGPU, ${cpuLoss.toFixed(6)} on the CPU (relative difference ${err.toExponential(2)}); ` +
  `${firstSeconds.toFixed(2)} s with compiling and uploading`);
if (!(err <= TOL)) {
  console.error(`llm_finetune_webgpu: the first step's loss differs from the CPU's by ${err} (more than ${TOL})`);
  process.exit(1);
}
await steps.step(ids, targets); // warm
const times = [];
for (let s = 0; s < STEPS; s++) {
  const t = performance.now();
  await steps.step(ids, targets);
  times.push((performance.now() - t) / 1000);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)];
console.log(`  WebGPU: ${(n / median).toFixed(1)} training tokens/s (median step ${(median * 1000).toFixed(1)} ms over ${STEPS}); ` +
  `CPU (wasm, one step with its compile): ${(n / cpuSeconds).toFixed(1)} tokens/s`);
const stepSession = await steps.session('step', BATCH, FINETUNE_PLAN.step);
console.log(`  dispatches a step: ${stepSession.dispatchCount}`);
if (args.profile !== undefined) {
  if (!wantTimestamps) console.log('  profile: no timestamp-query feature: no per-kernel times');
  else for (const line of (await profileKernels(stepSession, { runs: 3, label: 'training step' })).lines(25)) console.log(line);
}
steps.free();
m.call('rlx_llm_finetune_free', ftCpu);
m.call('rlx_llm_finetune_free', ftGpu);
model.free();
