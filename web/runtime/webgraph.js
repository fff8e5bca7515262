// webgraph.js - describe a model in code from JS: WebGraph builds a graph op
// by op (node ids are numbers), compile_forward / compile_backward
// compile it for 'cpu', 'webgpu', 'webgl' or 'auto', and the
// CompiledGraph moves data by name (feed), runs (sync on cpu and webgl, a
// Promise on webgpu; run_async everywhere) and reads outputs, all through
// its executor (the contract of ./executor.js).  ./vision.js binds it to the
// live wasm instance (the WebGraph of the SDK and of ../pkg/rlx_web.js):
//
//   const g = new WebGraph();
//   const x = g.input('x', [64, 784]), labels = g.input('labels', [64], 'i32');
//   const w = g.param('w', [784, 10]), b = g.param('b', [10]);
//   const logits = g.add(g.matmul(x, w), b);
//   const loss = g.reduce_mean(g.softmax_cross_entropy(logits, labels));
//   const step = g.compile_backward(loss, [w, b], 'cpu');  // outputs [loss, dw, db]
//   step.feed('x', xs); step.feed('labels', ys); step.feed('w', w0); step.feed('b', b0);
//   step.run(); const [l, dw, db] = [0, 1, 2].map((i) => step.output(i));
//
// Every builder checks its arguments here and the library checks shapes:
// a bad graph throws an RlxError carrying the library's message, which names
// the node, its op and the shapes involved.
import { Rlx, RlxError, optionsArg, typedArg, fail } from './loader.js';
import * as backends from './backends.js';
import { STATUS, DTYPE, MASK, DEVICE, OPTIMIZER } from './constants.js';

const DTYPES = Object.freeze({ ...DTYPE, float32: DTYPE.f32, int32: DTYPE.i32 });

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an Array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === 'object') return `a ${v.constructor?.name ?? 'object'}`;
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

function nodeId(fn, what, v) {
  if (!Number.isInteger(v) || v < 0) throw fail(fn, `${what} must be a node id (an integer >= 0 from a builder), got ${describe(v)}`);
  return v;
}

const MAX_LIST = 1 << 16; // entries of a list argument (dims, attributes, node ids)

/** A list argument (an Array) of at most MAX_LIST entries, checked before it is walked. */
function listArg(fn, what, v) {
  if (!Array.isArray(v)) throw fail(fn, `${what} must be an Array of node ids, got ${describe(v)}`);
  if (v.length > MAX_LIST) throw fail(fn, `${what} has ${v.length} entries; at most ${MAX_LIST}`);
  return v;
}

function intArray(fn, what, v, { min = -0x80000000, allowNumber = false } = {}) {
  if (allowNumber && typeof v === 'number') v = [v];
  if (!Array.isArray(v) && !(v instanceof Int32Array)) throw fail(fn, `${what} must be an Array of integers, got ${describe(v)}`);
  if (v.length > MAX_LIST) throw fail(fn, `${what} has ${v.length} entries; at most ${MAX_LIST}`);
  const out = Array.from({ length: v.length }, (_, i) => v[i]);
  out.forEach((d, i) => {
    if (!Number.isInteger(d) || d < min || d > 0x7fffffff) throw fail(fn, `${what}[${i}] must be an integer${min > -0x80000000 ? ` >= ${min}` : ''}, got ${describe(d)}`);
  });
  return out;
}

function shapeArg(fn, what, v) {
  const dims = intArray(fn, what, v, { allowNumber: true });
  if (dims.length > 8) throw fail(fn, `${what} has ${dims.length} dims; at most 8 are supported`);
  return dims;
}

/** An int or an [h, w] pair. */
function pair(fn, what, v) {
  if (typeof v === 'number') v = [v, v];
  const p = intArray(fn, what, v);
  if (p.length !== 2) throw fail(fn, `${what} must be an integer or a pair [h, w], got ${p.length} values`);
  return p;
}

/** Float data: lengths and element types checked before anything is copied (./loader.js typedArg). */
function floatData(fn, what, v) {
  if (!Array.isArray(v) && !(ArrayBuffer.isView(v) && !(v instanceof DataView))) {
    throw fail(fn, `${what} must be a Float32Array, an Int32Array or an Array of numbers, got ${describe(v)}`);
  }
  return typedArg(fn, what, v, Float32Array);
}

const numel = (dims) => dims.reduce((a, b) => a * b, 1);

/** A graph under construction; builders return node ids. */
// rope's mode attribute by its value: 0 NeoX halves, 1 adjacent pairs.
const ROPE_LAYOUTS = ['neox', 'pairs'];

export class WebGraph {
  /** rt: the loaded runtime (./vision.js's WebGraph passes the live one). */
  constructor(rt) {
    if (!rt?.graph) throw new RlxError(STATUS.STATE, 'WebGraph: no runtime: call `await init()` first');
    this._rt = rt;
    this._g = rt.graph();
    this._params = []; // node ids, in creation order
    installElementwiseOps(rt);
  }

  // ---- state ------------------------------------------------------------------
  _ptr(fn) {
    if (!this._g.ptr) throw new RlxError(STATUS.STATE, `WebGraph.${fn}: the graph was freed`);
    return this._g.ptr;
  }

