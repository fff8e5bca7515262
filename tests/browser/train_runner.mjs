// train_runner.mjs - training parity in the browser: one training graph
// (a vision model of rlx_vision_build, or the MLP below), built through
// web/runtime/loader.js in web/pkg/rlx_web.wasm and compiled twice with
// Graph.compileTrain (SGD): once for the CPU and once for 'webgpu' (run by
// web/runtime/webgpu.js) or 'webgl' (web/runtime/webgl.js).  Both start from
// the same params and see the same batch every step; each step's loss
// (output 0, before the update) is recorded for both, with the step times.
// Loaded by gpu_parity_page.html (main thread) and train_worker.mjs (a
// Worker); driven by train_gpu.test.mjs.
import { loadRlx } from '../../web/runtime/loader.js';
import { createWebGpuSession } from '../../web/runtime/webgpu.js';
import { createWebGlSession } from '../../web/runtime/webgl.js';

let rlxPromise = null;
const loadOnce = () => (rlxPromise ??= loadRlx(new URL('../../web/pkg/rlx_web.wasm', import.meta.url)));

// The MLP of tests/c/wasm_gpu_cases.c: relu(x w1 + b1) w2 + b2, loss = sum
// of squared errors against t.
const MLP = { in: 12, hid: 16, out: 4 };

/** Param names and sizes of a vision model (rlx_vision_info read through its layout export). */
function visionInfo(rlx, slug) {
  const e = rlx.exports;
  return rlx.scoped((t) => {
    const layout = t.bytes(4 * e.rlx_vision_info_layout(0));
    const n = e.rlx_vision_info_layout(layout);
    const [size, , , , , , oNParams, oNames, oSizes, , , oInputLen, oFlatLen] = rlx.readI32(layout, n);
    const p = t.bytes(size);
    rlx.check(e.rlx_vision_info_get(t.str(slug), p));
    const u32 = (off) => rlx.readI32(p + off, 1)[0] >>> 0;
    const nParams = u32(oNParams);
    return {
      names: Array.from({ length: nParams }, (_, k) => rlx.cstring(u32(oNames + 4 * k))),
      sizes: Array.from({ length: nParams }, (_, k) => u32(oSizes + 4 * k)),
      inputLen: u32(oInputLen),
      flatLen: u32(oFlatLen),
    };
  });
}

/** Deterministic values in [lo, hi) (a sine hash: any fixed values do, both devices get the same). */
function fill(n, seed, lo, hi) {
  return Float32Array.from({ length: n }, (_, i) => {
    const s = Math.sin((i + 1) * 12.9898 + seed * 78.233) * 43758.5453;
    return lo + (hi - lo) * (s - Math.floor(s));
  });
}

/**
 * The training graph of `model` for `batch`: { g, loss, params: [node ids],
 * paramValues: [[name, Float32Array]], inputs: [[name, data]] }.
 */
function buildModel(rlx, model, batch) {
  const e = rlx.exports;
  const g = rlx.graph();
  if (model === 'mlp') {
    const x = g.input('x', [batch, MLP.in]);
    const t = g.input('t', [batch, MLP.out]);
    const dims = { w1: [MLP.in, MLP.hid], b1: [MLP.hid], w2: [MLP.hid, MLP.out], b2: [MLP.out] };
    const p = Object.fromEntries(Object.entries(dims).map(([name, d]) => [name, g.param(name, d)]));
    const h = g.op('relu', [g.op('add', [g.op('matmul', [x, p.w1], [0, 0]), p.b1])]);
    const y = g.op('add', [g.op('matmul', [h, p.w2], [0, 0]), p.b2]);
    const d = g.op('sub', [y, t]);
    const loss = g.op('reduce_sum', [g.op('mul', [d, d])], [3, 0]);
    const paramValues = Object.entries(dims).map(([name, d], k) => [name, fill(d.reduce((a, b) => a * b, 1), 100 + k, -0.4, 0.4)]);
    return {
      g, loss, params: Object.values(p), paramValues,
      inputs: [['x', fill(batch * MLP.in, 500, -1, 1)], ['t', fill(batch * MLP.out, 501, -1, 1)]],
    };
  }
  const info = visionInfo(rlx, model);
  const loss = rlx.scoped((t) => {
    const out = t.bytes(8);
    rlx.check(e.rlx_vision_build(g.live(), t.str(model), batch, out));
    return rlx.readI32(out, 2)[1];
  });
  const find = (name) => g.node(rlx.scoped((t) => e.rlx_graph_find(g.live(), t.str(name))));
  const params = info.names.map(find);
  return rlx.scoped((t) => {
    const flat = t.bytes(4 * info.flatLen);
    rlx.check(e.rlx_vision_init_params(t.str(model), 42, 0, flat, info.flatLen));
    let at = flat;
    const paramValues = info.names.map((name, k) => {
      const v = rlx.readF32(at, info.sizes[k]);
      at += 4 * info.sizes[k];
      return [name, v];
    });
    const xLen = batch * info.inputLen;
    const x = t.bytes(4 * xLen), labels = t.bytes(4 * batch);
    rlx.check(e.rlx_vision_synthetic_batch(t.str(model), 1000, 0, batch, x, xLen, labels, batch));
    return { g, loss, params, paramValues, inputs: [['x', rlx.readF32(x, xLen)], ['labels', rlx.readI32(labels, batch)]] };
  });
}

/** The executor for a C session compiled for `device` (both have the contract of web/runtime/executor.js). */
async function executorSession(rlx, device, session, canvas) {
  if (device === 'webgpu') return createWebGpuSession(rlx, session);
  return createWebGlSession(rlx, session, { canvas });
}

