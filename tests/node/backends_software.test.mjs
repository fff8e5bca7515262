// backends_software.test.mjs - 'auto' and software rasterizers
// (web/runtime/backends.js) in Node with fake adapters and contexts:
// softwareName / softwareAdapter / softwareWebGl classify renderer strings,
// GPUAdapter / GPUAdapterInfo / GPUDevice objects (isFallbackAdapter, the
// SwiftShader, llvmpipe, lavapipe, softpipe, Microsoft Basic Render and
// "Software" names) and WebGL contexts (UNMASKED_RENDERER_WEBGL, else
// RENDERER); backend_environment reports `software` for an available GPU
// backend on one; 'auto' ranks it below the wasm CPU path (skipped, with the
// reason in the fallbacks of select_backend and compile_forward), while an
// explicit request still gets exactly that backend.  Real Chromium:
// tests/browser/software_auto.test.mjs.
// Build first: make wasm
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import * as backends from '../../web/runtime/backends.js';

const ready = existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));
if (!ready) test('web/pkg/rlx_web.wasm present', () => assert.fail('missing web/pkg/rlx_web.wasm: run `make wasm`'));
const rt = ready ? await init() : null;
const skip = !ready;

const ok = { available: true, reason: null };
const no = (reason) => ({ available: false, reason });
const SWIFT_GPU = 'a software adapter (SwiftShader); the wasm CPU path is faster';
const SWIFT_GL = 'a software renderer (SwiftShader); the wasm CPU path is faster';

// What Chromium 156 headless (--use-angle=swiftshader) reports, and Dawn in Node.
const CHROMIUM_GL = 'ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)';
const CHROMIUM_GPU_INFO = { vendor: 'google', architecture: 'swiftshader', device: '', description: '', isFallbackAdapter: true };
const DAWN_GPU_INFO = { vendor: 'google', architecture: 'swiftshader', device: 'swiftshader-device-subzero-', description: 'SwiftShader driver 5.0.0' };

async function withGlobal(name, value, fn) {
  const saved = Object.getOwnPropertyDescriptor(globalThis, name);
  Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  try {
    return await fn();
  } finally {
    if (saved) Object.defineProperty(globalThis, name, saved);
    else delete globalThis[name];
  }
}

after(async () => {
  if (!ready) return;
  await rlx.init_webgpu(false);
  await rlx.init_webgl(false);
  backends.hasWebGL2Float(true);
});

test('softwareName: software rasterizers by name, hardware and unknown strings are not', () => {
  const software = [
    [CHROMIUM_GL, 'SwiftShader'],
    ['Google SwiftShader', 'SwiftShader'],
    ['swiftshader', 'SwiftShader'],
    ['llvmpipe (LLVM 15.0.6, 256 bits)', 'llvmpipe'],
    ['ANGLE (Mesa, llvmpipe (LLVM 17.0.6 256 bits), OpenGL 4.5)', 'llvmpipe'],
    ['Vulkan 1.3 (lavapipe)', 'lavapipe'],
    ['softpipe', 'softpipe'],
    ['ANGLE (Microsoft, Microsoft Basic Render Driver Direct3D11 vs_5_0 ps_5_0, D3D11)', 'Microsoft Basic Render Driver'],
    ['Apple Software Renderer', 'a software renderer'],
    ['Software Rasterizer', 'a software renderer'],
  ];
  for (const [text, name] of software) assert.equal(backends.softwareName(text), name, text);
  const hardware = [
    'ANGLE (NVIDIA, NVIDIA GeForce RTX 3080 Direct3D11 vs_5_0 ps_5_0, D3D11)',
    'ANGLE (Intel, Intel(R) Iris(R) Xe Graphics Direct3D11 vs_5_0 ps_5_0, D3D11)',
    'ANGLE (Apple, ANGLE Metal Renderer: Apple M1, Unspecified Version)',
    'Adreno (TM) 660', 'Mali-G78 MC20', 'AMD Radeon Pro 5500M OpenGL Engine', 'WebKit WebGL', 'Mesa Intel(R) UHD Graphics 620 (KBL GT2)',
    'softwareless', '', undefined, null, 42, {},
  ];
  for (const text of hardware) assert.equal(backends.softwareName(text), null, String(text));
});

