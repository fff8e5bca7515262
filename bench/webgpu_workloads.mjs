// webgpu_workloads.mjs - the workloads of the WebGPU speed benches, shared by
// bench/webgpu_models.mjs (Dawn in Node) and bench/webgpu_chromium.mjs (a
// headless Chromium page): browser-safe, no Node imports.
//   rlx-webgpu   a training step compiled by the wasm module (Graph via the
//                rlx_vision_build export; Graph.compileTrain with SGD, device
//                'webgpu') and replayed by web/runtime/webgpu.js: params stay on
//                the GPU, each step reads its loss back as a real step would;
//                the W4 forward is a graph built here with the same weights as
//                tfjs's, compiled for WebGPU, logits read back every call.
//   tfjs-webgpu  tfjs-core + tfjs-backend-webgpu (`tf` is passed in),
//                optimizer.minimize + await loss.data() per step.
// Both contenders start from the same params and batch, so their first losses
// (and the W4 logits) must agree: measureWorkload reports it when they do not.
// Iterations are interleaved; medians are reported.
import { createWebGpuSession } from '../web/runtime/webgpu.js';
import { tfjsVisionModel, nchwToNhwc, tfjsTransformer, w4Weights } from './tfjs_models.mjs';
import { buildW4 } from './w4_graph.mjs';

export const CONTENDERS = ['rlx-webgpu', 'tfjs-webgpu'];
export const W4 = 'W4 transformer fwd T=64';

/** The workload list: each model at each batch, then the W4 forward. */
export function workloadList(models, batches, withW4) {
  return [
    ...models.flatMap((slug) => batches.map((B) => ({ slug, B, name: `${slug} train B=${B}` }))),
    ...(withW4 ? [{ name: W4, transformer: true, B: 1 }] : []),
  ];
}
/** The issue's targets for tfjs time / ours. */
export const target = (w) => (w.transformer ? 5 : ['mnist-mlp', 'mnist-cnn', 'cifar-cnn'].includes(w.slug) ? 2 : null);

// ---- timing (as bench/bench_models.mjs): warm-up rounds, then up to 50 timed
// rounds, each calling every contender once, until the budget once 5 are in.
export function stats(ts) {
  const s = [...ts].sort((a, b) => a - b), n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return { n, median_ms: median, min_ms: s[0], max_ms: s[n - 1] };
}
// Heavy workloads (the second round over a sixth of the budget) get no more
// warm-up and stop after 3 rounds.  settle(f): waits, untimed, until
// contender f's GPU work is done, so that work a call leaves queued (tfjs
// submits the optimizer's updates after the loss it returns) does not share
// the GPU with the next contender's call.  cpuMs (optional, e.g. from
// process.cpuUsage in Node): the process's CPU time in ms; each call's share
// is kept too (cpu_median_ms), for machines that other work shares.
export async function benchInterleaved(fns, budgetMs, settle = () => {}, cpuMs = null) {
  const ts = fns.map(() => []), cpu = fns.map(() => []);
  const round = async () => {
    const start = performance.now();
    for (let f = 0; f < fns.length; f++) {
      const c = cpuMs?.(), s = performance.now();
      await fns[f]();
      ts[f].push(performance.now() - s);
      if (cpuMs) cpu[f].push(cpuMs() - c);
      await settle(f);
    }
    return performance.now() - start;
  };
  const reset = () => [...ts, ...cpu].forEach((a) => (a.length = 0));
  let t0 = performance.now();
  await round();
  reset();
  const heavy = (await round()) > budgetMs / 6, minRounds = heavy ? 3 : 5;
  if (!heavy) {
    for (let i = 2; i < 10 && performance.now() - t0 < budgetMs / 3; i++) await round();
    reset();
  }
  t0 = performance.now();
  while (ts[0].length < 50 && (ts[0].length < minRounds || performance.now() - t0 < budgetMs)) await round();
  return ts.map((t, f) => (cpuMs ? { ...stats(t), cpu_median_ms: stats(cpu[f]).median_ms } : stats(t)));
}

/**
 * The contenders of one session on one device.  ctx: { rlx (web/pkg/rlx_web.js,
 * initialized), rt (its live loader.js Rlx: runtime() of web/runtime/instance.js),
 * device (ours), tf (or null), contenders (names), profile (bool), log (line printer) }.
 */
