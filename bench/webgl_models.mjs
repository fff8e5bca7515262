// webgl_models.mjs - `make bench-webgl`: training steps of mnist-mlp and
// mnist-cnn at batch 64 on WebGL2, ours (web/runtime/webgl.js replaying the
// C plan of Graph.compileTrain, params resident on the GPU, the loss read
// back every step) next to TensorFlow.js's `webgl` backend (4.22.0, from
// node_modules, bundled with esbuild at start), in ONE headless Chromium page (SwiftShader), iterations
// interleaved round by round so both see the same machine load.  Both start
// from the same params and batch (VisionBench.init_params(1) /
// synthetic_batch(2, B), converted to NHWC for tfjs) and run plain SGD with
// lr 0.01; the losses of both are printed, and when the first ones disagree
// it prints them and exits 1 instead of the ratios.  Prints
// samples/s and the ratio ours / tfjs; writes build/bench/webgl.json.
//
//   node bench/webgl_models.mjs [--rounds=5] [--steps=6] [--batch=64]
//        [--models=mnist-mlp,mnist-cnn] [--out=build/bench/webgl.json] [--profile]
//        [--wasm=web/pkg/rlx_web.wasm]
// --profile also prints where one step of ours spends its time, by op and shader
// (--profile=all: every pass too).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build } from 'esbuild';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v = ''] = a.replace(/^--/, '').split('=');
  return [k, v];
}));
const ROUNDS = Number(args.rounds ?? 5), STEPS = Number(args.steps ?? 6), B = Number(args.batch ?? 64);
const MODELS = (args.models ?? 'mnist-mlp,mnist-cnn').split(',');
const OUT = args.out ?? 'build/bench/webgl.json';
const WASM = args.wasm ? path.resolve(args.wasm) : path.join(REPO, 'web/pkg/rlx_web.wasm');
const CHROMIUM = process.env.RLX_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--enable-unsafe-webgpu', '--enable-features=Vulkan',
  '--use-vulkan=swiftshader', '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader'];
if (!(ROUNDS >= 1 && STEPS >= 1 && B >= 1)) throw new Error('--rounds, --steps and --batch must be >= 1');
for (const need of [CHROMIUM, WASM,
  path.join(REPO, 'node_modules/@tensorflow/tfjs-backend-webgl/dist/tf-backend-webgl.min.js')]) {
  if (!fs.existsSync(need)) throw new Error(`webgl bench: missing ${need} (make setup / make wasm)`);
}

