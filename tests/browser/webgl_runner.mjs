// webgl_runner.mjs - runs the op cases of build/wasm-tests/webgl_cases.wasm
// (tests/c/wasm_webgl.c) through web/runtime/webgl.js and compares each
// output with the CPU run of the same case in the same wasm module.  Loaded
// by webgl_page.html (main thread) and webgl_worker.mjs (a Worker); driven
// by webgl.test.mjs.  Tolerance: |gpu - cpu| <= tol * (1 + |cpu|) with tol =
// 1e-4, or the case's own tolerance when larger: GPU transcendentals (exp,
// log, exp2/log2 in pow, inversesqrt) are not correctly rounded, and
// SwiftShader and real GPUs differ from libm by a few ulp (1e-4 leaves room
// for the error growing through gelu/silu/pow); index ops must be exact.
import { createWebGlSession, WebGlUnavailableError } from '../../web/runtime/webgl.js';
import { WasiShim } from '../../web/runtime/wasi.js';
import { loadRlx } from '../../web/runtime/loader.js';

export const GPU_TOL = 1e-4;

let loaded = null;

/** The wasm test module (instance exports and a C-string reader), loaded once. */
export async function loadCases(url = new URL('../../build/wasm-tests/webgl_cases.wasm', import.meta.url)) {
  if (loaded) return loaded;
  const module = await WebAssembly.compileStreaming(fetch(url));
  const wasi = new WasiShim({ stdout: () => {}, stderr: () => {} });
  const instance = await WebAssembly.instantiate(module, wasi.imports(module));
  wasi.attach(instance);
  instance.exports._initialize?.();
  const e = instance.exports;
  const cstr = (ptr) => {
    const mem = new Uint8Array(e.memory.buffer);
    let end = ptr >>> 0;
    while (mem[end] !== 0) end++;
    return new TextDecoder().decode(mem.subarray(ptr >>> 0, end));
  };
  loaded = { instance, e, cstr };
  return loaded;
}

function maxErr(got, want) {
  let worst = 0, at = -1;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    let err;
    if (Number.isNaN(g) || Number.isNaN(w)) err = Number.isNaN(g) && Number.isNaN(w) ? 0 : Infinity;
    else if (!Number.isFinite(g) || !Number.isFinite(w)) err = g === w ? 0 : Infinity;
    else err = Math.abs(g - w) / (1 + Math.abs(w));
    if (!(err <= worst)) { worst = err; at = i; }
  }
  return { worst, at };
}

/**
 * Runs every case whose name contains `filter` with textures at most
 * `maxWidth` wide (0: the plan's default).  `canvas`: passed to
 * createWebGlSession (all sessions then share its context).  `part` [k, m]:
 * only the cases whose index is k modulo m.  Returns one entry per case:
 * { name, skipped } or { name, error } or
 * { name, maxErr, tol, at, got, want, passes }.
 */
export async function runCases({ filter = '', maxWidth = 0, canvas, part = [0, 1] } = {}) {
  const { instance, e, cstr } = await loadCases();
  const results = [];
  const n = e.webgl_case_count();
  for (let i = 0; i < n; i++) {
    if (i % part[1] !== part[0]) continue;
    const name = cstr(e.webgl_case_name(i));
    if (filter && !name.includes(filter)) continue;
    let r = runCase(instance, e, cstr, i, name, maxWidth, canvas);
    // A narrow layout can push a large tensor past MAX_TEXTURE_SIZE rows:
    // check such a case again at the default width rather than skip it.
    if (r.limits && maxWidth > 0) r = { ...runCase(instance, e, cstr, i, name, 0, canvas), widened: true };
    delete r.limits;
    results.push(r);
  }
  return results;
}

/** One case at one texture width (see runCases for the result shape). */
function runCase(instance, e, cstr, i, name, maxWidth, canvas) {
  const h = e.webgl_case_prepare(i, maxWidth);
  if (!h) return { name, error: 'webgl_case_prepare returned NULL' };
  let session = null;
  try {
    const pending = e.webgl_case_pending(h);
    if (pending) return { name, skipped: pending === 2 ? 'fused' : 'pending' };
    if (e.webgl_case_status(h) !== 0) return { name, error: cstr(e.webgl_case_message(h)) };
    session = createWebGlSession(instance, e.webgl_case_session(h), { canvas });
    for (let k = 0; k < e.webgl_case_n_inputs(h); k++) {
      const ptr = e.webgl_case_input_ptr(h, k), len = e.webgl_case_input_len(h, k) >>> 0;
      const data = e.webgl_case_input_i32(h, k)
        ? new Int32Array(e.memory.buffer, ptr, len).slice() : new Float32Array(e.memory.buffer, ptr, len).slice();
      session.setInput(cstr(e.webgl_case_input_name(h, k)), data);
    }
    const got = session.runSync()[0];
    const want = new Float32Array(e.memory.buffer, e.webgl_case_cpu_out(h), e.webgl_case_n_out(h) >>> 0).slice();
    const tol = Math.max(GPU_TOL, e.webgl_case_tol(i));
    if (got.length !== want.length) return { name, error: `output has ${got.length} values, the CPU's ${want.length}` };
    const { worst, at } = maxErr(got, want);
    return { name, maxErr: worst, tol, at, got: got[at], want: want[at], passes: session.passCount,
      defines: session.passes.flatMap((p) => p.program.info.defines.map(([k, v]) => `${k}=${v}`)) };
  } catch (err) {
    return { name, error: `${err.name}: ${err.message}`, limits: err.reason === 'limits' };
  } finally {
    session?.free();
    e.webgl_case_free(h);
  }
}

