// check.ts - compile-time test of web/pkg/rlx_web.d.ts: every export used as
// documented (must type-check under --strict), plus @ts-expect-error lines
// that must be rejected.  Run by tests/node/types.test.mjs; never executed.
import init, {
  backend, parse_backend, preferred_backend, start, runtime,
  mlp_forward, mlp_loss, mlp_grads, mlp_train_step,
  mlp_forward_gpu, mlp_grads_gpu, mlp_forward_webgl, mlp_grads_webgl,
  transformer_next_logits, transformer_logits,
  list_vision_models, vision_model_info, clear_cache, VisionBench,
  RlxError, WebGraph,
} from '../../web/pkg/rlx_web.js';
import type {
  VisionModelInfo, SyntheticBatch, ParsedBackend, PreferredBackend, FloatArg, LoadedRuntime, SimdBuild,
} from '../../web/pkg/rlx_web.js';
import type * as Pub from '../../web/pkg/rlx_web.js';

export async function main(): Promise<void> {
  const rt: LoadedRuntime = await init();
  await init(new URL('./rlx_web.wasm', import.meta.url));
  await init({ module_or_path: new Uint8Array(8) });
  start();
  const same: LoadedRuntime = runtime();
  const build: SimdBuild = same.simd;
  const version: string = rt.version() + rt.gemmPath() + build;

  const b: 'cpu' = backend();
  const p: ParsedBackend = parse_backend('WebGPU');
  const pref: PreferredBackend = preferred_backend();
  const parsedOk: 'cpu' | 'webgpu' | 'webgl' | 'auto' = p;

  const x: FloatArg = new Float32Array(8);
  const y: Float32Array = mlp_forward(x, 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  const loss: number = mlp_loss([1, 2, 3, 4], [0, 1], 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  const g: Float32Array = mlp_grads(x, new Float32Array(4), 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  const next: Float32Array = mlp_train_step(x, new Float32Array(4), 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0], 0.1);
  const logits: Float32Array = transformer_next_logits([3, 1, 4], 32, 32, 2, 4, 8, 64, 7);
  const all: Float32Array = transformer_logits(new Float32Array([3, 1]), 32, 32, 2, 4, 8, 64, 7n);

  const slugs: string[] = list_vision_models();
  const info: VisionModelInfo = vision_model_info(slugs[0] ?? 'mnist-cnn');
  const dims: number[] = info.input_dims;
  const flags: boolean = info.webgl_train && info.webgpu_train && info.cpu_train;
  const names: string[] = info.param_names;
  const n: number = info.param_flat_len + info.input_len + info.num_classes + info.param_sizes[0]!;
  const bench = new VisionBench('mnist-cnn');
  const slug: string = bench.slug;
  const params: Float32Array = bench.init_params(42);
  const batch: SyntheticBatch = bench.synthetic_batch(1n, 4);
  const labels: Int32Array = batch.labels;
  const out: Float32Array = bench.forward_cpu(batch.x, params);
  const step: Float32Array = bench.train_step_cpu(batch.x, [1, 2, 3, 4], params, 0.01);
  const step2: Float32Array = bench.train_step_cpu(Array.from(batch.x), labels, Array.from(params), 0.01);
  const stats: Float32Array = bench.bench_cpu(10, 42, 0.01);
  const stats2: Float32Array = bench.bench_cpu(10, 42, 0.01, 8);
  const copy: VisionModelInfo = bench.info();
  const gpuLogits: Float32Array = await bench.forward_webgpu(batch.x, params);
  const gpuStep: Float32Array = await bench.train_step_webgpu(batch.x, labels, params, 0.01);
  const gpuStats: Float32Array = await bench.bench_webgpu(10, 42, 0.01, 8);
  const glLogits: Float32Array = bench.forward_webgl(batch.x, params);
  const glStep: Float32Array = bench.train_step_webgl(batch.x, [1, 2, 3, 4], params, 0.01);
  const glStats: Float32Array = bench.bench_webgl(10, 42, 0.01);
  // @ts-expect-error the WebGPU variants are Promises
  const notSync: Float32Array = bench.forward_webgpu(batch.x, params);
  const yGpu: Float32Array = await mlp_forward_gpu(x, 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  const gGpu: Float32Array = await mlp_grads_gpu(x, [0, 1, 0, 1], 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  const yGl: Float32Array = mlp_forward_webgl(x, 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  const gGl: Float32Array = mlp_grads_webgl(x, [0, 1, 0, 1], 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  // @ts-expect-error mlp_forward_gpu is a Promise
  const yNotSync: Float32Array = mlp_forward_gpu(x, 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  try {
    mlp_forward_webgl(x, 4, 3, 2, new Float32Array(12), [0, 0, 0], new Float32Array(6), [0, 0]);
  } catch (err) {
    const why: string | undefined = (err as RlxError).reason;
  }
  bench.free();
  clear_cache();

  // WebGraph is the one graph API: loader.js's Graph / Session is internal.
  const graph = new WebGraph();
  const xi: number = graph.input('x', [2, 3]);
  const w: number = graph.param('w', [3, 4]);
  const mm: number = graph.matmul(xi, w);
  const shape: number[] = graph.shape(mm);
  const cg = graph.compile_forward(mm, 'cpu', { skipFusion: true });
  cg.free();
  graph.free();
  // @ts-expect-error the loaded module does not build graphs for callers
  runtime().graph();
  // @ts-expect-error Graph is not exported
  type NoGraph = Pub.Graph;
  // @ts-expect-error Session is not exported
  type NoSession = Pub.Session;
  // @ts-expect-error Rlx is not exported
  type NoRlx = Pub.Rlx;
  // @ts-expect-error loadRlx is not exported
  type NoLoadRlx = typeof Pub.loadRlx;
  try {
    vision_model_info('nope');
  } catch (e) {
    if (e instanceof RlxError) {
      const code: number = e.status;
      const name: string = e.statusName;
      const msg: string = e.message;
      void [code, name, msg];
    }
  }

  // Wrong uses must not type-check.
  // @ts-expect-error a string is not a backend label
  const bad1: 'gpu' = backend();
  // @ts-expect-error x must be float data
  mlp_forward('x', 4, 3, 2, x, x, x, x);
  // @ts-expect-error labels are numbers
  bench.train_step_cpu(x, ['a'], params, 0.1);
  // @ts-expect-error the seed is a number or a bigint
  bench.init_params('42');
  // @ts-expect-error mlp_loss returns a number
  const bad2: Float32Array = mlp_loss(x, x, 4, 3, 2, x, x, x, x);
  // @ts-expect-error the info has no such field
  void info.no_such_field;
  // @ts-expect-error lr is required
  mlp_train_step(x, x, 4, 3, 2, x, x, x, x);
  // @ts-expect-error preferred_backend never returns "auto"
  const bad3: 'auto' = preferred_backend();

  void [same, b, pref, parsedOk, y, loss, g, next, logits, all, dims, flags, names, n, slug, out, step, step2, stats,
    stats2, copy, shape, version, bad1, bad2, bad3];
}