// ---- the page ---------------------------------------------------------------------
// Our side: the vision graph of the C model zoo, one training plan on WebGL2.
// tfjs side: the models of the shared tfjs workloads (TinyConv is NHWC there).
const PAGE = String.raw`<!doctype html>
<meta charset="utf-8"><title>webgl bench</title><link rel="icon" href="data:,">
<script src="/tfjs.js"></script>
<script type="module">
import init, * as rlx from '/web/pkg/rlx_web.js';
import { runtime } from '/web/runtime/instance.js'; // the live instance's loader.js binding (Graph / Session)
import { createWebGlSession } from '/web/runtime/webgl.js';
const tf = window.tf;
const contenders = {};

// Our conv weights are [O,C,KH,KW] -> tfjs [KH,KW,C,O]; the fc weights of mnist-cnn
// follow a flatten of NCHW [16,5,5] rows -> NHWC [5,5,16] rows.
function convW(w, [O, C, KH, KW]) {
  const o = new Float32Array(w.length);
  for (let a = 0; a < O; a++) for (let c = 0; c < C; c++) for (let i = 0; i < KH; i++) for (let j = 0; j < KW; j++)
    o[((i * KW + j) * C + c) * O + a] = w[((a * C + c) * KH + i) * KW + j];
  return tf.tensor4d(o, [KH, KW, C, O]);
}
function fcAfterFlatten(w, [C, H, W], out) {
  const o = new Float32Array(w.length);
  for (let c = 0; c < C; c++) for (let h = 0; h < H; h++) for (let x = 0; x < W; x++)
    for (let n = 0; n < out; n++) o[((h * W + x) * C + c) * out + n] = w[((c * H + h) * W + x) * out + n];
  return tf.tensor2d(o, [C * H * W, out]);
}
function nchwToNhwc(x, [N, C, H, W]) {
  const o = new Float32Array(x.length);
  for (let b = 0; b < N; b++) for (let c = 0; c < C; c++) for (let h = 0; h < H; h++) for (let w = 0; w < W; w++)
    o[((b * H + h) * W + w) * C + c] = x[((b * C + c) * H + h) * W + w];
  return o;
}

function tfjsModel(slug, info, flat) {
  const p = {};
  let off = 0;
  info.param_names.forEach((name, i) => {
    const shape = info.param_shapes[i], w = flat.subarray(off, off + info.param_sizes[i]);
    off += info.param_sizes[i];
    const t = shape.length === 4 ? convW(w, shape)
      : name === 'fc_w' && slug === 'mnist-cnn' ? fcAfterFlatten(w, [16, 5, 5], 10) : tf.tensor(w, shape);
    p[name] = tf.variable(t);
    t.dispose();
  });
  const dense = (h, w, b, activation) => tf.fused.matMul({ a: h, b: p[w], bias: p[b], activation });
  const conv = (x, w, b) => tf.fused.conv2d({ x, filter: p[w], strides: 1, pad: 'valid', bias: p[b], activation: 'relu' });
  const pool = (h) => tf.maxPool(h, 2, 2, 'valid');
  const forward = {
    'mnist-mlp': (x) => dense(dense(x, 'w1', 'b1', 'relu'), 'w2', 'b2'),
    'mnist-cnn': (x) => {
      let h = pool(conv(x, 'conv1_w', 'conv1_b'));
      h = pool(conv(h, 'conv2_w', 'conv2_b'));
      return dense(tf.reshape(h, [x.shape[0], 400]), 'fc_w', 'fc_b');
    },
  }[slug];
  return { params: p, forward };
}

window.setup = async (slug, B) => {
  await init('/rlx_web.wasm');
  if (!(await tf.setBackend('webgl'))) throw new Error('tfjs: the webgl backend failed to initialize');
  await tf.ready();
  const bench = new rlx.VisionBench(slug), info = bench.info();
  const initParams = bench.init_params(1), { x, labels } = bench.synthetic_batch(2, B);

  // ours: the training graph on WebGL2
  const rt = runtime(), g = rt.graph();
  const [, loss] = rt.scoped((t) => {
    const out = t.bytes(8);
    rt.check(rt.exports.rlx_vision_build(g.ptr, t.str(slug), B, out));
    return Array.from(rt.readI32(out, 2));
  });
  const params = info.param_names.map((n) => g.node(rt.scoped((t) => rt.exports.rlx_graph_find(g.ptr, t.str(n)))));
  let t0 = performance.now();
  const s = g.compileTrain(loss, params, { kind: 'sgd', lr: 0.01 }, { device: 'webgl' });
  g.free();
  const gs = createWebGlSession(rt, s);
  const createMs = performance.now() - t0;
  let off = 0;
  info.param_names.forEach((n, i) => {
    gs.setParam(n, initParams.subarray(off, off + info.param_sizes[i]));
    off += info.param_sizes[i];
  });
  gs.setInput('x', x);
  gs.setInput('labels', labels);
  const ours = { gs, losses: [], step() { this.losses.push(gs.runSync()[0][0]); } };
  t0 = performance.now();
  ours.step();
  const firstRunMs = performance.now() - t0;
  ours.info = { passes: gs.passCount, programs: gs.plan.programs.length, textures: gs.plan.textures.length,
    create_ms: createMs, first_run_ms: firstRunMs, renderer: gs.renderer,
    read_floats: gs.plan.outputs.reduce((a, o) => a + gs.plan.textures[o.texture].count, 0),
    swaps: gs.swaps.length, assignments: (gs.plan.assignments ?? []).length };

  // tfjs webgl: same params and batch
  const dims = [B, ...info.input_dims];
  const xs = tf.tensor(dims.length === 4 ? nchwToNhwc(x, dims) : x, dims.length === 4 ? [B, dims[2], dims[3], dims[1]] : dims);
  const ys = tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(labels, 'int32'), 10), 'float32'));
  const model = tfjsModel(slug, info, initParams);
  const opt = tf.train.sgd(0.01), vars = Object.values(model.params);
  const theirs = { losses: [], async step() {
    const l = opt.minimize(() => tf.losses.softmaxCrossEntropy(ys, model.forward(xs)), true, vars);
    this.losses.push((await l.data())[0]);
    l.dispose();
  } };
  for (let i = 0; i < 3; i++) await theirs.step();
  theirs.info = { WEBGL_PACK: tf.env().get('WEBGL_PACK'), WEBGL_VERSION: tf.env().get('WEBGL_VERSION') };
  contenders[slug] = { ours, tfjs: theirs };
  return { ours: ours.info, tfjs: theirs.info };
};

// n timed steps of one contender: per-step milliseconds and the last loss.
window.steps = async (slug, who, n) => {
  const c = contenders[slug][who], ms = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await c.step();
    ms.push(performance.now() - t);
  }
  return { ms, first_loss: c.losses[0], loss: c.losses.at(-1) };
};
// Per-pass milliseconds of our plan (WebGlSession.profilePasses), summed by shader.
window.profile = (slug) => contenders[slug].ours.gs.profilePasses(10);
// One step's passes drawn back to back then synced (no per-pass waits), and a whole run().
window.profileStep = (slug) => {
  const gs = contenders[slug].ours.gs, gl = gs.gl, px = new Float32Array(4), out = {};
  for (let r = 0; r < 3; r++) {
    let t = performance.now();
    gs.beginPasses();
    for (const p of gs.passes) gs.drawPass(p);
    gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.FLOAT, px); // the last pass's output: waits for every pass
    gs.endPasses();
    out.draws_ms = performance.now() - t;
    t = performance.now();
    gs.runSync();
    out.run_ms = performance.now() - t;
  }
  return out;
};
window.ready = true;
</script>`;

