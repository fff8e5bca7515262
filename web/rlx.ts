// rlx.ts - the RLX SDK, the documented way in: a small, typed, camelCase API
// over the runtime modules (./runtime/instance.js, select.js, vision.js,
// models.js: the backend is a parameter there) for pages, Workers and Node.
// ./pkg/rlx_web.js, the spec's snake_case surface over the same modules, is
// the low-level / compatibility layer, reachable as Rlx.wasm.  Compiled to
// rlx.js + rlx.d.ts by `make sdk` (npm typescript).
//
//   import Rlx from './rlx.js';
//   const rlx = await Rlx.init({ webgpu: true });        // GPU backends are optional
//   const model = rlx.vision('mnist-cnn');
//   const params = model.initParams(42);
//   const { x, labels } = model.syntheticBatch(1, 8);
//   const logits = await model.forward(x, params);        // { backend: 'auto' } by default
//   const step = await model.trainStep(x, labels, params, 0.01, { backend: 'webgl' });  // { loss, params, backend }
//   const { grads } = await model.grads(x, labels, params, { backend: 'cpu' });
//   const report = await model.bench({ steps: 50, onProgress: (p) => console.log(p.step, p.loss) });
//   model.resolve('auto');                                // { backend, fallbacks: [{ backend, reason }] }
//   const g = rlx.graph();                                // a WebGraph: describe a model in code
//   const lm = rlx.transformer({ vocab: 32, dim: 32, nLayers: 2, nHeads: 4, ffn: 64, seed: 7 });
//   lm.nextLogits([3, 1, 4]);
//   rlx.dispose();
//
// Backends: the same methods on every backend, each a Promise.  'auto'
// (default) takes the best backend that can run the model here and says why
// it did not take the better ones (`fallbacks`); an explicit 'cpu' |
// 'webgpu' | 'webgl' runs there or rejects with the reason.  WebGPU is
// obtained by Rlx.init (device creation is asynchronous); WebGL2 initialises
// itself on first use.  forwardCpu, trainStepCpu and benchCpu (synchronous)
// are deprecated aliases of forward / trainStep / bench with { backend: 'cpu' }.
import type * as Low from './pkg/rlx_web.js';
import type {
  BackendEnvironment, BackendFallback, BackendName, BackendRequest, CompiledGraph, InitInput, Seed,
  SimdBuild, SimdChoice, VisionModelInfo, WebGraph,
} from './pkg/rlx_web.js';
// The compatibility module, only as Rlx.wasm: the SDK itself runs on the runtime modules below.
import * as low from './pkg/rlx_web.js';
// The runtime modules (plain JS without declaration files: their types are
// those of ./pkg/rlx_web.d.ts, which re-exports them, and Bench below).
// @ts-ignore: a JavaScript module without a declaration file
import * as instanceJs from './runtime/instance.js';
// @ts-ignore: a JavaScript module without a declaration file
import * as selectJs from './runtime/select.js';
// @ts-ignore: a JavaScript module without a declaration file
import * as visionJs from './runtime/vision.js';
// @ts-ignore: a JavaScript module without a declaration file
import * as modelsJs from './runtime/models.js';
// @ts-ignore: a JavaScript module without a declaration file
import { RlxError as RlxErrorJs } from './runtime/loader.js';

export type { BackendEnvironment, BackendFallback, BackendName, BackendRequest, VisionModelInfo, WebGraph, CompiledGraph };
export type { SimdBuild, SimdChoice };
/** An error from RLX: status is the rlx_status code; reason, where given, says why a backend could not run. */
export const RlxError = RlxErrorJs as typeof Low.RlxError;
export type RlxError = Low.RlxError;
// GGUF language models: ./runtime/llm.js over pkg/rlx_llm.wasm (plain JS; its types are
// the interfaces below, so rlx.d.ts stands alone).
// @ts-ignore: a JavaScript module without a declaration file
import * as llm from './runtime/llm.js';
// @ts-ignore: generated from include/rlx.h (tools/gen_constants.py), without a declaration file
import { STATUS } from './runtime/constants.js';

/** Float data. */
export type Floats = Float32Array | number[];
/** Class ids in [0, num_classes). */
export type Labels = Int32Array | Float32Array | number[];

/** ./runtime/vision.js's VisionBench: the backend is the first argument (a Promise on 'webgpu'). */
interface Bench extends Pick<Low.VisionBench, 'slug' | 'info' | 'init_params' | 'synthetic_batch' | 'free'> {
  forward(backend: BackendName, x: Floats, params: Floats): Float32Array | Promise<Float32Array>;
  train_step(backend: BackendName, x: Floats, labels: Labels, params: Floats, lr: number): Float32Array | Promise<Float32Array>;
  grads(backend: BackendName, x: Floats, labels: Labels, params: Floats): Float32Array | Promise<Float32Array>;
  bench(backend: BackendName, steps: number, seed: Seed, lr: number, batch?: number): Float32Array | Promise<Float32Array>;
}

