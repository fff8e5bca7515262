// llm_llamacpp.mjs - the llama.cpp side of bench/llm.mjs: one greedy
// generation from a GGUF file through node-llama-cpp 3.21.1 (the package
// pinned in tests/llama_ref/, CPU build, one thread or --threads N), run as a process of its
// own per iteration so its peak RSS is its own.  Prints one JSON line:
//   { ids, promptTps, genTps, maxRssBytes, baseRssBytes, llamaCpp, gap? }
// promptTps: prompt tokens over the time from the call to the first
// generated token; genTps: generated tokens over the time from the first
// generated token to the last (llama.cpp's server timings count the same way).
// baseRssBytes: the RSS after llama.cpp's library is loaded, before the model.
// --check also returns gap[i], the logit gap between the top two tokens at
// each step (from the probabilities, so not timed: those cost time); --text T
// adds textIds, llama.cpp's tokens of T (BOS first when the file asks).
// --gpu vulkan runs it on the GPU through the package's prebuilt Vulkan
// build (@node-llama-cpp/linux-x64-vulkan, every layer offloaded);
// RLX_LLAMA_REF names another folder holding the package (node_modules/).
// --follow I,J,.. instead evaluates the prompt and then those tokens (another
// side's greedy ids, teacher-forced) and returns only gap[] after the prompt
// and after each forced token but the last, the ids of --ban I,J,.. left out.
//
//   node bench/llm_llamacpp.mjs FILE.gguf --ids 1,2,3 [--tokens 64] [--ctx 2048] [--check] [--text T] [--threads N]
//   node bench/llm_llamacpp.mjs FILE.gguf --ids 1,2,3 --follow 4,5,6 [--ban 7,8]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REF = process.env.RLX_LLAMA_REF ? path.resolve(process.env.RLX_LLAMA_REF) + path.sep
  : fileURLToPath(new URL('../tests/llama_ref/', import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i < 0 ? dflt : argv[i + 1]; };
const file = argv[0];
const promptIds = opt('--ids', '').split(',').filter(Boolean).map(Number);
const nGen = Number(opt('--tokens', 64)), nCtx = Number(opt('--ctx', 2048)), check = argv.includes('--check');
const gpu = opt('--gpu', false), nThreads = Number(opt('--threads', 1));
if (gpu !== false && gpu !== 'vulkan') {
  console.error(`llm_llamacpp: --gpu must be vulkan, got ${gpu}`);
  process.exit(2);
}
if (!file || !promptIds.length || !(nGen >= 1)) {
  console.error('usage: node bench/llm_llamacpp.mjs FILE.gguf --ids I,J,.. [--tokens 64] [--ctx 2048] [--check]');
  process.exit(2);
}

const entry = createRequire(path.join(REF, 'package.json')).resolve('node-llama-cpp');
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry));
const llama = await getLlama({ gpu, build: 'never', maxThreads: nThreads, logLevel: LlamaLogLevel.error });
if (gpu && llama.gpu !== gpu) throw new Error(`llm_llamacpp: asked for ${gpu}, llama.cpp runs on ${llama.gpu}`);
const baseRssBytes = process.memoryUsage().rss;
const model = await llama.loadModel({ modelPath: file, gpuLayers: gpu ? 'max' : 0, useMmap: true });
const text = opt('--text', null);
const addBos = model.fileInfo.metadata.tokenizer?.ggml?.add_bos_token === true;
const textIds = text == null ? undefined : [...(addBos ? [model.tokens.bos] : []), ...model.tokenize(text, true)];
const context = await model.createContext({ contextSize: nCtx, batchSize: 512, threads: nThreads, sequences: 1 });
const sequence = context.getSequence();
const options = { temperature: 0, yieldEogToken: true, repeatPenalty: false };
const list = (name) => opt(name, '').split(',').filter(Boolean).map(Number);
// The gap between the two most probable tokens not banned, from llama.cpp's probabilities.
function topGap(probabilities, banned = new Set()) {
  const top = [];
  for (const [token, p] of probabilities) {
    if (banned.has(token)) continue;
    top.push([token, p]);
    if (top.length === 2) break;
  }
  return { token: top[0][0], gap: top[1][1] > 0 ? Math.log(top[0][1] / top[1][1]) : null };
}

const follow = list('--follow');
if (follow.length) {
  const banned = new Set(list('--ban'));
  const next = { generateNext: { probabilities: true } };
  const input = [...promptIds.slice(0, -1), [promptIds.at(-1), next], ...follow.slice(0, -1).map((t) => [t, next])];
  const res = await sequence.controlledEvaluate(input);
  const gap = [];
  for (let i = promptIds.length - 1; i < input.length; i++) gap.push(topGap(res[i].next.probabilities, banned).gap);
  console.log(JSON.stringify({ gap }));
  process.exit(0);
}

const ids = [], gap = [];
const t0 = performance.now();
let tFirst = 0, tLast = 0;
const it = check ? sequence.evaluateWithMetadata(promptIds, { probabilities: true }, options)
  : sequence.evaluate(promptIds, options);
for await (const step of it) {
  const t = performance.now();
  if (!ids.length) tFirst = t;
  tLast = t;
  const token = check ? step.token : step;
  ids.push(token);
  if (check) {
    const top = topGap(step.probabilities);
    if (top.token !== token) throw new Error(`greedy token ${token} is not the most likely ${top.token}`);
    gap.push(top.gap);
  }
  if (ids.length === nGen) break;
}
const info = JSON.parse(fs.readFileSync(path.join(REF, 'node_modules/node-llama-cpp/llama/llama.cpp.info.json'), 'utf8'));
const out = {
  ids, promptTps: promptIds.length / ((tFirst - t0) / 1000),
  genTps: ids.length > 1 ? ids.length / ((tLast - tFirst) / 1000) : null,
  maxRssBytes: process.resourceUsage().maxRSS * 1024, baseRssBytes,
  gpuLayers: model.gpuLayers, vramUsedBytes: gpu ? (await llama.getVramState()).used : undefined,
  llamaCpp: `node-llama-cpp 3.21.1, llama.cpp ${info.tag}${gpu ? `, ${gpu} on ${(await llama.getGpuDeviceNames()).join(', ')}` : ''}`, textIds,
};
if (check) out.gap = gap;
sequence.dispose();
await context.dispose();
await model.dispose();
console.log(JSON.stringify(out));