test('softwareAdapter: GPUAdapter.info, GPUAdapterInfo, GPUDevice.adapterInfo, isFallbackAdapter', () => {
  assert.equal(backends.softwareAdapter({ info: CHROMIUM_GPU_INFO }), 'SwiftShader', 'Chromium headless');
  assert.equal(backends.softwareAdapter({ info: DAWN_GPU_INFO }), 'SwiftShader', 'Dawn on a CPU machine');
  assert.equal(backends.softwareAdapter(DAWN_GPU_INFO), 'SwiftShader', 'a GPUAdapterInfo');
  assert.equal(backends.softwareAdapter({ createBuffer() {}, adapterInfo: { vendor: 'mesa', description: 'llvmpipe (LLVM 15.0.6, 256 bits)' } }),
    'llvmpipe', 'a GPUDevice');
  assert.equal(backends.softwareAdapter({ info: { vendor: 'mesa', architecture: '', device: 'lavapipe' } }), 'lavapipe');
  assert.equal(backends.softwareAdapter({ info: { vendor: 'microsoft', description: 'Microsoft Basic Render Driver' } }),
    'Microsoft Basic Render Driver');
  // Only the flag says so (browsers may blank the strings).
  assert.equal(backends.softwareAdapter({ info: { vendor: '', architecture: '', isFallbackAdapter: true } }), 'a fallback adapter');
  assert.equal(backends.softwareAdapter({ isFallbackAdapter: true, info: { vendor: '' } }), 'a fallback adapter', 'the deprecated GPUAdapter flag');
  // Hardware, unknown, hostile.
  assert.equal(backends.softwareAdapter({ info: { vendor: 'nvidia', architecture: 'hopper', device: '', description: 'NVIDIA H200', isFallbackAdapter: false } }), null);
  assert.equal(backends.softwareAdapter({ info: { vendor: 'apple', architecture: 'metal-3' } }), null);
  assert.equal(backends.softwareAdapter({}), null);
  assert.equal(backends.softwareAdapter(null), null);
  assert.equal(backends.softwareAdapter('swiftshader'), null, 'a string is not an adapter');
  const hostile = { get info() { throw new Error('no'); }, get isFallbackAdapter() { throw new Error('no'); } };
  assert.equal(backends.softwareAdapter(hostile), null);
  assert.equal(backends.softwareAdapter({ info: { get vendor() { throw new Error('no'); }, architecture: 'swiftshader' } }), 'SwiftShader');
});

/** A fake WebGL2 context: renderer strings through WEBGL_debug_renderer_info (when unmasked is given) and RENDERER. */
function fakeGl({ unmasked, renderer = 'WebKit WebGL', float = true, throws = false } = {}) {
  const RENDERER = 0x1F01;
  const debug = { UNMASKED_VENDOR_WEBGL: 0x9245, UNMASKED_RENDERER_WEBGL: 0x9246 };
  return {
    RENDERER,
    getExtension(name) {
      if (name === 'EXT_color_buffer_float') return float ? {} : null;
      if (name === 'WEBGL_debug_renderer_info') return unmasked === undefined ? null : debug;
      return null;
    },
    getParameter(p) {
      if (throws) throw new Error('context lost');
      if (p === RENDERER) return renderer;
      if (p === debug.UNMASKED_RENDERER_WEBGL) return unmasked;
      return null;
    },
  };
}

test('softwareWebGl: UNMASKED_RENDERER_WEBGL, else RENDERER', () => {
  assert.equal(backends.softwareWebGl(fakeGl({ unmasked: CHROMIUM_GL })), 'SwiftShader', 'Chromium headless');
  assert.equal(backends.softwareWebGl(fakeGl({ renderer: 'llvmpipe (LLVM 15.0.6, 256 bits)' })), 'llvmpipe', 'no debug extension: RENDERER');
  assert.equal(backends.softwareWebGl(fakeGl({ renderer: 'softpipe' })), 'softpipe');
  assert.equal(backends.softwareWebGl(fakeGl({ unmasked: 'ANGLE (NVIDIA, NVIDIA GeForce RTX 3080 Direct3D11 vs_5_0 ps_5_0, D3D11)' })), null);
  assert.equal(backends.softwareWebGl(fakeGl()), null, 'masked: WebKit WebGL says nothing');
  assert.equal(backends.softwareWebGl(fakeGl({ unmasked: CHROMIUM_GL, throws: true })), null);
  assert.equal(backends.softwareWebGl({ getExtension: () => null }), null, 'no getParameter');
  assert.equal(backends.softwareWebGl(null), null);
});