  /** Runs a builder; throws the library's message when it fails. */
  _build(fn, call) {
    const e = this._rt.exports;
    const g = this._ptr(fn);
    const before = e.rlx_graph_status(g);
    if (before < 0) {
      const msg = this._rt.cstring(e.rlx_graph_error(g));
      throw new RlxError(STATUS.STATE, `WebGraph.${fn}: the graph has an error from an earlier builder (build a new graph): ${msg}`);
    }
    const id = call(g);
    if (id >= 0 && e.rlx_graph_status(g) === 0) return id;
    const status = e.rlx_graph_status(g) || STATUS.INVALID_ARG;
    const msg = this._rt.cstring(e.rlx_graph_error(g)) || this._rt.lastError();
    throw new RlxError(status, msg, this._rt.statusName(status));
  }

  /** Number of nodes. */
  get node_count() {
    return this._rt.exports.rlx_graph_node_count(this._ptr('node_count'));
  }

  /** Dims of a node ([] for a scalar). */
  shape(node) {
    this._ptr('shape');
    nodeId('WebGraph.shape', 'node', node);
    return this._rt.scoped((t) => {
      const dims = t.bytes(4 * 8);
      const rank = this._rt.exports.rlx_node_shape(this._g.ptr, node, dims);
      if (rank < 0) throw fail('WebGraph.shape', `no node ${node} in this graph (it has ${this.node_count})`);
      return Array.from(this._rt.readI32(dims, rank));
    });
  }

  /** The params made so far (node ids, in creation order). */
  params() {
    return this._params.slice();
  }

  /** The input or param called name, or -1. */
  find(name) {
    if (typeof name !== 'string') throw fail('WebGraph.find', `name must be a string, got ${describe(name)}`);
    return this._rt.scoped((t) => this._rt.exports.rlx_graph_find(this._ptr('find'), t.str(name)));
  }

  // ---- leaves -------------------------------------------------------------------
  /** An input fed per run; dtype 'f32' (default) or 'i32' (class ids, token ids). */
  input(name, shape, dtype = 'f32') {
    const fn = 'WebGraph.input';
    if (typeof name !== 'string' || !name) throw fail(fn, `name must be a non-empty string, got ${describe(name)}`);
    const dims = shapeArg(fn, 'shape', shape);
    if (typeof dtype !== 'string' || !Object.hasOwn(DTYPES, dtype)) throw fail(fn, `dtype of '${name}' must be 'f32' or 'i32', got ${describe(dtype)}`);
    return this._build('input', (g) => this._rt.scoped((t) =>
      this._rt.exports.rlx_input(g, t.str(name), dims.length, t.i32(dims), DTYPES[dtype])));
  }

  /** A trainable parameter (zero until fed). */
  param(name, shape) {
    const fn = 'WebGraph.param';
    if (typeof name !== 'string' || !name) throw fail(fn, `name must be a non-empty string, got ${describe(name)}`);
    const dims = shapeArg(fn, 'shape', shape);
    const id = this._build('param', (g) => this._rt.scoped((t) =>
      this._rt.exports.rlx_param(g, t.str(name), dims.length, t.i32(dims))));
    this._params.push(id);
    return id;
  }

  /** A constant tensor: values (Float32Array or numbers) of shape (default [values.length]). */
  constant(values, shape) {
    const fn = 'WebGraph.constant';
    const data = floatData(fn, 'values', values);
    const dims = shape === undefined ? [data.length] : shapeArg(fn, 'shape', shape);
    if (numel(dims) !== data.length) {
      throw fail(fn, `${data.length} values do not fill shape [${dims.join(', ')}] (${numel(dims)} elements)`);
    }
    return this._build('constant', (g) => this._rt.scoped((t) =>
      this._rt.exports.rlx_constant(g, dims.length, t.i32(dims), t.f32(data.length ? data : [0]))));
  }

  /** A rank-0 constant. */
  scalar(value) {
    if (typeof value !== 'number') throw fail('WebGraph.scalar', `value must be a number, got ${describe(value)}`);
    return this._build('scalar', (g) => this._rt.exports.rlx_scalar(g, value));
  }

  // ---- any op ------------------------------------------------------------------------
  /**
   * Any op of the table by name.  Attributes by name, as the module's
   * attribute table (include/rlx_attrs.def) lists them:
   * g.op('softmax', [x], { axis: 1 }), g.op('rms_norm', [x, w], { eps: 1e-6 }),
   * g.op('matmul', [a, b], { trans_b: true }); flags (bool) left out are
   * false.  Or by position: { ints: [...], floats: [...] }.
   * g.opAttrs(name) lists an op's attributes.
   */
  op(name, inputs, attrs = {}) {
    const fn = `WebGraph.op(${typeof name === 'string' ? JSON.stringify(name) : '?'})`;
    if (typeof name !== 'string') throw fail('WebGraph.op', `name must be an op name (a string), got ${describe(name)}`);
    listArg(fn, 'inputs', inputs); // an Array, its length checked before it is walked
    inputs.forEach((v, i) => nodeId(fn, `inputs[${i}]`, v));
    if (attrs === null || typeof attrs !== 'object' || Array.isArray(attrs)) {
      throw fail(fn, `attributes must be an object ({ name: value, ... } or { ints, floats }), got ${describe(attrs)}`);
    }
    const e = this._rt.exports;
    const op = this._rt.scoped((t) => e.rlx_op_from_name(t.str(name)));
    if (op >= this._rt.opCount) {
      throw new RlxError(STATUS.NOT_FOUND, `WebGraph.op: unknown op "${name}" (known: ${this._rt.opNames().join(', ')})`);
    }
    const positional = Object.keys(attrs).every((k) => k === 'ints' || k === 'floats');
    const { ints, floats } = positional ? positionalAttrs(fn, attrs) : namedAttrs(fn, opAttrs(this._rt, op), attrs);
    return this._build(name, (g) => this._rt.scoped((t) => e.rlx_op_node(g, op, t.i32(inputs.length ? inputs : [0]),
      inputs.length, t.i32(ints.length ? ints : [0]), ints.length, t.f32(floats.length ? floats : [0]), floats.length)));
  }

