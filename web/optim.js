// optim.js - optimizers over a flat Float32Array of parameters, applied on
// the host to the gradients a backend returns (VisionBench.grads_*): plain
// SGD, SGD with momentum (heavy ball, v = mu v + g; p -= lr v) and Adam
// (bias-corrected, eps outside the square root).  The pages' training runs
// use them for every optimizer but plain SGD, which the backends fuse into
// their own training step.
//
//   const opt = makeOptimizer({ kind: 'adam', lr: 1e-3 }, params.length);
//   opt.step(params, grads);   // in place

export const OPTIMIZERS = {
  sgd: { label: 'SGD', lr: 0.05 },
  momentum: { label: 'SGD + momentum 0.9', lr: 0.02 },
  adam: { label: 'Adam', lr: 0.001 },
};

/**
 * { kind, lr, momentum?, beta1?, beta2?, eps? }, n params -> { kind, lr, step(params, grads) }.
 * Throws an Error naming the bad setting.
 */
export function makeOptimizer(o, n) {
  if (!Object.hasOwn(OPTIMIZERS, o?.kind)) throw new Error(`optimizer must be one of ${Object.keys(OPTIMIZERS).join(', ')}`);
  if (!(Number.isFinite(o.lr) && o.lr > 0)) throw new Error('the learning rate must be a number > 0');
  const lr = o.lr;
  if (o.kind === 'sgd') {
    return { kind: 'sgd', lr, step(p, g) { for (let i = 0; i < n; i++) p[i] -= lr * g[i]; } };
  }
  if (o.kind === 'momentum') {
    const mu = o.momentum ?? 0.9;
    const v = new Float32Array(n);
    return {
      kind: 'momentum', lr,
      step(p, g) {
        for (let i = 0; i < n; i++) {
          v[i] = mu * v[i] + g[i];
          p[i] -= lr * v[i];
        }
      },
    };
  }
  const b1 = o.beta1 ?? 0.9, b2 = o.beta2 ?? 0.999, eps = o.eps ?? 1e-8;
  const m = new Float32Array(n), v = new Float32Array(n);
  let t = 0;
  return {
    kind: 'adam', lr,
    step(p, g) {
      t++;
      const c1 = 1 - b1 ** t, c2 = 1 - b2 ** t;
      for (let i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        p[i] -= (lr * (m[i] / c1)) / (Math.sqrt(v[i] / c2) + eps);
      }
    },
  };
}
