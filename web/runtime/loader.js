// loader.js - loads rlx_web.wasm in a page, a Worker or Node 20 and wraps its
// exports (src/web/exports.c) in a tiny Graph / Session API.
//
//   import { loadRlx } from './runtime/loader.js';
//   const rlx = await loadRlx('./pkg/rlx_web.wasm');   // or bytes / a Module
//   const g = rlx.graph();
//   const x = g.input('x', [2, 4]);
//   const w = g.param('w', [4, 3]);
//   const y = g.op('relu', [g.op('matmul', [x, w], [0, 0])]); // iattr: trans_a, trans_b
//   const s = g.compile([y]);          // g may be freed now
//   s.setParam('w', new Float32Array(12)); s.setInput('x', data); s.run();
//   s.output(0);                       // Float32Array copy; s.outputShape(0)
//   s.free(); g.free();                // freeing twice is harmless
//
// Every negative status becomes a thrown RlxError whose message is the
// library's rlx_last_error() (or the graph's first builder error).
import { WasiShim } from './wasi.js';

const isNode = typeof process === 'object' && !!process.versions?.node;
const DEVICES = { cpu: 0, webgpu: 1, webgl: 2 };
const OPTIMIZERS = { sgd: 0, momentum: 1, adam: 2, adamw: 3 };
const STATUS = { INVALID_ARG: -1, STATE: -7 };

/** An error from RLX: `status` is the rlx_status code, `statusName` its name. */
export class RlxError extends Error {
  constructor(status, message, statusName = '') {
    super(message || statusName || `rlx status ${status}`);
    this.name = 'RlxError';
    this.status = status;
    this.statusName = statusName;
  }
}

async function compileModule(source) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return WebAssembly.compile(source);
  const isFileUrl = source instanceof URL ? source.protocol === 'file:' : /^file:/.test(source);
  if (isNode && (isFileUrl || !/^https?:/.test(String(source)))) {
    const { readFile } = await import('node:fs/promises');
    return WebAssembly.compile(await readFile(isFileUrl ? new URL(source) : source));
  }
  const response = await fetch(source);
  if (!response.ok) throw new Error(`cannot fetch ${source}: HTTP ${response.status}`);
  if (WebAssembly.compileStreaming && /^application\/wasm\b/.test(response.headers.get('content-type') ?? '')) {
    return WebAssembly.compileStreaming(response);
  }
  return WebAssembly.compile(await response.arrayBuffer()); // server with a wrong MIME type
}

/**
 * Loads and initializes the module.  `source`: URL/path string, URL, bytes
 * or a WebAssembly.Module (default: ../pkg/rlx_web.wasm next to this file).
 * `opts.stdout` / `opts.stderr`: line callbacks for the module's printing.
 */
export async function loadRlx(source = new URL('../pkg/rlx_web.wasm', import.meta.url), opts = {}) {
  const module = await compileModule(source);
  const wasi = new WasiShim(opts);
  const instance = await WebAssembly.instantiate(module, wasi.imports(module));
  wasi.attach(instance);
  instance.exports._initialize?.();
  return new Rlx(instance);
}

/** The loaded module: raw exports, memory helpers and the Graph factory. */
export class Rlx {
  constructor(instance) {
    this.instance = instance;
    this.exports = instance.exports;
    this.memory = instance.exports.memory;
    this.encoder = new TextEncoder();
    this.decoder = new TextDecoder();
    this.opCount = this.exports.rlx_op_count();
  }

