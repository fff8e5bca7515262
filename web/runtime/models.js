// models.js - the MLP and the transformer of rlx_web.wasm.  The MLP's
// forward and gradients run on a backend given as a parameter ('cpu' in
// wasm, 'webgpu', 'webgl': the same graph built with WebGraph and compiled
// once per shape and backend); its loss and SGD step and the transformer
// run on the CPU.  ../pkg/rlx_web.js's mlp_forward, mlp_grads_gpu,
// mlp_forward_webgl, ... are built on these.
import { WebGraph } from './vision.js';
import { SessionCache, concatF32, compileMlp } from './gpu_entry.js';
import { live } from './instance.js';
import { fail, describe, floats, int, finite, seed, rowsOf, onBackend } from './args.js';

const MAX_TRANSFORMER_PARAMS = 1 << 26; // 256 MB of f32 weights: beyond that a tab runs out of memory

// ---- the MLP ------------------------------------------------------------------

/** Checks x, dims and weights; returns [rows, w1, b1, w2, b2] (copies in wasm via t). */
function mlpArgs(fn, x, inDim, hid, out, w1, b1, w2, b2) {
  int(fn, 'in', inDim);
  int(fn, 'hid', hid);
  int(fn, 'out', out);
  floats(fn, 'x', x);
  const rows = rowsOf(fn, 'x', x, inDim, 'in');
  floats(fn, 'w1', w1, inDim * hid, 'in * hid');
  floats(fn, 'b1', b1, hid, 'hid');
  floats(fn, 'w2', w2, hid * out, 'hid * out');
  floats(fn, 'b2', b2, out, 'out');
  return rows;
}

/** withT: the call takes targets t [rows, out] (all but forward). */
function callMlp(fn, withT, x, t, inDim, hid, out, w1, b1, w2, b2, outLen, call) {
  const rt = live();
  const rows = mlpArgs(fn, x, inDim, hid, out, w1, b1, w2, b2);
  if (withT) floats(fn, 't', t, rows * out, `rows * out = ${rows} * ${out}`);
  return rt.scoped((m) => {
    const dst = m.bytes(4 * outLen(rows));
    const head = [rows, inDim, hid, out, m.f32(w1), m.f32(b1), m.f32(w2), m.f32(b2), m.f32(x)];
    if (withT) head.push(m.f32(t));
    rt.check(call(rt.exports, head, dst));
    return rt.readF32(dst, outLen(rows));
  });
}

/** The name errors give an MLP entry point: mlp_forward, mlp_forward_gpu (WebGPU), mlp_forward_webgl. */
const entryName = (base, backend) => (backend === 'cpu' ? base : `${base}_${backend === 'webgpu' ? 'gpu' : backend}`);

/**
 * y = relu(x W1 + b1) W2 + b2 for every row of x (rows = x.length / in), on
 * backend: synchronous on 'cpu' and 'webgl', a Promise on 'webgpu' (after
 * `await init_webgpu()` resolved true); the backends agree within 1e-4.
 */
export function mlpForward(backend, x, inDim, hid, out, w1, b1, w2, b2) {
  return onBackend('mlpForward', backend, () => {
    const fn = entryName('mlp_forward', backend);
    if (backend !== 'cpu') return mlpGpu(fn, backend, 'forward', x, null, inDim, hid, out, w1, b1, w2, b2);
    return callMlp(fn, false, x, null, inDim, hid, out, w1, b1, w2, b2, (rows) => rows * out,
      (e, a, dst) => e.rlx_mlp_forward(...a, dst));
  });
}

/** [loss, dw1..., db1..., dw2..., db2...] of the squared error to t [rows, out], on backend (as mlpForward). */
export function mlpGrads(backend, x, t, inDim, hid, out, w1, b1, w2, b2) {
  return onBackend('mlpGrads', backend, () => {
    const fn = entryName('mlp_grads', backend);
    if (backend !== 'cpu') return mlpGpu(fn, backend, 'grads', x, t, inDim, hid, out, w1, b1, w2, b2);
    return callMlp(fn, true, x, t, inDim, hid, out, w1, b1, w2, b2,
      () => 1 + inDim * hid + hid + hid * out + out, (e, a, dst) => e.rlx_mlp_grads(...a, dst));
  });
}

/** Sum over rows and outputs of (y - t)^2. */
export function mlp_loss(x, t, inDim, hid, out, w1, b1, w2, b2) {
  return callMlp('mlp_loss', true, x, t, inDim, hid, out, w1, b1, w2, b2, () => 1,
    (e, a, dst) => e.rlx_mlp_loss(...a, dst))[0];
}

