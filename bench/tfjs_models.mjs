// tfjs_models.mjs - the TensorFlow.js side of the model benchmarks (bench_models.mjs,
// webgpu_models.mjs, webgpu_chromium.mjs, webgl_models.mjs):
// the four vision models (NHWC) built from OUR initial params, and the W4
// transformer of the TF.js anchors (/work/shared/bench/tfjs/workloads.mjs),
// written against tfjs-core (`tf` is passed in).  The architectures match
// src/models/vision_models.c exactly:
//   mnist-mlp  784 -> 128 relu -> 10
//   mnist-cnn  conv3x3 1->8 valid relu, pool2, conv3x3 8->16 valid relu, pool2, fc 400->10
//   cifar-cnn  3 x (conv3x3 pad 1 relu, pool2): 3->32->64->128 ch, fc 2048->10
//   resnet     stem 32, identity block, stride-2 block with a 1x1 stride-2 skip, GAP, fc 64->10
// Loss: mean softmax cross-entropy; SGD on tf.variables.

// Our conv weights [O,C,KH,KW] -> tfjs [KH,KW,C,O].
function convW(tf, w, [O, C, KH, KW]) {
  const o = new Float32Array(w.length);
  for (let a = 0; a < O; a++) for (let c = 0; c < C; c++) for (let i = 0; i < KH; i++) for (let j = 0; j < KW; j++)
    o[((i * KW + j) * C + c) * O + a] = w[((a * C + c) * KH + i) * KW + j];
  return tf.tensor4d(o, [KH, KW, C, O]);
}
// fc weights whose rows follow an NCHW flatten [C,H,W] -> rows of an NHWC flatten [H,W,C].
function fcAfterFlatten(tf, w, [C, H, W], out) {
  const o = new Float32Array(w.length);
  for (let c = 0; c < C; c++) for (let h = 0; h < H; h++) for (let x = 0; x < W; x++)
    for (let n = 0; n < out; n++) o[((h * W + x) * C + c) * out + n] = w[((c * H + h) * W + x) * out + n];
  return tf.tensor2d(o, [C * H * W, out]);
}
/** x[B,C,H,W] (flat) -> flat NHWC. */
export function nchwToNhwc(x, [B, C, H, W]) {
  const o = new Float32Array(x.length);
  for (let b = 0; b < B; b++) for (let c = 0; c < C; c++) for (let h = 0; h < H; h++) for (let w = 0; w < W; w++)
    o[((b * H + h) * W + w) * C + c] = x[((b * C + c) * H + h) * W + w];
  return o;
}

/**
 * The tfjs twin of vision model `slug` with our flat initial params `flat`
 * (VisionBench.info() gives `info`): { params (tf.variables), forward(x NHWC) -> logits }.
 */
export function tfjsVisionModel(tf, slug, info, flat) {
  const p = {};
  let off = 0;
  info.param_names.forEach((name, i) => {
    const shape = info.param_shapes[i], w = flat.subarray(off, off + info.param_sizes[i]);
    off += info.param_sizes[i];
    let t;
    if (shape.length === 4) t = convW(tf, w, shape);
    else if (name === 'fc_w' && slug === 'mnist-cnn') t = fcAfterFlatten(tf, w, [16, 5, 5], 10);
    else if (name === 'fc_w' && slug === 'cifar-cnn') t = fcAfterFlatten(tf, w, [128, 4, 4], 10);
    else t = tf.tensor(w, shape);
    p[name] = tf.variable(t);
    t.dispose();
  });
  const P1 = [[0, 0], [1, 1], [1, 1], [0, 0]];
  const conv = (x, w, b, strides, pad, activation) => tf.fused.conv2d({ x, filter: p[w], strides, pad, bias: p[b], activation });
  const pool = (h) => tf.maxPool(h, 2, 2, 'valid');
  const dense = (h, w, b, activation) => tf.fused.matMul({ a: h, b: p[w], bias: p[b], activation });
  const forward = {
    'mnist-mlp': (x) => dense(dense(x, 'w1', 'b1', 'relu'), 'w2', 'b2'),
    'mnist-cnn': (x) => {
      let h = pool(conv(x, 'conv1_w', 'conv1_b', 1, 'valid', 'relu'));
      h = pool(conv(h, 'conv2_w', 'conv2_b', 1, 'valid', 'relu'));
      return dense(tf.reshape(h, [x.shape[0], 400]), 'fc_w', 'fc_b');
    },
    'cifar-cnn': (x) => {
      let h = x;
      for (const i of [1, 2, 3]) h = pool(conv(h, `conv${i}_w`, `conv${i}_b`, 1, P1, 'relu'));
      return dense(tf.reshape(h, [x.shape[0], 2048]), 'fc_w', 'fc_b');
    },
    resnet: (x) => {
      const stem = conv(x, 'stem_w', 'stem_b', 1, P1, 'relu');
      const a = conv(stem, 'b1a_w', 'b1a_b', 1, P1, 'relu');
      const h1 = tf.relu(tf.add(conv(a, 'b1b_w', 'b1b_b', 1, P1), stem));
      const c = conv(h1, 'b2a_w', 'b2a_b', 2, P1, 'relu');
      const h2 = tf.relu(tf.add(conv(c, 'b2b_w', 'b2b_b', 1, P1), conv(h1, 'skip_w', 'skip_b', 2, 'valid')));
      return dense(tf.mean(h2, [1, 2]), 'fc_w', 'fc_b');
    },
  }[slug];
  if (!forward) throw new Error(`tfjsVisionModel: unknown model '${slug}'`);
  return { params: p, forward };
}