  /** The attributes of op `name`: [{ name, type, slot }] (type: int, bool, axes, enum, ints, float). */
  opAttrs(name) {
    if (typeof name !== 'string') throw fail('WebGraph.opAttrs', `name must be an op name (a string), got ${describe(name)}`);
    const op = this._rt.scoped((t) => this._rt.exports.rlx_op_from_name(t.str(name)));
    if (op >= this._rt.opCount) throw new RlxError(STATUS.NOT_FOUND, `WebGraph.opAttrs: unknown op "${name}"`);
    return opAttrs(this._rt, op).map((a) => ({ ...a }));
  }

  _rank(fn, x) {
    nodeId(fn, 'x', x);
    return this.shape(x).length;
  }

  _axis(fn, x, axis, rank = this._rank(fn, x)) {
    if (!Number.isInteger(axis)) throw fail(fn, `axis must be an integer, got ${describe(axis)}`);
    const a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) throw fail(fn, `axis ${axis} is outside a rank-${rank} tensor (node ${x} [${this.shape(x).join(', ')}])`);
    return a;
  }

  // ---- ops with attributes -----------------------------------------------------------
  /** a[..., M, K] x b[..., K, N] -> [..., M, N]; transA reads a as [..., K, M], transB b as [..., N, K]. */
  matmul(a, b, opts) {
    const { transA = false, transB = false, trans_a, trans_b } = optionsArg('WebGraph.matmul', opts);
    return this.op('matmul', [a, b], { trans_a: Boolean(trans_a ?? transA), trans_b: Boolean(trans_b ?? transB) });
  }

  /** x with a new shape of the same size (one dim may be -1). */
  reshape(x, shape) {
    return this.op('reshape', [x], { shape: shapeArg('WebGraph.reshape', 'shape', shape) });
  }

  /** x broadcast to shape. */
  expand(x, shape) {
    return this.op('expand', [x], { shape: shapeArg('WebGraph.expand', 'shape', shape) });
  }

  /** Axes reordered: output axis i is input axis perm[i]. */
  permute(x, perm) {
    const fn = 'WebGraph.permute';
    const p = intArray(fn, 'perm', perm);
    const rank = this._rank(fn, x);
    if (p.length !== rank) throw fail(fn, `perm [${p.join(', ')}] needs ${rank} entries for a rank-${rank} tensor`);
    return this.op('permute', [x], { perm: p.map((a) => (a < 0 ? a + rank : a)) });
  }

  /** Two axes swapped (the last two by default). */
  transpose(x, axis0 = -2, axis1 = -1) {
    const fn = 'WebGraph.transpose';
    const rank = this._rank(fn, x);
    const a = this._axis(fn, x, axis0, rank);
    const b = this._axis(fn, x, axis1, rank);
    const perm = Array.from({ length: rank }, (_, i) => i);
    perm[a] = b;
    perm[b] = a;
    return this.op('permute', [x], { perm });
  }

  /** The slice [start, start + length) of x along axis. */
  narrow(x, axis, start, length) {
    const [a, s, n] = intArray('WebGraph.narrow', 'axis, start, length', [axis, start, length]);
    return this.op('narrow', [x], { axis: a, start: s, length: n });
  }

  /** xs (1 to 8 nodes) joined along axis. */
  concat(xs, axis = 0) {
    listArg('WebGraph.concat', 'xs', xs);
    return this.op('concat', xs, { axis: intArray('WebGraph.concat', 'axis', [axis])[0] });
  }

  /** Rows of table[V, D] at ids[...] (f32 or i32) -> [..., D]. */
  gather(table, ids) {
    return this.op('gather', [table, ids]);
  }

  _reduce(name, x, axes, keepdim) {
    const fn = `WebGraph.${name}`;
    const rank = this._rank(fn, x);
    const list = axes === undefined || axes === null ? Array.from({ length: rank }, (_, i) => i)
      : intArray(fn, 'axes', axes, { allowNumber: true });
    if (!list.length) throw fail(fn, 'axes is empty: give at least one axis (or leave it out for all axes)');
    let mask = 0;
    for (const a of list) mask |= 1 << this._axis(fn, x, a, rank);
    return this.op(name, [x], { axes: mask, keepdim: Boolean(keepdim) });
  }

  /** Sum over axes (a number, an Array, or all axes when left out). */
  reduce_sum(x, axes, keepdim = false) { return this._reduce('reduce_sum', x, axes, keepdim); }
  /** Mean over axes (a number, an Array, or all axes when left out). */
  reduce_mean(x, axes, keepdim = false) { return this._reduce('reduce_mean', x, axes, keepdim); }
  /** Maximum over axes (a number, an Array, or all axes when left out). */
  reduce_max(x, axes, keepdim = false) { return this._reduce('reduce_max', x, axes, keepdim); }

  /** Softmax along axis (default the last). */
  softmax(x, axis = -1) { return this.op('softmax', [x], { axis: intArray('WebGraph.softmax', 'axis', [axis])[0] }); }
  /** Log of the softmax along axis (default the last). */
  log_softmax(x, axis = -1) { return this.op('log_softmax', [x], { axis: intArray('WebGraph.log_softmax', 'axis', [axis])[0] }); }
  /** Per-sample loss of logits[..., C] against class ids labels[...] -> [...]; reduce_mean it for a batch loss. */
  softmax_cross_entropy(logits, labels) { return this.op('softmax_cross_entropy', [logits, labels]); }
  /** Mean over H, W of x[N, C, H, W] -> [N, C]. */
  global_avg_pool(x) { return this.op('global_avg_pool', [x]); }

  /** RMSNorm over the last axis: x[..., D], weight[D]. */
  rms_norm(x, weight, eps = 1e-6) { return this.op('rms_norm', [x, weight], { eps }); }
  /** LayerNorm over the last axis: x[..., D], weight[D], bias[D]. */
  layer_norm(x, weight, bias, eps = 1e-5) { return this.op('layer_norm', [x, weight, bias], { eps }); }

  /**
   * Rotary embedding of x[..., S, D], D even; row s is at position
   * posOffset + s.  layout 'neox' rotates the two halves (x[i], x[i + D/2]),
   * 'pairs' adjacent pairs (x[2i], x[2i + 1]).
   */
  rope(x, opts) {
    const fn = 'WebGraph.rope';
    const { theta = 10000, posOffset = 0, pos_offset, layout = 'neox' } = optionsArg(fn, opts);
    const mode = ROPE_LAYOUTS.indexOf(layout);
    if (mode < 0) throw fail(fn, `layout must be ${ROPE_LAYOUTS.map((l) => `'${l}'`).join(' or ')}, got ${describe(layout)}`);
    return this.op('rope', [x], { pos_offset: pos_offset ?? posOffset, theta, mode });
  }

  /**
   * softmax(scale q.k^T + mask) . v: q[B, H, Sq, D], k[B, H, Sk, D], v[B, H, Sk, Dv].
   * mask: 'none' | 'causal' | 'sliding' (window keys) | 'padding' | 'bias'
   * (the last two take maskTensor); scale <= 0 means 1/sqrt(D).
   */
  attention(q, k, v, opts) {
    const fn = 'WebGraph.attention';
    const { mask = 'none', window = 0, maskTensor, mask_tensor, scale = 0 } = optionsArg(fn, opts);
    if (typeof mask !== 'string' || !Object.hasOwn(MASK, mask)) throw fail(fn, `mask must be one of ${Object.keys(MASK).join(', ')}, got ${describe(mask)}`);
    const m = maskTensor ?? mask_tensor;
    const inputs = [q, k, v];
    if (mask === 'padding' || mask === 'bias') {
      if (m === undefined) throw fail(fn, `mask '${mask}' needs maskTensor`);
      inputs.push(m);
    }
    return this.op('attention', inputs, { mask: MASK[mask], window, scale });
  }

  /** x[N, C, H, W] * w[O, C/groups, KH, KW] -> [N, O, OH, OW]; stride, padding, dilation: int or [h, w]. */
  conv2d(x, w, opts) {
    const fn = 'WebGraph.conv2d';
    const { stride = 1, padding = 0, dilation = 1, groups = 1 } = optionsArg(fn, opts);
    const [stride_h, stride_w] = pair(fn, 'stride', stride), [pad_h, pad_w] = pair(fn, 'padding', padding);
    const [dilation_h, dilation_w] = pair(fn, 'dilation', dilation);
    return this.op('conv2d', [x, w], {
      stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups: intArray(fn, 'groups', [groups])[0],
    });
  }

  _pool(name, x, opts) {
    const fn = `WebGraph.${name}`;
    const { kernel, stride, padding = 0 } = optionsArg(fn, opts);
    if (kernel === undefined) throw fail(fn, 'kernel is required (an int or [h, w])');
    const k = pair(fn, 'kernel', kernel);
    const [stride_h, stride_w] = pair(fn, 'stride', stride ?? k), [pad_h, pad_w] = pair(fn, 'padding', padding);
    return this.op(name, [x], { kernel_h: k[0], kernel_w: k[1], stride_h, stride_w, pad_h, pad_w });
  }

  /** Max pooling of x[N, C, H, W]; stride defaults to the kernel. */
  max_pool2d(x, opts) { return this._pool('max_pool2d', x, opts); }
  /** Average pooling of x[N, C, H, W] (padding counts as zeros); stride defaults to the kernel. */
  avg_pool2d(x, opts) { return this._pool('avg_pool2d', x, opts); }

  /**
   * Adds vision model `slug` (see list_vision_models) for a batch size:
   * inputs "x" and "labels" (i32), its params by name.  Returns the node ids
   * { x, labels, logits, loss, params } (params in the model's order).
   */
  add_vision(slug, batch = 1) {
    const fn = 'WebGraph.add_vision';
    if (typeof slug !== 'string') throw fail(fn, `slug must be a string, got ${describe(slug)}`);
    if (!Number.isInteger(batch) || batch < 1) throw fail(fn, `batch must be an integer >= 1, got ${describe(batch)}`);
    const rt = this._rt;
    const e = rt.exports;
    const [logits, loss] = rt.scoped((t) => {
      const out = t.bytes(8);
      rt.check(e.rlx_vision_build(this._ptr('add_vision'), t.str(slug), batch, out));
      return Array.from(rt.readI32(out, 2));
    });
    const params = this._visionParamNames(slug).map((name) => {
      const id = this.find(name);
      if (!this._params.includes(id)) this._params.push(id);
      return id;
    });
    return { x: this.find('x'), labels: this.find('labels'), logits, loss, params };
  }

  /** The param names of a vision model (overridden by ./vision.js, which has the metadata). */
  _visionParamNames() {
    throw new RlxError(STATUS.STATE, 'WebGraph.add_vision: model metadata is not available');
  }

  // ---- compile ------------------------------------------------------------------------
  _outputs(fn, outputs) {
    const list = Array.isArray(outputs) ? listArg(fn, 'outputs', outputs) : [outputs];
    if (!list.length) throw fail(fn, 'outputs is empty: give at least one node id');
    list.forEach((v, i) => nodeId(fn, `outputs[${i}]`, v));
    return list;
  }

  _select(fn, backend, kind, outs, skipFusion) {
    const request = backends.normalizeRequest(backend);
    if (!request) throw fail(fn, `backend must be 'cpu', 'webgpu', 'webgl' or 'auto', got ${describe(backend)}`);
    const plan = backends.candidates(backends.environment(this._rt), { label: 'this graph', trainable: null }, request, false);
    return selectCompiled(fn, this, plan, outs, kind, skipFusion);
  }

  /**
   * Compiles outputs (a node id or an Array) for backend 'cpu' (default),
   * 'webgpu', 'webgl' or 'auto' (the best that compiles here; see
   * backend_candidates).  The compiled graph keeps what it needs: the graph
   * may be extended or freed afterwards.
   */
  compile_forward(outputs, backend = 'cpu', opts = undefined) {
    const fn = 'WebGraph.compile_forward';
    const { skipFusion = false } = optionsArg(fn, opts);
    const outs = this._outputs(fn, outputs);
    this._ptr('compile_forward');
    return this._select(fn, backend, 'forward', outs, skipFusion);
  }

  _grad(fn, loss, params) {
    nodeId(fn, 'loss', loss);
    const wrt = params === undefined || params === null ? this._params.slice() : (Array.isArray(params) ? listArg(fn, 'params', params) : [params]);
    if (!wrt.length) throw fail(fn, 'no params to differentiate for: make params with param() or pass them');
    wrt.forEach((v, i) => nodeId(fn, `params[${i}]`, v));
    const rt = this._rt;
    return rt.scoped((t) => {
      const out = t.bytes(4 * (wrt.length + 1));
      rt.check(rt.exports.rlx_grad_with_loss(this._ptr('compile_backward'), loss, t.i32(wrt), wrt.length, out));
      return Array.from(rt.readI32(out, wrt.length + 1));
    });
  }

  /**
   * Appends the backward pass of loss (rlx_grad_with_loss) and compiles
   * [loss, d loss / d params[0], ...] for backend.  params default to every
   * param of the graph.  The input "d_output" (the seed, shaped like the
   * loss) is preset to ones: 1 for a scalar loss.
   */
  compile_backward(loss, params, backend = 'cpu', opts = undefined) {
    const fn = 'WebGraph.compile_backward';
    const { skipFusion = false } = optionsArg(fn, opts);
    const outs = this._grad(fn, loss, params);
    return this._select(fn, backend, 'backward', outs, skipFusion);
  }

  /**
   * One training step per run, compiled for backend ('cpu' by default,
   * 'webgpu', 'webgl' or 'auto'): forward, backward and the optimizer update
   * in one plan (rlx_compile_train).  The params live in the compiled graph
   * (feed them once; read_param reads them back); output 0 is the loss
   * before the update.  optimizer: { kind: 'sgd' | 'momentum' | 'adam' |
   * 'adamw', lr, momentum, beta1, beta2, eps, weight_decay }; set_lr changes
   * the learning rate later.
   */
  compile_train(loss, params, optimizer = {}, backend = 'cpu', opts = undefined) {
    const fn = 'WebGraph.compile_train';
    const { skipFusion = false } = optionsArg(fn, opts);
    nodeId(fn, 'loss', loss);
    const wrt = params === undefined || params === null ? this._params.slice() : (Array.isArray(params) ? listArg(fn, 'params', params) : [params]);
    if (!wrt.length) throw fail(fn, 'no params to train: make params with param() or pass them');
    wrt.forEach((v, i) => nodeId(fn, `params[${i}]`, v));
    const opt = optimizerArgs(fn, optimizer);
    const request = backends.normalizeRequest(backend);
    if (!request) throw fail(fn, `backend must be 'cpu', 'webgpu', 'webgl' or 'auto', got ${describe(backend)}`);
    const plan = backends.candidates(backends.environment(this._rt), { label: 'this graph', trainable: null }, request, false);
    const rt = this._rt;
    return selectCompiled(fn, this, plan, wrt, 'train', skipFusion, (out, dev) => rt.scoped((t) =>
      rt.exports.rlx_compile_train(this._ptr(fn), loss, t.i32(wrt), wrt.length, opt.kind, opt.lr, opt.momentum,
        opt.beta1, opt.beta2, opt.eps, opt.weight_decay, dev, skipFusion ? 1 : 0, out)));
  }

  /** Frees the graph (compiled graphs outlive it); freeing twice is harmless. */
  free() {
    this._g.free();
  }
}

