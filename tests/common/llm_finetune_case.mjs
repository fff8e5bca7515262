// llm_finetune_case.mjs - one case of LoRA fine-tuning on a GPU against
// the CPU, shared by Node (tests/node/llm_finetune_webgpu.test.mjs, Dawn)
// and Chromium (tests/browser/llm_finetune_gpu.test.mjs, WebGPU and
// WebGL2): a model opened by a GPU training module (rlx_llm_train_gpu.wasm
// or rlx_llm_train_webgl.wasm, on its CPU path), two fine-tuning objects
// made alike (rank 2 on attn_q, attn_v and ffn_up: swiglu_q split into
// two products), FT_STEPS steps of the same two windows (one target under
// weight 0 and out of the vocabulary) on the CPU (rlx_llm_finetune_step)
// and on the GPU (makeGpu(mod, ft, seq): an LlmFinetuneGpu); then the
// loss without an update on both, and the GPU's pairs written back into
// its object.  Returns the numbers; the tests compare them (FT_TOL).
// Plain JS with no imports, so a page can load it as it is.
export const FT_SEQ = 8;
export const FT_WINDOWS = 2;
export const FT_STEPS = 3;
// Relative: |gpu - cpu| / |cpu| for a loss, ||gpu - cpu|| / ||cpu|| for each
// A and B.  Both sides compute in f32 from the same weights; sums run in
// other orders.  Adam's update lr m / sqrt(v) is normalised per element, so
// an element whose gradients are near 0 moves by lr with either side's
// rounding: single elements of B (all of them lr-sized after 3 steps) then
// differ by up to 5e-4 of B's largest, while the norms agree within 3e-5
// (Dawn); a wrong kernel moves them by far more.
export const FT_TOL = 1e-4;
const OPTIMIZERS = { sgd: [0, 1e-2], adamw: [3, 1e-3] }; // kind, lr

function windows(nVocab) {
  const n = FT_SEQ * FT_WINDOWS;
  const ids = new Int32Array(n), targets = new Int32Array(n), mask = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    ids[i] = (i * 7 + 3) % nVocab;
    targets[i] = (i * 5 + 1) % nVocab;
    mask[i] = i % 5 ? 1 : 0;
  }
  targets[5] = -100; // under weight 0: never read
  return { ids, targets, mask };
}

/** ||got - want|| / ||want|| (Infinity for a NaN or a length that differs). */
function relErr(got, want) {
  if (got.length !== want.length) return Infinity;
  let d = 0, w = 0;
  for (let i = 0; i < want.length; i++) { d += (got[i] - want[i]) ** 2; w += want[i] ** 2; }
  const e = Math.sqrt(d / Math.max(w, 1e-60));
  return Number.isNaN(e) ? Infinity : e;
}

/**
 * model: a GgufModel whose module is a GPU training build (loaded with
 * backend 'cpu'); makeGpu(mod, ft, seq): the LlmFinetuneGpu to test;
 * optimizer: 'sgd' | 'adamw'.  Resolves to { cpu, gpu (losses), evalCpu,
 * evalGpu, pairErr (worst A or B after the steps), syncErr (the object's
 * pairs after syncToHost against readPairs), nPairs, backend }.
 */
export async function finetuneAgainstCpu(model, makeGpu, optimizer) {
  const m = model.mod;
  const [kind, lr] = OPTIMIZERS[optimizer];
  const make = () => m.scoped((t) => {
    const out = t.alloc(4);
    m.check(m.call('rlx_llm_finetune_new', model.handle, 2, 4, t.str('attn_q,attn_v,ffn_up').ptr, FT_SEQ, kind, lr, 7, 0, out));
    return m.i32(out, 1)[0] >>> 0;
  });
  const ftCpu = make(), ftGpu = make();
  const gpu = makeGpu(m, ftGpu, FT_SEQ);
  const { ids, targets, mask } = windows(model.info.nVocab);
  const n = ids.length;
  const cpuRun = (name) => m.scoped((t) => {
    const loss = t.alloc(4), pm = t.alloc(4 * n);
    new Float32Array(m.memory.buffer, pm, n).set(mask);
    const args = name === 'rlx_llm_finetune_eval' ? [loss, 0] : [loss];
    m.check(m.call(name, ftCpu, t.i32(ids), t.i32(targets), pm, FT_WINDOWS, ...args), `${name}: `);
    return new Float32Array(m.memory.buffer, loss, 1)[0];
  });
  const getPair = (ft, p) => m.scoped((t) => {
    const na = p.a.length, nb = p.b.length, a = t.alloc(4 * na), b = t.alloc(4 * nb);
    m.check(m.call('rlx_llm_finetune_get_pair', ft, t.str(p.name).ptr, a, na, b, nb), 'get_pair: ');
    return { a: new Float32Array(m.memory.buffer, a, na).slice(), b: new Float32Array(m.memory.buffer, b, nb).slice() };
  });
  try {
    const cpu = [], got = [];
    for (let s = 0; s < FT_STEPS; s++) {
      cpu.push(cpuRun('rlx_llm_finetune_step'));
      got.push(await gpu.step(ids, targets, mask));
    }
    const evalCpu = cpuRun('rlx_llm_finetune_eval');
    const evalGpu = await gpu.eval(ids, targets, mask);
    const pairs = await gpu.readPairs();
    let pairErr = 0, syncErr = 0;
    for (const p of pairs) {
      const want = getPair(ftCpu, p);
      pairErr = Math.max(pairErr, relErr(p.a, want.a), relErr(p.b, want.b));
    }
    await gpu.syncToHost();
    for (const p of pairs) {
      const back = getPair(ftGpu, p);
      syncErr = Math.max(syncErr, relErr(back.a, p.a), relErr(back.b, p.b));
    }
    return { cpu, gpu: got, evalCpu, evalGpu, pairErr, syncErr, nPairs: pairs.length };
  } finally {
    gpu.free();
    m.call('rlx_llm_finetune_free', ftCpu);
    m.call('rlx_llm_finetune_free', ftGpu);
  }
}
