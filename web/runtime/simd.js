// simd.js - which build of a wasm module to load.  Each module comes in two
// builds (Makefile; tools/relaxed_simd.mk names the same files): SIMD128,
// and relaxed SIMD, whose GEMM and quantized-matmul kernels use
// f32x4.relaxed_madd (one fused multiply-add where the CPU has FMA, so
// results may differ from the SIMD128 build's in the last bits).  'auto'
// takes the relaxed build where this engine validates a relaxed-SIMD
// instruction (Chromium does; Node 20 only with
// --experimental-wasm-relaxed-simd), the SIMD128 build elsewhere; 'simd128'
// forces the plain build and 'relaxed' the relaxed one (refused where the
// engine lacks it).  A relaxed build carries a custom section "rlx.simd"
// holding "relaxed", so a module given by the caller is reported truly.
import { RlxError, describe } from './loader.js';
import { STATUS } from './constants.js';

export const SIMD_CHOICES = ['auto', 'relaxed', 'simd128'];

/** The default files of each module, by build. */
export const MODULE_FILES = {
  web: { simd128: new URL('../pkg/rlx_web.wasm', import.meta.url), relaxed: new URL('../pkg/rlx_web_relaxed.wasm', import.meta.url) },
  llm: { simd128: new URL('../pkg/rlx_llm.wasm', import.meta.url), relaxed: new URL('../pkg/rlx_llm_relaxed.wasm', import.meta.url) },
  // the language-model module's training build (loadGguf's options.train)
  llmTrain: { simd128: new URL('../pkg/rlx_llm_train.wasm', import.meta.url), relaxed: new URL('../pkg/rlx_llm_train_relaxed.wasm', import.meta.url) },
  // its threaded build (loadGguf's options.threads > 1 where SharedArrayBuffer exists: runtime/threads.js)
  llmThreads: { simd128: new URL('../pkg/rlx_llm_threads.wasm', import.meta.url), relaxed: new URL('../pkg/rlx_llm_threads_relaxed.wasm', import.meta.url) },
  // the training build's threaded build (options.train with options.threads > 1 likewise)
  llmTrainThreads: { simd128: new URL('../pkg/rlx_llm_train_threads.wasm', import.meta.url), relaxed: new URL('../pkg/rlx_llm_train_threads_relaxed.wasm', import.meta.url) },
  // rlx_web's threaded build (init's / loadRlx's threads > 1 where SharedArrayBuffer exists: runtime/threads.js)
  webThreads: { simd128: new URL('../pkg/rlx_web_threads.wasm', import.meta.url), relaxed: new URL('../pkg/rlx_web_threads_relaxed.wasm', import.meta.url) },
};

// (module (func (param v128) (result v128) local.get 0 local.get 0 local.get 0 f32x4.relaxed_madd))
const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,       // magic, version
  0x01, 0x06, 0x01, 0x60, 0x01, 0x7b, 0x01, 0x7b,       // type: (v128) -> v128
  0x03, 0x02, 0x01, 0x00,                               // function 0 of type 0
  0x0a, 0x0d, 0x01, 0x0b, 0x00,                         // code: one body, no locals
  0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0xfd, 0x85, 0x02, 0x0b, // f32x4.relaxed_madd (0xfd 0x105)
]);

let relaxed = null;
/** Whether this engine accepts relaxed SIMD (checked once). */
export function relaxedSimdSupported() {
  if (relaxed === null) {
    try {
      relaxed = WebAssembly.validate(PROBE);
    } catch {
      relaxed = false;
    }
  }
  return relaxed;
}

/** The checked simd option: 'auto' (undefined), 'relaxed' or 'simd128'. */
export function simdOption(fn, v, what = 'options.simd') {
  if (v === undefined) return 'auto';
  if (!SIMD_CHOICES.includes(v)) throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${what} must be ${SIMD_CHOICES.map((c) => `'${c}'`).join(', ')}, got ${describe(v)}`);
  if (v === 'relaxed' && !relaxedSimdSupported()) {
    throw new RlxError(STATUS.UNSUPPORTED, `${fn}: ${what} 'relaxed': this engine does not support relaxed SIMD ` +
      "(Node 20 needs --experimental-wasm-relaxed-simd); use 'auto' or 'simd128'");
  }
  return v;
}

/** The default file of module kind (a key of MODULE_FILES) for a checked simd option. */
export function moduleFile(kind, simd) {
  const build = simd === 'auto' ? (relaxedSimdSupported() ? 'relaxed' : 'simd128') : simd;
  return MODULE_FILES[kind][build];
}

/** Which build a compiled module is: 'relaxed' (its "rlx.simd" section says so) or 'simd128'. */
export function moduleSimd(module) {
  const sections = WebAssembly.Module.customSections(module, 'rlx.simd');
  return sections.length && new TextDecoder().decode(sections[0]) === 'relaxed' ? 'relaxed' : 'simd128';
}
