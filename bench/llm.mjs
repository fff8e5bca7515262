// llm.mjs - `make bench-llm` (part of `make bench`): GGUF language-model
// speed, ours next to llama.cpp, in the browser and natively, from the same
// files.  A SmolLM-135M-shaped llama (576 wide, 12 layers, 9 heads of 64
// with 3 KV heads, feed-forward 1536, context 2048, output tied to the
// embedding; vocabulary 8192 instead of 49152) is written by our writer
// (build/make_test_lm, seeded random weights; bench/llm_models.mjs) in q8_0 and q4_0 into
// build/bench/; q4_k needs rows that are multiples of 256, so its variant is
// 512 wide with 8 heads of 64 (2 KV heads).  The tokenizer is trained on a
// seeded synthetic corpus (syllable words, written next to the models) large
// enough to give the 8192 tokens.  For each file, five sides run the same
// 64-token prompt and generate 64 tokens greedily:
//   ours relaxed  web/runtime/llm.js over web/pkg/rlx_llm_relaxed.wasm (relaxed
//               SIMD: what Chromium loads) in headless Chromium
//   ours simd128  the same over web/pkg/rlx_llm.wasm (the SIMD128 build), same page
//   wllama      @wllama/wllama 3.13.0 (llama.cpp in wasm), one thread, same page
//   ours native build/rlx generate --prompt-ids ... --ids (one process per run)
//   llama.cpp   node-llama-cpp 3.21.1 (tests/llama_ref's pinned package), CPU,
//               one thread (bench/llm_llamacpp.mjs, one process per run)
// Rounds interleave the five (the order rotating), and the medians of prompt
// tokens/s and generation tokens/s are printed with the peak memory (the
// wasm memory's size in the browser; the process's peak RSS natively), the
// browser sides' CPU time per run (prompt and generation: the renderers'
// CPU time from CDP SystemInfo.getProcessInfo, robust to other work on the
// machine; relaxed/simd128 by CPU is the ratio of those) and
// the ratios ours / wllama (each build) and ours / llama.cpp.  Generation tokens/s is
// 64 over the time from the end of the prompt to the 64th token (63
// single-token steps and the sampling), as llama.cpp's server timings count.
//
// Correctness: every side's greedy ids are printed.  The check is
// teacher-forced, since on these random 12-layer models 8-bit rounding alone
// moves logits by several units (rounding only the weights from f32 to q8_0,
// ours against ours, changes 9 of 64 greedy steps, by up to 7 logits) and
// free-running sequences part early: ours is run along the peer's 64 greedy
// tokens (ours native along llama.cpp's, each wasm build along wllama's) and must
// pick the peer's token at no fewer than MIN_AGREE of the steps, and where
// it picks another, the logits must differ by at most MAX_SHIFT there:
// ours' top-2 margin (how far ours' logits must move at least for the
// peer's token to win) plus llama.cpp's top-2 gap along the same tokens
// (native llama.cpp's standing in for wllama's, whose logits the bench
// cannot read).  Otherwise the bench exits 1 without ratios.  Seen on the
// full-size files: correct sides agree at 49-59 of 64 steps, shifts up to
// 8.3; ours given a wrong prompt (its last token changed, or BOS dropped)
// agrees at 9-25 steps with shifts of 15-50.
// wllama's completion takes text, not ids: it gets a text of syllable words
// that our tokenizer and llama.cpp's both turn into the prompt's ids, and
// its prompt token count is checked.  It also turns its result into JSON,
// which throws on invalid UTF-8, as a lone byte token >= 0x80 (which these
// random models emit) makes: those 128 tokens are banned from its sampling
// by a logit bias (and from ours' greedy choice where ours follows it).
//
//   node bench/llm.mjs [--types=q8_0,q4_0,q4_k] [--rounds=5] [--out=build/bench/llm.json] [--xq8] [--threads=N]
//                      --xq8: ours (wasm and native) with 8-bit activations
//                      --threads=N: every side on N threads (default 1): ours in
//                      wasm through its threaded build (the page is cross-origin
//                      isolated), wllama with n_threads N, ours native with
//                      RLX_THREADS=N, llama.cpp with N threads
//   RLX_BENCH_QUICK=1 node bench/llm.mjs     small settings (about a minute): a
//                      256-wide 4-layer model (vocabulary 2048, context 512),
//                      q8_0 and q4_k, 2 rounds
// Needs: make build/rlx build/make_test_lm web/pkg/rlx_llm.wasm web/pkg/rlx_llm_relaxed.wasm, Debian's
// chromium, npm ci (playwright-core, @wllama/wllama); node-llama-cpp is
// installed into tests/llama_ref/node_modules on first use, as
// tests/llama_ref/regenerate.sh does.  Nothing is fetched at run time: the
// page is served from 127.0.0.1 and every other request is aborted.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serveIsolated } from './isolated_server.mjs';
import { MODULE_FILES } from '../web/runtime/simd.js';
import { BENCH_DIR, MODEL_WRITER, benchModel, benchShape, syllableWords } from './llm_models.mjs';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v = ''] = a.replace(/^--/, '').split('=');
  return [k, v];
}));
const QUICK = process.env.RLX_BENCH_QUICK === '1';
const TYPES = (args.types ?? (QUICK ? 'q8_0,q4_k' : 'q8_0,q4_0,q4_k')).split(',');
const ROUNDS = Number(args.rounds ?? (QUICK ? 2 : 5));
const N_PROMPT = 64, N_GEN = 64;
const OUT = args.out ?? 'build/bench/llm.json';
const THREADS = Number(args.threads ?? 1);
// --xq8: every side of ours rounds the input of its quantized products to 8
// bits first (loadGguf's xq8, rlx generate --xq8), as llama.cpp does
const XQ8 = 'xq8' in args;
const DIR = BENCH_DIR;
const WRITER = MODEL_WRITER;
// Our CLI and wasm modules are copied here first, so that a rebuild during
// the run (make in another shell) cannot mix two builds in one table.
const RLX = path.join(DIR, 'llm-rlx');
// ours' sides: build -> its file name in web/pkg (relaxed first: what Chromium loads)
// (more than one thread: its threaded builds)
const LLM_WASM = Object.fromEntries(['relaxed', 'simd128'].map((b) =>
  [b, path.basename(fileURLToPath(MODULE_FILES[THREADS > 1 ? 'llmThreads' : 'llm'][b]))]));