/** What the executor does at its edges: a large tensor, limits, lost contexts, bad calls. */
export async function runChecks() {
  const { instance, e } = await loadCases();
  const out = {};
  const errorOf = (f) => { try { f(); return null; } catch (err) { return { name: err.name, reason: err.reason, message: err.message }; } };
  // 100003 values, at most 1000 wide: 4 per texel (neg is flat-safe), 159 x 158 texels (near square).
  let s = e.webgl_big_session(100003, 1000);
  try {
    const gs = createWebGlSession(instance, s); // its own context: this test loses it
    const y = gs.runSync()[0];
    let bad = 0;
    for (let i = 0; i < y.length; i++) if (y[i] !== -i) bad++;
    out.big = { length: y.length, bad, width: gs.plan.textures[0].width, height: gs.plan.textures[0].height };
    // The other readback path: RGBA/FLOAT (where RED/FLOAT reads are not offered).
    out.readFormat = gs.readFormat === gs.gl.RED ? 'RED' : 'RGBA';
    gs.readFormat = gs.readFormat === gs.gl.RED ? gs.gl.RGBA : gs.gl.RED;
    const y2 = gs.runSync()[0];
    out.otherReadBad = y2.length === y.length ? y2.filter((v, i) => v !== y[i]).length : -1;
    out.renderer = gs.renderer;
    out.unset = errorOf(() => gs.setInput('nope', new Float32Array(1)));
    out.badLength = errorOf(() => gs.setInput('x', new Float32Array(3)));
    // A lost context: a clear error from run(), and free() still works.
    const lose = gs.gl.getExtension('WEBGL_lose_context');
    lose.loseContext();
    out.lost = errorOf(() => gs.runSync());
    gs.free();
    out.freedTwice = errorOf(() => gs.free());
    out.afterFree = errorOf(() => gs.runSync());
  } finally {
    e.webgl_session_free(s);
  }
  // Wider than MAX_TEXTURE_SIZE allows: textures are near square (70000 values, 4 per texel: 133 x 132
  // texels), so the context reports a MAX_TEXTURE_SIZE of 64 here.
  s = e.webgl_big_session(70000, 65536);
  const glProto = (globalThis.WebGL2RenderingContext).prototype;
  const getParameter = glProto.getParameter;
  glProto.getParameter = function (p) { return p === this.MAX_TEXTURE_SIZE ? 64 : getParameter.call(this, p); };
  try {
    out.limits = errorOf(() => createWebGlSession(instance, s).free());
  } finally {
    glProto.getParameter = getParameter;
    e.webgl_session_free(s);
  }
  // No EXT_color_buffer_float.
  s = e.webgl_big_session(10, 0);
  const proto = (globalThis.WebGL2RenderingContext).prototype;
  const getExtension = proto.getExtension;
  proto.getExtension = function (name) { return name === 'EXT_color_buffer_float' ? null : getExtension.call(this, name); };
  try {
    out.noFloat = errorOf(() => createWebGlSession(instance, s).free());
  } finally {
    proto.getExtension = getExtension;
    e.webgl_session_free(s);
  }
  out.isUnavailable = out.noFloat !== null && WebGlUnavailableError.name === out.noFloat.name;
  out.loader = await throughLoader();
  out.train = training(instance, e);
  return out;
}

/** The path an application takes: web/pkg/rlx_web.wasm through loader.js,
 * a graph compiled for 'webgl', run by webgl.js, against the same graph on
 * the CPU; params set through the WebGL session, re-run with new inputs. */
