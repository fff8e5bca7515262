// llm_webgpu.mjs - GGUF language-model speed on WebGPU in Node (Dawn, npm
// `webgpu`, or the module at $RLX_DAWN_MODULE: what the GPU machine carries,
// see /work/shared/gpu/prepare-carry.sh), through web/runtime/llm.js's
// backend 'webgpu' (web/pkg/rlx_llm_gpu.wasm).  The model is bench/llm.mjs's
// SmolLM-135M-shaped llama (576 wide, 12 layers, 9 heads of 64 with 3 KV
// heads, feed-forward 1536, context 2048, tied output, vocabulary 8192; q4_k
// 512 wide with 8 heads), written by build/make_test_lm with the same seeded
// corpus and under the same file name in build/bench/ (a file bench/llm.mjs
// wrote is reused), or a GGUF file given with --model.  It runs a 64-token
// prompt and 64 greedy tokens ROUNDS times after a warm-up round (which
// compiles the pipelines) and prints the medians of prompt tokens/s and
// generation tokens/s (64 over the time from the end of the prompt to the
// 64th token, as bench/llm.mjs counts), then the CPU module's (rlx_llm.wasm)
// greedy tokens from the same prompt: how many of the 64 agree before the
// first difference, and teacher-forced along the WebGPU tokens, at how many
// steps the CPU picks the same token (f32 on both sides: they agree but
// where a top-2 gap is within rounding).
//
//   node bench/llm_webgpu.mjs [--type=q8_0|q4_0|q4_k|...] [--model=FILE] [--rounds=3] [--no-cpu]
//   RLX_BENCH_QUICK=1 node bench/llm_webgpu.mjs   a 256-wide 4-layer model (vocabulary 2048), 1 round
//   node bench/llm_webgpu.mjs --llamacpp  also: llama.cpp on the same GPU (bench/llm_llamacpp.mjs --gpu vulkan,
//                                          node-llama-cpp's prebuilt Vulkan build; RLX_LLAMA_REF: for the GPU machine,
//                                          bench/llamacpp_vulkan_carry.sh packs it), same prompt ids
//   node bench/llm_webgpu.mjs --unfused   the plain step graphs (rms_norm and rope as their own dispatches)
//   node bench/llm_webgpu.mjs --fused     the fused ones (norms in the products, rotations in attention_kv)
//                                          (without either: loadGguf's choice, fused on a hardware adapter)
//   node bench/llm_webgpu.mjs --in-memory the file read into wasm memory first (loadGguf's stream: false), not
//                                          streamed to the GPU's buffers (llm_gpu_stream.js)
//   node bench/llm_webgpu.mjs --load-both also: after the run, the load timed again both ways (pipelines cached;
//                                          in memory only where the file fits the module's budget)
//   node bench/llm_webgpu.mjs --profile   also: where a decoded token's time goes (the 1-token step run
//                                          64 times with and without the logits' readback; GPU time per
//                                          kernel from timestamps where the device has 'timestamp-query')
// Needs: web/pkg/rlx_llm_gpu.wasm and rlx_llm.wasm; build/make_test_lm unless --model is given.
// Only node and the Dawn module: no npm packages, no browser.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadDawnGpu, withDawnEnv } from '../tools/dawn_node.mjs';
import { loadGguf } from '../web/runtime/llm.js';
import { benchModel, syllableWords } from './llm_models.mjs';
import { profileKernels } from './webgpu_profile.mjs';

withDawnEnv(); // Dawn needs the Vulkan driver's environment at process start (CPU machines: SwiftShader)

const REPO = fileURLToPath(new URL('../', import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v = ''] = a.replace(/^--/, '').split('=');
  return [k, v];
}));
const QUICK = process.env.RLX_BENCH_QUICK === '1';
const TYPE = args.type ?? 'q8_0';
const ROUNDS = Number(args.rounds ?? (QUICK ? 1 : 3));
const N_PROMPT = 64, N_GEN = 64;
if (!(ROUNDS >= 1)) throw new Error('--rounds must be >= 1');

function modelFile() {
  return args.model ? path.resolve(args.model) : benchModel(TYPE, { quick: QUICK, label: 'llm_webgpu bench' });
}