/** The anchors' W4 config: vocab, dim, layers, heads, head dim, ffn, tokens. */
export const TCFG = { V: 256, D: 128, L: 2, H: 4, HD: 32, F: 384, T: 64 };
export const W4_TOKENS = Int32Array.from({ length: TCFG.T }, (_, i) => (i * 37 + 11) % TCFG.V);

/**
 * The anchors' W4 weights as flat arrays, drawn from mulberry32(4) in the anchors'
 * order (so tfjs's logits match theirs: 0.2902,0.5253,0.4119 sum=10.748):
 * { emb[V,D], layers: [{ wqkv[D,3D], wo[D,D], w13[D,2F], w2[F,D] }], wout[D,V] }; norms are ones.
 */
export function w4Weights() {
  const { V, D, L, F } = TCFG;
  let a = 4;
  const r = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const u = (n, scale) => Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale);
  const w = (rows, cols) => u(rows * cols, 1 / Math.sqrt(rows));
  const emb = u(V * D, 1);
  const layers = Array.from({ length: L }, () => ({ wqkv: w(D, 3 * D), wo: w(D, D), w13: w(D, 2 * F), w2: w(F, D) }));
  return { emb, layers, wout: w(D, V) };
}

/** The anchors' W4 forward in tfjs (batch 1): { forward() -> logits [1,V], dispose() }. */
export function tfjsTransformer(tf, weights = w4Weights()) {
  const { V, D, H, HD, F, T } = TCFG;
  const p = {
    emb: tf.tensor2d(weights.emb, [V, D]),
    layers: weights.layers.map((l) => ({ g1: tf.ones([D]), wqkv: tf.tensor2d(l.wqkv, [D, 3 * D]), wo: tf.tensor2d(l.wo, [D, D]),
      g2: tf.ones([D]), w13: tf.tensor2d(l.w13, [D, 2 * F]), w2: tf.tensor2d(l.w2, [F, D]) })),
    gf: tf.ones([D]), wout: tf.tensor2d(weights.wout, [D, V]),
  };
  const half = HD / 2, c = new Float32Array(T * half), s = new Float32Array(T * half), m = new Float32Array(T * T);
  for (let t = 0; t < T; t++) for (let i = 0; i < half; i++) {
    const ang = t * Math.pow(10000, -i / half);
    c[t * half + i] = Math.cos(ang); s[t * half + i] = Math.sin(ang);
  }
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) m[i * T + j] = -1e9;
  const tab = { cos: tf.tensor3d(c, [T, 1, half]), sin: tf.tensor3d(s, [T, 1, half]), mask: tf.tensor2d(m, [T, T]) };
  const tokens = tf.tensor1d(W4_TOKENS, 'int32');
  const rms = (x, g) => tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), 1e-5))), g);
  const rope = (x) => {
    const [x1, x2] = tf.split(x, 2, -1);
    return tf.concat([tf.sub(tf.mul(x1, tab.cos), tf.mul(x2, tab.sin)), tf.add(tf.mul(x1, tab.sin), tf.mul(x2, tab.cos))], -1);
  };
  const forward = () => {
    let x = tf.gather(p.emb, tokens);
    for (const l of p.layers) {
      const [q, k, v] = tf.split(tf.matMul(rms(x, l.g1), l.wqkv), 3, -1).map((t) => tf.reshape(t, [T, H, HD]));
      const qh = tf.transpose(rope(tf.mul(q, 1 / Math.sqrt(HD))), [1, 0, 2]);
      const kh = tf.transpose(rope(k), [1, 0, 2]);
      const att = tf.softmax(tf.add(tf.matMul(qh, kh, false, true), tab.mask));
      const o = tf.reshape(tf.transpose(tf.matMul(att, tf.transpose(v, [1, 0, 2])), [1, 0, 2]), [T, D]);
      x = tf.add(x, tf.matMul(o, l.wo));
      const [g, up] = tf.split(tf.matMul(rms(x, l.g2), l.w13), 2, -1);
      x = tf.add(x, tf.matMul(tf.mul(tf.mul(g, tf.sigmoid(g)), up), l.w2));
    }
    return tf.matMul(rms(tf.slice(x, [T - 1, 0], [1, D]), p.gf), p.wout);
  };
  const all = [p.emb, p.gf, p.wout, ...p.layers.flatMap(Object.values), ...Object.values(tab), tokens];
  return { forward, dispose: () => tf.dispose(all) };
}
