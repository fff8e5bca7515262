// task_vision.js - a vision model of the wasm module as a cluster task
// (task.js's interface): its gradients come from compute.js Buckets on the
// backend the rank resolved to, on this rank's shard (data.js Shards) of the
// Fashion-MNIST subset (or a synthetic set when the model does not take it),
// and evaluate() measures test accuracy on the held-out images when they fit.
//
//   await init();                                              // ../runtime/instance.js
//   const task = await createVisionTask({ vision, slug: 'mnist-cnn', backend: 'auto', batch: 32, seed: 1, onFallback });
import { Buckets, resolveBackend } from './compute.js';
import { loadTrainingSet, Shards, subsetFits, loadSubset, scoreBatch } from './data.js';

const EVAL_BATCH = 100;

/** The held-out Fashion-MNIST images when they fit the model (else null: no accuracy). */
async function loadTestSet(model, fetchImpl) {
  if (!subsetFits(model)) return null;
  try {
    return await loadSubset('test', fetchImpl);
  } catch {
    return null;
  }
}

/**
 * vision: ../runtime/vision.js (after init()); backend: 'auto', 'cpu',
 * 'webgpu' or 'webgl'; batch: the batch the backend is resolved for;
 * onFallback(reason): a GPU failed mid-run and the rank moved to the CPU.
 */
export async function createVisionTask({ vision, slug, backend = 'auto', batch = 32, seed = 1, onFallback = null, fetchImpl = globalThis.fetch }) {
  const model = vision.vision_model_info(slug);
  const resolved = await resolveBackend(model.slug, backend, { batch });
  const bench = new vision.VisionBench(model.slug);
  let init, loaded;
  try {
    init = bench.init_params(seed);
    loaded = await loadTrainingSet(model, bench, { seed, fetchImpl });
  } finally {
    bench.free();
  }
  const { set, why } = loaded;
  const test = await loadTestSet(model, fetchImpl);
  const shards = new Shards(set, { seed });
  const task = {
    kind: 'vision',
    slug: model.slug,
    title: model.title,
    paramCount: model.param_flat_len,
    backend: resolved.backend,
    requested: resolved.requested,
    fallback: resolved.fallback,
    data: { kind: set.kind, source: set.source, count: set.count, why },
    buckets: null,
    evalBench: test ? new vision.VisionBench(model.slug) : null,
    initParams: () => init.slice(),
    grads(params, { step, index, count, batch: n }) {
      const { x, labels } = shards.batch(step, index, count, n);
      return task.buckets.run(x, labels, params);
    },
    /** Test accuracy of params on the held-out images (CPU forward: params are host arrays); null without them. */
    evaluate(params) {
      if (!test) return null;
      const classes = task.evalBench.info().num_classes;
      const x = new Float32Array(EVAL_BATCH * test.inputLen);
      const labels = new Int32Array(EVAL_BATCH);
      let correct = 0, seen = 0;
      for (let start = 0; start + EVAL_BATCH <= test.count; start += EVAL_BATCH) {
        for (let k = 0; k < EVAL_BATCH; k++) labels[k] = test.sample(start + k, x, k * test.inputLen);
        correct += scoreBatch(task.evalBench.forward('cpu', x, params), labels, classes).correct;
        seen += EVAL_BATCH;
      }
      return seen ? correct / seen : NaN;
    },
    free() {
      task.buckets?.free();
      task.buckets = null;
      task.evalBench?.free();
      task.evalBench = null;
    },
  };
  task.buckets = new Buckets(vision, model.slug, resolved.backend, {
    onFallback: (reason) => {
      task.backend = 'cpu';
      task.fallback = reason;
      onFallback?.(reason);
    },
  });
  return task;
}
