// webgpu_runner.mjs - runs a small graph through web/runtime/webgpu.js in
// the browser (page or Worker) and on the CPU of the same wasm module
// (web/pkg/rlx_web.wasm through web/runtime/loader.js), for webgpu.test.mjs:
// two outputs, a param, a constant, broadcasting, two runs with new inputs,
// a param read back.
import { loadRlx } from '../../web/runtime/loader.js';
import { createWebGpuSession } from '../../web/runtime/webgpu.js';

function maxErr(got, want) {
  let worst = 0;
  for (let k = 0; k < want.length; k++) worst = Math.max(worst, Math.abs(got[k] - want[k]) / (1 + Math.abs(want[k])));
  return worst;
}

export async function runChecks() {
  const rlx = await loadRlx(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
  const g = rlx.graph();
  const x = g.input('x', [3, 5]);
  const w = g.param('w', [5]);
  const c = g.constant([3, 1], [0.5, -0.5, 0.25]);
  const outs = [g.op('gelu', [g.op('add', [g.op('mul', [x, w]), c])]), g.op('sub', [x, w])];
  const cpu = g.compile(outs);
  const gpuPlan = g.compile(outs, { device: 'webgpu' });
  g.free();
  const gs = await createWebGpuSession(rlx, gpuPlan); // navigator.gpu, shared device
  const wv = Float32Array.from([0.5, -1, 2, 0.25, -0.75]);
  cpu.setParam('w', wv);
  gs.setParam('w', wv);
  let worst = 0;
  for (let r = 0; r < 2; r++) {
    const xv = Float32Array.from({ length: 15 }, (_, i) => Math.sin(3 * i + r));
    cpu.setInput('x', xv);
    cpu.run();
    gs.setInput('x', xv);
    await gs.run();
    for (const i of [0, 1]) worst = Math.max(worst, maxErr(gs.output(i), cpu.output(i)));
  }
  const param = Array.from(await gs.getParam('w'));
  gs.free(); cpu.free(); gpuPlan.free();
  return { worst, paramOk: param.every((v, i) => v === wv[i]), adapter: 'gpu' in navigator };
}
