// rlx_web.d.ts - types of rlx_web.js, the browser entry point of RLX (with
// WebGraph of ../runtime/webgraph.js, its one graph API, and the backend
// selection of ../runtime/backends.js).  Checked by tests/types/check.ts and
// tests/types/sdk_check.ts (tsc --strict).

/** What init() can load: a URL or path, the bytes, or a compiled module. */
export type InitInput = string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;
/** A build of a wasm module: relaxed SIMD (f32x4.relaxed_madd in the kernels) or plain SIMD128. */
export type SimdBuild = 'relaxed' | 'simd128';
/**
 * Which build to load (../runtime/simd.js): 'auto' takes the relaxed one where
 * the engine validates relaxed SIMD, 'simd128' forces the plain one, 'relaxed'
 * the relaxed one (refused where the engine lacks it).
 */
export type SimdChoice = 'auto' | SimdBuild;

/** Float data: a Float32Array or an Array of numbers. */
export type FloatArg = Float32Array | number[];
/** Class ids: integers in [0, num_classes). */
export type LabelArg = Int32Array | Float32Array | number[];
/** A 64-bit seed: a safe integer >= 0, or a BigInt in [0, 2^64). */
export type Seed = number | bigint;

export type BackendName = 'cpu' | 'webgpu' | 'webgl';
export type ParsedBackend = BackendName | 'auto';
export type PreferredBackend = BackendName | 'none';

/**
 * Loads rlx_web.wasm (default: next to rlx_web.js, or its relaxed-SIMD build
 * as `simd` picks; with `threads` > 1, default half the logical cores, its
 * threaded build rlx_web_threads*.wasm where SharedArrayBuffer exists) and
 * installs the fatal-error hook.  Idempotent: later calls resolve to the
 * same runtime, unless the instance hit a fatal error or was freed, or
 * `threads` differs from the live one's, in which case a fresh one is loaded.
 */
export default function init(source?: InitInput | { module_or_path?: InitInput; simd?: SimdChoice; threads?: number }): Promise<LoadedRuntime>;
/** Drops the live instance (a threaded build's Workers stop); the next init() loads a fresh one. */
export function free(): void;
/** Throws unless init() has completed (the hook is installed by init()). */
export function start(): void;
/** The loaded module after init() (throws before it, or after a fatal error). */
export function runtime(): LoadedRuntime;

/** What init() and runtime() give: which module is loaded. */
export interface LoadedRuntime {
  /** Which build this module is. */
  readonly simd: SimdBuild;
  /** Threads the CPU kernels run on (1, or init's threads on the threaded build). */
  readonly threads: number;
  /** Why that many (e.g. 'threads is 1', or no cross-origin isolation). */
  readonly threadsWhy: string;
  /** The library's version. */
  version(): string;
  /** The GEMM kernel path of this build ('relaxed-simd', 'simd128', ...). */
  gemmPath(): string;
}

/** Label of the backend of the synchronous entry points: always "cpu". */
export function backend(): 'cpu';
/** Case-insensitive: cpu | webgpu, gpu, wgpu | webgl, webgl2, opengl, gl | anything else "auto". */
export function parse_backend(name: string): ParsedBackend;
/** What the environment offers: navigator.gpu, else WebGL2 with EXT_color_buffer_float, else the CPU. */
export function preferred_backend(): PreferredBackend;

