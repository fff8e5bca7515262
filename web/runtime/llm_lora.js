// llm_lora.js - LoRA adapters for loadGguf (options.lora: [{ source, scale }],
// each a GGUF adapter file as llama.cpp loads it, from any source loadGguf
// takes; include/rlx_llm.h says what they do): the option checked, each
// adapter's bytes read whole into a buffer of the module's memory (the model
// reads them in place until free()), and the arrays rlx_llm_open takes.
import { RlxError, describe } from './loader.js';
import { STATUS, fail } from './llm_common.js';
import { SOURCE_KINDS, isSource, openSource, readSource } from './llm_source.js';

export const MAX_LORA = 64; // adapters per model

/** options.lora as [{ source, scale }] (scale default 1); [] when absent. */
export function loraOption(fn, value) {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > MAX_LORA) {
    throw fail(fn, `options.lora must be an array of at most ${MAX_LORA} { source, scale } adapters, got ${describe(value)}`);
  }
  return value.map((a, i) => {
    const what = `options.lora[${i}]`;
    if (!a || typeof a !== 'object') throw fail(fn, `${what} must be { source, scale }, got ${describe(a)}`);
    if (!isSource(a.source)) throw fail(fn, `${what}.source must be ${SOURCE_KINDS}, got ${describe(a.source)}`);
    const scale = a.scale ?? 1;
    if (typeof scale !== 'number' || !Number.isFinite(scale)) throw fail(fn, `${what}.scale must be a finite number, got ${describe(a.scale)}`);
    return { source: a.source, scale };
  });
}

/** Reads the adapters into module buffers: [{ ptr, size, name }] (freed again if one fails). */
export async function readAdapters(fn, mod, adapters) {
  const read = [];
  try {
    for (const [i, a] of adapters.entries()) {
      const src = await openSource(fn, a.source);
      const what = `options.lora[${i}]: ${src.name.slice(0, 200)}`;
      const tooBig = (n) => new RlxError(STATUS.NO_MEMORY, `${fn}: ${what} is ${n} bytes, past what this module can hold`, 'no memory');
      try {
        const { ptr, size } = await readSource(fn, mod, src, { budget: mod.call('rlx_llm_data_budget'), tooBig, onBytes: () => {} });
        read.push({ ptr, size, name: src.name });
      } catch (err) {
        err.message = err.message.replace(`${fn}: ${src.name.slice(0, 200)}`, `${fn}: ${what}`);
        throw err;
      }
    }
    return read;
  } catch (err) {
    if (!mod.dead) for (const r of read) mod.free(r.ptr);
    throw err;
  }
}

/** rlx_llm_open's adapter arguments (data pointers, sizes, scales, count), the arrays in t (mod.scoped's). */
export function loraArrays(mod, t, read, adapters) {
  const n = read.length, data = t.alloc(4 * n + 4), size = t.alloc(4 * n + 4), scale = t.alloc(8 * n + 8);
  mod.i32(data, n).set(read.map((r) => r.ptr | 0));
  mod.i32(size, n).set(read.map((r) => r.size | 0));
  mod.f64(scale, n).set(adapters.map((a) => a.scale));
  return [data, size, scale, n];
}

/** The library's "LoRA adapter i (in memory)" named by its source. */
export const loraMessage = (message, read) =>
  message.replace(/LoRA adapter (\d+) \(in memory\)/, (all, i) => (read[i] ? `options.lora[${i}] (${read[i].name.slice(0, 200)})` : all));
