// dawn_gate.mjs - the start of a node:test file whose tests need a WebGPU
// device on Dawn (npm webgpu): whether this process runs them, or a test
// that stands for them.
//
//   if (dawnTestFile('llm webgpu', import.meta.url, { missing, make: 'make wasm', timeout: 600_000 })) { ...tests... }
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dawnEnv, rerunTestFileWithDawn } from '../../tools/dawn_node.mjs';

/**
 * True when this process runs the file's tests.  Otherwise it registered
 * the one test that stands for them: with build outputs missing (paths), a
 * failing test naming them and `make`, the command that builds them; where
 * Dawn needs an environment this process lacks (dawnEnv), a test that runs
 * the file again with it (timeout ms) and fails with the end of its output.
 */
export function dawnTestFile(label, fileUrl, { missing = [], make, timeout }) {
  if (missing.length) {
    test(`${label}: build outputs present`, () => assert.fail(`missing ${missing.join(', ')}: run \`${make}\``));
    return false;
  }
  if (Object.keys(dawnEnv()).length > 0 && !process.env.RLX_DAWN_REEXEC) {
    test(`${label} (re-run with the Dawn environment)`, { timeout }, (t) => {
      const r = rerunTestFileWithDawn(t, fileUrl);
      assert.equal(r.status, 0, `${label} tests failed:\n${r.out.slice(-8000)}`);
    });
    return false;
  }
  return true;
}
