// rlx_web.d.ts - types of rlx_web.js, the browser entry point of RLX (and of
// the low-level Graph / Session API of ../runtime/loader.js it re-exports).
// Checked by tests/types/check.ts (tsc --strict).

/** What init() can load: a URL or path, the bytes, or a compiled module. */
export type InitInput = string | URL | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

/** Float data: a Float32Array or an Array of numbers. */
export type FloatArg = Float32Array | number[];
/** Class ids: integers in [0, num_classes). */
export type LabelArg = Int32Array | Float32Array | number[];
/** A 64-bit seed: a safe integer >= 0, or a BigInt in [0, 2^64). */
export type Seed = number | bigint;

export type BackendName = 'cpu' | 'webgpu' | 'webgl';
export type ParsedBackend = BackendName | 'auto';
export type PreferredBackend = BackendName | 'none';
export type DeviceName = BackendName;

/**
 * Loads rlx_web.wasm (default: next to rlx_web.js) and installs the
 * fatal-error hook.  Idempotent: later calls resolve to the same runtime,
 * unless the instance hit a fatal error, in which case a fresh one is loaded.
 */
export default function init(source?: InitInput | { module_or_path: InitInput }): Promise<Rlx>;
/** Throws unless init() has completed (the hook is installed by init()). */
export function start(): void;
/** The low-level runtime (Graph / Session factory) after init(). */
export function runtime(): Rlx;

/** Label of the backend of the synchronous entry points: always "cpu". */
export function backend(): 'cpu';
/** Case-insensitive: cpu | webgpu, gpu, wgpu | webgl, webgl2, opengl, gl | anything else "auto". */
export function parse_backend(name: string): ParsedBackend;
/** What the environment offers: navigator.gpu, else WebGL2 with EXT_color_buffer_float, else the CPU. */
export function preferred_backend(): PreferredBackend;

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

/** Forward, backward and SGD of one vision model on the CPU. */
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
  /** [initial_loss, final_loss, steps_per_sec] over `steps` steps on one synthetic batch. */
  bench_cpu(steps: number, seed: Seed, lr: number, batch?: number): Float32Array;
  free(): void;
}

// ---- the low-level API (../runtime/loader.js) ----------------------------------

/** An error from RLX: status is the rlx_status code (-100: the wasm instance trapped). */
export class RlxError extends Error {
  constructor(status: number, message?: string, statusName?: string);
  readonly status: number;
  readonly statusName: string;
}

export interface LoadOptions {
  stdout?: (line: string) => void;
  stderr?: (line: string) => void;
}

/** Loads a separate instance without the fatal-error hook. */
export function loadRlx(source?: InitInput, opts?: LoadOptions): Promise<Rlx>;

/** Allocators handed to the callback of Rlx.scoped; all freed after it returns. */
export interface ScopedAllocator {
  str(s: string): number;
  f32(values: ArrayLike<number>): number;
  i32(values: ArrayLike<number>): number;
  bytes(n: number): number;
}

export class Rlx {
  constructor(instance: { exports: WebAssembly.Exports });
  readonly exports: Record<string, any>;
  readonly memory: WebAssembly.Memory;
  readonly opCount: number;
  alloc(bytes: number): number;
  free(ptr: number): void;
  f32In(values: ArrayLike<number>): number;
  i32In(values: ArrayLike<number>): number;
  readF32(ptr: number, n: number): Float32Array;
  readI32(ptr: number, n: number): Int32Array;
  writeF32(ptr: number, values: ArrayLike<number>): void;
  writeI32(ptr: number, values: ArrayLike<number>): void;
  strIn(str: string): number;
  cstring(ptr: number): string;
  scoped<T>(fn: (t: ScopedAllocator) => T): T;
  lastError(): string;
  statusName(status: number): string;
  check(status: number, message?: string): number;
  version(): string;
  gemmPath(): string;
  opNames(): string[];
  graph(): Graph;
}

export interface CompileOptions {
  device?: DeviceName | number;
  skipFusion?: boolean;
  debugPoison?: boolean;
}

/** A graph under construction; builders return node ids. */
export class Graph {
  constructor(rlx: Rlx);
  input(name: string, dims: number[], dtype?: 'f32' | 'i32'): number;
  param(name: string, dims: number[]): number;
  constant(dims: number[], data: ArrayLike<number>): number;
  scalar(value: number): number;
  /** Any op by name; iattr / fattr as documented in include/rlx_ops.def. */
  op(name: string, inputs: number[], iattr?: number[], fattr?: number[]): number;
  shape(node: number): number[];
  readonly nodeCount: number;
  compile(outputs: number[], opts?: CompileOptions): Session;
  free(): void;
}

/** A compiled graph. */
export class Session {
  constructor(rlx: Rlx, ptr: number);
  setParam(name: string, data: ArrayLike<number>): void;
  getParam(name: string): Float32Array;
  /** An Int32Array goes to an i32 input; anything else as float32. */
  setInput(name: string, data: ArrayLike<number>): void;
  run(): void;
  readonly outputCount: number;
  outputShape(i: number): number[];
  output(i: number): Float32Array;
  readonly arenaBytes: number;
  readonly stepCount: number;
  inputNames(): string[];
  paramNames(): string[];
  free(): void;
}