/**
 * `steps` SGD steps of `model` ('mnist-mlp', ..., 'mlp') at `batch` and
 * `lr` on `device` ('webgpu' | 'webgl'; `canvas` for WebGL, else its own)
 * and on the CPU.  Returns { losses: [[cpu, gpu] per step], cpuMs, gpuMs
 * (per step), compileMs, setupMs, host: [steps_total, host_steps,
 * sync_points] (WebGPU) | null, paramErr (max |gpu - cpu| / (1 + |cpu|)
 * over the params after the last step), kernels (dispatches or passes),
 * programs (pipelines or GL programs; setupMs includes building them),
 * slowest (with `profile`: one more step timed per dispatch / pass, summed
 * per kernel kind, slowest first; GEMM dispatches with M, N, K and GFLOP/s) }.
 */
export async function trainParity({ model, device, steps = 20, batch = 2, lr = 0.05, canvas, profile = false } = {}) {
  const rlx = await loadOnce();
  const t0 = performance.now();
  // compileTrain appends the backward pass and the update to its graph: one graph per session.
  const compile = (dev) => {
    const m = buildModel(rlx, model, batch);
    try {
      const s = m.g.compileTrain(m.loss, m.params, { kind: 'sgd', lr }, { device: dev });
      for (const [name, v] of m.paramValues) s.setParam(name, v);
      return { s, m };
    } finally {
      m.g.free();
    }
  };
  let cpu = null, dev = null, gs = null;
  try {
    const c = compile('cpu');
    cpu = c.s;
    dev = compile(device).s;
    const compileMs = performance.now() - t0;
    const { inputs, paramValues } = c.m;
    let host = null;
    if (device === 'webgpu') {
      host = rlx.scoped((t) => {
        const out = t.bytes(12);
        rlx.check(rlx.exports.rlx_session_host_summary(dev.ptr, out));
        return Array.from(rlx.readI32(out, 3));
      });
    }
    const t1 = performance.now();
    gs = await executorSession(rlx, device, dev, canvas);
    const setupMs = performance.now() - t1;
    const losses = [], cpuMs = [], gpuMs = [];
    for (let step = 0; step < steps; step++) {
      let t = performance.now();
      for (const [name, v] of inputs) cpu.setInput(name, v);
      cpu.run();
      const lc = cpu.output(0)[0];
      cpuMs.push(performance.now() - t);
      t = performance.now();
      const lg = (await gs.run(inputs))[0][0];
      gpuMs.push(performance.now() - t);
      losses.push([lc, lg]);
    }
    let paramErr = 0;
    for (const [name] of paramValues) {
      const want = cpu.getParam(name), got = await gs.readParam(name);
      for (let k = 0; k < want.length; k++) paramErr = Math.max(paramErr, Math.abs(got[k] - want[k]) / (1 + Math.abs(want[k])));
    }
    const kernels = device === 'webgpu' ? gs.dispatchCount : gs.passCount;
    const programs = device === 'webgpu' ? gs.pipelineCount : gs.plan.programs.length;
    const slowest = profile ? await (device === 'webgpu' ? profileWebGpu(gs) : profileWebGl(gs)) : null;
    return { model, device, batch, lr, losses, cpuMs, gpuMs, compileMs, setupMs, host, paramErr, kernels, programs, slowest };
  } finally {
    gs?.free();
    dev?.free();
    cpu?.free();
  }
}

/** Per kernel kind (op and pipeline key / program), the summed wall time of its dispatches, slowest first. */
function summarize(rows) {
  const byKey = new Map();
  let total = 0;
  for (const r of rows) {
    const k = `${r.op} [${r.key}]`;
    const e = byKey.get(k) ?? { kernel: k, count: 0, ms: 0, worst: r };
    e.count++;
    e.ms += r.ms;
    if (r.ms > e.worst.ms) e.worst = r;
    byKey.set(k, e);
    total += r.ms;
  }
  const list = [...byKey.values()].sort((a, b) => b.ms - a.ms);
  return { totalMs: total, kernels: list.map((e) => ({ kernel: e.kernel, count: e.count, ms: e.ms, share: e.ms / total, worst: e.worst })) };
}

/** One more run of a WebGPU session, each dispatch submitted and awaited alone (wall time per dispatch). */
async function profileWebGpu(gs) {
  const { device, plan } = gs;
  const rows = [];
  for (let k = 0; k < plan.steps.length; k++) {
    const st = plan.steps[k];
    const t = performance.now();
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(gs.pipelines[st.pipeline].pipeline);
    pass.setBindGroup(0, gs.bindGroups[k]);
    pass.dispatchWorkgroups(st.groups[0], st.groups[1], st.groups[2]);
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const ms = performance.now() - t;
    const key = plan.pipelines[st.pipeline].key;
    const row = { op: st.op, node: st.node, key, groups: st.groups, ms };
    if (/^matmul\|/.test(key)) { // uniform words 0..4: M, N, K, Z, splits (matmul.wgsl)
      const [M, N, K, Z, S] = st.words;
      Object.assign(row, { gemm: { M, N, K, Z, S }, gflops: (2 * M * N * K * Z) / (ms * 1e6) });
    }
    rows.push(row);
  }
  return summarize(rows);
}

/** One more run of a WebGL2 session through the executor contract's profile() (each pass waited for). */
async function profileWebGl(gs) {
  return summarize((await gs.profile()).map((r) => ({ op: r.op, node: r.node, key: r.key, texels: r.texels, ms: r.ms })));
}
