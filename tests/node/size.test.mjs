// size.test.mjs - the browser module stays within its download budget:
// web/pkg/rlx_web.wasm <= 300,000 bytes (bench/size.mjs prints the sizes of
// everything a page loads; `make bench` runs it).  The budget assumes the
// build ran wasm-opt (binaryen, installed by tools/setup.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync, readFileSync } from 'node:fs';

const WASM = new URL('../../web/pkg/rlx_web.wasm', import.meta.url);
const BUDGET = 300_000;

test('rlx_web.wasm is within its 300,000-byte budget and valid', () => {
  const bytes = statSync(WASM).size;
  assert.ok(bytes <= BUDGET, `web/pkg/rlx_web.wasm is ${bytes} bytes, ${bytes - BUDGET} over the ${BUDGET}-byte budget (run node bench/size.mjs)`);
  assert.ok(WebAssembly.validate(readFileSync(WASM)), 'rlx_web.wasm does not validate');
});