// Where a decoded token's time goes: the 1-token step (the last step size)
// run alone from position 128, 64 times with the logits
// read back each time (what generation does) and 64 times submitted without
// a readback then one read (the GPU's own rate), and the GPU time per kernel.
async function profile(model) {
  const steps = model.gpu;
  const k = steps.sizes.length - 1;
  const s = await steps.step('profile', k);
  const pos = 128;
  const time = async (read) => {
    const t = performance.now();
    for (let i = 0; i < 64; i++) await steps.runStep('profile', k, [5 + i], pos + i, read || i === 63);
    return (performance.now() - t) / 64;
  };
  await time(true);
  const withRead = await time(true), noRead = await time(false);
  // the host's share: 64 steps encoded and submitted, then the wait for the GPU to finish them
  await device.queue.onSubmittedWorkDone();
  const t0 = performance.now();
  for (let i = 0; i < 64; i++) await s.run({ pos: Int32Array.of(pos + i) }, { read: false });
  const host = (performance.now() - t0) / 64;
  await device.queue.onSubmittedWorkDone();
  const drained = (performance.now() - t0) / 64;
  console.log(`  profile: 1-token step, ${s.dispatchCount} dispatches, ${s.pipelineCount} pipelines: ${withRead.toFixed(3)} ms per token ` +
    `with the logits read back each time, ${noRead.toFixed(3)} ms submitted back to back ` +
    `(host encoding and submitting ${host.toFixed(3)} ms per token, all done after ${drained.toFixed(3)} ms per token)`);
  if (!device.features.has('timestamp-query')) return console.log('  profile: no timestamp-query feature: no per-kernel times');
  for (const line of (await profileKernels(s, { runs: 5, label: '1-token step' })).lines(12)) console.log(line);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const argmax = (v) => { let k = 0; for (let i = 1; i < v.length; i++) if (v[i] > v[k]) k = i; return k; };

const file = modelFile();
const gpu = await loadDawnGpu();
const adapter = await gpu.requestAdapter();
if (!adapter) throw new Error('llm_webgpu bench: no WebGPU adapter (Dawn needs a Vulkan driver)');
const ai = adapter.info ?? {};
const wantTimestamps = args.profile !== undefined && adapter.features.has('timestamp-query');
const device = await adapter.requestDevice({ requiredLimits: { maxBufferSize: adapter.limits.maxBufferSize,
  maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize }, requiredFeatures: wantTimestamps ? ['timestamp-query'] : [] });
const t0 = performance.now();
const model = await loadGguf(file, { backend: 'webgpu', gpu: device, stream: args['in-memory'] === undefined });
if (args.unfused !== undefined || args.fused !== undefined) { // the warm step dropped, the steps compiled again
  model.gpu.free();
  model.gpu.fuse = args.fused !== undefined;
}
const loadSeconds = (performance.now() - t0) / 1000;
const info = model.info;
console.log(`llm_webgpu bench: ${path.relative(REPO, file)}: ${info.arch}, ${info.nLayer} layers, ${info.nEmbd} wide, vocabulary ${info.nVocab}, ` +
  `${info.weightTypes}; adapter ${ai.vendor ?? '?'} / ${ai.architecture ?? '?'} / ${ai.device ?? '?'}${info.software ? ` (${info.software})` : ''}; ` +
  `loaded in ${loadSeconds.toFixed(2)} s (${info.streamed ? 'streamed' : 'in memory'}, ${(info.fileBytes / 1e9).toFixed(2)} GB; ` +
  `module memory ${(model.mod.memory.buffer.byteLength / 2 ** 20).toFixed(0)} MiB)`);

// A 64-token prompt: the corpus's words, tokenized by the model.
const prompt = model.tokenize(syllableWords(777, 200).join(' ')).slice(0, N_PROMPT);
if (prompt.length !== N_PROMPT) throw new Error(`llm_webgpu bench: the prompt has ${prompt.length} tokens, not ${N_PROMPT}`);
const rounds = [];
let ids = null;
for (let r = 0; r <= ROUNDS; r++) { // round 0 warms up (pipelines of the 64-token step)
  const res = await model.generate(prompt, { maxTokens: N_GEN, temperature: 0 });
  if (res.ids.length !== N_GEN) throw new Error(`llm_webgpu bench: ${res.ids.length} tokens generated (${res.stoppedBy}), not ${N_GEN}`);
  if (ids && res.ids.join() !== ids.join()) throw new Error('llm_webgpu bench: greedy runs differ between rounds');
  ids = res.ids;
  if (r > 0) rounds.push({ prompt: res.stats.promptTokensPerSecond, gen: res.stats.generateTokensPerSecond });
  process.stdout.write(`  round ${r}${r ? '' : ' (warm-up)'}: prompt ${res.stats.promptTokensPerSecond.toFixed(1)} tokens/s, ` +
    `generation ${res.stats.generateTokensPerSecond.toFixed(1)} tokens/s\n`);
}
if (args.profile !== undefined) await profile(model);
const result = { file: path.relative(REPO, file), type: args.model ? info.weightTypes : TYPE, fused: model.gpu.fuse, adapter: `${ai.vendor ?? ''} ${ai.architecture ?? ''} ${ai.device ?? ''}`.trim(),
  software: info.software ?? null, rounds: ROUNDS, promptTokensPerSecond: median(rounds.map((x) => x.prompt)),
  generateTokensPerSecond: median(rounds.map((x) => x.gen)), loadSeconds, ids };
model.free();
if (args['load-both'] !== undefined) {
  for (const stream of [true, false]) {
    const t = performance.now();
    const m = await loadGguf(file, { backend: 'webgpu', gpu: device, stream }).catch((err) => err);
    const s = (performance.now() - t) / 1000;
    console.log(`  load ${stream ? 'streamed' : 'in memory'}: ${m instanceof Error ? m.message.slice(0, 160) : `${s.toFixed(2)} s`}`);
    if (!(m instanceof Error)) m.free();
  }
}

if (args['no-cpu'] === undefined) {
  const cpu = await loadGguf(file, { backend: 'cpu', simd: 'simd128' });
  const free = await cpu.generate(prompt, { maxTokens: N_GEN, temperature: 0 });
  let same = 0;
  while (same < N_GEN && free.ids[same] === ids[same]) same++;
  let forced = 0;
  let logits = cpu.logits(prompt);
  for (let i = 0; i < N_GEN; i++) {
    if (argmax(logits) === ids[i]) forced++;
    if (i + 1 < N_GEN) logits = cpu.eval([ids[i]]);
  }
  cpu.free();
  Object.assign(result, { cpuAgreeBeforeFirstDifference: same, cpuForcedAgree: forced, cpuIds: free.ids });
}
if (args.llamacpp !== undefined) {
  const runs = [];
  for (let r = 0; r < ROUNDS; r++) {
    const out = execFileSync(process.execPath, [path.join(REPO, 'bench/llm_llamacpp.mjs'), file, '--ids', prompt.join(','),
      '--tokens', String(N_GEN), '--gpu', 'vulkan'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    runs.push(JSON.parse(out.trim().split('\n').at(-1)));
  }
  let same = 0;
  while (same < N_GEN && runs[0].ids[same] === ids[same]) same++;
  const lp = median(runs.map((x) => x.promptTps)), lg = median(runs.map((x) => x.genTps));
  Object.assign(result, { llamaCpp: runs[0].llamaCpp, llamaCppPromptTokensPerSecond: lp, llamaCppGenerateTokensPerSecond: lg,
    llamaCppAgreeBeforeFirstDifference: same });
  console.log(`llm_webgpu bench: ${runs[0].llamaCpp}: prompt ${lp.toFixed(1)} tokens/s, generation ${lg.toFixed(1)} tokens/s ` +
    `(median of ${ROUNDS}); ours / llama.cpp ${(result.promptTokensPerSecond / lp).toFixed(2)}x / ${(result.generateTokensPerSecond / lg).toFixed(2)}x; ` +
    `greedy ids the same for the first ${same} of ${N_GEN} (llama.cpp quantizes activations to 8 bits in its dots)`);
}
console.log(`llm_webgpu bench: WebGPU (${result.fused ? 'fused' : 'unfused'} steps) prompt ${result.promptTokensPerSecond.toFixed(1)} tokens/s, generation ` +
  `${result.generateTokensPerSecond.toFixed(1)} tokens/s (median of ${ROUNDS})` +
  (result.cpuForcedAgree === undefined ? '' : `; CPU greedy: ${result.cpuAgreeBeforeFirstDifference}/${N_GEN} the same before the ` +
    `first difference, ${result.cpuForcedAgree}/${N_GEN} teacher-forced`));
console.log(JSON.stringify({ ...result, ids: undefined, cpuIds: undefined }));
if (result.cpuForcedAgree !== undefined && result.cpuForcedAgree < N_GEN * 0.9) {
  console.error(`llm_webgpu bench: the CPU picks the WebGPU token at only ${result.cpuForcedAgree} of ${N_GEN} steps`);
  process.exit(1);
}
process.exit(0);