/** The optimizer of compile_train as the numbers rlx_compile_train takes (0: the library's default). */
function optimizerArgs(fn, o) {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw fail(fn, `optimizer must be an object { kind, lr, ... }, got ${describe(o)}`);
  const kindName = o.kind ?? 'sgd';
  const kind = typeof kindName === 'string' && Object.hasOwn(OPTIMIZER, kindName) ? OPTIMIZER[kindName] : undefined;
  if (kind === undefined) throw fail(fn, `optimizer.kind must be one of ${Object.keys(OPTIMIZER).join(', ')}, got ${describe(o.kind)}`);
  const num = (name, dflt) => {
    const v = o[name] ?? dflt;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw fail(fn, `optimizer.${name} must be a finite number, got ${describe(v)}`);
    return v;
  };
  return { kind, lr: num('lr', 0.01), momentum: num('momentum', 0), beta1: num('beta1', 0), beta2: num('beta2', 0),
    eps: num('eps', 0), weight_decay: o.weightDecay !== undefined ? num('weightDecay', 0) : num('weight_decay', 0) };
}

// The attribute table of op (the module's rlx_op_attr_* exports), read
// once per runtime and op.
const attrTables = new WeakMap();
function opAttrs(rt, op) {
  let byOp = attrTables.get(rt);
  if (!byOp) attrTables.set(rt, (byOp = new Map()));
  let list = byOp.get(op);
  if (!list) {
    const e = rt.exports;
    list = Array.from({ length: e.rlx_op_attr_count(op) }, (_, k) => ({
      name: rt.cstring(e.rlx_op_attr_name(op, k)), type: rt.cstring(e.rlx_op_attr_type(op, k)),
      slot: e.rlx_op_attr_slot(op, k),
    }));
    byOp.set(op, list);
  }
  return list;
}

