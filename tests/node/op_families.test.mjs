// op_families.test.mjs - the training module (web/pkg/rlx_web.wasm) leaves
// the language-model op family out (include/rlx_ops.def, src/core/
// families.h, the Makefile's MODULE_FAMILIES): a graph op of that family is
// refused by name, with the module that has it, as the node is built
// (nothing of the op is linked, not even its shape rule); ops of the
// families it has still build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
const skip = ready ? false : 'web/pkg/rlx_web.wasm is not built (make wasm)';
if (ready) await init();

test('rlx_web.wasm refuses a language-model op by name, naming rlx_llm.wasm', { skip }, () => {
  const g = new rlx.WebGraph();
  try {
    const x = g.input('x', [2, 32]), w = g.input('w', [16], 'i32');
    let err;
    const attrs = Object.fromEntries(g.opAttrs('matmul_q').map((a) => [a.name, a.type === 'bool' ? false : 0]));
    Object.assign(attrs, { qtype: 8, rows: 2, cols: 32 });
    try { g.op('matmul_q', [x, w], attrs); } catch (e) { err = e; }
    assert.ok(err instanceof rlx.RlxError, `want an RlxError, got ${err}`);
    assert.match(err.message, /op matmul_q is not in this module \(a language-model op: those are in rlx_llm\.wasm\)/);
  } finally {
    g.free();
  }
  // The families it has build: a training (backward) op and a vision op.
  const h = new rlx.WebGraph();
  try {
    const x = h.input('x', [2, 4]);
    assert.ok(h.op('silu_grad', [x, x]) >= 0);
    assert.ok(h.op('global_avg_pool', [h.input('img', [1, 2, 3, 3])]) >= 0);
  } finally {
    h.free();
  }
});
