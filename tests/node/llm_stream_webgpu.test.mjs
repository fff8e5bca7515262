// llm_stream_webgpu.test.mjs - a GGUF model streamed to WebGPU buffers
// under Dawn (SwiftShader on CPU machines), never whole in wasm memory
// (web/runtime/llm_gpu_stream.js, src/models/llm_external.c):
//  - a seeded random-weight f32 model (build/make_test_lm, ~19 MB) larger
//    than the small modules' memory (build/wasm-tests/rlx_llm*_small.wasm:
//    16 MiB at most, 8 MiB of weights): the small CPU module refuses it
//    with the budget message; the small GPU module streams it (sent in
//    ragged chunks of a Response of unknown size, so tensors span chunks and
//    4-byte words break between them): every weight's GPU buffer holds the
//    file's bytes of that tensor (read back), the caches zeros, and it
//    generates the full CPU module's greedy tokens, its memory staying below
//    the file's size;
//  - a tensor over the binding size (lowered by options.gpuBindingLimit) is
//    refused before the data is read, naming the tensor, its size and the
//    limit; a file cut short is refused naming the tensor it cuts.
// Build first: make wasm build/make_test_lm.  The Vulkan driver environment
// for Dawn is added when missing, by re-running this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dawnDevice } from '../../tools/dawn_node.mjs';
import { dawnTestFile } from '../common/dawn_gate.mjs';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';
import { externalParams } from '../../web/runtime/llm_gpu_stream.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SMALL_CPU = `${ROOT}build/wasm-tests/rlx_llm_small.wasm`;
const SMALL_GPU = `${ROOT}build/wasm-tests/rlx_llm_gpu_small.wasm`;
const MAKE_LM = `${ROOT}build/make_test_lm`;
const RAGGED = 1_000_003; // bytes per chunk of the streamed Response: no tensor starts on a chunk or a word of one

/** A Response of unknown size (no Content-Length) sending bytes in chunks of n. */
function raggedResponse(bytes, n) {
  let at = 0;
  return new Response(new ReadableStream({
    pull(c) {
      if (at >= bytes.length) { c.close(); return; }
      c.enqueue(bytes.slice(at, at + n));
      at += n;
    },
  }));
}

const missing = [SMALL_CPU, SMALL_GPU, MAKE_LM].filter((f) => !existsSync(f));
if (dawnTestFile('llm stream webgpu', import.meta.url, { missing, make: 'make wasm build/make_test_lm', timeout: 600_000 })) {
  const { device } = await dawnDevice();
  const dir = mkdtempSync(join(tmpdir(), 'rlx-stream-'));
  const file = join(dir, 'big.gguf');
  execFileSync(MAKE_LM, ['--arch', 'llama', '--type', 'f32', '--n-embd', '384', '--n-layer', '2', '--n-head', '6',
    '--n-head-kv', '2', '--n-ff', '1536', '--seed', '7', '--out', file], { cwd: ROOT, stdio: 'pipe' });
  const bytes = readFileSync(file);
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

  /** The first n bytes of a GPU buffer. */
  async function readBuffer(buffer, n) {
    const size = Math.ceil(n / 4) * 4;
    const out = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(buffer, 0, out, 0, size);
    device.queue.submit([enc.finish()]);
    await out.mapAsync(GPUMapMode.READ);
    const copy = new Uint8Array(out.getMappedRange()).slice();
    out.destroy();
    return copy;
  }

  test('a model larger than the module\'s memory: refused by the small CPU module, streamed to WebGPU with the CPU\'s greedy tokens', async () => {
    await assert.rejects(loadGguf(file, { backend: 'cpu', wasm: SMALL_CPU }), (err) => {
      assert.ok(err instanceof RlxError);
      assert.match(err.message, new RegExp(`is ${bytes.length} bytes .*more than the [\\d.]+ GiB a wasm32 module can hold for a model's weights`));
      return true;
    });
    const cpu = await loadGguf(file, { backend: 'cpu', threads: 1 });
    const prompt = [cpu.info.bos]; // one token: the GPU runs its 1-token step only (compiled once)
    const want = await cpu.generate(prompt, { maxTokens: 8 });
    cpu.free();
    const progress = [];
    const g = await loadGguf(raggedResponse(bytes, RAGGED), { backend: 'webgpu', gpu: device, gpuWasm: SMALL_GPU,
      onProgress: (p) => progress.push(p) });
    try {
      assert.equal(g.info.streamed, true);
      assert.equal(g.info.fileBytes, bytes.length);
      const memory = g.mod.memory.buffer.byteLength;
      assert.ok(memory < bytes.length / 2, `the module holds ${memory} bytes of a ${bytes.length}-byte file`);
      assert.ok(progress.some((p) => p.loaded > 0 && p.loaded < bytes.length), 'progress while streaming');
      assert.equal(progress.at(-1).stage, 'compiling');
      for (const p of externalParams('test', g.mod, g.handle)) {
        const on = await readBuffer(g.gpu.shared.get(p.name), p.bytes);
        const want = p.fileBytes ? bytes.subarray(p.offset, p.offset + p.fileBytes) : new Uint8Array(p.bytes);
        assert.ok(Buffer.from(on.subarray(0, want.length)).equals(want), `${p.name}: the GPU holds the file's bytes`);
      }
      const got = await g.generate(prompt, { maxTokens: 8 });
      assert.deepEqual(got.ids, want.ids);
      assert.equal(got.text, want.text);
    } finally {
      g.free();
    }
  });

  test('refusals: a tensor over the binding size, a file cut short', async () => {
    const limit = 1 << 20; // ffn_gate: 384 x 1536 f32 = 2.25 MiB
    await assert.rejects(loadGguf(file, { backend: 'webgpu', gpu: device, gpuBindingLimit: limit }), (err) => {
      assert.ok(err instanceof RlxError);
      assert.equal(err.reason, 'limits');
      assert.match(err.message, /tensor 'blk\.0\.ffn_gate\.weight' takes 2359296 bytes \(2\.3 MiB\), more than options\.gpuBindingLimit of 1048576 bytes/);
      return true;
    });
    const cut = bytes.subarray(0, bytes.length - 1000);
    // its size known: the header's table already says the last tensor ends past it (the C check) ...
    await assert.rejects(loadGguf(cut, { backend: 'webgpu', gpu: device }), /tensor \d+ \('blk\.1\.ffn_down\.weight'\).* end past the file/);
    // ... unknown (a Response without Content-Length): the stream ends inside that tensor
    await assert.rejects(loadGguf(raggedResponse(cut, RAGGED), { backend: 'webgpu', gpu: device }),
      new RegExp(`ended after ${cut.length} bytes; tensor 'blk\\.1\\.ffn_down\\.weight' needs bytes up to ${bytes.length}`));
    await assert.rejects(loadGguf(file, { backend: 'webgpu', gpu: device, gpuBindingLimit: 4 }), /options\.gpuBindingLimit must be/);
  });
}