function positionalAttrs(fn, attrs) {
  const ints = intArray(fn, 'ints', attrs.ints ?? []);
  const floats = Array.from(attrs.floats ?? []);
  floats.forEach((f, i) => {
    if (typeof f !== 'number') throw fail(fn, `floats[${i}] must be a number, got ${describe(f)}`);
  });
  return { ints, floats };
}

// { name: value } -> { ints, floats } at the slots the table gives.
function namedAttrs(fn, table, attrs) {
  const ints = [], floats = [];
  const names = table.map((a) => a.name);
  for (const key of Object.keys(attrs)) {
    if (!names.includes(key)) {
      throw fail(fn, `has no attribute "${key}" (${names.length ? `its attributes: ${names.join(', ')}` : 'it takes none'})`);
    }
  }
  for (const { name, type, slot } of table) {
    const v = attrs[name];
    if (v === undefined && type !== 'bool') throw fail(fn, `attribute ${name} (${type}) is missing`);
    if (type === 'float') {
      if (typeof v !== 'number') throw fail(fn, `attribute ${name} must be a number, got ${describe(v)}`);
      floats[slot] = v;
    } else if (type === 'ints') {
      intArray(fn, name, v).forEach((x, i) => { ints[slot + i] = x; });
    } else if (type === 'bool') {
      if (v !== undefined && typeof v !== 'boolean' && v !== 0 && v !== 1) throw fail(fn, `attribute ${name} must be true or false, got ${describe(v)}`);
      ints[slot] = v ? 1 : 0;
    } else {
      ints[slot] = intArray(fn, name, [v])[0];
    }
  }
  return { ints, floats };
}

