// browser_module.test.mjs - what the size work on web/pkg/rlx_web.wasm must
// keep: the shader sources the module embeds gzip-compressed come out of a
// WebGL2 plan exactly as tools/embed_sources.sh minifies the .frag/.glsl
// files, and running a WebGL2 session through the C API (the C reference
// executor, left out of the browser module) throws a clear Error instead of
// trapping.
// Build first: make wasm
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { loadRlx } from '../../web/runtime/loader.js';

const WASM = new URL('../../web/pkg/rlx_web.wasm', import.meta.url);
const GLSL = new URL('../../src/webgl/glsl/', import.meta.url);
const ready = existsSync(WASM);
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const rt = ready ? await loadRlx(WASM) : null;

/** The lines embed_sources.sh keeps of a shader: comments, indentation and blank lines dropped. */
function minifiedLines(text) {
  const out = [];
  let inBlock = false;
  for (let line of text.split('\n')) {
    let kept = '';
    while (line.length) {
      if (inBlock) {
        const end = line.indexOf('*/');
        if (end < 0) { line = ''; break; }
        line = line.slice(end + 2);
        inBlock = false;
      }
      const lc = line.indexOf('//'), bc = line.indexOf('/*');
      if (lc >= 0 && (bc < 0 || lc < bc)) { kept += line.slice(0, lc); break; }
      if (bc >= 0) { kept += line.slice(0, bc); line = line.slice(bc + 2); inBlock = true; continue; }
      kept += line;
      line = '';
    }
    kept = kept.trim();
    if (kept) out.push(kept);
  }
  return out;
}

function webglSession() {
  const g = rt.graph();
  const x = g.input('x', [3, 5]), w = g.param('w', [5]);
  const y = g.op('sigmoid', [g.op('mul', [x, w])]);
  const s = g.compile([y], { device: 'webgl' });
  g.free();
  return s;
}

test('WebGL2 plan programs carry the embedded shader text, unpacked', { skip: !ready }, () => {
  const s = webglSession();
  const plan = JSON.parse(rt.cstring(rt.exports.rlx_webgl_plan(s.live())));
  assert.ok(plan.programs.length >= 2, 'a binary and a unary program');
  for (const p of plan.programs) {
    const file = new URL(`${p.shader}.frag`, GLSL);
    assert.ok(existsSync(file), `program shader ${p.shader} has a .frag`);
    const src = p.source.split('\n');
    let at = 0;
    for (const line of minifiedLines(readFileSync(file, 'utf8'))) {
      if (line.startsWith('#include')) continue; // replaced by the included file
      const found = src.indexOf(line, at);
      assert.ok(found >= 0, `${p.shader}: line "${line}" missing (in order) from the plan's source`);
      at = found + 1;
    }
  }
  s.free();
});

test('running a WebGL2 session through the C API throws a clear Error', { skip: !ready }, () => {
  const s = webglSession();
  s.setParam('w', new Float32Array(5).fill(0.5));
  s.setInput('x', new Float32Array(15).fill(1));
  assert.throws(() => s.run(), (e) => e instanceof Error && /web\/runtime\/webgl\.js/.test(e.message) &&
    /no C reference executor/.test(e.message));
  s.free();
});
