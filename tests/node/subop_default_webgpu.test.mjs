// subop_default_webgpu.test.mjs - a WGSL kernel that picks its formula by a
// sub-op code (override OP: unary.wgsl, grad_pointwise.wgsl) gives NaN for
// a code it does not know, never the result of its last case.  Each kernel
// runs on Dawn (npm `webgpu`; SwiftShader on CPU machines, the environment
// added by re-running this file) with its OP_<NAME> constants numbered
// 0, 1, .. in order of first use, once with a known code (the result is
// that op's) and once with code 1000.  Part of make test-webgpu.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dawnEnv, dawnDevice, rerunTestFileWithDawn } from '../../tools/dawn_node.mjs';

const WGSL = new URL('../../src/webgpu/wgsl/', import.meta.url);
const needsEnv = Object.keys(dawnEnv()).length > 0 && !process.env.RLX_DAWN_REEXEC;

// The kernel's text with a constant for each OP_<NAME> it names; returns
// { code, codes: Map NAME -> number }.
function withCodes(file) {
  const text = readFileSync(new URL(file, WGSL), 'utf8');
  const codes = new Map();
  for (const m of text.matchAll(/\bOP_([A-Z0-9_]+)\b/g)) if (!codes.has(m[1])) codes.set(m[1], codes.size);
  const consts = [...codes].map(([n, v]) => `const OP_${n}: u32 = ${v}u;`).join('\n');
  return { code: `${text}\n${consts}\n`, codes };
}

// Runs FILE's main with override OP = op over the vec4 inputs (bindings
// 0 .. inputs.length - 1), output binding next, uniform word 0 = n.
async function run(device, file, op, inputs) {
  const { code } = withCodes(file);
  const n = inputs[0].length;
  const module = device.createShaderModule({ code, label: file });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  assert.equal(errors.length, 0, `${file}: ${errors.map((m) => `${m.lineNum}: ${m.message}`).join('; ')}`);
  const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main', constants: { OP: op } } });
  const storage = (data) => {
    const b = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
    device.queue.writeBuffer(b, 0, data);
    return b;
  };
  const ins = inputs.map((a) => storage(new Float32Array(a)));
  const out = storage(new Float32Array(n));
  const uni = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(uni, 0, new Uint32Array([n, 0, 0, 0]));
  const entries = [...ins, out].map((buffer, binding) => ({ binding, resource: { buffer } }));
  entries.push({ binding: entries.length, resource: { buffer: uni } });
  const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  const read = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bind);
  pass.dispatchWorkgroups(1);
  pass.end();
  enc.copyBufferToBuffer(out, 0, read, 0, n * 4);
  device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const result = [...new Float32Array(read.getMappedRange().slice(0))];
  read.unmap();
  return result;
}

if (needsEnv) {
  test('sub-op defaults on Dawn (re-run with the Dawn environment)', { timeout: 300_000 }, (t) => {
    const { status, out } = rerunTestFileWithDawn(t, import.meta.url);
    assert.equal(status, 0, out);
  });
} else {
  let dev = null, why = '';
  try { dev = await dawnDevice(); } catch (e) { why = e.message; }
  const skip = dev ? false : why;
  const x = [-1.5, 0.25, 2, 3];

  test('unary.wgsl: a known code computes its op, an unknown code gives NaN', { skip, timeout: 120_000 }, async () => {
    const { codes } = withCodes('unary.wgsl');
    assert.deepEqual(await run(dev.device, 'unary.wgsl', codes.get('ABS'), [x]), [1.5, 0.25, 2, 3]);
    const unknown = await run(dev.device, 'unary.wgsl', 1000, [x]);
    assert.ok(unknown.every(Number.isNaN), `OP = 1000 gave ${unknown} (want NaN, not the last case's silu)`);
  });

  test('grad_pointwise.wgsl: an unknown code gives NaN', { skip, timeout: 120_000 }, async () => {
    const { codes } = withCodes('grad_pointwise.wgsl');
    const dy = [1, 1, 1, 1];
    const silu = await run(dev.device, 'grad_pointwise.wgsl', codes.get('SILU_GRAD'), [x, dy]);
    assert.ok(silu.every(Number.isFinite) && Math.abs(silu[2] - 1.0907842) < 1e-4, `silu' = ${silu}`);
    const unknown = await run(dev.device, 'grad_pointwise.wgsl', 1000, [x, dy]);
    assert.ok(unknown.every(Number.isNaN), `OP = 1000 gave ${unknown} (want NaN, not silu's derivative)`);
  });
}