/** A backend with its status: available, or the reason it is not. */
export interface BackendStatus {
  available: boolean;
  /** Why not (null when available). */
  reason: string | null;
  /**
   * Only on an available GPU backend that rasterizes in software: its name
   * ('SwiftShader', 'llvmpipe', 'a fallback adapter', ...).  'auto' ranks such
   * a backend below the CPU (skipped with the reason); an explicit request still gets it.
   */
  software?: string;
}
/** What runs here now. */
export interface BackendEnvironment {
  cpu: BackendStatus;
  webgpu: BackendStatus;
  webgl: BackendStatus;
}
/** A backend not used, and why. */
export interface BackendFallback {
  backend: BackendName;
  reason: string;
}
/** A backend request: a backend, 'auto', or an alias (gpu, wgpu, webgl2, gl, ...; any case). */
export type BackendRequest = ParsedBackend | (string & {});
/** What backend_candidates returns. */
export interface BackendCandidates {
  request: ParsedBackend;
  /** Best first; exactly one for an explicit request that can be met, none when refused; 'auto' ends with 'cpu'. */
  candidates: BackendName[];
  /** The backends left out, with the reason. */
  skipped: BackendFallback[];
  /** Why an explicit request cannot be met (null otherwise). */
  refusal: string | null;
}
/** A vision model for the backend rules: a slug or alias, its info (whose *_train flags apply), a VisionBench, or anything with a slug. */
export type ModelOrGraph = string | VisionModelInfo | VisionBench | { slug: string } | WebGraph;
export interface CandidateOptions {
  /** Apply the model's trainable-on flags (default true). */
  training?: boolean;
  /** Use this environment instead of backend_environment() (e.g. a stub in tests). */
  env?: BackendEnvironment;
}
export interface SelectOptions extends CandidateOptions {
  /** Vision models: the batch size of the graph compiled (default 1). */
  batch?: number;
  /** WebGraph: the outputs to compile forward. */
  outputs?: NodeId | NodeId[];
  /** WebGraph: the loss to compile backward (with params, default all). */
  loss?: NodeId;
  params?: NodeId[];
}
export interface Selection {
  /** What it actually runs on. */
  backend: BackendName;
  /** The compiled graph (the caller frees it). */
  compiled: CompiledGraph;
  /** Every better backend that was not used, and why ('auto' only). */
  fallbacks: BackendFallback[];
  candidates: BackendName[];
}

/**
 * Obtains the WebGPU device of the webgpu backend: navigator.gpu (true or
 * nothing), a GPU object (e.g. npm webgpu's create([]) in Node) or a
 * GPUDevice; false turns WebGPU off.  Resolves to whether WebGPU can run
 * plans here (the reason is in backend_environment().webgpu).
 */
export function init_webgpu(source?: boolean | object): Promise<boolean>;
/**
 * Optional: WebGL2 initialises itself on first use (a context is made
 * synchronously).  Checks up front whether it can run plans here (a new
 * context replaces a lost one); false turns WebGL2 off, true back on.
 */
export function init_webgl(enable?: boolean): Promise<boolean>;
/** What runs here now, each backend with the reason when it does not. */
export function backend_environment(options?: { refresh?: boolean }): BackendEnvironment;
/**
 * Pure and model-aware: every backend that may run the model or graph here,
 * best first; an explicit request gives one candidate or a refusal.
 */
export function backend_candidates(model_or_graph: ModelOrGraph, request?: BackendRequest, options?: CandidateOptions): BackendCandidates;
/**
 * Compiles on each candidate in turn; the first that compiles without host
 * execution wins.  Throws (with the reason) when an explicit request cannot be met.
 */
export function select_backend(model_or_graph: ModelOrGraph, request?: BackendRequest, options?: SelectOptions): Selection;

// ---- describing a model in code ---------------------------------------------------

/** A node of a WebGraph (its id). */
export type NodeId = number;
export type DType = 'f32' | 'i32' | 'float32' | 'int32';
/** An int, or an [h, w] pair. */
export type Pair = number | [number, number];
/** Input, param or constant data. */
export type TensorData = Float32Array | Int32Array | number[];

/** Attributes of op(): as documented per op in include/rlx_ops.def. */
export interface OpAttributes {
  ints?: ArrayLike<number>;
  floats?: ArrayLike<number>;
}

/** What add_vision returns: node ids. */
export interface VisionNodes {
  x: NodeId;
  labels: NodeId;
  logits: NodeId;
  loss: NodeId;
  params: NodeId[];
}

export interface GraphCompileOptions {
  /** Keep every op as written (no fusion passes). */
  skipFusion?: boolean;
}