export function webGpuWorkloads(ctx) {
  const { rlx, rt, device, tf, contenders, log = () => {} } = ctx;

  // --profile: GPU ms per kernel key of one run of ours.
  async function profileOurs(name, gs) {
    if (!device.features?.has('timestamp-query')) { log(`  profile ${name}: no timestamp-query on this device`); return null; }
    await gs.profile();
    const steps = await gs.profile(), by = new Map();
    for (const st of steps) {
      const k = `${st.op}:${st.key}`, e = by.get(k) ?? { ms: 0, n: 0 };
      e.ms += st.ms; e.n++; by.set(k, e);
    }
    const total = steps.reduce((a, s) => a + s.ms, 0);
    const top = [...by].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12);
    log(`  profile ${name}: ${steps.length} dispatches, ${total.toFixed(3)} ms of kernels; ` +
      top.map(([k, e]) => `${k} x${e.n} ${e.ms.toFixed(3)}`).join(', '));
    return { dispatches: steps.length, kernel_ms: total, top: top.map(([k, e]) => ({ key: k, n: e.n, ms: e.ms })) };
  }

  async function oursVision(slug, B, init0, x, labels, info) {
    const g = rt.graph();
    const [, loss] = rt.scoped((t) => {
      const out = t.bytes(8);
      rt.check(rt.exports.rlx_vision_build(g.ptr, t.str(slug), B, out));
      return Array.from(rt.readI32(out, 2));
    });
    const params = info.param_names.map((n) => rt.scoped((t) => rt.exports.rlx_graph_find(g.ptr, t.str(n))));
    const s = g.compileTrain(loss, params, { kind: 'sgd', lr: 0.01 }, { device: 'webgpu' });
    g.free();
    const gs = await createWebGpuSession(rt, s, device);
    let off = 0;
    info.param_names.forEach((n, i) => { gs.setParam(n, init0.subarray(off, off + info.param_sizes[i])); off += info.param_sizes[i]; });
    gs.setInput('x', x);
    gs.setInput('labels', Int32Array.from(labels));
    return { gs, free: () => { gs.free(); s.free(); } };
  }

  // The W4 forward as one graph (bench/w4_graph.mjs): the anchors' model with
  // the same weights as tfjs's.
  async function oursTransformer(weights) {
    const g = rt.graph();
    const { logits, feed } = buildW4(g, weights);
    const s = g.compile([logits], { device: 'webgpu' });
    g.free();
    const gs = await createWebGpuSession(rt, s, device);
    for (const [name, data] of feed) (name === 'tokens' ? gs.setInput(name, data) : gs.setParam(name, data));
    return { gs, free: () => { gs.free(); s.free(); } };
  }

  async function visionContenders(w) {
    const bench = new rlx.VisionBench(w.slug), info = bench.info();
    const init0 = bench.init_params(1), { x, labels } = bench.synthetic_batch(2, w.B);
    const fns = {}, losses = {}, cleanup = [], extra = {};
    const track = (name, loss) => (losses[name] ??= []).push(loss);
    if (contenders.includes('rlx-webgpu')) {
      const o = await oursVision(w.slug, w.B, init0, x, labels, info);
      fns['rlx-webgpu'] = async () => { await o.gs.run(); track('rlx-webgpu', o.gs.output(0)[0]); };
      extra['rlx-webgpu'] = { dispatches: o.gs.dispatchCount, pipelines: o.gs.pipelineCount };
      cleanup.push(async () => {
        if (ctx.profile) extra['rlx-webgpu'].profile = await profileOurs(w.name, o.gs);
        o.free();
      });
    }
    if (tf) {
      const dims = [w.B, ...info.input_dims];
      const xs = tf.tensor(dims.length === 4 ? nchwToNhwc(x, dims) : x, dims.length === 4 ? [w.B, dims[2], dims[3], dims[1]] : dims);
      const ys = tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(Int32Array.from(labels), 'int32'), 10), 'float32'));
      const { params, forward } = tfjsVisionModel(tf, w.slug, info, init0);
      const opt = tf.train.sgd(0.01), vars = Object.values(params);
      fns['tfjs-webgpu'] = async () => {
        const loss = opt.minimize(() => tf.losses.softmaxCrossEntropy(ys, forward(xs)), true, vars);
        track('tfjs-webgpu', (await loss.data())[0]);
        loss.dispose();
      };
      cleanup.push(() => { opt.dispose(); tf.dispose([xs, ys, ...vars]); });
    }
    const check = (name) => (losses[name] ? `loss ${losses[name][0].toFixed(4)} -> ${losses[name].at(-1).toFixed(4)}` : '');
    const first = (name) => losses[name]?.[0];
    return { fns, check, first, extra, done: async () => { for (const f of cleanup) await f(); bench.free(); } };
  }

  async function transformerContenders() {
    const weights = w4Weights(), fns = {}, outs = {}, cleanup = [], extra = {};
    if (contenders.includes('rlx-webgpu')) {
      const o = await oursTransformer(weights);
      fns['rlx-webgpu'] = async () => { await o.gs.run(); outs['rlx-webgpu'] = o.gs.output(0); };
      extra['rlx-webgpu'] = { dispatches: o.gs.dispatchCount, pipelines: o.gs.pipelineCount };
      cleanup.push(async () => {
        if (ctx.profile) extra['rlx-webgpu'].profile = await profileOurs(W4, o.gs);
        o.free();
      });
    }
    if (tf) {
      const model = tfjsTransformer(tf, weights);
      fns['tfjs-webgpu'] = async () => {
        const t = tf.tidy(model.forward);
        outs['tfjs-webgpu'] = await t.data();
        t.dispose();
      };
      cleanup.push(() => model.dispose());
    }
    const check = (name) => {
      const o = outs[name];
      return o ? `logits[0..2]=${[...o.slice(0, 3)].map((v) => v.toFixed(4)).join(',')} sum=${o.reduce((a, b) => a + b, 0).toFixed(3)}` : '';
    };
    // The largest |ours - tfjs| of the logits, relative to 1 + |tfjs|.
    const diff = () => {
      const a = outs['rlx-webgpu'], b = outs['tfjs-webgpu'];
      return a && b ? a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]) / (1 + Math.abs(b[i]))), 0) : null;
    };
    return { fns, check, diff, extra, done: async () => { for (const f of cleanup) await f(); } };
  }

  // Ours waits for its GPU work in every call (the loss readback); tfjs's
  // device may still run the updates queued after its loss.
  const settle = (name) => (name === 'tfjs-webgpu' ? tf.backend().device.queue.onSubmittedWorkDone() : null);

  /**
   * Measures workload w (interleaved, budgetMs of timed rounds):
   * { rows: one result per contender, problems: disagreements with tfjs, line }.
   */
  async function measureWorkload(w, budgetMs) {
    const c = w.transformer ? await transformerContenders() : await visionContenders(w);
    const names = Object.keys(c.fns), problems = [];
    const measured = await benchInterleaved(names.map((n) => c.fns[n]), budgetMs, (f) => settle(names[f]));
    const rows = names.map((backend, i) => ({ backend, workload: w.name, batch: w.B, ...measured[i],
      samples_per_s: (w.B * 1000) / measured[i].median_ms, check: c.check(backend), ...c.extra[backend] }));
    // Same params and batch: the first losses (W4: the logits) must agree.
    if (c.first && names.length === 2) {
      const a = c.first('rlx-webgpu'), b = c.first('tfjs-webgpu');
      rows.forEach((r) => (r.first_loss = c.first(r.backend)));
      if (!(Math.abs(a - b) <= 1e-3 * (1 + Math.abs(b)))) problems.push(`${w.name}: first loss ours ${a} vs tfjs ${b}`);
    }
    if (c.diff && names.length === 2) {
      const d = c.diff();
      rows[0].logits_rel_diff = d;
      if (!(d <= 2e-3)) problems.push(`${W4}: logits differ from tfjs's by ${d} (relative)`);
    }
    await c.done();
    const line = `  ${w.name}: ${names.map((n, i) => `${n} ${measured[i].median_ms.toFixed(3)} ms`).join(', ')}`;
    return { rows, problems, line };
  }

  return { measureWorkload, visionContenders, transformerContenders };
}