const ENV_SOFT_GPU = { cpu: ok, webgpu: { ...ok, software: 'SwiftShader' }, webgl: ok };
const ENV_SOFT_BOTH = { cpu: ok, webgpu: { ...ok, software: 'SwiftShader' }, webgl: { ...ok, software: 'SwiftShader' } };

test("candidates: 'auto' ranks a software GPU backend below the CPU with the reason; explicit requests still get it", { skip }, () => {
  const a = rlx.backend_candidates('mnist-mlp', 'auto', { env: ENV_SOFT_GPU });
  assert.deepEqual(a, { request: 'auto', candidates: ['webgl', 'cpu'], skipped: [{ backend: 'webgpu', reason: SWIFT_GPU }], refusal: null });
  const b = rlx.backend_candidates('mnist-mlp', 'auto', { env: ENV_SOFT_BOTH });
  assert.deepEqual(b.candidates, ['cpu']);
  assert.deepEqual(b.skipped, [{ backend: 'webgpu', reason: SWIFT_GPU }, { backend: 'webgl', reason: SWIFT_GL }]);
  const c = rlx.backend_candidates('mnist-mlp', 'auto', { env: { ...ENV_SOFT_BOTH, webgpu: ok }, training: false });
  assert.deepEqual(c.candidates, ['webgpu', 'cpu'], 'a hardware WebGPU still leads; only the software WebGL2 drops');
  const d = rlx.backend_candidates('mnist-mlp', 'auto', { env: { ...ENV_SOFT_BOTH, webgpu: { ...ok, software: 'a fallback adapter' } } });
  assert.equal(d.skipped[0].reason, 'WebGPU runs on a fallback adapter; the wasm CPU path is faster');

  for (const [request, want] of [['webgpu', 'webgpu'], ['gpu', 'webgpu'], ['webgl', 'webgl'], ['webgl2', 'webgl'], ['cpu', 'cpu']]) {
    const r = rlx.backend_candidates('mnist-cnn', request, { env: ENV_SOFT_BOTH });
    assert.deepEqual(r.candidates, [want], request);
    assert.equal(r.refusal, null);
    assert.ok(!r.skipped.some((s) => /software/.test(s.reason)), 'an explicit request skips nothing for being software');
  }
  // A model that cannot train there: that reason comes first (it is the stronger one).
  const info = { ...rlx.vision_model_info('mnist-cnn'), webgpu_train: false };
  assert.match(rlx.backend_candidates(info, 'auto', { env: ENV_SOFT_GPU }).skipped[0].reason, /cannot train on WebGPU/);
  // Unavailable stays unavailable.
  const e = rlx.backend_candidates('mnist-mlp', 'auto', { env: { ...ENV_SOFT_GPU, webgpu: { ...no('stub: lost'), software: 'SwiftShader' } } });
  assert.deepEqual(e.skipped, [{ backend: 'webgpu', reason: 'stub: lost' }]);
});

test('select_backend on auto: the CPU, with each software reason in the fallbacks', { skip }, () => {
  const sel = rlx.select_backend('mnist-mlp', 'auto', { env: ENV_SOFT_BOTH, batch: 2 });
  assert.equal(sel.backend, 'cpu');
  assert.deepEqual(sel.fallbacks, [{ backend: 'webgpu', reason: SWIFT_GPU }, { backend: 'webgl', reason: SWIFT_GL }]);
  assert.deepEqual(sel.compiled.fallbacks, sel.fallbacks);
  sel.compiled.free();
  const g = new rlx.WebGraph();
  const x = g.input('x', [2, 3]);
  const w = g.param('w', [3, 2]);
  const f = rlx.select_backend(g, 'auto', { env: ENV_SOFT_GPU, outputs: g.matmul(x, w) });
  assert.equal(f.backend, 'cpu');
  assert.equal(f.fallbacks[0].reason, SWIFT_GPU);
  assert.equal(f.fallbacks[1].backend, 'webgl'); // the stub claims WebGL2; it cannot compile here
  f.compiled.free();
  g.free();
});

/** A fake navigator.gpu: an adapter with `info` (and flags) whose requestDevice gives a device-shaped object. */
function fakeGpu(adapterProps) {
  const device = { createBuffer() { throw new Error('fake device'); }, lost: new Promise(() => {}), destroy() {} };
  const adapter = { limits: {}, ...adapterProps, requestDevice: async () => device };
  return { requestAdapter: async () => adapter };
}