/**
 * A graph under construction: builders return node ids, and throw an
 * RlxError with the library's message (naming the node, its op and the
 * shapes) when the graph is bad.
 */
export class WebGraph {
  constructor();
  readonly node_count: number;
  shape(node: NodeId): number[];
  /** The params made so far, in order. */
  params(): NodeId[];
  /** The input or param called name, or -1. */
  find(name: string): NodeId;

  input(name: string, shape: number[] | number, dtype?: DType): NodeId;
  param(name: string, shape: number[] | number): NodeId;
  /** values fill shape (default [values.length]). */
  constant(values: TensorData, shape?: number[] | number): NodeId;
  scalar(value: number): NodeId;
  /** Any op of the table by name. */
  op(name: string, inputs: NodeId[], attrs?: OpAttributes): NodeId;

  add(a: NodeId, b: NodeId): NodeId;
  sub(a: NodeId, b: NodeId): NodeId;
  mul(a: NodeId, b: NodeId): NodeId;
  div(a: NodeId, b: NodeId): NodeId;
  max(a: NodeId, b: NodeId): NodeId;
  min(a: NodeId, b: NodeId): NodeId;
  pow(a: NodeId, b: NodeId): NodeId;
  eq(a: NodeId, b: NodeId): NodeId;
  ne(a: NodeId, b: NodeId): NodeId;
  lt(a: NodeId, b: NodeId): NodeId;
  le(a: NodeId, b: NodeId): NodeId;
  gt(a: NodeId, b: NodeId): NodeId;
  ge(a: NodeId, b: NodeId): NodeId;
  where(cond: NodeId, a: NodeId, b: NodeId): NodeId;
  neg(x: NodeId): NodeId;
  abs(x: NodeId): NodeId;
  exp(x: NodeId): NodeId;
  log(x: NodeId): NodeId;
  sqrt(x: NodeId): NodeId;
  rsqrt(x: NodeId): NodeId;
  tanh(x: NodeId): NodeId;
  sigmoid(x: NodeId): NodeId;
  relu(x: NodeId): NodeId;
  gelu(x: NodeId): NodeId;
  silu(x: NodeId): NodeId;
  /** [N, C, H, W] -> [N, C]. */
  global_avg_pool(x: NodeId): NodeId;

  matmul(a: NodeId, b: NodeId, opts?: { transA?: boolean; transB?: boolean; trans_a?: boolean; trans_b?: boolean }): NodeId;
  reshape(x: NodeId, shape: number[]): NodeId;
  expand(x: NodeId, shape: number[]): NodeId;
  permute(x: NodeId, perm: number[]): NodeId;
  /** Default: the last two axes. */
  transpose(x: NodeId, axis0?: number, axis1?: number): NodeId;
  narrow(x: NodeId, axis: number, start: number, length: number): NodeId;
  concat(xs: NodeId[], axis?: number): NodeId;
  gather(table: NodeId, ids: NodeId): NodeId;
  /** axes: a number, an Array, or all axes when left out. */
  reduce_sum(x: NodeId, axes?: number | number[] | null, keepdim?: boolean): NodeId;
  reduce_mean(x: NodeId, axes?: number | number[] | null, keepdim?: boolean): NodeId;
  reduce_max(x: NodeId, axes?: number | number[] | null, keepdim?: boolean): NodeId;
  /** Default: the last axis. */
  softmax(x: NodeId, axis?: number): NodeId;
  log_softmax(x: NodeId, axis?: number): NodeId;
  /** logits[..., C], labels[...] -> per-sample loss [...]. */
  softmax_cross_entropy(logits: NodeId, labels: NodeId): NodeId;
  rms_norm(x: NodeId, weight: NodeId, eps?: number): NodeId;
  layer_norm(x: NodeId, weight: NodeId, bias: NodeId, eps?: number): NodeId;
  rope(x: NodeId, opts?: { theta?: number; posOffset?: number; pos_offset?: number }): NodeId;
  attention(q: NodeId, k: NodeId, v: NodeId, opts?: {
    mask?: 'none' | 'causal' | 'sliding' | 'padding' | 'bias'; window?: number;
    maskTensor?: NodeId; mask_tensor?: NodeId; scale?: number;
  }): NodeId;
  conv2d(x: NodeId, w: NodeId, opts?: { stride?: Pair; padding?: Pair; dilation?: Pair; groups?: number }): NodeId;
  /** stride defaults to the kernel. */
  max_pool2d(x: NodeId, opts: { kernel: Pair; stride?: Pair; padding?: Pair }): NodeId;
  avg_pool2d(x: NodeId, opts: { kernel: Pair; stride?: Pair; padding?: Pair }): NodeId;
  /** Adds a vision model (list_vision_models) for a batch size. */
  add_vision(slug: string, batch?: number): VisionNodes;