// The elementwise ops (add, relu, where, ...): one method each, for every op
// the module's table marks elementwise (rlx_op_is_elementwise), installed
// when the first graph of a runtime is made, so an op added to the table
// gets its method with no change here.  How many inputs each takes is the
// table's (rlx_op_min_inputs / rlx_op_max_inputs), read on the call.
function simpleOp(name) {
  return function elementwiseOp(...inputs) {
    const e = this._rt.exports;
    const op = this._rt.scoped((t) => e.rlx_op_from_name(t.str(name)));
    const lo = e.rlx_op_min_inputs(op), hi = e.rlx_op_max_inputs(op);
    if (inputs.length < lo || inputs.length > hi) {
      const n = lo === hi ? `${lo} node id${lo > 1 ? 's' : ''}` : `${lo} to ${hi} node ids`;
      throw fail(`WebGraph.${name}`, `takes ${n}, got ${inputs.length} arguments`);
    }
    return this.op(name, inputs);
  };
}

const installed = new WeakSet();
function installElementwiseOps(rt) {
  if (installed.has(rt)) return;
  installed.add(rt);
  const e = rt.exports;
  for (let op = 0; op < rt.opCount; op++) {
    if (e.rlx_op_is_elementwise(op) !== 1) continue;
    const name = rt.cstring(e.rlx_op_name(op));
    if (Object.hasOwn(WebGraph.prototype, name)) continue;
    Object.defineProperty(WebGraph.prototype, name, { value: simpleOp(name), writable: true, configurable: true });
  }
}

/**
 * Compiles node ids outs of graph on the first candidate of plan that takes
 * them (backends.select); a backward graph gets its seed "d_output" preset
 * to ones.  compileTrain(out, device), when given, compiles instead (a
 * training step: kind 'train').  Returns the CompiledGraph with `fallbacks`
 * and `requested` set.
 */