test('init_webgpu with a fake software adapter: backend_environment says software; auto takes the CPU; webgpu is still webgpu', { skip }, async () => {
  assert.equal(await rlx.init_webgpu(fakeGpu({ info: CHROMIUM_GPU_INFO })), true);
  assert.deepEqual(rlx.backend_environment().webgpu, { available: true, reason: null, software: 'SwiftShader' });
  const cands = rlx.backend_candidates('mnist-mlp', 'auto');
  assert.ok(!cands.candidates.includes('webgpu'));
  assert.deepEqual(cands.skipped.find((s) => s.backend === 'webgpu'), { backend: 'webgpu', reason: SWIFT_GPU });
  assert.deepEqual(rlx.backend_candidates('mnist-mlp', 'webgpu').candidates, ['webgpu'], 'an explicit request still gets it');

  const g = new rlx.WebGraph();
  const x = g.input('x', [3]);
  const c = g.compile_forward(g.relu(x), 'auto');
  assert.equal(c.backend, 'cpu');
  assert.deepEqual(c.fallbacks[0], { backend: 'webgpu', reason: SWIFT_GPU });
  c.feed('x', [-1, 0, 2]);
  c.run();
  assert.deepEqual(Array.from(c.output(0)), [0, 0, 2]);
  c.free();
  g.free();

  // Only isFallbackAdapter (the deprecated GPUAdapter attribute), and a device given directly.
  await rlx.init_webgpu(false);
  assert.equal(await rlx.init_webgpu(fakeGpu({ isFallbackAdapter: true, info: { vendor: '', architecture: '' } })), true);
  assert.equal(rlx.backend_environment().webgpu.software, 'a fallback adapter');
  await rlx.init_webgpu(false);
  const device = { createBuffer() {}, adapterInfo: DAWN_GPU_INFO, lost: new Promise(() => {}) };
  assert.equal(await rlx.init_webgpu(device), true);
  assert.equal(rlx.backend_environment().webgpu.software, 'SwiftShader');
  // A hardware adapter: no `software`, WebGPU leads 'auto'.
  await rlx.init_webgpu(false);
  assert.equal(await rlx.init_webgpu(fakeGpu({ info: { vendor: 'nvidia', architecture: 'hopper', isFallbackAdapter: false } })), true);
  assert.deepEqual(rlx.backend_environment().webgpu, ok);
  assert.equal(rlx.backend_candidates('mnist-mlp', 'auto').candidates[0], 'webgpu');
  // Older browsers: GPUAdapter.requestAdapterInfo() instead of .info.
  await rlx.init_webgpu(false);
  assert.equal(await rlx.init_webgpu(fakeGpu({ requestAdapterInfo: async () => ({ vendor: 'mesa', description: 'llvmpipe' }) })), true);
  assert.equal(rlx.backend_environment().webgpu.software, 'llvmpipe');
  await rlx.init_webgpu(false);
});

test('WebGL2 probe reads the renderer: a SwiftShader context is software, auto skips it, webgl is still webgl', { skip }, async () => {
  if (typeof rt.exports.rlx_webgl_plan !== 'function') return;
  await rlx.init_webgpu(false);
  await rlx.init_webgl(true);
  let renderer = CHROMIUM_GL;
  class StubCanvas { getContext(kind) { return kind === 'webgl2' ? fakeGl({ unmasked: renderer }) : null; } }
  await withGlobal('OffscreenCanvas', StubCanvas, async () => {
    assert.deepEqual(rlx.backend_environment({ refresh: true }).webgl, { available: true, reason: null, software: 'SwiftShader' });
    const cands = rlx.backend_candidates('mnist-mlp', 'auto');
    assert.deepEqual(cands.candidates, ['cpu']);
    assert.deepEqual(cands.skipped.find((s) => s.backend === 'webgl'), { backend: 'webgl', reason: SWIFT_GL });
    assert.deepEqual(rlx.backend_candidates('mnist-mlp', 'webgl').candidates, ['webgl']);
    renderer = 'ANGLE (NVIDIA, NVIDIA GeForce RTX 3080 Direct3D11 vs_5_0 ps_5_0, D3D11)';
    assert.deepEqual(rlx.backend_environment({ refresh: true }).webgl, ok, 'a hardware renderer: no software field');
    assert.deepEqual(rlx.backend_candidates('mnist-mlp', 'auto').candidates, ['webgl', 'cpu']);
  });
  await rlx.init_webgl(false);
});