async function throughLoader() {
  const rlx = await loadRlx(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
  const g = rlx.graph();
  const x = g.input('x', [3, 5]), w = g.param('w', [5]), b = g.param('b', [3, 1]);
  const ids = g.input('ids', [4], 'i32');
  const y = g.op('sigmoid', [g.op('add', [g.op('mul', [x, w]), b])]);
  const rows = g.op('gather', [y, ids]);
  const sessions = { cpu: g.compile([y, rows]), gl: g.compile([y, rows], { device: 'webgl' }) };
  const xs = Float32Array.from({ length: 15 }, (_, i) => Math.sin(i) * 2);
  const ws = Float32Array.from({ length: 5 }, (_, i) => 0.5 - i * 0.3);
  const bs = Float32Array.from([0.1, -0.2, 0.3]);
  sessions.cpu.setParam('w', ws);
  sessions.cpu.setParam('b', bs);
  const canvas = new OffscreenCanvas(1, 1); // a caller's canvas: free() deletes objects, keeps the context
  const gs = createWebGlSession(rlx, sessions.gl, { canvas });
  gs.setParam('w', ws);
  gs.setParam('b', bs);
  const report = { errors: [] };
  for (const scale of [1, -3]) {
    const xv = xs.map((v) => v * scale), idv = Int32Array.from([2, 0, 1, 2]);
    sessions.cpu.setInput('x', xv);
    sessions.cpu.setInput('ids', idv);
    sessions.cpu.run();
    gs.setInput('x', xv);
    gs.setInput('ids', idv);
    const got = gs.runSync();
    for (let o = 0; o < 2; o++) report.errors.push(maxErr(got[o], sessions.cpu.output(o)).worst);
  }
  report.shapes = [gs.outputShape(0), gs.outputShape(1)];
  report.param = Array.from(gs.getParam('b'));
  report.passes = gs.passCount;
  const { gl, textures, programs } = gs;
  gs.free();
  report.deleted = textures.every((t) => !gl.isTexture(t)) && programs.every((p) => !gl.isProgram(p.program)) &&
    !gl.isContextLost();
  sessions.cpu.free();
  sessions.gl.free();
  g.free();
  report.pool = poolGrad(rlx);
  return report;
}

/** max_pool2d_grad of 2x2 windows at stride 2 between 4-floats-per-texel
 * textures (pool_grad.frag PG_RUN4): an odd last row, W % 4 == 2, ties;
 * the error against the CPU and the defines drawn. */
function poolGrad(rlx) {
  const g = rlx.graph();
  const x = g.input('x', [2, 3, 7, 10]), dy = g.input('dy', [2, 3, 3, 5]);
  const dx = g.op('max_pool2d_grad', [g.op('relu', [x]), dy], [2, 2, 2, 2, 0, 0]);
  const y = g.op('relu', [dx]);
  const cpu = g.compile([y]), gl = g.compile([y], { device: 'webgl' });
  const gs = createWebGlSession(rlx, gl);
  const xv = Float32Array.from({ length: 420 }, (_, i) => Math.round(Math.sin(i * 1.7) * 2));
  const dyv = Float32Array.from({ length: 90 }, (_, i) => 1 + (i % 7));
  for (const s of [cpu, gs]) {
    s.setInput('x', xv);
    s.setInput('dy', dyv);
  }
  cpu.run();
  const got = gs.runSync()[0], want = cpu.output(0);
  const out = { err: got.length === want.length ? maxErr(got, want).worst : Infinity,
    nonzero: want.filter((v) => v !== 0).length,
    defines: gs.passes.flatMap((p) => p.program.info.defines.map(([k, v]) => `${k}=${v}`)) };
  gs.free();
  cpu.free();
  gl.free();
  g.free();
  return out;
}

/** Adam steps: the WebGL session (inputs x, t and the presets d_output and
 * rlx.lr, and w, all taken from the C session at creation) follows the
 * CPU session step by step through its assignment copies. */
function training(instance, e) {
  const cpu = e.webgl_train_session(0), gl = e.webgl_train_session(1);
  const rows = [];
  try {
    const gs = createWebGlSession(instance, gl);
    const readCpuParam = (i, n) => new Float32Array(e.memory.buffer, e.rlx_webgl_param_data(cpu, i), n).slice();
    const names = gs.plan.params.map((p) => p.name);
    for (let step = 0; step < 5; step++) {
      const loss = gs.runSync()[0][0];
      e.webgl_session_run(cpu);
      const cpuLoss = new Float32Array(e.memory.buffer, e.webgl_session_output(cpu, 0), 1)[0];
      const w = gs.getParam('w'), cpuW = readCpuParam(names.indexOf('w'), 5);
      rows.push({ loss, cpuLoss, err: Math.max(maxErr([loss], [cpuLoss]).worst, maxErr(w, cpuW).worst) });
    }
    const assignments = gs.plan.assignments.map((a) => a.param).sort();
    gs.free();
    return { rows, assignments };
  } finally {
    e.webgl_session_free(cpu);
    e.webgl_session_free(gl);
  }
}