/**
 * The report table of `results` (rows of measureWorkload): adds ratio_vs_tfjs
 * and target to our rows; returns the lines (header, one per workload, checks).
 * With problems (disagreements with tfjs), no table of ratios: only the checks.
 */
export function reportLines(workloads, results, problems = []) {
  const find = (backend, w) => results.find((r) => r.backend === backend && r.workload === w.name);
  const fmt = (v) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  const head = ['workload', 'rlx ms', 'tfjs ms', 'rlx /s', 'tfjs /s', 'tfjs/rlx', 'target', 'dispatches'];
  const widths = [24, 9, 9, 10, 10, 9, 8, 10];
  const line = (cells) => cells.map((c, i) => (i ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i]))).join(' ');
  const rows = workloads.map((w) => {
    const ours = find('rlx-webgpu', w), theirs = find('tfjs-webgpu', w);
    const ratio = ours && theirs ? theirs.median_ms / ours.median_ms : null;
    const t = target(w);
    if (ratio) Object.assign(ours, { ratio_vs_tfjs: ratio, target: t });
    return line([w.name, ours ? fmt(ours.median_ms) : '-', theirs ? fmt(theirs.median_ms) : '-',
      ours ? fmt(ours.samples_per_s) : '-', theirs ? fmt(theirs.samples_per_s) : '-', ratio ? `${ratio.toFixed(2)}x` : '-',
      t ? `${t}x${ratio ? (ratio >= t ? ' ok' : ' NO') : ''}` : '', ours?.dispatches ?? '-']);
  });
  // A disagreement means the contenders computed different things: no ratios then.
  const table = problems.length
    ? [`no speed table: ${problems.length} workload(s) where ours and tfjs disagree on the same params and batch (MISMATCH below)`]
    : [line(head), ...rows];
  return [
    ...table,
    'checks (first -> last loss, same initial params and batch for both; W4: logits of both):',
    ...workloads.map((w) => `  ${w.name.padEnd(24)} ${CONTENDERS.map((b) => find(b, w)).filter((r) => r?.check)
      .map((r) => `${r.backend}: ${r.check}`).join('; ')}`),
  ];
}
