// sdk_check.ts - compile-time test of the SDK's types (web/rlx.d.ts, made
// from web/rlx.ts by `make sdk`) and of WebGraph / backend selection in
// web/pkg/rlx_web.d.ts: every call as documented type-checks under
// --strict, the @ts-expect-error lines must be rejected.  Run by
// tests/node/sdk.test.mjs; never executed.
import Rlx, { VisionModel, Transformer, RlxError } from '../../web/rlx.js';
import type { BenchResult, StepResult, GradsResult, Resolved, BackendEnvironment, WebGraph, CompiledGraph } from '../../web/rlx.js';
import { backend_candidates, select_backend, backend_environment, init_webgpu, init_webgl, WebGraph as LowGraph } from '../../web/pkg/rlx_web.js';
import type { BackendCandidates, Selection, NodeId, VisionNodes } from '../../web/pkg/rlx_web.js';

export async function main(): Promise<void> {
  const rlx: Rlx = await Rlx.init({ webgpu: true, webgl: false });
  await Rlx.init({ wasm: new URL('./pkg/rlx_web.wasm', import.meta.url), webgpu: {} });
  const env: BackendEnvironment = rlx.backends();
  const reason: string | null = env.webgpu.reason;
  const version: string = rlx.version;
  const slugs: string[] = rlx.visionModels();

  const model: VisionModel = rlx.vision('mnist-cnn');
  const params: Float32Array = model.initParams(42);
  const { x, labels } = model.syntheticBatch(1n, 4);
  const logits: Float32Array = await model.forward(x, params, { backend: 'auto' });
  const step: StepResult = await model.trainStep(x, labels, params, { lr: 0.01, backend: 'webgpu' });
  const next: Float32Array = step.params;
  const step2: StepResult = await model.trainStep(x, labels, params, 0.05, { backend: 'webgl' });
  const gr: GradsResult = await model.grads(x, labels, params, { backend: 'auto' });
  const gsum: number = gr.loss + gr.grads[0]! + step2.loss;
  const r: BenchResult = await model.bench({ steps: 5, seed: 1, lr: 0.01, batch: 2, backend: 'cpu',
    onProgress: (p) => { const s: number = p.step + p.steps + p.loss; void s; } });
  const resolved: Resolved = model.resolve('auto', { training: false, batch: 3 });
  const sync: Float32Array = model.forwardCpu(x, params);
  const syncStep: { loss: number; params: Float32Array } = model.trainStepCpu(x, [1, 2, 3, 4], params, 0.1);
  const syncBench = model.benchCpu(10, 42, 0.01);
  const sps: number = syncBench.stepsPerSec + r.samplesPerSec + r.losses[0]!;
  model.dispose();

  const lm: Transformer = rlx.transformer({ vocab: 32, dim: 32, nLayers: 2, nHeads: 4, ffn: 64, seed: 7 });
  const nextLogits: Float32Array = lm.nextLogits([1, 2, 3]);
  const all: Float32Array = lm.logits(new Float32Array([1, 2]));
  lm.dispose();

  const g: WebGraph = rlx.graph();
  const xi: NodeId = g.input('x', [4, 3]);
  const ids: NodeId = g.input('labels', [4], 'i32');
  const w: NodeId = g.param('w', [3, 5]);
  const y: NodeId = g.add(g.matmul(xi, w, { transB: false }), g.param('b', [5]));
  const loss: NodeId = g.reduce_mean(g.softmax_cross_entropy(y, ids));
  const conv: NodeId = g.conv2d(g.input('img', [1, 1, 8, 8]), g.param('k', [2, 1, 3, 3]), { stride: [1, 1], padding: 1 });
  const pooled: NodeId = g.max_pool2d(conv, { kernel: 2 });
  const generic: NodeId = g.op('softmax', [y], { ints: [1] });
  const v: VisionNodes = new LowGraph().add_vision('mnist-mlp', 2);
  const c: CompiledGraph = g.compile_backward(loss, [w], 'auto');
  c.feed('x', new Float32Array(12));
  c.feed('labels', new Int32Array([0, 1, 2, 3]));
  await c.run();
  const outs: Float32Array[] = await c.run_async({ x: new Float32Array(12) });
  const rowMs: number = (await c.executor.profile())[0]!.ms + (await c.executor.run())[0]![0]!;
  const sizes: number[] = c.output_sizes();
  const out: Float32Array = c.output(0);
  const fell: string = c.fallbacks.map((f) => `${f.backend}: ${f.reason}`).join();
  const fwd: CompiledGraph = g.compile_forward([y, pooled, generic], 'cpu', { skipFusion: true });
  fwd.free();
  c.free();
  g.free();

  const cands: BackendCandidates = backend_candidates('mnist-mlp', 'auto', { env: backend_environment() });
  const first: 'cpu' | 'webgpu' | 'webgl' | undefined = cands.candidates[0];
  const sel: Selection = select_backend('mnist-mlp', 'gpu', { batch: 2 });
  sel.compiled.free();
  const ok: boolean = (await init_webgpu()) && (await init_webgl(false));
  try {
    rlx.vision('nope');
  } catch (e) {
    if (e instanceof RlxError) void e.status;
  }
  rlx.dispose();

  // Wrong uses must not type-check.
  // @ts-expect-error forward resolves to logits, not a number
  const bad1: number = await model.forward(x, params);
  // @ts-expect-error the learning rate is a number
  await model.trainStep(x, labels, params, { lr: '0.1' });
  // @ts-expect-error node ids are numbers
  g.relu('x');
  // @ts-expect-error a transformer needs its sizes
  rlx.transformer({ vocab: 32 });
  // @ts-expect-error pooling needs a kernel
  g.max_pool2d(conv, {});
  // @ts-expect-error candidates are backend names
  const bad2: 'auto'[] = cands.candidates;

  void [reason, version, slugs, logits, next, resolved, sync, syncStep, sps, nextLogits, all, v, sizes, out, fell, first, ok,
    bad1, bad2, gsum, outs, rowMs];
}