const OURS = Object.keys(LLM_WASM).map((b) => `ours ${b}`);
const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run'];
const TIME = '/usr/bin/time'; // GNU time: our CLI's peak RSS (null without it)
const MAX_SHIFT = 12;         // logits; see the header
const MIN_AGREE = 0.6;        // of the forced steps
const LLAMA_REF = path.join(REPO, 'tests/llama_ref');
// The byte tokens <0x80>..<0xFF>: make_test_lm's llama vocabulary starts
// <unk>, <s>, </s>, <0x00>, ... (checked below by tokenizing an 'é').
const BAN = Array.from({ length: 128 }, (_, i) => 3 + 0x80 + i);

if (!(ROUNDS >= 1)) throw new Error('--rounds must be >= 1');
if (!(Number.isInteger(THREADS) && THREADS >= 1 && THREADS <= 64)) throw new Error('--threads must be an integer from 1 to 64');
for (const t of TYPES) if (!/^(f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k)$/.test(t)) throw new Error(`unknown type ${t}`);
for (const need of [path.join(REPO, 'build/rlx'), WRITER, ...Object.values(LLM_WASM).map((f) => path.join(REPO, 'web/pkg', f)), CHROMIUM,
  path.join(REPO, 'node_modules/@wllama/wllama/esm/wasm/wllama.wasm')]) {
  if (!fs.existsSync(need)) throw new Error(`llm bench: missing ${need} (make build/rlx build/make_test_lm wasm; npm ci)`);
}