  // ---- memory helpers (views are made fresh: memory.grow detaches them) ---
  alloc(bytes) {
    const ptr = this.exports.rlx_wasm_alloc(bytes) >>> 0;
    if (!ptr) throw new RlxError(-4, `wasm out of memory allocating ${bytes} bytes`, 'no memory');
    return ptr;
  }
  free(ptr) { if (ptr) this.exports.rlx_wasm_free(ptr); }
  /** Copies a Float32Array (or number array) into new wasm memory; returns the pointer. */
  f32In(values) {
    const src = values instanceof Float32Array ? values : Float32Array.from(values);
    const ptr = this.alloc(src.byteLength);
    new Float32Array(this.memory.buffer, ptr, src.length).set(src);
    return ptr;
  }
  i32In(values) {
    const src = values instanceof Int32Array ? values : Int32Array.from(values);
    const ptr = this.alloc(src.byteLength);
    new Int32Array(this.memory.buffer, ptr, src.length).set(src);
    return ptr;
  }
  /** A copy of n floats at ptr. */
  readF32(ptr, n) { return new Float32Array(this.memory.buffer, ptr, n).slice(); }
  readI32(ptr, n) { return new Int32Array(this.memory.buffer, ptr, n).slice(); }
  writeF32(ptr, values) { new Float32Array(this.memory.buffer, ptr, values.length).set(values); }
  writeI32(ptr, values) { new Int32Array(this.memory.buffer, ptr, values.length).set(values); }
  /** A NUL-terminated UTF-8 string copied into new wasm memory. */
  strIn(str) {
    const bytes = this.encoder.encode(String(str));
    const ptr = this.alloc(bytes.length + 1);
    const mem = new Uint8Array(this.memory.buffer, ptr, bytes.length + 1);
    mem.set(bytes);
    mem[bytes.length] = 0;
    return ptr;
  }
  /** The C string at ptr ("" for NULL). */
  cstring(ptr) {
    if (!ptr) return '';
    const mem = new Uint8Array(this.memory.buffer);
    let end = ptr >>> 0;
    while (end < mem.length && mem[end] !== 0) end++;
    return this.decoder.decode(mem.subarray(ptr >>> 0, end));
  }
  /** Runs fn(t) with t.str/t.f32/t.i32/t.bytes allocators; frees them all after. */
  scoped(fn) {
    const ptrs = [];
    const keep = (p) => (ptrs.push(p), p);
    const t = {
      str: (s) => keep(this.strIn(s)),
      f32: (a) => keep(this.f32In(a)),
      i32: (a) => keep(this.i32In(a)),
      bytes: (n) => keep(this.alloc(n)),
    };
    try { return fn(t); } finally { for (const p of ptrs) this.free(p); }
  }

  // ---- status ------------------------------------------------------------
  lastError() { return this.cstring(this.exports.rlx_last_error()); }
  statusName(status) { return this.cstring(this.exports.rlx_status_name(status)); }
  /** Throws an RlxError carrying rlx_last_error() when status < 0. */
  check(status, message) {
    if (status < 0) throw new RlxError(status, message || this.lastError(), this.statusName(status));
    return status;
  }
  version() { return this.cstring(this.exports.rlx_version()); }
  gemmPath() { return this.cstring(this.exports.rlx_gemm_path()); }
  opNames() {
    return Array.from({ length: this.opCount }, (_, i) => this.cstring(this.exports.rlx_op_name(i)));
  }
  graph() { return new Graph(this); }
}

function intList(what, values) {
  const list = Array.from(values ?? []);
  for (const v of list) {
    if (!Number.isInteger(v)) throw new RlxError(STATUS.INVALID_ARG, `${what}: ${v} is not an integer`, 'invalid argument');
  }
  return list;
}