  /** Compiles outputs for a backend (default 'cpu'; 'auto' picks the best that compiles). */
  compile_forward(outputs: NodeId | NodeId[], backend?: BackendRequest, opts?: GraphCompileOptions): CompiledGraph;
  /**
   * Appends the backward pass of loss and compiles [loss, d loss / d params...]
   * (params default to all); "d_output" is preset to ones.
   */
  compile_backward(loss: NodeId, params?: NodeId[] | null, backend?: BackendRequest, opts?: GraphCompileOptions): CompiledGraph;
  /**
   * One training step per run (forward, backward, optimizer update in one
   * plan) for a backend (default 'cpu'): params live in the compiled graph,
   * output 0 is the loss before the update; set_lr changes the rate.
   */
  compile_train(loss: NodeId, params?: NodeId[] | null, optimizer?: TrainOptimizer, backend?: BackendRequest,
    opts?: GraphCompileOptions): CompiledGraph;
  free(): void;
}

/** The optimizer of WebGraph.compile_train (0 or left out: the library's defaults). */
export interface TrainOptimizer {
  kind?: 'sgd' | 'momentum' | 'adam' | 'adamw';
  lr?: number;
  momentum?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weight_decay?: number;
  weightDecay?: number;
}

export interface CompiledInput {
  name: string;
  shape: number[];
  size: number;
  dtype: 'f32' | 'i32';
}

/** One row of Executor.profile(): a step of the plan, timed (ms per step), plus backend extras. */
export interface ProfileRow {
  index: number;
  op: string;
  /** The graph node of the step (-1 when it is the whole run, as on the CPU). */
  node: number;
  /** The kernel: WebGPU pipeline key, WebGL2 shader, 'cpu'. */
  key: string;
  ms: number;
  [extra: string]: unknown;
}

/** Feeds of Executor.run: { name: data }, a Map or [name, data] pairs. */
export type Feeds = Record<string, TensorData> | Map<string, TensorData> | [string, TensorData][];

/**
 * The one contract of the JS executors (web/runtime/executor.js),
 * implemented by the wasm CPU session (runtime/cpu.js), WebGPU
 * (runtime/webgpu.js) and WebGL2 (runtime/webgl.js).
 */
export interface Executor {
  readonly backend: BackendName;
  readonly inputs: { name: string; count: number; dtype: 'f32' | 'i32' }[];
  readonly params: { name: string; count: number }[];
  readonly outputCount: number;
  /** Creates what run() needs (GPU objects); idempotent. */
  prepare(): Promise<Executor>;
  setInput(name: string, data: TensorData): void;
  setParam(name: string, data: TensorData): void;
  writeParam(name: string, data: TensorData): void;
  feed(name: string, data: TensorData): void;
  /** Feeds, then one run: the outputs of that run. */
  run(feeds?: Feeds): Promise<Float32Array[]>;
  /** The same synchronously: cpu and webgl only. */
  runSync?(feeds?: Feeds): Float32Array[];
  output(i: number): Float32Array;
  readParam(name: string): Promise<Float32Array>;
  /** cpu and webgl only. */
  readParamSync?(name: string): Float32Array;
  profile(opts?: { repeat?: number }): Promise<ProfileRow[]>;
  free(): void;
}