/** What the SDK uses of the runtime modules. */
interface Runtime extends Pick<typeof Low, 'runtime' | 'init_webgpu' | 'init_webgl' | 'backend_environment' |
  'list_vision_models' | 'select_backend' | 'transformer_next_logits' | 'transformer_logits' | 'WebGraph'> {
  init: typeof Low.default;
  VisionBench: new (slug: string) => Bench;
}
const run = { ...instanceJs, ...selectJs, ...visionJs, ...modelsJs } as Runtime;

export interface InitOptions {
  /** Where rlx_web.wasm is (default: next to pkg/rlx_web.js, or its relaxed-SIMD build as `simd` picks). */
  wasm?: InitInput;
  /** Which build to load when `wasm` is not given (default 'auto'; see SimdChoice). */
  simd?: SimdChoice;
  /**
   * CPU threads, 1 .. 64 (default: half the logical cores): more than 1 loads
   * the threaded build (rlx_web_threads.wasm: helper Workers on a shared
   * memory) where SharedArrayBuffer exists (a cross-origin isolated page,
   * Node); results are bitwise the same for any count.  `threads` and
   * `threadsWhy` of the Rlx say what runs and why.
   */
  threads?: number;
  /**
   * WebGPU: true (default) uses navigator.gpu when there is one; a GPU object
   * (npm `webgpu`'s create([]) in Node) or a GPUDevice; false turns it off.
   */
  webgpu?: boolean | object;
  /** WebGL2: true (default) uses it when this build has its executor; false turns it off. */
  webgl?: boolean;
}

export interface RunOptions {
  /** Default 'auto'. */
  backend?: BackendRequest;
}

export interface TrainOptions extends RunOptions {
  /** Learning rate of the SGD step (default 0.01). */
  lr?: number;
}

export interface StepResult {
  /** The loss before the step. */
  loss: number;
  /** The parameters after p -= lr * grad. */
  params: Float32Array;
  /** What ran it. */
  backend: BackendName;
}

export interface GradsResult {
  /** The loss at params. */
  loss: number;
  /** dL/dparams, in the flat order of the params. */
  grads: Float32Array;
  /** What ran it. */
  backend: BackendName;
}

export interface BenchProgress {
  step: number;
  steps: number;
  loss: number;
  backend: BackendName;
}

export interface BenchOptions extends TrainOptions {
  /** SGD steps (default 20). */
  steps?: number;
  /** Seed of the params and the synthetic batch (default 42). */
  seed?: Seed;
  /** Samples per step (default 1). */
  batch?: number;
  /** Called after every step. */
  onProgress?: (p: BenchProgress) => void;
}

export interface BenchResult {
  slug: string;
  backend: BackendName;
  /** Better backends not used, and why. */
  fallbacks: BackendFallback[];
  steps: number;
  batch: number;
  /** Loss of every step (before its update). */
  losses: Float32Array;
  initialLoss: number;
  finalLoss: number;
  seconds: number;
  stepsPerSec: number;
  samplesPerSec: number;
}

export interface Resolved {
  backend: BackendName;
  fallbacks: BackendFallback[];
}

export interface TransformerConfig {
  vocab: number;
  dim: number;
  nLayers: number;
  nHeads: number;
  /** Default dim / nHeads. */
  headDim?: number;
  ffn: number;
  /** Seed of the synthesized weights (default 0). */
  seed?: Seed;
}

function fail(message: string): Error {
  return new RlxError(STATUS.INVALID_ARG, message);
}