// ---- a static server: the page, web/ and tfjs ---------------------------------------
// tfjs-core's prebuilt bundles lack the gradients, so core + all gradients +
// the webgl backend are bundled here, in memory, into one script (window.tf).
const TFJS = (await build({
  stdin: { contents: `import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-core/dist/register_all_gradients';
import '@tensorflow/tfjs-backend-webgl';
window.tf = tf;`, resolveDir: REPO },
  bundle: true, write: false, format: 'iife', platform: 'browser', minify: true, logLevel: 'error',
})).outputFiles[0].text;
const MIME = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };
const server = http.createServer((req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (rel === '/bench.html') return res.writeHead(200, { 'Content-Type': 'text/html' }).end(PAGE);
  if (rel === '/rlx_web.wasm') {
    return res.writeHead(200, { 'Content-Type': 'application/wasm', 'Cache-Control': 'no-store' }).end(fs.readFileSync(WASM));
  }
  if (rel === '/tfjs.js') return res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(TFJS);
  const file = path.join(REPO, rel);
  const allowed = ['web/'].some((d) => file.startsWith(path.join(REPO, d)));
  if (!allowed) return res.writeHead(403).end();
  fs.readFile(file, (err, data) => {
    if (err) return res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] ?? 'application/octet-stream', 'Cache-Control': 'no-store' })
      .end(data);
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));