/** A compiled graph: feed by name, run, read outputs. */
export class CompiledGraph {
  private constructor();
  /** What it runs on. */
  readonly backend: BackendName;
  /** What was asked for. */
  readonly requested: ParsedBackend;
  readonly kind: 'forward' | 'backward' | 'train';
  /** The better backends that were not used, and why ('auto'). */
  readonly fallbacks: BackendFallback[];
  readonly inputs: CompiledInput[];
  readonly params: { name: string; size: number }[];
  readonly output_count: number;
  input_names(): string[];
  param_names(): string[];
  /** Sets an input or a param by name (exact element count; Int32Array for ids). */
  feed(name: string, data: TensorData): void;
  /** Synchronous on cpu and webgl; a Promise on webgpu. */
  run(): void | Promise<void>;
  /** One run on any backend: feeds first, then a Promise of every output (copies). */
  run_async(feeds?: Record<string, TensorData> | Map<string, TensorData>): Promise<Float32Array[]>;
  /** Per-step times of one run (the executor's profile()). */
  profile(opts?: { repeat?: number }): Promise<ProfileRow[]>;
  /** What runs it: the executor contract, the same on every backend. */
  readonly executor: Executor;
  /** Creates the GPU objects now (WebGPU); resolves at once elsewhere. */
  prepare(): Promise<void>;
  /** The learning rate of a graph from compile_train. */
  set_lr(lr: number): void;
  output(i: number): Float32Array;
  output_sizes(): number[];
  output_shape(i: number): number[];
  /** A Promise on webgpu. */
  read_param(name: string): Float32Array | Promise<Float32Array>;
  free(): void;
}

/** relu(x W1 + b1) W2 + b2 for rows = x.length / inDim rows: rows * out values. */
export function mlp_forward(
  x: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): Float32Array;
/** Sum of squared errors against t [rows, out]. */
export function mlp_loss(
  x: FloatArg, t: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): number;
/** [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads(
  x: FloatArg, t: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): Float32Array;
/** The parameters after one SGD step: [w1..., b1..., w2..., b2...]. */
export function mlp_train_step(
  x: FloatArg, t: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg, lr: number,
): Float32Array;

/**
 * mlp_forward on WebGPU (after `await init_webgpu()` resolved true): the same
 * values within 1e-4.  Rejects with an RlxError saying why when WebGPU cannot
 * do it (not initialized, a lost device, a limit): fall back to mlp_forward.
 */
export function mlp_forward_gpu(
  x: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): Promise<Float32Array>;
/** mlp_grads on WebGPU: [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads_gpu(
  x: FloatArg, t: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): Promise<Float32Array>;
/** mlp_forward on WebGL2 (initialised on first use; no init call needed); throws an RlxError saying why when it cannot. */
export function mlp_forward_webgl(
  x: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): Float32Array;
/** mlp_grads on WebGL2: [loss, dw1..., db1..., dw2..., db2...]. */
export function mlp_grads_webgl(
  x: FloatArg, t: FloatArg, inDim: number, hid: number, out: number,
  w1: FloatArg, b1: FloatArg, w2: FloatArg, b2: FloatArg,
): Float32Array;

/** Next-token logits (vocab values); tokens are integer ids in [0, vocab). */
export function transformer_next_logits(
  tokens: FloatArg, vocab: number, dim: number, n_layers: number,
  n_heads: number, head_dim: number, ffn: number, seed: Seed,
): Float32Array;
/** Logits of every position: tokens.length * vocab values. */
export function transformer_logits(
  tokens: FloatArg, vocab: number, dim: number, n_layers: number,
  n_heads: number, head_dim: number, ffn: number, seed: Seed,
): Float32Array;

export interface VisionModelInfo {
  slug: string;
  title: string;
  /** Dims of one sample: [784] or [C, H, W]. */
  input_dims: number[];
  num_classes: number;
  param_names: string[];
  /** Elements of each parameter. */
  param_sizes: number[];
  param_shapes: number[][];
  /** Elements of one sample. */
  input_len: number;
  /** Sum of param_sizes. */
  param_flat_len: number;
  cpu_train: boolean;
  webgpu_train: boolean;
  webgl_train: boolean;
}

