// dawn_node.mjs - WebGPU in Node through Dawn (npm `webgpu`), for tools and
// tests.  loadDawnGpu() returns a GPU object (like navigator.gpu) or throws
// an Error that says what is missing.  The Dawn module is imported lazily, so
// importing this file never fails.  $RLX_DAWN_MODULE overrides the module
// path (the GPU machine carries its own copy); on CPU machines Dawn needs a
// Vulkan driver: Chromium's SwiftShader, see dawnEnv() and withDawnEnv().
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const CHROMIUM = '/usr/lib/chromium';
const SWIFTSHADER_ICD = `${CHROMIUM}/vk_swiftshader_icd.json`;

// The environment Dawn needs on this machine (only what is missing).
export function dawnEnv(env = process.env) {
  const extra = {};
  const hasDriver = env.VK_ICD_FILENAMES || env.VK_DRIVER_FILES;
  if (!hasDriver && existsSync(SWIFTSHADER_ICD)) {
    extra.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    if (!(env.LD_LIBRARY_PATH || '').split(':').includes(CHROMIUM))
      extra.LD_LIBRARY_PATH = env.LD_LIBRARY_PATH ? `${CHROMIUM}:${env.LD_LIBRARY_PATH}` : CHROMIUM;
  }
  return extra;
}

// Re-runs this process with the Dawn environment when it is missing
// (LD_LIBRARY_PATH only takes effect at process start).  Returns normally
// when nothing was missing; otherwise exits with the child's status.
export function withDawnEnv() {
  const extra = dawnEnv();
  if (Object.keys(extra).length === 0 || process.env.RLX_DAWN_REEXEC) return;
  const r = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit', env: { ...process.env, ...extra, RLX_DAWN_REEXEC: '1' } });
  process.exit(r.status ?? 1);
}

// For a node:test file that needs Dawn: runs the file (a file: URL) again
// with the Dawn environment, forwards the child's summary lines as
// diagnostics of test context t and returns { status, out }.
export function rerunTestFileWithDawn(t, fileUrl) {
  const env = { ...process.env, ...dawnEnv(), RLX_DAWN_REEXEC: '1' };
  delete env.NODE_TEST_CONTEXT; // else the child talks the runner's private protocol
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', new URL(fileUrl).pathname],
    { env, encoding: 'utf8', maxBuffer: 1 << 26 });
  const out = `${r.stdout}\n${r.stderr}`;
  for (const line of out.split('\n')) if (/^\s*ℹ (?!duration)/.test(line)) t.diagnostic(line.replace(/^\s*ℹ /, ''));
  return { status: r.status, out };
}

let cached = null;
export async function loadDawnGpu() {
  if (cached) return cached;
  const spec = process.env.RLX_DAWN_MODULE || 'webgpu';
  let mod;
  try {
    mod = await import(spec);
  } catch (e) {
    throw new Error(`WebGPU for Node is not available: cannot import '${spec}' (${e.message}); ` +
                    'run `npm install` (devDependency webgpu@0.6.2) or set RLX_DAWN_MODULE');
  }
  const { create, globals } = mod.default && mod.default.create ? mod.default : mod;
  Object.assign(globalThis, globals);
  // $RLX_DAWN_FLAGS: Dawn options, e.g. "disable-dawn-features=timestamp_quantization"
  // for exact times in WebGpuSession.profile().
  cached = create((process.env.RLX_DAWN_FLAGS || '').split(/\s+/).filter(Boolean));
  return cached;
}

// An adapter and a device, or an Error saying why not.
export async function dawnDevice() {
  const gpu = await loadDawnGpu();
  const adapter = await gpu.requestAdapter();
  if (!adapter) {
    const hint = Object.keys(dawnEnv()).length ? ` (no Vulkan driver configured: set ${Object.entries(dawnEnv()).map(([k, v]) => `${k}=${v}`).join(' ')})` : '';
    throw new Error(`WebGPU for Node: no adapter${hint}`);
  }
  // timestamp-query lets WebGpuSession.profile() time each dispatch.
  const requiredFeatures = adapter.features.has('timestamp-query') ? ['timestamp-query'] : [];
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits: {
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: adapter.limits.maxComputeWorkgroupSizeX,
  } });
  return { gpu, adapter, device };
}