// ---- setup: llama.cpp's package, the corpus, the models, the prompt -------------------
// node-llama-cpp as tests/llama_ref/regenerate.sh installs it: its lock, the
// linux-x64 CPU build only, no install scripts (nothing downloaded later).
if (!fs.existsSync(path.join(LLAMA_REF, 'node_modules/node-llama-cpp/package.json')) ||
    !fs.existsSync(path.join(LLAMA_REF, 'node_modules/@node-llama-cpp/linux-x64/package.json'))) {
  console.log('llm bench: installing node-llama-cpp 3.21.1 (CPU build) into tests/llama_ref/node_modules');
  execFileSync('npm', ['ci', '--omit=optional', '--ignore-scripts', '--no-audit', '--no-fund'],
    { cwd: LLAMA_REF, stdio: 'inherit', env: { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' } });
}

fs.mkdirSync(DIR, { recursive: true });
fs.copyFileSync(path.join(REPO, 'build/rlx'), RLX);
fs.chmodSync(RLX, 0o755);
for (const f of Object.values(LLM_WASM)) fs.copyFileSync(path.join(REPO, 'web/pkg', f), path.join(DIR, `llm-${f}`));
function writeModel(type) {
  return { type, file: benchModel(type, { quick: QUICK }), shape: benchShape(type, QUICK) };
}

// A text of words whose tokens (with BOS) are exactly N_PROMPT ids.
function promptFor(file) {
  const pool = syllableWords(777, 4000);
  for (let start = 0; start < pool.length - 80; start += 7) {
    const texts = [];
    for (let n = 10; n <= 64; n++) texts.push(pool.slice(start, start + n).join(' '));
    const out = execFileSync(RLX, ['tokenize', '--model', file, ...texts.flatMap((t) => ['--text', t])], { encoding: 'utf8' });
    const ids = out.trim().split('\n').map((l) => JSON.parse(l));
    const i = ids.findIndex((x) => x.length === N_PROMPT);
    if (i < 0) continue;
    const e = JSON.parse(execFileSync(RLX, ['tokenize', '--model', file, '--no-bos', '--text', '\u00e9'], { encoding: 'utf8' }));
    if (e.at(-2) !== 3 + 0xc3 || e.at(-1) !== 3 + 0xa9) throw new Error(`llm bench: byte tokens not at 3 + byte: 'é' gives ${e}`);
    return { text: texts[i], ids: ids[i] };
  }
  throw new Error(`llm bench: no text of ${N_PROMPT} tokens found for ${file}`);
}

// ---- the native sides ---------------------------------------------------------------
function run(cmd, argv) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RLX_THREADS: String(THREADS) } });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve({ out, err }) : reject(new Error(`${cmd} ${argv.slice(0, 3).join(' ')} ...: exit ${code}\n${err.slice(-2000)}`))));
  });
}

async function oursNative(m, prompt) {
  const gen = [RLX, 'generate', '--model', m.file, '--prompt-ids', prompt.ids.join(','), '--max-tokens', String(N_GEN),
    '--ctx', String(m.shape['n-ctx']), '--ids', ...(XQ8 ? ['--xq8'] : [])];
  const timed = fs.existsSync(TIME);
  const { out, err } = await run(timed ? TIME : gen[0], timed ? ['-f', 'rlx-maxrss-kb %M', ...gen] : gen.slice(1));
  const speed = err.match(/prompt: (\d+) tokens, ([\d.]+) tokens\/s; generated: (\d+) tokens, ([\d.]+) tokens\/s/);
  if (!speed) throw new Error(`rlx generate: no speed line in ${err}`);
  const rss = err.match(/rlx-maxrss-kb (\d+)/);
  const ids = JSON.parse(out.trim().split('\n').at(-1)).ids;
  return { ids, promptTps: Number(speed[2]), genTps: Number(speed[4]), memoryBytes: rss ? Number(rss[1]) * 1024 : null };
}

async function llamaCpp(m, prompt, extra = []) {
  const { out } = await run(process.execPath, [path.join(REPO, 'bench/llm_llamacpp.mjs'), m.file, '--ids', prompt.ids.join(','),
    '--tokens', String(N_GEN), '--ctx', String(m.shape['n-ctx']), '--threads', String(THREADS), ...extra]);
  const r = JSON.parse(out.trim().split('\n').at(-1));
  return { ...r, memoryBytes: r.maxRssBytes };
}

async function oursNativeForced(m, prompt, follow) {
  const { out } = await run(RLX, ['next-tokens', '--model', m.file, '--ids', prompt.ids.join(','), '--follow', follow.slice(0, -1).join(','),
    ...(XQ8 ? ['--xq8'] : [])]);
  return out.trim().split('\n').map((l) => l.split(' ').map(Number));
}