export function selectCompiled(fn, graph, plan, outs, kind, skipFusion = false, compileTrain = null) {
  const rt = graph._rt;
  const compile = compileTrain ?? ((out, dev) =>
    rt.scoped((t) => rt.exports.rlx_compile(graph._ptr(fn), t.i32(outs), outs.length, dev, skipFusion ? 1 : 0, 0, out)));
  const { compiled, fallbacks } = backends.select(plan, (b) => compileOn(graph, b, kind, compile),
  (message) => new RlxError(STATUS.UNSUPPORTED, `${fn}: ${message}`));
  compiled.fallbacks = fallbacks;
  compiled.requested = plan.request;
  if (kind === 'backward') {
    const dOut = compiled.inputs.find((i) => i.name === 'd_output');
    if (dOut) compiled.feed('d_output', new Float32Array(dOut.size).fill(1));
  }
  return compiled;
}

/** Compiles on one backend or throws why it cannot (the reason select() reports). */
function compileOn(graph, backend, kind, compile) {
  const rt = graph._rt;
  const e = rt.exports;
  const makeExecutor = backends.executorFor(rt, backend); // throws the reason when the backend cannot run here
  const ptr = rt.scoped((t) => {
    const out = t.bytes(4);
    rt.writeI32(out, [0]);
    rt.check(compile(out, DEVICE[backend]));
    return rt.readI32(out, 1)[0] >>> 0;
  });
  rt.sessions.add(ptr); // a live session: CompiledGraph takes only these
  try {
    if (backend !== 'cpu' && e.rlx_session_requires_host_execution?.(ptr)) {
      const [total, host, syncs] = rt.scoped((t) => {
        const out = t.bytes(12);
        rt.check(e.rlx_session_host_summary(ptr, out));
        return Array.from(rt.readI32(out, 3));
      });
      throw new Error(`the plan needs host execution (${host} of ${total} steps on the host, ${syncs} sync points), ` +
        'which the browser GPU executors cannot do');
    }
    const executor = makeExecutor(ptr);
    if (!executor || typeof executor.then === 'function') throw new Error(`the ${backend} executor did not return an executor synchronously`);
    return new CompiledGraph(rt, ptr, backend, kind, executor);
  } catch (err) {
    rt.sessions.delete(ptr);
    e.rlx_session_free(ptr);
    throw err;
  }
}

/** err from the executor as an RlxError "fn: detail" (its reason and status kept). */
function relabel(fn, err) {
  if (!(err instanceof RlxError)) return err; // a GPU failure (with its reason) stays as it is
  const detail = err.detail ?? err.message;
  if (detail.startsWith(`${fn}:`)) return err;
  const wrapped = new RlxError(err.status, `${fn}: ${detail}`, err.statusName);
  if (err.reason) wrapped.reason = err.reason;
  wrapped.cause = err;
  return wrapped;
}

/**
 * A compiled graph: feed inputs and params by name, run, read outputs.
 * `backend` is what it actually runs on; `fallbacks` lists the better
 * backends that were not used and why (for 'auto').  Everything it does on
 * the device goes through `executor`, an object with the contract of
 * ./executor.js (the same methods on every backend); the C session it holds
 * gives the shapes.  run() keeps the spec's form: synchronous where the
 * executor has runSync (cpu, webgl), else a Promise (webgpu); the executor's
 * run(feeds) is the Promise form everywhere.
 */
export class CompiledGraph {
  constructor(rt, ptr, backend, kind, executor) {
    if (!(rt instanceof Rlx) || !rt.sessions.has(ptr) || executor === null || typeof executor !== 'object') {
      throw new RlxError(STATUS.STATE, 'CompiledGraph: not a live compiled session (compile_forward / compile_backward / compile_train make them)');
    }
    this._rt = rt;
    this._ptr = ptr;
    this.backend = backend;
    this.kind = kind;
    this.fallbacks = [];
    this.requested = backend;
    this.executor = executor;
    const e = rt.exports;
    this.inputs = Array.from({ length: e.rlx_session_input_count(ptr) }, (_, i) => rt.scoped((t) => {
      const dims = t.bytes(32);
      const rank = e.rlx_session_input_shape(ptr, i, dims);
      const shape = Array.from(rt.readI32(dims, Math.max(rank, 0)));
      return { name: rt.cstring(e.rlx_session_input_name(ptr, i)), shape, size: numel(shape),
        dtype: e.rlx_session_input_dtype(ptr, i) === DTYPE.i32 ? 'i32' : 'f32' };
    }));
    this.params = Array.from({ length: e.rlx_session_param_count(ptr) }, (_, i) => ({
      name: rt.cstring(e.rlx_session_param_name(ptr, i)), size: e.rlx_session_param_len(ptr, i) >>> 0,
    }));
    this._outputCount = e.rlx_session_output_count(ptr);
  }

  _live(fn) {
    if (!this._ptr) throw new RlxError(STATUS.STATE, `CompiledGraph.${fn}: this compiled graph was freed`);
    return this._ptr;
  }

  /** Names of the inputs / params it reads. */
  input_names() { return this.inputs.map((i) => i.name); }
  param_names() { return this.params.map((p) => p.name); }