/** v in a few words for an error message (never calls into v). */
function shown(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an Array of ${v.length}`;
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object' || typeof v === 'function' || typeof v === 'symbol') return typeof v;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

/** An options argument: undefined gives {}; null, an Array or a non-object throws "fn: options must be an object". */
function optionsOf<T extends object>(fn: string, v: T | undefined, what = 'options'): T {
  if (v === undefined) return {} as T;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw fail(`${fn}: ${what} must be an object or undefined, got ${shown(v)}`);
  return v;
}

function disposedError(what: string): Error {
  return new RlxError(STATUS.STATE, `${what} was disposed`);
}

/** Lets the event loop run (a page stays responsive during long loops). */
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

/** What a method of VisionModel runs: an entry point of VisionBench, given the backend. */
type BenchOp = 'forward' | 'train_step' | 'grads';

/**
 * One vision model: init, data, forward, gradients, train step and
 * benchmark, the same methods on every backend ({ backend }: 'auto' by
 * default, or 'cpu' | 'webgpu' | 'webgl'), each returning a Promise.  The
 * work is done by VisionBench of ./runtime/vision.js (forward(backend, ...),
 * train_step, grads, bench): the SDK only chooses the backend, says why, and
 * shapes the results.
 */
export class VisionModel {
  readonly slug: string;
  readonly info: VisionModelInfo;
  private bench_: Bench | null;
  private resolved = new Map<string, Resolved>();

  /** @internal use Rlx.vision(). */
  constructor(slug: string) {
    this.bench_ = new run.VisionBench(slug);
    this.info = this.bench_.info();
    this.slug = this.info.slug;
  }

  #live(): Bench {
    if (!this.bench_) throw disposedError(`the model ${this.slug}`);
    return this.bench_;
  }

  /** He-style uniform init from seed, biases zero (param_flat_len values). */
  initParams(seed: Seed = 42): Float32Array {
    return this.#live().init_params(seed);
  }

  /** Inputs uniform in [-1, 1) and labels (seed + i) mod 10. */
  syntheticBatch(seed: Seed = 1, batch = 1): { x: Float32Array; labels: Int32Array } {
    return this.#live().synthetic_batch(seed, batch);
  }

  #batchOf(x: Floats): number {
    const n = this.info.input_len;
    if (!x || typeof x !== 'object' || typeof x.length !== 'number' || x.length === 0 || x.length % n !== 0) {
      throw fail(`${this.slug}: x must hold batch * ${n} values, got ${typeof x?.length === 'number' ? x.length : shown(x)}`);
    }
    return x.length / n;
  }

  /**
   * The backend that runs this model for a batch size and a request (chosen
   * once, then cached): { backend, fallbacks }, where fallbacks says why each
   * better backend was not taken.  training: the train step (default) or forward.
   */
  resolve(request: BackendRequest = 'auto', options?: { training?: boolean; batch?: number }): Resolved {
    const { training = true, batch = 1 } = optionsOf(`${this.slug}: resolve`, options);
    this.#live();
    if (typeof request !== 'string') throw fail(`${this.slug}: backend must be 'auto', 'cpu', 'webgpu' or 'webgl', got ${shown(request)}`);
    if (!Number.isInteger(batch) || batch < 1) throw fail(`${this.slug}: batch must be an integer >= 1, got ${shown(batch)}`);
    const key = `${training ? 'train' : 'forward'}:${batch}:${request}`;
    let r = this.resolved.get(key);
    if (!r) {
      const sel = run.select_backend(this.slug, request, { batch, training });
      sel.compiled.free(); // a probe: VisionBench compiles (and caches) what it runs
      r = { backend: sel.backend, fallbacks: sel.fallbacks };
      this.resolved.set(key, r);
    }
    return r;
  }

  /** Runs op of VisionBench on the resolved backend: its result and the backend. */
  async #call(op: BenchOp, training: boolean, x: Floats, request: BackendRequest,
    args: unknown[]): Promise<{ out: Float32Array; backend: BackendName }> {
    const { backend } = this.resolve(request, { training, batch: this.#batchOf(x) });
    const bench = this.#live() as unknown as Record<BenchOp, (...a: unknown[]) => Float32Array | Promise<Float32Array>>;
    return { out: await bench[op](backend, x, ...args), backend };
  }

  /** Logits [batch, num_classes] for x [batch, ...input_dims]. */
  async forward(x: Floats, params: Floats, options?: RunOptions): Promise<Float32Array> {
    const { backend = 'auto' } = optionsOf(`${this.slug}: forward`, options);
    return (await this.#call('forward', false, x, backend, [params])).out;
  }

  /**
   * One SGD step on (x, labels): the loss before it and the updated params.
   * The learning rate as a number, or in the options ({ lr, backend }; default 0.01).
   */
  async trainStep(x: Floats, labels: Labels, params: Floats, lr?: number | TrainOptions, options?: RunOptions): Promise<StepResult> {
    const fn = `${this.slug}: trainStep`;
    const opts: TrainOptions = typeof lr === 'object' ? optionsOf(fn, lr) : { ...optionsOf(fn, options), lr: lr ?? 0.01 };
    const rate = opts.lr ?? 0.01;
    if (typeof rate !== 'number' || !Number.isFinite(rate)) throw fail(`${fn}: lr must be a finite number, got ${shown(rate)}`);
    const { out, backend } = await this.#call('train_step', true, x, opts.backend ?? 'auto', [labels, params, rate]);
    return { loss: out[0]!, params: out.slice(1), backend };
  }

  /** Gradients of the mean softmax cross-entropy at params (no update), in the flat order of the params. */
  async grads(x: Floats, labels: Labels, params: Floats, options?: RunOptions): Promise<GradsResult> {
    const { backend = 'auto' } = optionsOf(`${this.slug}: grads`, options);
    const { out, backend: used } = await this.#call('grads', true, x, backend, [labels, params]);
    return { loss: out[0]!, grads: out.slice(1), backend: used };
  }

  /**
   * `steps` SGD steps on one synthetic batch (params and batch from seed),
   * yielding to the event loop between steps; onProgress after each.
   */
  async bench(options?: BenchOptions): Promise<BenchResult> {
    const { steps = 20, seed = 42, lr = 0.01, batch = 1, backend = 'auto', onProgress } = optionsOf(`${this.slug}: bench`, options);
    if (!Number.isInteger(steps) || steps < 1) throw fail(`bench: steps must be an integer >= 1, got ${shown(steps)}`);
    if (onProgress !== undefined && typeof onProgress !== 'function') throw fail(`bench: onProgress must be a function, got ${shown(onProgress)}`);
    const resolved = this.resolve(backend, { training: true, batch });
    let params = this.initParams(seed);
    const { x, labels } = this.syntheticBatch(seed, batch);
    const losses = new Float32Array(steps);
    let lastYield = performance.now();
    const t0 = performance.now();
    for (let i = 0; i < steps; i++) {
      const r = await this.trainStep(x, labels, params, lr, { backend });
      params = r.params;
      losses[i] = r.loss;
      onProgress?.({ step: i + 1, steps, loss: r.loss, backend: r.backend });
      if (performance.now() - lastYield > 30) {
        await yieldToEventLoop();
        lastYield = performance.now();
      }
    }
    const seconds = Math.max((performance.now() - t0) / 1000, 1e-9);
    return {
      slug: this.slug, backend: resolved.backend, fallbacks: resolved.fallbacks, steps, batch, losses,
      initialLoss: losses[0]!, finalLoss: losses[steps - 1]!, seconds,
      stepsPerSec: steps / seconds, samplesPerSec: (steps * batch) / seconds,
    };
  }

  /** @deprecated use `await forward(x, params, { backend: 'cpu' })`. Logits on the CPU, synchronously. */
  forwardCpu(x: Floats, params: Floats): Float32Array {
    return this.#live().forward('cpu', x, params) as Float32Array;
  }

  /** @deprecated use `await trainStep(x, labels, params, lr, { backend: 'cpu' })`. One SGD step on the CPU, synchronously. */
  trainStepCpu(x: Floats, labels: Labels, params: Floats, lr: number): { loss: number; params: Float32Array } {
    const out = this.#live().train_step('cpu', x, labels, params, lr) as Float32Array;
    return { loss: out[0]!, params: out.slice(1) };
  }

  /** @deprecated use `await bench({ steps, seed, lr, batch, backend: 'cpu' })`. `steps` SGD steps inside wasm. */
  benchCpu(steps: number, seed: Seed, lr: number, batch = 1): { initialLoss: number; finalLoss: number; stepsPerSec: number } {
    const [initialLoss, finalLoss, stepsPerSec] = this.#live().bench('cpu', steps, seed, lr, batch) as Float32Array;
    return { initialLoss: initialLoss!, finalLoss: finalLoss!, stepsPerSec: stepsPerSec! };
  }

  /** Frees the compiled graphs of the GPU paths; the model is unusable after. */
  dispose(): void {
    this.resolved.clear();
    this.bench_?.free();
    this.bench_ = null;
  }
}

/** A decoder-only transformer with weights synthesized from its seed (CPU). */
export class Transformer {
  readonly config: Required<TransformerConfig>;
  private disposed = false;

  /** @internal use Rlx.transformer(). */
  constructor(config: TransformerConfig) {
    if (!config || typeof config !== 'object') throw fail(`transformer: config must be an object, got ${shown(config)}`);
    const { vocab, dim, nLayers, nHeads, ffn } = config;
    const perHead = typeof dim === 'number' && typeof nHeads === 'number' ? dim / nHeads : NaN;
    const headDim = config.headDim ?? (Number.isInteger(perHead) ? perHead : NaN);
    this.config = { vocab, dim, nLayers, nHeads, headDim, ffn, seed: config.seed ?? 0 };
  }

  #args(): [number, number, number, number, number, number, Seed] {
    if (this.disposed) throw disposedError('the transformer');
    const c = this.config;
    return [c.vocab, c.dim, c.nLayers, c.nHeads, c.headDim, c.ffn, c.seed];
  }

  /** Logits of the next token: vocab values. */
  nextLogits(tokens: Floats): Float32Array {
    return run.transformer_next_logits(tokens, ...this.#args());
  }

  /** Logits of every position: tokens.length * vocab values. */
  logits(tokens: Floats): Float32Array {
    return run.transformer_logits(tokens, ...this.#args());
  }

  dispose(): void {
    this.disposed = true;
  }
}

/** The SDK: one per page or Worker (they share the wasm instance). */
export class Rlx {
  /** The low-level / compatibility module (./pkg/rlx_web.js): mlp_*, VisionBench, WebGraph, backend selection, ... */
  readonly wasm: typeof low = low;
  private owned = new Set<{ dispose(): void } | { free(): void }>();
  private disposed = false;

  private constructor() {}

  /** Loads the wasm and, unless turned off, the GPU backends; never fails for a missing GPU. */
  static async init(options?: InitOptions): Promise<Rlx> {
    options = optionsOf('Rlx.init', options);
    await run.init({ module_or_path: options.wasm, simd: options.simd, threads: options.threads });
    const webgpu = options.webgpu ?? true;
    if (webgpu !== false) await run.init_webgpu(webgpu === true ? undefined : webgpu);
    else await run.init_webgpu(false);
    await run.init_webgl(options.webgl ?? true);
    return new Rlx();
  }

  #live(): void {
    if (this.disposed) throw disposedError('this Rlx');
  }

  #own<T extends { dispose(): void } | { free(): void }>(x: T): T {
    this.owned.add(x);
    return x;
  }

  /** The library's version. */
  get version(): string {
    return run.runtime().version();
  }

  /** Which build of the module runs: 'relaxed' (relaxed SIMD) or 'simd128'. */
  get simd(): SimdBuild {
    return run.runtime().simd;
  }

  /** Threads the CPU kernels run on (InitOptions.threads where the threaded build runs, else 1). */
  get threads(): number {
    return run.runtime().threads;
  }

  /** Why that many threads run (e.g. 'threads is 1', or the page is not cross-origin isolated). */
  get threadsWhy(): string {
    return run.runtime().threadsWhy;
  }

  /** What runs here: each backend available or the reason it is not. */
  backends(): BackendEnvironment {
    return run.backend_environment();
  }

  /** Canonical slugs of the vision models. */
  visionModels(): string[] {
    return run.list_vision_models();
  }

  /** A vision model by slug or alias (mnist-cnn, mnist-mlp, cifar-cnn, resnet). */
  vision(slug: string): VisionModel {
    this.#live();
    return this.#own(new VisionModel(slug));
  }

  /** A new WebGraph: describe a model in code, then compile_forward / compile_backward. */
  graph(): WebGraph {
    this.#live();
    return this.#own(new run.WebGraph());
  }

  /** A decoder-only transformer (RMSNorm, RoPE, causal attention, SwiGLU). */
  transformer(config: TransformerConfig): Transformer {
    this.#live();
    return this.#own(new Transformer(config));
  }

  /** Frees every model, graph and transformer made through this Rlx. */
  dispose(): void {
    for (const x of this.owned) {
      if ('dispose' in x) x.dispose();
      else x.free();
    }
    this.owned.clear();
    this.disposed = true;
  }
}

// ---- GGUF language models -------------------------------------------------------

/** A GGUF file: a URL (fetched; in Node also a path), a File or Blob, a Response, or its bytes. */
export type GgufSource = string | URL | Blob | Response | ArrayBuffer | ArrayBufferView;
/** A model: one GGUF source, or the parts of a split model (x-00001-of-0000N.gguf ...) as URLs, paths or Files. */
export type GgufModelSource = GgufSource | ReadonlyArray<string | URL | Blob>;

/** What loadGguf's onProgress gets: bytes, a download's resume / restart / cache events, a split model's part. */
export interface GgufLoadProgress {
  loaded?: number;
  total?: number | null;
  stage?: 'compiling' | 'resume' | 'restart' | 'cached' | 'stale';
  /** 'resume': the attempt (of retries in a row), the byte it resumes from and why the body stopped. */
  attempt?: number;
  retries?: number;
  at?: number;
  reason?: string;
  /** 'cached': whether the server confirmed the kept file (false: it could not be reached). */
  checked?: boolean;
  part?: number;
  parts?: number;
}

export interface LoadGgufOptions {
  /** KV cache positions; 0 or undefined: the model's context length, at most 4096. */
  nCtx?: number;
  /**
   * Called as the file's bytes arrive (total null when the size is not known in advance); then once
   * with stage 'compiling' while a GPU backend builds its pipelines and uploads the weights; a
   * download's resumes, restarts and cache use as they happen.
   */
  onProgress?: (p: GgufLoadProgress) => void;
  /**
   * An http(s) URL's download kept in this browser's Origin Private File System under its URL
   * (true, the default where it exists: resumed after a reload, checked against the server
   * before use) or not ('no').
   */
  cache?: true | 'no';
  /** Resumes of a download that stopped, in a row (0 .. 100, default 4). */
  retries?: number;
  /** Aborts a download. */
  signal?: AbortSignal;
  /** Where rlx_llm.wasm is (default: pkg/rlx_llm.wasm next to runtime/llm.js). */
  wasm?: string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
  /** Which build of rlx_llm.wasm to load when `wasm` is not given (default 'auto'; see SimdChoice). */
  simd?: SimdChoice;
  /**
   * 'auto' (the default: WebGPU on a hardware adapter, else WebGL2 on a
   * hardware renderer, else the CPU), 'cpu' (wasm), 'webgpu'
   * (pkg/rlx_llm_gpu.wasm) or 'webgl' (pkg/rlx_llm_webgl.wasm); a GPU
   * backend that cannot run here is refused with an RlxError whose reason is
   * 'unavailable'.  info.backend says which runs, info.fallbacks why a
   * better one did not.
   */
  backend?: 'auto' | 'cpu' | 'webgpu' | 'webgl';
  /** For WebGPU: a GPUDevice, or a GPU to ask for one (default navigator.gpu; in Node npm `webgpu`'s). */
  gpu?: { requestAdapter(...args: never[]): Promise<unknown> } | { createBuffer(...args: never[]): unknown };
  /** Where rlx_llm_gpu.wasm is (default: pkg/rlx_llm_gpu.wasm next to runtime/llm.js). */
  gpuWasm?: string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
  /** Where rlx_llm_webgl.wasm is (default: pkg/rlx_llm_webgl.wasm next to runtime/llm.js). */
  webglWasm?: string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
  /**
   * On WebGPU (without lora or train): true (the default) streams the file to
   * GPU buffers, never whole in wasm memory (info.streamed); false reads it
   * into the module's memory first (the wasm32 budget applies).
   */
  stream?: boolean;
  /** On WebGPU: bytes a tensor may take, below the device's maxStorageBufferBindingSize (a larger one is refused). */
  gpuBindingLimit?: number;
  /**
   * On the CPU: products with block-quantized weights round their input to
   * 8 bits per 32 values first (as llama.cpp does) and run as int8 dot
   * products (faster generation).  Refused with backend 'webgpu' / 'webgl';
   * not applied where 'auto' picks a GPU (info.xq8).
   */
  xq8?: boolean;
  /**
   * Threads of the CPU steps, 1 .. 64 (default: half the logical cores, at
   * least 1).  More than 1 loads the module's threaded build
   * (rlx_llm_threads.wasm, with train rlx_llm_train_threads.wasm: helper
   * Workers on a shared memory) where SharedArrayBuffer exists (a
   * cross-origin isolated page or Worker, or Node), the one-thread build
   * otherwise; results (fine-tuning's losses and adapters too) are bitwise
   * the same for any count.  info.threads and info.threadsWhy say what runs and why.
   */
  threads?: number;
  /**
   * LoRA adapters (GGUF files as llama.cpp loads them) applied while
   * generating, on every backend: each adapted product gets scale * alpha /
   * rank times its low-rank term (scale default 1).  info.nLora,
   * nLoraPairs and loraBytes say what was applied.
   */
  lora?: ReadonlyArray<{ source: GgufSource; scale?: number }>;
  /**
   * true: the module's training build, so that GgufModel.finetune runs:
   * pkg/rlx_llm_train.wasm on the CPU, rlx_llm_train_gpu.wasm with
   * backend 'webgpu', rlx_llm_train_webgl.wasm with 'webgl' (or
   * `trainWasm`; the GPU builds generate and fine-tune on that GPU);
   * backend 'auto' picks as for generation (a hardware GPU, else the CPU
   * with the reasons in info.fallbacks).
   */
  train?: boolean;
  /** Where the training build is (default: pkg/rlx_llm_train.wasm or its relaxed-SIMD build, rlx_llm_train_gpu.wasm or rlx_llm_train_webgl.wasm, next to runtime/llm.js). */
  trainWasm?: string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
  /** Where the JSON Schema converter is, which the first jsonSchema loads (default: pkg/rlx_json_schema.wasm, next to runtime/llm.js). */
  schemaWasm?: string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
}

/** Fine-tuning data as bytes or a string (a text), or { text } / { jsonl } ({"prompt", "completion"} lines). */
export type FinetuneSource = string | ArrayBuffer | ArrayBufferView | { text: string | ArrayBuffer | ArrayBufferView } |
  { jsonl: string | ArrayBuffer | ArrayBufferView };
/** The training data, with validation data of its own (else options.validFraction of it is held out). */
export type FinetuneData = string | ArrayBuffer | ArrayBufferView |
  (({ text: string | ArrayBuffer | ArrayBufferView } | { jsonl: string | ArrayBuffer | ArrayBufferView }) & { valid?: FinetuneSource });

/** What each fine-tuning step reports. */
export interface FinetuneProgress {
  step: number; steps: number; loss: number;
  /** The last validation loss taken (every evalEvery steps and after the last), null before one. */
  validLoss: number | null;
  tokensPerSecond: number | null; etaSeconds: number;
}

/** GgufModel.finetune's options: those of `rlx finetune`, with its defaults. */
export interface FinetuneOptions {
  /** The adapters' rank (default 8) and alpha (their products scaled by alpha / rank; default 16). */
  rank?: number; alpha?: number;
  /** The weights of every layer adapted: attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down, or all (default 'attn_q,attn_v'). */
  targets?: string | ReadonlyArray<string>;
  /** Tokens per window (default 128, at most the model's context), windows per step (default 4). */
  seq?: number; batch?: number;
  /** Optimizer steps (default: one pass over the training windows). */
  steps?: number;
  /** Learning rate (default 1e-3). */
  lr?: number;
  optimizer?: 'adamw' | 'sgd';
  /** Seeds A's initial values and the window order (default 1). */
  seed?: number | bigint;
  /** The training windows in a seeded order (default true) or in file order. */
  shuffle?: boolean;
  /** The share of the windows held out for validation without data.valid (default 0.1). */
  validFraction?: number;
  /** The validation loss every this many steps and after the last (default: ten times a run). */
  evalEvery?: number;
  /** Start from this adapter (trained for this model with the same rank, alpha and targets). */
  adapterIn?: GgufSource;
  onProgress?: (p: FinetuneProgress) => void;
  /** Stops after the current step; the result still holds the adapter. */
  signal?: AbortSignal;
  /** Where the steps run (default: the model's backend): 'webgpu' / 'webgl' need a model loaded with { train: true, backend: 'webgpu' / 'webgl' }. */
  backend?: 'cpu' | 'webgpu' | 'webgl';
}

export interface FinetuneResult {
  /** llama.cpp's LoRA GGUF (f32): loadGguf's options.lora, `rlx generate --lora` and llama.cpp load it. */
  adapter: Uint8Array;
  /** Steps taken, their training losses, the validation losses taken. */
  steps: number; losses: number[]; validLosses: Array<{ step: number; loss: number }>;
  /** Whether options.signal ended the run early. */
  stopped: boolean;
}

/** What a model is (rlx_llm_info, camelCase) and the size of its file. */
export interface GgufInfo {
  arch: string; name: string; tokenizer: string; weightTypes: string;
  nVocab: number; nEmbd: number; nLayer: number; nHead: number; nHeadKv: number; headDim: number; nFf: number;
  nCtxTrain: number; nCtx: number; ropeTheta: number; rmsEps: number;
  ropeNeox: boolean; tiedOutput: boolean; addBos: boolean;
  /** Whether products round their input to 8 bits (LoadGgufOptions.xq8). */
  xq8: boolean;
  /** -1 when the file has none. */
  bos: number; eos: number;
  nParams: number; weightBytes: number; kvBytes: number; fileBytes: number;
  /** The weights were streamed to the GPU's buffers (LoadGgufOptions.stream), not held in wasm memory. */
  streamed: boolean;
  /** LoRA adapters applied (LoadGgufOptions.lora), the products they adapt, their tensor bytes. */
  nLora: number; nLoraPairs: number; loraBytes: number;
  /** Which build of rlx_llm.wasm runs the model. */
  simd: SimdBuild;
  /** Threads the CPU steps run on (LoadGgufOptions.threads), and why that many (e.g. no cross-origin isolation). */
  threads: number; threadsWhy: string;
  /** What evaluates the model, and why a better backend did not ('auto'). */
  backend: 'cpu' | 'webgpu' | 'webgl';
  fallbacks: ReadonlyArray<{ readonly backend: 'webgpu' | 'webgl'; readonly reason: string }>;
  /** On a GPU: the software renderer the adapter or WebGL2 context is (e.g. 'SwiftShader'), when it is one. */
  software?: string;
}

export interface TokenizeOptions {
  /** Default: as the file says. */
  addBos?: boolean;
  /** Special-token text ("<|im_start|>") becomes those tokens (default true). */
  special?: boolean;
}

/** A JSON schema as an object (options.jsonSchema, response_format.json_schema.schema). */
export type JsonSchema = { [keyword: string]: unknown };

export interface GenerateOptions {
  /** Default 64. */
  maxTokens?: number;
  /** 0 (default), or anything below 1e-6 (RLX_LLM_MIN_TEMPERATURE): greedy. */
  temperature?: number;
  topK?: number; topP?: number; minP?: number; repeatPenalty?: number; repeatLastN?: number;
  seed?: number | bigint;
  /** The text before the first of these is kept. */
  stop?: string[];
  /** GBNF text: the output follows the grammar (give grammar or jsonSchema, not both). */
  grammar?: string;
  /** A JSON schema (an object or its JSON text): the output is JSON that follows it. */
  jsonSchema?: JsonSchema | string;
  /** Each token with the text it completes (possibly ''); return false to stop. */
  onToken?: (text: string, id: number) => boolean | void;
  signal?: AbortSignal;
}

export interface GenerateResult {
  text: string;
  ids: number[];
  promptIds: number[];
  stoppedBy: 'maxTokens' | 'eog' | 'stop' | 'context' | 'callback' | 'abort';
  stats: {
    promptTokens: number; generatedTokens: number; promptSeconds: number; generateSeconds: number;
    promptTokensPerSecond: number | null; generateTokensPerSecond: number | null;
  };
}

/** One generated token and the text it completes (possibly ''). */
export interface GeneratedPiece { text: string; id: number; }

/** What generate() (and chat()) returns: the result's Promise and an async iterable of the pieces. */
export interface Generation<R = GenerateResult> extends AsyncIterable<GeneratedPiece> {
  then<A = R, B = never>(onFulfilled?: ((r: R) => A | PromiseLike<A>) | null,
    onRejected?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<A | B>;
  catch<B = never>(onRejected?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<R | B>;
  finally(onFinally?: (() => void) | null): Promise<R>;
}

/** A message of a conversation (the system prompt first only; chat()'s last message a user's). */
export interface ChatMessage { role: 'system' | 'user' | 'assistant'; content: string; }

/** The chat template in force and why (name and source null, why the reason, when none fits the file). */
export interface ChatTemplate {
  /** 'jinja' for a Jinja template, else the built-in template's name. */
  readonly name: 'jinja' | 'chatml' | 'llama3' | 'llama2' | 'mistral' | 'gemma' | 'phi3' | 'zephyr' | null;
  /** The file's Jinja, options.jinja, a built-in one detected (or chatml: the file has none), or one named. */
  readonly source: 'file' | 'option' | 'builtin' | 'named' | null;
  readonly why: string;
}

export interface ChatTemplateOptions {
  /** A built-in template by name, instead of the file's. */
  template?: 'chatml' | 'llama3' | 'llama2' | 'mistral' | 'gemma' | 'phi3' | 'zephyr';
  /** A Jinja chat template instead of the file's tokenizer.chat_template. */
  jinja?: string;
}

export interface ChatOptions extends GenerateOptions, ChatTemplateOptions {
  /** A prompt that leaves no room: 'refuse' (default, an RlxError) or 'drop' the oldest turns after the system prompt. */
  overflow?: 'refuse' | 'drop';
}

export interface ChatResult extends Omit<GenerateResult, 'stats'> {
  finishReason: 'stop' | 'length' | 'abort';
  template: ChatTemplate;
  stats: Omit<GenerateResult['stats'], 'promptTokens'> & {
    /** The whole prompt, of which cachedTokens came from the KV cache and evaluatedTokens were evaluated. */
    promptTokens: number; cachedTokens: number; evaluatedTokens: number;
    /** Messages left out by overflow 'drop'. */
    droppedMessages: number;
  };
}

/** OpenAI's chat completions request (the subset read; anything else is refused). */
export interface ChatCompletionRequest {
  messages: ChatMessage[];
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number; max_completion_tokens?: number;
  temperature?: number; top_p?: number; seed?: number;
  stop?: string | string[];
  n?: 1;
  /** The reply as text (the default), any JSON object, or JSON that follows a schema (any JSON object without one). */
  response_format?: { type: 'text' } | { type: 'json_object' } |
    { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: JsonSchema; strict?: boolean | null } };
  signal?: AbortSignal;
}

export interface ChatCompletion {
  id: string; object: 'chat.completion'; created: number; model: string; system_fingerprint: null;
  choices: [{ index: 0; message: { role: 'assistant'; content: string }; logprobs: null; finish_reason: 'stop' | 'length' | 'abort' }];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

export interface ChatCompletionChunk {
  id: string; object: 'chat.completion.chunk'; created: number; model: string; system_fingerprint: null;
  /** Empty in the usage chunk (stream_options.include_usage). */
  choices: Array<{ index: 0; delta: { role?: 'assistant'; content?: string }; logprobs: null; finish_reason: 'stop' | 'length' | 'abort' | null }>;
  usage?: ChatCompletion['usage'];
}

/** A loaded GGUF model (free() gives its memory back). */
export interface GgufModel {
  readonly info: GgufInfo;
  /** Tokens in the context. */
  readonly position: number;
  tokenize(text: string, options?: TokenizeOptions): number[];
  detokenize(ids: ArrayLike<number>): string;
  /** Appends ids to the context; the logits after the last one (a Promise of them on WebGPU: await works on both). */
  eval(ids: ArrayLike<number>): Float32Array | Promise<Float32Array>;
  /** The logits after ids from an empty context (reset() then eval(ids)); a Promise on WebGPU. */
  logits(ids: ArrayLike<number>): Float32Array | Promise<Float32Array>;
  /**
   * The context starts from the prompt (text, or ids).  Await the result,
   * or iterate the pieces as they come (leaving the loop stops it).
   */
  generate(prompt: string | ArrayLike<number>, options?: GenerateOptions): Generation;
  /** The chat template in force (as loaded; chat() says which one each reply used). */
  readonly chatTemplate: ChatTemplate | null;
  /**
   * The conversation's next reply.  The KV cache is kept between calls: only
   * the tokens after what it holds are evaluated (an edited turn rolls back).
   */
  chat(messages: ChatMessage[], options?: ChatOptions): Generation<ChatResult>;
  /** The prompt chat() would evaluate, not run. */
  chatPrompt(messages: ChatMessage[], options?: ChatTemplateOptions & { addGenerationPrompt?: boolean }):
    Promise<{ text: string; ids: number[]; template: ChatTemplate }>;
  /** OpenAI's chat completions over chat(). */
  createChatCompletion(request: ChatCompletionRequest & { stream: true }): Promise<AsyncIterable<ChatCompletionChunk>>;
  createChatCompletion(request: ChatCompletionRequest & { stream?: false }): Promise<ChatCompletion>;
  /** LoRA fine-tuning (a model loaded with { train: true }), as `rlx finetune`. */
  finetune(data: FinetuneData, options?: FinetuneOptions): Promise<FinetuneResult>;
  reset(): void;
  free(): void;
}

/**
 * Loads a GGUF language model (llama, qwen2, qwen3; every GGUF weight type
 * this library reads) into its own instance of pkg/rlx_llm.wasm: the bytes
 * are streamed into one buffer that the model reads in place.  A file past
 * the wasm32 budget (3.5 GiB) is refused before it is read.
 *
 *   const model = await loadGguf(file, { onProgress: ({ loaded, total }) => ... });
 *   const { text, stats } = await model.generate('Once upon a time', { maxTokens: 32, onToken: (t) => ... });
 */
export function loadGguf(source: GgufModelSource, options?: LoadGgufOptions): Promise<GgufModel> {
  return (llm as { loadGguf(s: GgufModelSource, o?: LoadGgufOptions): Promise<GgufModel> }).loadGguf(source, options);
}

export default Rlx;