const median = (v) => {
  const s = [...v].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
const results = [];
try {
  const page = await browser.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  await page.goto(`http://127.0.0.1:${server.address().port}/bench.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 }).catch(() => {
    throw new Error(`webgl bench: the page did not load: ${problems.join('; ')}`);
  });
  const info = {};
  for (const slug of MODELS) info[slug] = await page.evaluate(([s, b]) => window.setup(s, b), [slug, B]);
  console.log(`webgl bench: batch ${B}, ${ROUNDS} rounds x ${STEPS} steps, interleaved; ` +
    `renderer ${info[MODELS[0]].ours.renderer}; load ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  const ms = {}, last = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const slug of MODELS) {
      for (const who of r % 2 ? ['tfjs', 'ours'] : ['ours', 'tfjs']) {
        const o = await page.evaluate(([s, w, n]) => window.steps(s, w, n), [slug, who, STEPS]);
        (ms[`${slug}/${who}`] ??= []).push(...o.ms);
        last[`${slug}/${who}`] = o;
      }
    }
  }
  // Same params and batch: the first losses must agree, else no ratios (the
  // contenders computed different things).
  const mismatches = MODELS.filter((slug) => {
    const a = last[`${slug}/ours`].first_loss, b = last[`${slug}/tfjs`].first_loss;
    return !(Math.abs(a - b) <= 1e-3 * (1 + Math.abs(b)));
  });
  if (mismatches.length) {
    for (const slug of mismatches)
      console.error(`webgl_models: MISMATCH ${slug} B=${B}: first loss ours ${last[`${slug}/ours`].first_loss} vs tfjs ` +
        `${last[`${slug}/tfjs`].first_loss} (same params and batch): no speed ratios reported`);
    process.exitCode = 1;
  } else {
    console.log(`${'model'.padEnd(10)} ${'rlx webgl'.padStart(14)} ${'tfjs webgl'.padStart(14)} ${'ratio'.padStart(7)}  losses (first -> last)`);
    for (const slug of MODELS) {
      const row = { model: slug, batch: B };
      for (const who of ['ours', 'tfjs']) {
        const m = median(ms[`${slug}/${who}`]), l = last[`${slug}/${who}`];
        row[who] = { median_ms: m, min_ms: Math.min(...ms[`${slug}/${who}`]), steps: ms[`${slug}/${who}`].length,
          samples_per_s: (B * 1000) / m, first_loss: l.first_loss, loss: l.loss, ...info[slug][who] };
        delete row[who].renderer;
      }
      row.ratio = row.ours.samples_per_s / row.tfjs.samples_per_s;
      results.push(row);
      const sps = (o) => `${o.samples_per_s.toFixed(0)} /s`.padStart(14);
      console.log(`${slug.padEnd(10)} ${sps(row.ours)} ${sps(row.tfjs)} ${`${row.ratio.toFixed(2)}x`.padStart(7)}  ` +
        `rlx ${row.ours.first_loss.toFixed(4)} -> ${row.ours.loss.toFixed(4)}, tfjs ${row.tfjs.first_loss.toFixed(4)} -> ` +
        `${row.tfjs.loss.toFixed(4)}; rlx plan: ${row.ours.passes} passes, ${row.ours.programs} programs, ` +
        `create ${row.ours.create_ms.toFixed(0)} ms, first run ${row.ours.first_run_ms.toFixed(0)} ms, ` +
        `reads ${row.ours.read_floats} floats, ${row.ours.swaps}/${row.ours.assignments} assignments swapped`);
    }
  }
  if (args.profile !== undefined) {
    for (const slug of MODELS) {
      const step = await page.evaluate((s) => window.profileStep(s), slug);
      console.log(`${slug} one step: passes drawn then synced ${step.draws_ms.toFixed(1)} ms, run() ${step.run_ms.toFixed(1)} ms`);
      const rows = await page.evaluate((s) => window.profile(s), slug);
      const by = new Map();
      for (const r of rows) {
        const k = `${r.op}:${r.shader}`;
        const e = by.get(k) ?? { ms: 0, n: 0 };
        e.ms += r.ms; e.n++;
        by.set(k, e);
      }
      const total = rows.reduce((a, r) => a + r.ms, 0);
      console.log(`${slug} passes (${total.toFixed(1)} ms, each drawn 10 times, then synced): ` + [...by].sort((a, b) => b[1].ms - a[1].ms)
        .map(([k, e]) => `${k}${e.n > 1 ? ` x${e.n}` : ''} ${e.ms.toFixed(1)}`).join(', '));
      if (args.profile === 'all') {
        for (const r of rows) console.log(`  #${r.pass} ${r.op}:${r.shader} ${r.texels} texels ${r.ms.toFixed(2)} ms`
          + ` ${(r.defines ?? []).map(([n, v]) => `${n}=${v}`).join(' ')}`);
      }
      console.log(`  slowest passes: ` + [...rows].sort((a, b) => b.ms - a.ms).slice(0, 8)
        .map((r) => `#${r.pass} ${r.shader} ${r.texels} texels ${r.ms.toFixed(2)}`).join(', '));
    }
  }
  if (problems.length) console.log(`page problems: ${problems.join('; ')}`);
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, JSON.stringify({ date: new Date().toISOString(), chromium: browser.version(),
    renderer: info[MODELS[0]].ours.renderer, cpu: os.cpus()[0]?.model, rounds: ROUNDS, steps: STEPS, results }, null, 1));
  console.log(`wrote ${OUT}`);
} finally {
  await browser.close();
  server.close();
}