  /**
   * Sets input or param `name`: a Float32Array, an Int32Array (class or
   * token ids) or an Array of numbers with exactly its element count.
   */
  feed(name, data) {
    const fn = 'CompiledGraph.feed';
    this._live('feed');
    if (typeof name !== 'string') throw fail(fn, `name must be a string, got ${describe(name)}`);
    const isParam = this.params.some((p) => p.name === name);
    const input = this.inputs.find((i) => i.name === name);
    if (!isParam && !input) {
      throw new RlxError(STATUS.NOT_FOUND, `${fn}: no input or param named '${name}' (inputs: ${this.input_names().join(', ') || 'none'}; ` +
        `params: ${this.param_names().join(', ') || 'none'})`);
    }
    const values = data instanceof Int32Array && input ? data : floatData(fn, `'${name}'`, data);
    try {
      this.executor.feed(name, values);
    } catch (err) {
      throw relabel(fn, err);
    }
  }

  /** The learning rate of a graph from compile_train (a finite number). */
  set_lr(lr) {
    const fn = 'CompiledGraph.set_lr';
    this._live('set_lr');
    if (this.kind !== 'train') throw new RlxError(STATUS.STATE, `${fn}: only a graph from compile_train has a learning rate (this one is ${this.kind})`);
    if (typeof lr !== 'number' || !Number.isFinite(lr)) throw fail(fn, `lr must be a finite number, got ${describe(lr)}`);
    this.feed('rlx.lr', [lr]);
  }

  /**
   * Creates the device objects now (WebGPU: pipelines and buffers; run()
   * would do it on first use); resolves at once where there is nothing to do.
   */
  prepare() {
    this._live('prepare');
    return this.executor.prepare().then(() => undefined);
  }

  /** One run: synchronous where the executor can (cpu, webgl); a Promise otherwise (webgpu). */
  run() {
    this._live('run');
    const ex = this.executor;
    if (typeof ex.runSync === 'function') {
      try {
        ex.runSync();
      } catch (err) {
        throw relabel('CompiledGraph.run', err);
      }
      return undefined;
    }
    return ex.run().then(() => undefined, (err) => { throw relabel('CompiledGraph.run', err); });
  }

  /**
   * One run on any backend as a Promise of every output (Float32Arrays);
   * feeds ({ name: data }) are fed first.  The executor contract's run().
   */
  run_async(feeds) {
    try {
      this._live('run_async');
      if (feeds !== undefined && feeds !== null) {
        const list = feeds instanceof Map ? feeds : Object.entries(optionsArg('CompiledGraph.run_async', feeds, 'feeds'));
        for (const [name, data] of list) this.feed(name, data);
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return this.executor.run().then((outs) => outs.map((o) => o.slice()), (err) => { throw relabel('CompiledGraph.run_async', err); });
  }

  /** Number of outputs. */
  get output_count() { return this._outputCount; }

  _index(fn, i) {
    if (!Number.isInteger(i) || i < 0 || i >= this._outputCount) {
      throw new RlxError(STATUS.NOT_FOUND, `CompiledGraph.${fn}: output ${typeof i === 'number' ? i : describe(i)} does not exist (${this._outputCount} outputs)`);
    }
    return i;
  }

  /** Element count of every output, in order. */
  output_sizes() {
    const ptr = this._live('output_sizes');
    return Array.from({ length: this._outputCount }, (_, i) => this._rt.exports.rlx_session_output_len(ptr, i) >>> 0);
  }

  /** Dims of output i. */
  output_shape(i) {
    const ptr = this._live('output_shape');
    this._index('output_shape', i);
    return this._rt.scoped((t) => {
      const dims = t.bytes(32);
      const rank = this._rt.exports.rlx_session_output_shape(ptr, i, dims);
      return Array.from(this._rt.readI32(dims, rank));
    });
  }

  /** A copy of output i of the last run (Float32Array). */
  output(i) {
    this._live('output');
    this._index('output', i);
    try {
      return this.executor.output(i).slice();
    } catch (err) {
      throw relabel('CompiledGraph.output', err);
    }
  }

  /** The current values of param `name`: synchronous where the executor can (cpu, webgl), else a Promise (webgpu). */
  read_param(name) {
    const fn = 'CompiledGraph.read_param';
    this._live('read_param');
    if (typeof name !== 'string') throw fail(fn, `name must be a string, got ${describe(name)}`);
    const p = this.params.find((q) => q.name === name);
    if (!p) throw new RlxError(STATUS.NOT_FOUND, `${fn}: no param named '${name}' (params: ${this.param_names().join(', ') || 'none'})`);
    const ex = this.executor;
    if (typeof ex.readParamSync === 'function') {
      try {
        return ex.readParamSync(name);
      } catch (err) {
        throw relabel(fn, err);
      }
    }
    return ex.readParam(name).catch((err) => { throw relabel(fn, err); });
  }

  /** Per-step times of one run: the executor contract's profile() rows (a Promise). */
  profile(opts) {
    let o;
    try {
      this._live('profile');
      o = optionsArg('CompiledGraph.profile', opts);
      const { repeat = 1 } = o;
      if (!Number.isInteger(repeat) || repeat < 1 || repeat > 100000) {
        throw fail('CompiledGraph.profile', `repeat must be an integer in [1, 100000], got ${describe(repeat)}`);
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return this.executor.profile(o);
  }

  /** Frees the compiled graph (and its device objects); freeing twice is harmless. */
  free() {
    if (!this._ptr) return;
    this.executor.free();
    this._rt.sessions.delete(this._ptr);
    this._rt.exports.rlx_session_free(this._ptr);
    this._ptr = 0;
  }
}