// Ours teacher-forced along the peer's greedy ids, llama.cpp's gaps along them: see the header.
function judge(forced, peerIds, refGap) {
  let agree = 0;
  const shifts = [];
  peerIds.forEach((id, i) => {
    const [best, , margin] = forced[i];
    if (best === id) agree++;
    else shifts.push({ step: i, ours: best, peer: id, shift: margin + (refGap[i] ?? 0) });
  });
  const worst = shifts.reduce((a, s) => Math.max(a, s.shift), 0);
  const ok = agree >= MIN_AGREE * peerIds.length && worst <= MAX_SHIFT;
  return { ok, agree, steps: peerIds.length, worstShift: worst, disagree: shifts };
}
const prefix = (a, b) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };

// ---- the browser side ---------------------------------------------------------------
const median = (v) => {
  const s = v.filter((x) => x != null).sort((a, b) => a - b), n = s.length;
  return !n ? null : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const mib = (b) => (b == null ? 'n/a' : `${(b / 2 ** 20).toFixed(0)} MiB`);

const t0 = Date.now();
const git = (...a) => { try { return execFileSync('git', a, { cwd: REPO, encoding: 'utf8' }).trim(); } catch { return null; } };
const build = `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'src', 'include', 'web/runtime') ? ' + uncommitted changes in src/include/web' : ''}`;
const models = TYPES.map(writeModel);
for (const m of models) m.prompt = promptFor(m.file);
// The page, web/, wllama and the models on 127.0.0.1, cross-origin isolated (wllama's page must be).
const server = await serveIsolated({ pages: { '/bench.html': 'bench/llm_page.html' },
  dirs: ['web/', 'node_modules/@wllama/wllama/esm/', 'build/bench/'] });
const { origin } = server;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
const results = [];
let failed = false;
try {
  const context = await browser.newContext();
  await context.route('**/*', (route) => (route.request().url().startsWith(origin) ? route.continue() : route.abort()));
  const page = await context.newPage();
  // The renderers' CPU time (s, 10 ms steps): a browser side's cost that other work on the machine does not inflate.
  const cdp = await browser.newBrowserCDPSession();
  const rendererCpu = async () => (await cdp.send('SystemInfo.getProcessInfo')).processInfo
    .filter((p) => p.type === 'renderer').reduce((a, p) => a + p.cpuTime, 0);
  const withCpu = async (run) => {
    const c = await rendererCpu(), r = await run();
    return { ...r, cpuS: (await rendererCpu()) - c };
  };
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  await page.goto(`${origin}/bench.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 }).catch(() => {
    throw new Error(`llm bench: the page did not load: ${problems.join('; ')}`);
  });
  console.log(`llm bench: ${TYPES.join(', ')}; prompt ${N_PROMPT} tokens, ${N_GEN} generated (greedy), ${ROUNDS} rounds ` +
    `interleaved; chromium ${browser.version()}; ${os.cpus().length} cores (${os.cpus()[0]?.model}); load ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}; ` +
    `tree ${build}${XQ8 ? '; ours with xq8 (8-bit activations)' : ''}; every side on ${THREADS} thread(s)`);

  for (const m of models) {
    const url = `/${path.relative(REPO, m.file)}`;
    const wasmUrls = Object.fromEntries(Object.entries(LLM_WASM).map(([b, f]) => [b, `/${path.relative(REPO, path.join(DIR, `llm-${f}`))}`]));
    const setup = await page.evaluate(([u, n, w, x, t]) => window.setup(u, n, w, x, t), [url, m.shape['n-ctx'], wasmUrls, XQ8, THREADS]);
    if (setup.wllama.threads !== THREADS) throw new Error(`wllama runs ${setup.wllama.threads} threads, not ${THREADS}`);
    for (const b of Object.keys(LLM_WASM)) {
      if (setup.ours[b].info.threads !== THREADS) throw new Error(`ours ${b}: ${setup.ours[b].info.threads} threads (${setup.ours[b].info.threadsWhy})`);
      if (setup.ours[b].info.simd !== b) throw new Error(`ours ${b}: the page loaded the ${setup.ours[b].info.simd} build`);
      if (setup.ours[b].info.xq8 !== XQ8) throw new Error(`ours ${b}: xq8 is ${setup.ours[b].info.xq8}`);
    }
    const s = setup.ours.simd128.info;
    console.log(`\n${m.type}: ${path.relative(REPO, m.file)}: ${s.nEmbd} wide, ${s.nLayer} layers, ${s.nHead}/${s.nHeadKv} heads of ${s.headDim}, ` +
      `ff ${s.nFf}, vocabulary ${s.nVocab}, context ${s.nCtx}, ${(s.nParams / 1e6).toFixed(1)}M weights (${s.weightTypes}); ` +
      `wllama's llama.cpp ${setup.wllama.libllama}`);

    // Correctness (untimed; also the warm-up of every side).
    const ref = await llamaCpp(m, m.prompt, ['--check', '--text', m.prompt.text]);
    if (ref.textIds.join() !== m.prompt.ids.join()) throw new Error(`llama.cpp tokenizes the prompt text to other ids: ${ref.textIds}`);
    const wl = await page.evaluate(([p, n, b]) => window.run('wllama', p, n, b, true), [m.prompt, N_GEN, BAN]);
    if (wl.promptN !== N_PROMPT || wl.ids.length !== N_GEN) throw new Error(`wllama: prompt ${wl.promptN} tokens, ${wl.ids.length} generated`);
    const nativeCheck = judge(await oursNativeForced(m, m.prompt, ref.ids), ref.ids, ref.gap);
    const refAlongWllama = await llamaCpp(m, m.prompt, ['--follow', wl.ids.join(','), '--ban', BAN.join(',')]);
    const wasmChecks = {};
    for (const b of Object.keys(LLM_WASM)) {
      wasmChecks[`ours ${b} / wllama`] = judge(await page.evaluate(([w, p, f, x]) => window.forced(w, p, f.slice(0, -1), x),
        [b, m.prompt.ids, wl.ids, BAN]), wl.ids, refAlongWllama.gap);
    }

    // Timed rounds, the five sides in a rotating order.
    const sides = {
      ...Object.fromEntries(Object.keys(LLM_WASM).map((b) => [`ours ${b}`,
        () => withCpu(() => page.evaluate(([w, p, n]) => window.run(w, p, n), [b, m.prompt, N_GEN]))])),
      wllama: () => withCpu(() => page.evaluate(([p, n, b]) => window.run('wllama', p, n, b), [m.prompt, N_GEN, BAN])),
      'ours native': () => oursNative(m, m.prompt),
      'llama.cpp': () => llamaCpp(m, m.prompt),
    };
    const names = Object.keys(sides), runs = Object.fromEntries(names.map((n) => [n, []]));
    for (const n of OURS) await sides[n](); // their warm-up (the others had theirs above)
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + r) % names.length];
        runs[name].push(await sides[name]());
      }
    }
    const mem = await page.evaluate(() => window.memory());
    const ids = { ...Object.fromEntries(OURS.map((n) => [n, runs[n][0].ids])), wllama: wl.ids, 'ours native': runs['ours native'][0].ids,
      'llama.cpp': ref.ids };
    for (const n of [...OURS, 'ours native', 'llama.cpp']) {
      if (runs[n].some((x) => x.ids.join() !== ids[n].join())) throw new Error(`${n}: greedy ids differ between runs`);
      if (ids[n].length !== N_GEN) throw new Error(`${n}: ${ids[n].length} tokens generated, not ${N_GEN} (an end-of-generation token?)`);
    }
    if (runs.wllama.some((x) => x.promptN !== N_PROMPT || x.predictedN !== N_GEN || x.cacheN)) throw new Error('wllama: a run did not take the whole prompt or make all the tokens');

    const row = { type: m.type, file: path.relative(REPO, m.file), shape: m.shape, prompt: m.prompt, info: s, wllama: setup.wllama,
      llamaCpp: ref.llamaCpp, sides: {}, ids,
      checks: { 'ours native / llama.cpp': nativeCheck, ...wasmChecks } };
    const wasmMemory = (n) => (n === 'wllama' ? mem.wllama : mem[n.replace(/^ours /, '')]);
    for (const n of names) {
      row.sides[n] = { promptTps: median(runs[n].map((x) => x.promptTps)), genTps: median(runs[n].map((x) => x.genTps)),
        promptTpsAll: runs[n].map((x) => x.promptTps), genTpsAll: runs[n].map((x) => x.genTps),
        cpuS: median(runs[n].map((x) => x.cpuS)),
        memoryBytes: n === 'wllama' || OURS.includes(n) ? wasmMemory(n) : Math.max(...runs[n].map((x) => x.memoryBytes ?? 0)) || null };
    }
    row.sides['llama.cpp'].baseRssBytes = median(runs['llama.cpp'].map((x) => x.baseRssBytes));
    results.push(row);

    console.log(`${'side'.padEnd(13)} ${'prompt tok/s'.padStart(13)} ${'gen tok/s'.padStart(10)} ${'CPU s/run'.padStart(10)} ${'peak memory'.padStart(12)}`);
    for (const n of names) {
      const x = row.sides[n];
      console.log(`${n.padEnd(13)} ${x.promptTps.toFixed(1).padStart(13)} ${x.genTps.toFixed(1).padStart(10)} ` +
        `${(x.cpuS == null ? '-' : x.cpuS.toFixed(2)).padStart(10)} ${mib(x.memoryBytes).padStart(12)}` +
        `${n === 'llama.cpp' ? `  (node process; ${mib(x.baseRssBytes)} before the model)` : n.startsWith('ours n') ? '  (process RSS)' : '  (wasm memory)'}`);
    }
    for (const n of names) console.log(`  ids ${n.padEnd(13)} ${JSON.stringify(ids[n])}`);
    console.log(`  free-running agreement: ours native / llama.cpp first ${prefix(ids['ours native'], ids['llama.cpp'])} tokens, ` +
      `${OURS.map((o) => `${o} / wllama ${prefix(ids[o], ids.wllama)}, ${o} / ours native ${prefix(ids[o], ids['ours native'])}`).join(', ')}, ` +
      `ours relaxed / ours simd128 ${prefix(ids['ours relaxed'], ids['ours simd128'])}, wllama / llama.cpp ${prefix(ids.wllama, ids['llama.cpp'])}`);
    for (const [pair, c] of Object.entries(row.checks)) {
      console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${pair}: teacher-forced along the peer's tokens, ours picks the peer's token at ${c.agree}/${c.steps} steps ` +
        `(needs ${Math.ceil(MIN_AGREE * c.steps)}); largest logit shift where they differ ${c.worstShift.toFixed(2)} (at most ${MAX_SHIFT})`);
      if (!c.ok) failed = true;
    }
  }
  await page.evaluate(() => window.teardown());
  if (problems.length) console.log(`page problems: ${problems.join('; ')}`);

  if (failed) {
    console.error('\nllm bench: FAILED: ours and the peer disagree beyond rounding (above): no ratios reported');
    process.exitCode = 1;
  } else {
    const pairs = [['ours relaxed', 'wllama'], ['ours simd128', 'wllama'], ['ours relaxed', 'ours simd128'], ['ours native', 'llama.cpp']];
    const short = (n) => n.replace(/^ours /, '');
    console.log(`\n${'type'.padEnd(6)} ${pairs.map(([a, b]) => `${`${short(a)}/${short(b)} prompt`.padStart(22)} ${'gen'.padStart(6)}`).join(' ')}` +
      ` ${'relaxed/simd128 by CPU'.padStart(23)}`);
    for (const row of results) {
      const s = row.sides, r = (a, b) => ({ prompt: s[a].promptTps / s[b].promptTps, gen: s[a].genTps / s[b].genTps });
      row.ratios = { wasm: r('ours relaxed', 'wllama'), wasmSimd128: r('ours simd128', 'wllama'),
        relaxedOverSimd128: { ...r('ours relaxed', 'ours simd128'), cpu: s['ours simd128'].cpuS / s['ours relaxed'].cpuS },
        native: r('ours native', 'llama.cpp') };
      console.log(`${row.type.padEnd(6)} ${pairs.map(([a, b]) => r(a, b)).map((x) => `${`${x.prompt.toFixed(2)}x`.padStart(22)} ${`${x.gen.toFixed(2)}x`.padStart(6)}`).join(' ')}` +
        ` ${`${row.ratios.relaxedOverSimd128.cpu.toFixed(2)}x`.padStart(23)}`);
    }
  }
  fs.mkdirSync(path.dirname(path.resolve(REPO, OUT)), { recursive: true });
  fs.writeFileSync(path.resolve(REPO, OUT), JSON.stringify({ date: new Date().toISOString(), tree: build, quick: QUICK, rounds: ROUNDS,
    loadavg: os.loadavg(),
    chromium: browser.version(), cpu: os.cpus()[0]?.model, cores: os.cpus().length, rule: { MAX_SHIFT, MIN_AGREE },
    failed, results }, null, 1));
  console.log(`wrote ${OUT} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
} finally {
  await browser.close();
  server.close();
}
