// loader.js - loads rlx_web.wasm in a page, a Worker or Node 20 and wraps its
// exports (src/web/exports.c) in a tiny Graph / Session API: the internal
// binding that WebGraph (./webgraph.js), the graph API of the SDK and of
// ../pkg/rlx_web.js, is built on; neither exports it.
//
//   import { loadRlx } from './runtime/loader.js';
//   const rlx = await loadRlx();        // or a URL, bytes, a Module; { simd: 'simd128' } forces the plain build
//   rlx.simd;                           // 'relaxed' | 'simd128': the build loaded (runtime/simd.js)
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
// library's rlx_last_error() (or the graph's first builder error); every
// argument is checked here first (a bad one is an RlxError naming the method
// and the argument, never a TypeError, a RangeError or a wasm trap), and the
// memory helpers only free blocks that alloc() handed out.
import { WasiShim, cstringAt } from './wasi.js';
import { instantiateModule, startThreads, threadsChoice, threadsOption } from './threads.js';
import { simdOption, moduleFile, moduleSimd } from './simd.js';
import { STATUS, DEVICE, DTYPE, OPTIMIZER } from './constants.js';
import { RlxError } from './errors.js';

export { RlxError };

/** Whether this is Node (else a page or a Worker). */
export const isNode = typeof process === 'object' && !!process.versions?.node;
const MAX_ELEMENTS = 2 ** 28;   // 1 GiB of 32-bit values: more than one copy can take in wasm32 memory
const MAX_ALLOC = 0x7fffffff;   // bytes of one block (size_t is 32-bit in wasm32)
const MAX_LIST = 1 << 16;       // entries of an integer list (dims, inputs, attributes)

/** The status of an RlxError whose wasm instance trapped (statusName 'fatal'): not an rlx_status. */
export const FATAL_STATUS = -100;

/** An RlxError (INVALID_ARG) for a bad argument of fn. */
export function fail(fn, message) {
  return new RlxError(STATUS.INVALID_ARG, `${fn}: ${message}`);
}