/** One SGD step (p -= lr g): the updated [w1..., b1..., w2..., b2...]. */
export function mlp_train_step(x, t, inDim, hid, out, w1, b1, w2, b2, lr) {
  finite('mlp_train_step', 'lr', lr);
  return callMlp('mlp_train_step', true, x, t, inDim, hid, out, w1, b1, w2, b2,
    () => inDim * hid + hid + hid * out + out, (e, a, dst) => e.rlx_mlp_train_step(...a, lr, dst));
}

// ---- the MLP on the GPU ----------------------------------------------------------
// The same graph as the CPU entry points, built with WebGraph and compiled
// once per (kind, rows, dims, backend); every call feeds the weights and x.

const mlpSessions = new SessionCache();

function mlpGpu(fn, backend, kind, x, t, inDim, hid, out, w1, b1, w2, b2) {
  const rt = live();
  const rows = mlpArgs(fn, x, inDim, hid, out, w1, b1, w2, b2);
  if (kind === 'grads') floats(fn, 't', t, rows * out, `rows * out = ${rows} * ${out}`);
  const key = `${backend}/${kind}/${rows}/${inDim}/${hid}/${out}`;
  const build = () => {
    const g = new WebGraph();
    try {
      return compileMlp(g, kind, rows, inDim, hid, out, backend);
    } finally {
      g.free();
    }
  };
  const feed = (c) => {
    c.feed('w1', w1);
    c.feed('b1', b1);
    c.feed('w2', w2);
    c.feed('b2', b2);
    c.feed('x', x);
    if (kind === 'grads') c.feed('t', t);
  };
  const read = (c) => (kind === 'forward' ? c.output(0) : concatF32([0, 1, 2, 3, 4].map((i) => c.output(i))));
  if (backend === 'webgl') return mlpSessions.useSync(fn, rt, backend, key, build, (c) => { feed(c); c.run(); return read(c); });
  return mlpSessions.use(fn, rt, backend, key, build, async (c) => { feed(c); await c.run(); return read(c); });
}

// ---- the transformer -------------------------------------------------------------

function transformerCall(fn, tokens, vocab, dim, nLayers, nHeads, headDim, ffn, seedValue, allPositions) {
  const rt = live();
  int(fn, 'vocab', vocab);
  int(fn, 'dim', dim);
  int(fn, 'n_layers', nLayers, 0);
  int(fn, 'n_heads', nHeads);
  int(fn, 'head_dim', headDim);
  int(fn, 'ffn', ffn);
  const [lo, hi] = seed(fn, seedValue);
  if (dim !== nHeads * headDim) {
    throw fail(fn, `dim (${dim}) must equal n_heads * head_dim (${nHeads} * ${headDim} = ${nHeads * headDim})`);
  }
  if (headDim % 2 !== 0) throw fail(fn, `head_dim must be even for RoPE, got ${headDim}`);
  const params = 2 * vocab * dim + dim + nLayers * (2 * dim + 4 * dim * dim + 3 * dim * ffn);
  if (params > MAX_TRANSFORMER_PARAMS) {
    throw fail(fn, `the model would have ${params} parameters; the browser build allows at most ${MAX_TRANSFORMER_PARAMS}`);
  }
  if (!(tokens instanceof Float32Array || Array.isArray(tokens))) {
    throw fail(fn, `tokens must be a Float32Array or an Array of numbers, got ${describe(tokens)}`);
  }
  if (tokens.length === 0) throw fail(fn, 'tokens is empty: give at least one token id');
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocab) {
      throw fail(fn, `tokens[${i}] is ${describe(id)}; token ids must be integers in [0, vocab = ${vocab})`);
    }
  }
  const n = tokens.length;
  const len = allPositions ? n * vocab : vocab;
  return rt.scoped((m) => {
    const dst = m.bytes(4 * len);
    rt.check(rt.exports.rlx_transformer_logits(vocab, dim, nLayers, nHeads, headDim, ffn, lo, hi, 0, 0,
      m.f32(tokens), n, allPositions ? 1 : 0, dst));
    return rt.readF32(dst, len);
  });
}

/**
 * Next-token logits (vocab values) of a decoder-only transformer with
 * weights synthesized from seed; tokens are ids (numbers) in [0, vocab).
 */
export function transformer_next_logits(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue) {
  return transformerCall('transformer_next_logits', tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue, false);
}

/** Logits of every position: tokens.length * vocab values, row-major. */
export function transformer_logits(tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue) {
  return transformerCall('transformer_logits', tokens, vocab, dim, n_layers, n_heads, head_dim, ffn, seedValue, true);
}

/** Drops every compiled session cached by the model entry points. */
export function clear_cache() {
  live().exports.rlx_models_clear_cache();
  mlpSessions.clear();
}
