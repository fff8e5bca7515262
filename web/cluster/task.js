// task.js - what a cluster rank trains, behind one interface, so the Rank,
// the Worker and the tests treat a vision model and a LoRA fine-tuning of a
// language model alike. A task is
//   kind           'vision' (task_vision.js) or 'llm' (task_llm.js)
//   slug, title    its identity (at most 55 printable characters: the handshake compares it) and its name
//   paramCount     length of the cohort's flat f32 parameters
//   backend, fallback   where grads run, and why not where asked (null when it is)
//   data           { kind, source, count, why }: what it trains on, for the page
//   initParams()   the cohort's first parameters (the same on every rank)
//   grads(params, { step, index, count, batch })
//                  -> { grads: Float32Array(paramCount), loss, samples, backend } (or a Promise):
//                  the gradient of the MEAN loss over rank `index` of `count`'s
//                  shard at data step `step`; samples weighs it in the cohort's mean
//   evaluate(params)   optional: test accuracy in [0, 1] (vision models that fit the held-out images)
//   adapter(params)    optional: the trained file's bytes (llm: the LoRA adapter GGUF)
//   free()
// createTask picks the kind; task_key.js modelKey is what the Rank stamps on its messages.
import { createVisionTask } from './task_vision.js';
import { createLlmTask } from './task_llm.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export const TASK_KINDS = Object.freeze(['vision', 'llm']);

/**
 * A task of `kind`: vision takes { vision, slug, backend, batch, seed, onFallback }
 * (task_vision.js), llm the options of task_llm.js createLlmTask.
 */
export function createTask(kind, options) {
  if (kind === 'vision') return createVisionTask(options);
  if (kind === 'llm') return createLlmTask(options);
  throw new RlxError(STATUS.INVALID_ARG, `task must be one of ${TASK_KINDS.join(', ')}, got ${JSON.stringify(String(kind))}`);
}