/** v in a few words for an error message. */
export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an Array of ${v.length}`;
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object') return `a ${typeof v.constructor === 'function' ? v.constructor.name || 'object' : 'object'}`;
  if (typeof v === 'symbol' || typeof v === 'function') return typeof v;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

/**
 * The one check of an options argument: undefined gives {}, an object (also
 * one without a prototype) is returned as it is, anything else (null, an
 * Array, a number, ...) throws an RlxError "fn: what must be an object or undefined".
 */
export function optionsArg(fn, v, what = 'options') {
  if (v === undefined) return {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw fail(fn, `${what} must be an object or undefined, got ${describe(v)}`);
  }
  return v;
}

/**
 * values as a Type (Float32Array or Int32Array): that type as it is, another
 * typed array or an Array of numbers copied.  The length is checked before
 * anything is copied, so an array-like claiming 2^32 entries fails at once.
 */
export function typedArg(fn, what, v, Type) {
  const typed = ArrayBuffer.isView(v) && !(v instanceof DataView) && typeof v.length === 'number' &&
    !(v instanceof BigInt64Array) && !(v instanceof BigUint64Array);
  if (!typed && !Array.isArray(v)) {
    throw fail(fn, `${what} must be a ${Type.name}, another typed array or an Array of numbers, got ${describe(v)}`);
  }
  const n = v.length;
  if (!Number.isInteger(n) || n < 0 || n > MAX_ELEMENTS) {
    throw fail(fn, `${what} has ${n} values; at most ${MAX_ELEMENTS} fit in wasm memory`);
  }
  if (v instanceof Type) return v;
  if (!typed) {
    for (let i = 0; i < n; i++) {
      if (typeof v[i] !== 'number') throw fail(fn, `${what}[${i}] is ${describe(v[i])}, not a number`);
    }
  }
  return Type.from(v);
}

function nameArg(fn, v, what = 'name') {
  if (typeof v !== 'string') throw fail(fn, `${what} must be a string, got ${describe(v)}`);
  return v;
}

function indexArg(fn, what, v, count) {
  if (!Number.isInteger(v) || v < 0 || v >= count) {
    throw new RlxError(STATUS.NOT_FOUND, `${fn}: ${what} ${typeof v === 'number' ? v : describe(v)} does not exist (there are ${count})`);
  }
  return v;
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
 * or a WebAssembly.Module (default: ../pkg/rlx_web.wasm next to this file,
 * or its relaxed-SIMD build as `opts.simd` picks: runtime/simd.js; with
 * `opts.threads` > 1 (default: half the logical cores) where
 * SharedArrayBuffer exists, its threaded build rlx_web_threads*.wasm, whose
 * helper Workers run the CPU kernels' ranges: runtime/threads.js).
 * `opts.stdout` / `opts.stderr`: line callbacks for the module's printing.
 * The result's threads / threadsWhy say how many threads run and why;
 * close() stops its Workers.
 */
export async function loadRlx(source = undefined, opts = undefined) {
  const fn = 'loadRlx';
  const o = optionsArg(fn, opts, 'opts');
  for (const k of ['stdout', 'stderr']) {
    if (o[k] !== undefined && typeof o[k] !== 'function') throw fail(fn, `opts.${k} must be a function (line) => void, got ${describe(o[k])}`);
  }
  const simd = simdOption(fn, o.simd, 'opts.simd');
  const threads = await threadsOption(fn, o.threads, 'opts.threads');
  const what = 'threads'; // in the reasons (init's option has this name too)
  const choice = threadsChoice(threads, what);
  const given = source !== undefined;
  const okSource = !given || typeof source === 'string' || source instanceof URL || source instanceof ArrayBuffer ||
    ArrayBuffer.isView(source) || source instanceof WebAssembly.Module;
  if (!okSource) throw fail(fn, `source must be a URL, a path, bytes or a WebAssembly.Module, got ${describe(source)}`);
  const load = async (src, threaded) => {
    let module;
    try {
      module = await compileModule(src);
    } catch (err) {
      const where = typeof src === 'string' || src instanceof URL ? ` from ${String(src).slice(0, 200)}` : '';
      const wrapped = new RlxError(STATUS.INVALID_ARG, `${fn}: cannot load the module${where}: ${err?.message ?? err}`);
      wrapped.cause = err;
      throw wrapped;
    }
    const { instance, memory } = await instantiateModule(fn, module, new WasiShim({ stdout: o.stdout, stderr: o.stderr }),
      { given: 'the module', plain: 'rlx_web.wasm', what });
    const rt = new Rlx(memory ? { exports: { ...instance.exports, memory } } : instance, moduleSimd(module));
    if (memory) {
      const mod = { call: (name, ...args) => rt.exports[name](...args), check: (st, prefix) => rt.check(st, st < 0 ? prefix + rt.lastError() : undefined),
        memory, get dead() { return rt.dead; } };
      rt.pool = await startThreads(fn, mod, module, threaded ? threads : 1, what);
    }
    return rt;
  };
  let rt;
  let why = choice.why;
  try {
    rt = await load(given ? source : moduleFile(choice.threaded ? 'webThreads' : 'web', simd), choice.threaded);
  } catch (err) {
    if (given || !err?.threadsFailed) throw err;
    why = err.message.replace(/^loadRlx: /, '').replace(/; \S+ 1 runs without them$/, '; one thread runs');
    rt = await load(moduleFile('web', simd), false);
  }
  rt.threadsWhy = rt.pool ? (!given ? why : `the module given is a threaded build: ${rt.threads} thread(s)`)
    : given && choice.threaded ? 'the module given is a build without threads' : why;
  return rt;
}

/** The loaded module: raw exports, memory helpers and the Graph factory; simd: which build it is. */
export class Rlx {
  constructor(instance, simd = 'simd128') {
    const e = instance?.exports;
    if (!(e?.memory instanceof WebAssembly.Memory) || typeof e.rlx_op_count !== 'function') {
      throw new RlxError(STATUS.STATE, 'Rlx: needs an instance of rlx_web.wasm (use loadRlx())');
    }
    this.instance = instance;
    this.simd = simd === 'relaxed' ? 'relaxed' : 'simd128';
    this.exports = instance.exports;
    this.memory = instance.exports.memory;
    this.encoder = new TextEncoder();
    this.opCount = this.exports.rlx_op_count();
    this.allocations = new Map(); // ptr -> bytes of every live block from alloc()
    this.sessions = new Set();    // ptrs of the live sessions compiled through this module
    this.pool = null;             // a threaded build's Workers (runtime/threads.js)
    this.threadsWhy = '';         // why this many threads run (loadRlx)
    this.dead = false;            // set by init()'s guard once the instance trapped
  }
  /** Threads the CPU kernels run on: the caller and the pool's Workers. */
  get threads() { return this.pool?.threads ?? 1; }
  /** Stops a threaded build's Workers (the instance is not used again); harmless twice. */
  close() {
    this.pool?.stop();
    this.pool = null;
  }

  // ---- memory helpers (views are made fresh: memory.grow detaches them) ---
  /** A new block of wasm memory (bytes: an integer in [0, 2^31)); free() it. */
  alloc(bytes) {
    if (!Number.isInteger(bytes) || bytes < 0 || bytes > MAX_ALLOC) {
      throw fail('Rlx.alloc', `bytes must be an integer in [0, ${MAX_ALLOC}], got ${describe(bytes)}`);
    }
    const ptr = this.exports.rlx_wasm_alloc(bytes) >>> 0;
    if (!ptr) throw new RlxError(STATUS.NO_MEMORY, `wasm out of memory allocating ${bytes} bytes`);
    this.allocations.set(ptr, bytes);
    return ptr;
  }
  /** Frees a block from alloc() (0 / null: nothing); any other pointer, or a second free, throws. */
  free(ptr) {
    if (ptr === 0 || ptr === null || ptr === undefined) return;
    if (!this.allocations.delete(ptr)) {
      throw fail('Rlx.free', `${describe(ptr)} is not a live block from Rlx.alloc (a bad pointer, or one freed already)`);
    }
    this.exports.rlx_wasm_free(ptr);
  }
  /** A view of n elements of Type at ptr, checked against the memory (never a RangeError). */
  _view(fn, Type, ptr, n) {
    const size = Type.BYTES_PER_ELEMENT;
    if (!Number.isInteger(ptr) || ptr < 0 || ptr % size !== 0) {
      throw fail(fn, `ptr must be a ${size}-byte aligned address (an integer >= 0), got ${describe(ptr)}`);
    }
    if (!Number.isInteger(n) || n < 0) throw fail(fn, `n must be an integer >= 0, got ${describe(n)}`);
    const bytes = this.memory.buffer.byteLength;
    if (ptr + n * size > bytes) throw fail(fn, `${n} values at ${ptr} run past the end of wasm memory (${bytes} bytes)`);
    return new Type(this.memory.buffer, ptr, n);
  }
  /** Copies a Float32Array (or another typed array or a number array) into new wasm memory; returns the pointer. */
  f32In(values) {
    const src = typedArg('Rlx.f32In', 'values', values, Float32Array);
    const ptr = this.alloc(src.byteLength);
    new Float32Array(this.memory.buffer, ptr, src.length).set(src);
    return ptr;
  }
  i32In(values) {
    const src = typedArg('Rlx.i32In', 'values', values, Int32Array);
    const ptr = this.alloc(src.byteLength);
    new Int32Array(this.memory.buffer, ptr, src.length).set(src);
    return ptr;
  }
  /** A copy of n floats at ptr. */
  readF32(ptr, n) { return this._view('Rlx.readF32', Float32Array, ptr, n).slice(); }
  readI32(ptr, n) { return this._view('Rlx.readI32', Int32Array, ptr, n).slice(); }
  /** Copies values to ptr, which must lie (with all of values) inside a live block from alloc(). */
  writeF32(ptr, values) {
    const src = typedArg('Rlx.writeF32', 'values', values, Float32Array);
    this._inBlock('Rlx.writeF32', ptr, src.length, 4);
    this._view('Rlx.writeF32', Float32Array, ptr, src.length).set(src);
  }
  writeI32(ptr, values) {
    const src = typedArg('Rlx.writeI32', 'values', values, Int32Array);
    this._inBlock('Rlx.writeI32', ptr, src.length, 4);
    this._view('Rlx.writeI32', Int32Array, ptr, src.length).set(src);
  }
  /** Throws unless n values of size bytes at ptr lie inside one live block (a write never lands on the module's own data). */
  _inBlock(fn, ptr, n, size) {
    if (Number.isInteger(ptr)) {
      for (const [start, bytes] of this.allocations) {
        if (ptr >= start && ptr + n * size <= start + bytes) return;
      }
    }
    throw fail(fn, `${n} values at ${typeof ptr === 'number' ? ptr : describe(ptr)} are not inside a live block from Rlx.alloc`);
  }
  /** A NUL-terminated UTF-8 string copied into new wasm memory. */
  strIn(str) {
    const bytes = this.encoder.encode(nameArg('Rlx.strIn', str, 'str'));
    const ptr = this.alloc(bytes.length + 1);
    const mem = new Uint8Array(this.memory.buffer, ptr, bytes.length + 1);
    mem.set(bytes);
    mem[bytes.length] = 0;
    return ptr;
  }
  /** The C string at ptr ("" for NULL). */
  cstring(ptr) {
    if (!ptr) return '';
    if (!Number.isInteger(ptr) || ptr < -0x80000000 || ptr > 0xffffffff) throw fail('Rlx.cstring', `ptr must be an address, got ${describe(ptr)}`);
    return cstringAt(this.memory, ptr);
  }
  /** Runs fn(t) with t.str/t.f32/t.i32/t.bytes allocators; frees them all after. */
  scoped(fn) {
    if (typeof fn !== 'function') throw fail('Rlx.scoped', `fn must be a function (t) => ..., got ${describe(fn)}`);
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
  statusName(status) {
    if (!Number.isInteger(status)) throw fail('Rlx.statusName', `status must be an integer, got ${describe(status)}`);
    return this.cstring(this.exports.rlx_status_name(status));
  }
  /** Throws an RlxError carrying rlx_last_error() when status < 0. */
  check(status, message) {
    if (typeof status !== 'number') throw fail('Rlx.check', `status must be a number, got ${describe(status)}`);
    if (message !== undefined && typeof message !== 'string') throw fail('Rlx.check', `message must be a string, got ${describe(message)}`);
    if (status < 0) throw new RlxError(status, message || this.lastError(), Number.isInteger(status) ? this.statusName(status) : '');
    return status;
  }
  version() { return this.cstring(this.exports.rlx_version()); }
  gemmPath() { return this.cstring(this.exports.rlx_gemm_path()); }
  opNames() {
    return Array.from({ length: this.opCount }, (_, i) => this.cstring(this.exports.rlx_op_name(i)));
  }
  graph() { return new Graph(this); }
}

/** An Array (or Int32Array) of 32-bit integers; undefined / null: []. */
function intList(fn, what, values) {
  if (values === undefined || values === null) return [];
  if (!Array.isArray(values) && !(values instanceof Int32Array)) {
    throw fail(fn, `${what} must be an Array of integers, got ${describe(values)}`);
  }
  if (values.length > MAX_LIST) throw fail(fn, `${what} has ${values.length} entries; at most ${MAX_LIST}`);
  const list = [];
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
      throw fail(fn, `${what}[${i}] must be a 32-bit integer, got ${describe(v)}`);
    }
    list.push(v);
  }
  return list;
}

function nodeArg(fn, what, v) {
  if (!Number.isInteger(v) || v < 0 || v > 0x7fffffff) throw fail(fn, `${what} must be a node id (an integer >= 0), got ${describe(v)}`);
  return v;
}

function deviceArg(fn, device = 'cpu') {
  if (typeof device === 'string' && Object.hasOwn(DEVICE, device)) return DEVICE[device];
  if (Number.isInteger(device) && Object.values(DEVICE).includes(device)) return device;
  throw fail(fn, `unknown device ${describe(device)} (${Object.keys(DEVICE).join(', ')})`);
}

function finiteArg(fn, what, v, dflt) {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw fail(fn, `${what} must be a finite number, got ${describe(v)}`);
  return v;
}

/** A graph under construction.  Builders return node ids (numbers). */
export class Graph {
  constructor(rlx) {
    if (!(rlx instanceof Rlx)) throw new RlxError(STATUS.STATE, 'Graph: needs a loaded Rlx (rlx.graph())');
    this.rlx = rlx;
    this.ptr = rlx.exports.rlx_graph_new();
    if (!this.ptr) rlx.check(STATUS.NO_MEMORY, `cannot create graph: ${rlx.lastError()}`);
  }
  live() {
    if (!this.ptr) throw new RlxError(STATUS.STATE, 'graph already freed');
    return this.ptr;
  }
  /** Node id, or throws the graph's first builder error. */
  node(id) {
    if (Number.isInteger(id) && id >= 0) return id;
    const e = this.rlx.exports;
    const msg = this.rlx.cstring(e.rlx_graph_error(this.ptr)) || this.rlx.lastError();
    return this.rlx.check(e.rlx_graph_status(this.ptr) || STATUS.GRAPH, msg);
  }
  input(name, dims, dtype = 'f32') {
    nameArg('Graph.input', name);
    const d = intList('Graph.input', 'dims', dims);
    const dt = dtype === 'i32' ? DTYPE.i32 : DTYPE.f32;
    return this.node(this.rlx.scoped((t) =>
      this.rlx.exports.rlx_input(this.live(), t.str(name), d.length, t.i32(d), dt)));
  }
  param(name, dims) {
    nameArg('Graph.param', name);
    const d = intList('Graph.param', 'dims', dims);
    return this.node(this.rlx.scoped((t) =>
      this.rlx.exports.rlx_param(this.live(), t.str(name), d.length, t.i32(d))));
  }
  constant(dims, data) {
    const fn = 'Graph.constant';
    const d = intList(fn, 'dims', dims);
    const values = typedArg(fn, 'data', data, Float32Array);
    const n = d.reduce((a, b) => a * Math.max(b, 0), 1);
    if (n !== values.length) throw fail(fn, `${values.length} values do not fill dims [${d.join(', ')}] (${n} elements)`);
    return this.node(this.rlx.scoped((t) =>
      this.rlx.exports.rlx_constant(this.live(), d.length, t.i32(d), t.f32(values.length ? values : [0]))));
  }
  scalar(value) {
    if (typeof value !== 'number') throw fail('Graph.scalar', `value must be a number, got ${describe(value)}`);
    return this.node(this.rlx.exports.rlx_scalar(this.live(), value));
  }
  /** Any op by name (see include/rlx_ops.def for iattr/fattr per op). */
  op(name, inputs, iattr = [], fattr = []) {
    const e = this.rlx.exports;
    nameArg('Graph.op', name);
    const ins = intList('Graph.op', 'inputs', inputs);
    const ia = intList('Graph.op', 'iattr', iattr);
    const fa = typedArg('Graph.op', 'fattr', fattr ?? [], Float32Array);
    return this.node(this.rlx.scoped((t) => {
      const op = e.rlx_op_from_name(t.str(name));
      if (op >= this.rlx.opCount) throw new RlxError(STATUS.INVALID_ARG, `unknown op "${name}"`);
      return e.rlx_op_node(this.live(), op, t.i32(ins), ins.length, t.i32(ia), ia.length, t.f32(fa), fa.length);
    }));
  }
  /** Dims of a node ([] for a scalar). */
  shape(node) {
    nodeArg('Graph.shape', 'node', node);
    return this.rlx.scoped((t) => {
      const dims = t.bytes(4 * 8);
      const rank = this.rlx.exports.rlx_node_shape(this.live(), node, dims);
      if (rank < 0) throw new RlxError(STATUS.GRAPH, `no node ${node} in this graph`);
      return Array.from(this.rlx.readI32(dims, rank));
    });
  }
  get nodeCount() { return this.rlx.exports.rlx_graph_node_count(this.live()); }
  /** opts: { device: 'cpu' | 'webgpu' | 'webgl', skipFusion, debugPoison }. */
  compile(outputs, opts = undefined) {
    const fn = 'Graph.compile';
    const outs = intList(fn, 'outputs', outputs);
    const o = optionsArg(fn, opts, 'opts');
    const device = deviceArg(fn, o.device);
    const ptr = this.rlx.scoped((t) => {
      const out = t.bytes(4);
      this.rlx.writeI32(out, [0]);
      const status = this.rlx.exports.rlx_compile(this.live(), t.i32(outs), outs.length, device,
        o.skipFusion ? 1 : 0, o.debugPoison ? 1 : 0, out);
      this.rlx.check(status);
      return this.rlx.readI32(out, 1)[0] >>> 0;
    });
    this.rlx.sessions.add(ptr);
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
  compileTrain(loss, params, opt = undefined, opts = undefined) {
    const fn = 'Graph.compileTrain';
    nodeArg(fn, 'loss', loss);
    const ps = intList(fn, 'params', params);
    const op = optionsArg(fn, opt, 'opt');
    const o = optionsArg(fn, opts, 'opts');
    const kindName = op.kind ?? 'sgd';
    if (typeof kindName !== 'string' || !Object.hasOwn(OPTIMIZER, kindName)) {
      throw fail(fn, `unknown optimizer ${describe(op.kind)} (${Object.keys(OPTIMIZER).join(', ')})`);
    }
    const kind = OPTIMIZER[kindName];
    const device = deviceArg(fn, o.device);
    const num = (key, dflt) => finiteArg(fn, `opt.${key}`, op[key], dflt);
    const nums = [num('lr', 0.01), num('momentum', 0), num('beta1', 0), num('beta2', 0), num('eps', 0), num('weightDecay', 0)];
    const ptr = this.rlx.scoped((t) => {
      const out = t.bytes(4);
      this.rlx.writeI32(out, [0]);
      this.rlx.check(this.rlx.exports.rlx_compile_train(this.live(), loss, t.i32(ps), ps.length, kind,
        ...nums, device, o.skipFusion ? 1 : 0, out));
      return this.rlx.readI32(out, 1)[0] >>> 0;
    });
    this.rlx.sessions.add(ptr);
    return new Session(this.rlx, ptr);
  }
  free() {
    if (this.ptr) this.rlx.exports.rlx_graph_free(this.ptr);
    this.ptr = 0;
  }
}

/** A compiled graph with its params, inputs and outputs. */
export class Session {
  /** Made by Graph.compile / compileTrain: a pointer that is not a live session of rlx is refused. */
  constructor(rlx, ptr) {
    if (!(rlx instanceof Rlx) || !rlx.sessions.has(ptr)) {
      throw new RlxError(STATUS.STATE, 'Session: not a live session (sessions come from Graph.compile / compileTrain)');
    }
    this.rlx = rlx;
    this.ptr = ptr;
  }
  live() {
    if (!this.ptr) throw new RlxError(STATUS.STATE, 'session already freed');
    return this.ptr;
  }
  setParam(name, data) {
    const e = this.rlx.exports;
    nameArg('Session.setParam', name);
    const values = typedArg('Session.setParam', 'data', data, Float32Array);
    this.rlx.scoped((t) => this.rlx.check(e.rlx_session_set_param(this.live(), t.str(name), t.f32(values), values.length)));
  }
  getParam(name) {
    const e = this.rlx.exports;
    nameArg('Session.getParam', name);
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
    nameArg('Session.setInput', name);
    const values = data instanceof Int32Array ? data : typedArg('Session.setInput', 'data', data, Float32Array);
    this.rlx.scoped((t) => this.rlx.check(values instanceof Int32Array
      ? e.rlx_session_set_input_i32(this.live(), t.str(name), t.i32(values), values.length)
      : e.rlx_session_set_input(this.live(), t.str(name), t.f32(values), values.length)));
  }
  run() { this.rlx.check(this.rlx.exports.rlx_session_run(this.live())); }
  /** The learning rate of a session from Graph.compileTrain. */
  setLr(lr) {
    if (typeof lr !== 'number' || !Number.isFinite(lr)) throw fail('Session.setLr', `lr must be a finite number, got ${describe(lr)}`);
    this.rlx.check(this.rlx.exports.rlx_session_set_lr(this.live(), lr));
  }
  get outputCount() { return this.rlx.exports.rlx_session_output_count(this.live()); }
  outputShape(i) {
    indexArg('Session.outputShape', 'output', i, this.outputCount);
    return this.rlx.scoped((t) => {
      const dims = t.bytes(4 * 8);
      const rank = this.rlx.exports.rlx_session_output_shape(this.live(), i, dims);
      if (rank < 0) throw new RlxError(STATUS.NOT_FOUND, `no output ${i} (the session has ${this.outputCount})`);
      return Array.from(this.rlx.readI32(dims, rank));
    });
  }
  /** A copy of output i as a Float32Array. */
  output(i) {
    const e = this.rlx.exports;
    indexArg('Session.output', 'output', i, this.outputCount);
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
    if (this.ptr) {
      this.rlx.sessions.delete(this.ptr);
      this.rlx.exports.rlx_session_free(this.ptr);
    }
    this.ptr = 0;
  }
}
