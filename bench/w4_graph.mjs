// w4_graph.mjs - the W4 transformer of the TF.js anchors as an RLX graph with
// given weights (w4Weights() of tfjs_models.mjs), so that ours and tfjs run
// the same model on the same weights and their logits must agree:
//   buildW4(g, weights)     into a Graph (web/runtime/loader.js or anything
//                           with input/param/op): { logits, feed }, feed being
//                           the [name, data] pairs to set in the session
//   serializeW4(g, weights) the same build, recorded as a replayable text
//                           program plus the data (bench_models_native.c
//                           --w4=FILE replays it through the public C API:
//                           rlx_input, rlx_param, rlx_op_node)
// Used by webgpu_workloads.mjs (WebGPU, Node and Chromium) and
// bench_models.mjs (wasm CPU and native).  No Node-only imports: the
// Chromium page loads it too.
import { TCFG, W4_TOKENS } from './tfjs_models.mjs';

// q, k, v as one [D, 3D] projection; gate and up as the halves of w13; only
// the last position goes through the final norm and the head.
export function buildW4(g, weights) {
  const { V, D, L, H, HD, F, T } = TCFG;
  if (L !== weights.layers.length) throw new Error('buildW4: layer count mismatch');
  const feed = [];
  const param = (name, dims, data) => { feed.push([name, data]); return g.param(name, dims); };
  const ones = new Float32Array(D).fill(1);
  const cols = (m, rows, width, from, n) => {
    const o = new Float32Array(rows * n);
    for (let r = 0; r < rows; r++) o.set(m.subarray(r * width + from, r * width + from + n), r * n);
    return o;
  };
  const tokens = g.input('tokens', [T]);
  feed.push(['tokens', Float32Array.from(W4_TOKENS)]);
  let h = g.op('gather', [param('embed', [V, D], weights.emb), tokens]);
  const heads = (qkv, t) => g.op('permute', [g.op('reshape', [g.op('narrow', [qkv], [1, t * D, D])], [1, T, H, HD])], [0, 2, 1, 3]);
  weights.layers.forEach((l, i) => {
    const n1 = g.op('rms_norm', [h, param(`l${i}.attn_norm`, [D], ones)], [], [1e-5]);
    const qkv = g.op('matmul', [n1, param(`l${i}.wqkv`, [D, 3 * D], l.wqkv)], [0, 0]);
    const q = g.op('rope', [heads(qkv, 0)], [0, 0], [10000]);
    const k = g.op('rope', [heads(qkv, 1)], [0, 0], [10000]);
    const a = g.op('attention', [q, k, heads(qkv, 2)], [1, 0], [0]);
    const o = g.op('reshape', [g.op('permute', [a], [0, 2, 1, 3])], [T, D]);
    h = g.op('add', [h, g.op('matmul', [o, param(`l${i}.wo`, [D, D], l.wo)], [0, 0])]);
    const n2 = g.op('rms_norm', [h, param(`l${i}.ffn_norm`, [D], ones)], [], [1e-5]);
    const gate = g.op('silu', [g.op('matmul', [n2, param(`l${i}.wgate`, [D, F], cols(l.w13, D, 2 * F, 0, F))], [0, 0])]);
    const up = g.op('matmul', [n2, param(`l${i}.wup`, [D, F], cols(l.w13, D, 2 * F, F, F))], [0, 0]);
    h = g.op('add', [h, g.op('matmul', [g.op('mul', [gate, up]), param(`l${i}.wdown`, [F, D], l.w2)], [0, 0])]);
  });
  const last = g.op('rms_norm', [g.op('narrow', [h], [0, T - 1, 1]), param('final_norm', [D], ones)], [], [1e-5]);
  const logits = g.op('matmul', [last, param('lm_head', [D, V], weights.wout)], [0, 0]);
  return { logits, feed };
}

/**
 * buildW4 on g, recorded: { text, data }.  text has one builder call a line
 * (node ids are line numbers among the input/param/op lines, from 0):
 *   input NAME f32|i32 RANK DIMS... | param NAME RANK DIMS... |
 *   op OPNAME N_IN IN... N_IATTR IATTR... N_FATTR FATTR...
 * then "output ID", then "feed NAME COUNT" per session value (params and
 * inputs), whose floats follow one another in data (a Float32Array).
 */
export function serializeW4(g, weights) {
  const lines = [], ids = new Map();
  const rec = (line, id) => { ids.set(id, ids.size); lines.push(line); return id; };
  const idOf = (n) => {
    if (!ids.has(n)) throw new Error(`serializeW4: node ${n} was not recorded`);
    return ids.get(n);
  };
  const recorder = {
    input: (name, dims, dtype = 'f32') => rec(`input ${name} ${dtype} ${dims.length} ${dims.join(' ')}`, g.input(name, dims, dtype)),
    param: (name, dims) => rec(`param ${name} ${dims.length} ${dims.join(' ')}`, g.param(name, dims)),
    op: (name, inputs, iattr = [], fattr = []) => rec(`op ${name} ${inputs.length} ${inputs.map(idOf).join(' ')} ` +
      `${iattr.length} ${iattr.join(' ')} ${fattr.length} ${Array.from(fattr, String).join(' ')}`, g.op(name, inputs, iattr, fattr)),
  };
  const { logits, feed } = buildW4(recorder, weights);
  lines.push(`output ${idOf(logits)}`);
  const data = new Float32Array(feed.reduce((n, [, d]) => n + d.length, 0));
  let off = 0;
  for (const [name, d] of feed) {
    lines.push(`feed ${name} ${d.length}`);
    data.set(d, off);
    off += d.length;
  }
  lines.push('data');
  return { text: lines.map((l) => l.replace(/\s+/g, ' ').trim()).join('\n') + '\n', data };
}