/** Canonical slugs: mnist-cnn, mnist-mlp, cifar-cnn, resnet. */
export function list_vision_models(): string[];
/** Metadata by slug or alias; throws naming the known slugs when unknown. */
export function vision_model_info(slug: string): VisionModelInfo;
/** Drops every compiled session cached by the model entry points. */
export function clear_cache(): void;

export interface SyntheticBatch {
  /** batch * input_len values, uniform in [-1, 1). */
  x: Float32Array;
  /** batch class ids. */
  labels: Int32Array;
}

/**
 * Forward, backward and SGD of one vision model on the CPU, WebGPU (Promises,
 * after `await init_webgpu()`) or WebGL2 (synchronous; it initialises itself
 * on first use).  The
 * GPU variants give the CPU's numbers within 1e-4 and throw (reject) with an
 * RlxError saying why when the GPU cannot do the work.
 */
export class VisionBench {
  /** Throws on an unknown slug. */
  constructor(slug: string);
  readonly slug: string;
  info(): VisionModelInfo;
  /** param_flat_len values. */
  init_params(seed: Seed): Float32Array;
  synthetic_batch(seed: Seed, batch?: number): SyntheticBatch;
  /** Logits: batch * num_classes values (batch = x.length / input_len). */
  forward_cpu(x: FloatArg, params: FloatArg): Float32Array;
  /** [loss (before the step), updated params...]: 1 + param_flat_len values. */
  train_step_cpu(x: FloatArg, labels: LabelArg, params: FloatArg, lr: number): Float32Array;
  /** Gradients at params, no update: [loss, dL/dparams...]: 1 + param_flat_len values. */
  grads_cpu(x: FloatArg, labels: LabelArg, params: FloatArg): Float32Array;
  /** grads_cpu on WebGPU. */
  grads_webgpu(x: FloatArg, labels: LabelArg, params: FloatArg): Promise<Float32Array>;
  /** grads_cpu on WebGL2 (synchronous). */
  grads_webgl(x: FloatArg, labels: LabelArg, params: FloatArg): Float32Array;
  /** [initial_loss, final_loss, steps_per_sec] over `steps` steps on one synthetic batch. */
  bench_cpu(steps: number, seed: Seed, lr: number, batch?: number): Float32Array;
  /** forward_cpu on WebGPU. */
  forward_webgpu(x: FloatArg, params: FloatArg): Promise<Float32Array>;
  /** train_step_cpu on WebGPU, the SGD update on the device. */
  train_step_webgpu(x: FloatArg, labels: LabelArg, params: FloatArg, lr: number): Promise<Float32Array>;
  /** bench_cpu on WebGPU, params kept on the device between steps. */
  bench_webgpu(steps: number, seed: Seed, lr: number, batch?: number): Promise<Float32Array>;
  /** forward_cpu on WebGL2. */
  forward_webgl(x: FloatArg, params: FloatArg): Float32Array;
  /** train_step_cpu on WebGL2, the SGD update on the device. */
  train_step_webgl(x: FloatArg, labels: LabelArg, params: FloatArg, lr: number): Float32Array;
  /** bench_cpu on WebGL2, params kept on the device between steps. */
  bench_webgl(steps: number, seed: Seed, lr: number, batch?: number): Float32Array;
  /** Frees the GPU graphs; the handle is unusable afterwards. */
  free(): void;
}

// ---- errors (../runtime/errors.js) ---------------------------------------------

/** An error from RLX: status is the rlx_status code (-100: the wasm instance trapped). */
export class RlxError extends Error {
  constructor(status: number, message?: string, statusName?: string);
  readonly status: number;
  readonly statusName: string;
  /**
   * Set by the GPU entry points: 'not-initialized' (WebGPU before
   * init_webgpu) | 'unavailable' | 'limits' | 'device-lost' | 'context-lost'
   * | 'gpu-error' (any other GPU failure).
   */
  readonly reason?: string;
}