/** A graph under construction.  Builders return node ids (numbers). */
export class Graph {
  constructor(rlx) {
    this.rlx = rlx;
    this.ptr = rlx.exports.rlx_graph_new();
    if (!this.ptr) rlx.check(-4, `cannot create graph: ${rlx.lastError()}`);
  }
  live() {
    if (!this.ptr) throw new RlxError(STATUS.STATE, 'graph already freed', 'bad state');
    return this.ptr;
  }
  /** Node id, or throws the graph's first builder error. */
  node(id) {
    if (id >= 0) return id;
    const e = this.rlx.exports;
    const msg = this.rlx.cstring(e.rlx_graph_error(this.ptr)) || this.rlx.lastError();
    return this.rlx.check(e.rlx_graph_status(this.ptr) || -3, msg);
  }
  input(name, dims, dtype = 'f32') {
    const d = intList('dims', dims);
    const dt = dtype === 'i32' ? 1 : 0;
    return this.node(this.rlx.scoped((t) =>
      this.rlx.exports.rlx_input(this.live(), t.str(name), d.length, t.i32(d), dt)));
  }
  param(name, dims) {
    const d = intList('dims', dims);
    return this.node(this.rlx.scoped((t) =>
      this.rlx.exports.rlx_param(this.live(), t.str(name), d.length, t.i32(d))));
  }
  constant(dims, data) {
    const d = intList('dims', dims);
    return this.node(this.rlx.scoped((t) =>
      this.rlx.exports.rlx_constant(this.live(), d.length, t.i32(d), t.f32(data))));
  }
  scalar(value) { return this.node(this.rlx.exports.rlx_scalar(this.live(), value)); }
  /** Any op by name (see include/rlx_ops.def for iattr/fattr per op). */
  op(name, inputs, iattr = [], fattr = []) {
    const e = this.rlx.exports;
    const ins = intList('inputs', inputs);
    const ia = intList('iattr', iattr);
    const fa = Array.from(fattr);
    return this.node(this.rlx.scoped((t) => {
      const op = e.rlx_op_from_name(t.str(name));
      if (op >= this.rlx.opCount) throw new RlxError(STATUS.INVALID_ARG, `unknown op "${name}"`, 'invalid argument');
      return e.rlx_op_node(this.live(), op, t.i32(ins), ins.length, t.i32(ia), ia.length, t.f32(fa), fa.length);
    }));
  }
  /** Dims of a node ([] for a scalar). */
  shape(node) {
    return this.rlx.scoped((t) => {
      const dims = t.bytes(4 * 8);
      const rank = this.rlx.exports.rlx_node_shape(this.live(), node, dims);
      if (rank < 0) throw new RlxError(-3, `no node ${node} in this graph`, 'bad graph');
      return Array.from(this.rlx.readI32(dims, rank));
    });
  }
  get nodeCount() { return this.rlx.exports.rlx_graph_node_count(this.live()); }
  /** opts: { device: 'cpu' | 'webgpu' | 'webgl', skipFusion, debugPoison }. */
  compile(outputs, opts = {}) {
    const outs = intList('outputs', outputs);
    const device = DEVICES[opts.device ?? 'cpu'] ?? opts.device;
    if (!Number.isInteger(device)) throw new RlxError(STATUS.INVALID_ARG, `unknown device "${opts.device}"`, 'invalid argument');
    const ptr = this.rlx.scoped((t) => {
      const out = t.bytes(4);
      this.rlx.writeI32(out, [0]);
      const status = this.rlx.exports.rlx_compile(this.live(), t.i32(outs), outs.length, device,
        opts.skipFusion ? 1 : 0, opts.debugPoison ? 1 : 0, out);
      this.rlx.check(status);
      return this.rlx.readI32(out, 1)[0] >>> 0;
    });
    return new Session(this.rlx, ptr);
  }
  /**
   * One training step in one plan (forward, backward, optimizer update):
   * each run reads the inputs, updates the params and the optimizer state
   * in the session, and leaves the loss (before the update) as output 0.
   * opt: { kind: 'sgd' | 'momentum' | 'adam' | 'adamw', lr, momentum, beta1,
   * beta2, eps, weightDecay }; opts as compile().  The graph gains the
   * gradient and optimizer nodes (names "rlx.lr", "<param>.m", ...), so a
   * second training step is compiled from a new graph.
   */
  compileTrain(loss, params, opt = {}, opts = {}) {
    const ps = intList('params', params);
    const kind = OPTIMIZERS[opt.kind ?? 'sgd'];
    if (kind === undefined) throw new RlxError(STATUS.INVALID_ARG, `unknown optimizer "${opt.kind}" (sgd, momentum, adam, adamw)`, 'invalid argument');
    const device = DEVICES[opts.device ?? 'cpu'] ?? opts.device;
    if (!Number.isInteger(device)) throw new RlxError(STATUS.INVALID_ARG, `unknown device "${opts.device}"`, 'invalid argument');
    const num = (v, dflt) => (v === undefined ? dflt : v);
    const ptr = this.rlx.scoped((t) => {
      const out = t.bytes(4);
      this.rlx.writeI32(out, [0]);
      this.rlx.check(this.rlx.exports.rlx_compile_train(this.live(), loss, t.i32(ps), ps.length, kind,
        num(opt.lr, 0.01), num(opt.momentum, 0), num(opt.beta1, 0), num(opt.beta2, 0), num(opt.eps, 0),
        num(opt.weightDecay, 0), device, opts.skipFusion ? 1 : 0, out));
      return this.rlx.readI32(out, 1)[0] >>> 0;
    });
    return new Session(this.rlx, ptr);
  }
  free() {
    if (this.ptr) this.rlx.exports.rlx_graph_free(this.ptr);
    this.ptr = 0;
  }
}

/** A compiled graph with its params, inputs and outputs. */
export class Session {
  constructor(rlx, ptr) {
    this.rlx = rlx;
    this.ptr = ptr;
  }
  live() {
    if (!this.ptr) throw new RlxError(STATUS.STATE, 'session already freed', 'bad state');
    return this.ptr;
  }
  setParam(name, data) {
    const e = this.rlx.exports;
    this.rlx.scoped((t) => this.rlx.check(e.rlx_session_set_param(this.live(), t.str(name), t.f32(data), data.length)));
  }
  getParam(name) {
    const e = this.rlx.exports;
    const i = this.paramNames().indexOf(name);
    const len = i < 0 ? 0 : e.rlx_session_param_len(this.ptr, i) >>> 0;
    return this.rlx.scoped((t) => {
      const buf = t.bytes(4 * len);
      this.rlx.check(e.rlx_session_get_param(this.live(), t.str(name), buf, len));
      return this.rlx.readF32(buf, len);
    });
  }
  /** Int32Array data goes to an RLX_I32 input, anything else as float32. */
  setInput(name, data) {
    const e = this.rlx.exports;
    this.rlx.scoped((t) => this.rlx.check(data instanceof Int32Array
      ? e.rlx_session_set_input_i32(this.live(), t.str(name), t.i32(data), data.length)
      : e.rlx_session_set_input(this.live(), t.str(name), t.f32(data), data.length)));
  }
  run() { this.rlx.check(this.rlx.exports.rlx_session_run(this.live())); }
  /** The learning rate of a session from Graph.compileTrain. */
  setLr(lr) { this.rlx.check(this.rlx.exports.rlx_session_set_lr(this.live(), lr)); }
  get outputCount() { return this.rlx.exports.rlx_session_output_count(this.live()); }
  outputShape(i) {
    return this.rlx.scoped((t) => {
      const dims = t.bytes(4 * 8);
      const rank = this.rlx.exports.rlx_session_output_shape(this.live(), i, dims);
      if (rank < 0) throw new RlxError(-5, `no output ${i} (the session has ${this.outputCount})`, 'not found');
      return Array.from(this.rlx.readI32(dims, rank));
    });
  }
  /** A copy of output i as a Float32Array. */
  output(i) {
    const e = this.rlx.exports;
    const len = e.rlx_session_output_len(this.live(), i) >>> 0;
    return this.rlx.scoped((t) => {
      const buf = t.bytes(4 * len);
      this.rlx.check(e.rlx_session_read_output(this.ptr, i, buf, len));
      return this.rlx.readF32(buf, len);
    });
  }
  get arenaBytes() { return this.rlx.exports.rlx_session_arena_bytes(this.live()) >>> 0; }
  get stepCount() { return this.rlx.exports.rlx_session_step_count(this.live()); }
  inputNames() {
    const e = this.rlx.exports;
    const n = e.rlx_session_input_count(this.live());
    return Array.from({ length: n }, (_, i) => this.rlx.cstring(e.rlx_session_input_name(this.ptr, i)));
  }
  paramNames() {
    const e = this.rlx.exports;
    const n = e.rlx_session_param_count(this.live());
    return Array.from({ length: n }, (_, i) => this.rlx.cstring(e.rlx_session_param_name(this.ptr, i)));
  }
  free() {
    if (this.ptr) this.rlx.exports.rlx_session_free(this.ptr);
    this.ptr = 0;
  }
}
