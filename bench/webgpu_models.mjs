#!/usr/bin/env node
// webgpu_models.mjs - model speed on WebGPU, ours next to TensorFlow.js's
// webgpu backend, in ONE Node process on the same GPU (Dawn, npm `webgpu`);
// the workloads live in bench/webgpu_workloads.mjs (shared with
// bench/webgpu_chromium.mjs, the same in a headless Chromium page):
//   rlx-webgpu   a training step compiled by the wasm module (Graph via the
//                rlx_vision_build export; Graph.compileTrain with SGD, device
//                'webgpu') and replayed by web/runtime/webgpu.js: params stay on
//                the GPU, each step reads its loss back as a real step would;
//                the W4 forward is a graph built here with the same weights as
//                tfjs's, compiled for WebGPU, logits read back every call.
//   tfjs-webgpu  tfjs-core 4.22 + tfjs-backend-webgpu (the bundle that
//                `make bench-gpu-bundle` writes to build/bench/tfjs-webgpu.mjs),
//                optimizer.minimize + await loss.data() per step, as in the
//                anchors (/work/shared/bench/tfjs/workloads.mjs).
// Workloads: mnist-mlp, mnist-cnn, cifar-cnn, resnet training at each batch,
// and the W4 transformer forward (vocab 256, dim 128, 2 layers, 4 heads x 32,
// SwiGLU 384, 64 tokens).  Both contenders start from the same params and
// batch, so their first losses (and the W4 logits) must agree: the check
// column shows them.  Iterations are interleaved; medians are reported.
//
//   node bench/webgpu_models.mjs [--models=mnist-mlp,mnist-cnn,cifar-cnn,resnet]
//        [--batches=64,256] [--w4=1] [--budget-ms=3000] [--contenders=rlx-webgpu,tfjs-webgpu]
//        [--profile] [--tfjs=build/bench/tfjs-webgpu.mjs] [--out=build/bench/webgpu_models.json]
//
// Defaults depend on the adapter: a real GPU runs every model at batch 64 and
// 256; SwiftShader (Dawn on the CPU's Vulkan) runs mnist-mlp and mnist-cnn at
// batch 16 and W4 with a short budget.  --profile prints where one step of
// ours spends its GPU time, by kernel (timestamp queries when the device has
// them; set RLX_DAWN_FLAGS=disable-dawn-features=timestamp_quantization).
// GPU machine: source .gpu/enter.sh first (RLX_DAWN_MODULE) and carry
// .gpu, web/pkg/rlx_web.wasm and build/bench/tfjs-webgpu.mjs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withDawnEnv, dawnDevice } from '../tools/dawn_node.mjs';
import init, * as rlx from '../web/pkg/rlx_web.js';
import { runtime } from '../web/runtime/instance.js'; // the live instance's loader.js binding (Graph / Session)
import { CONTENDERS, workloadList, webGpuWorkloads, reportLines } from './webgpu_workloads.mjs';

withDawnEnv();

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const m = /^--([\w-]+)(?:=(.*))?$/.exec(a);
  if (!m) { console.error(`webgpu_models: unknown argument ${a}`); process.exit(2); }
  return [m[1], m[2] ?? '1'];
}));
const root = new URL('../', import.meta.url);
const outFile = args.out ?? 'build/bench/webgpu_models.json';
const contenders = args.contenders ? args.contenders.split(',') : CONTENDERS;
for (const c of contenders) if (!CONTENDERS.includes(c)) throw new Error(`webgpu_models: unknown contender '${c}' (${CONTENDERS})`);

// ---- devices: ours gets a device from Dawn; tfjs finds the same GPU through navigator.gpu
const { gpu, adapter, device } = await dawnDevice();
const ainfo = adapter.info ?? {};
const adapterName = [ainfo.vendor, ainfo.architecture, ainfo.device, ainfo.description].filter(Boolean).join(' ');
const swiftshader = /swiftshader/i.test(adapterName);
const models = (args.models ?? (swiftshader ? 'mnist-mlp,mnist-cnn' : 'mnist-mlp,mnist-cnn,cifar-cnn,resnet')).split(',').filter(Boolean);
const batches = (args.batches ?? (swiftshader ? '16' : '64,256')).split(',').map(Number);
const withW4 = (args.w4 ?? '1') !== '0';
const budgetMs = Number(args['budget-ms'] ?? (swiftshader ? 1500 : 3000));

let tf = null;
if (contenders.includes('tfjs-webgpu')) {
  const bundle = path.resolve(args.tfjs ?? new URL('build/bench/tfjs-webgpu.mjs', root).pathname);
  if (!fs.existsSync(bundle)) throw new Error(`webgpu_models: ${bundle} is missing: run \`make bench-gpu-bundle\` (or pass --contenders=rlx-webgpu)`);
  globalThis.navigator = { gpu, userAgent: 'node' };
  ({ tf } = await import(bundle));
  if (!(await tf.setBackend('webgpu'))) throw new Error('webgpu_models: the tfjs webgpu backend failed to initialize');
  await tf.ready();
}

await init();
const rt = runtime();
const bench = webGpuWorkloads({ rlx, rt, device, tf, contenders, profile: Boolean(args.profile), log: (l) => console.log(l) });

// ---- the workloads -------------------------------------------------------------------
const WORKLOADS = workloadList(models, batches, withW4);
const results = [], problems = [];
for (const w of WORKLOADS) {
  const m = await bench.measureWorkload(w, budgetMs);
  results.push(...m.rows);
  problems.push(...m.problems);
  process.stderr.write(`${m.line}\n`);
}

// ---- report -------------------------------------------------------------------------
console.log([
  `WebGPU model speed on ${adapterName} (Dawn in Node ${process.version}; tfjs ${tf?.version_core ?? '-'}): median ms per`,
  'training step (W4: per forward), samples/s (W4: forwards/s); tfjs/rlx = tfjs time / ours (> 1: ours faster)',
  ...reportLines(WORKLOADS, results, problems),
].join('\n'));
for (const p of problems) console.error(`webgpu_models: MISMATCH ${p}`);
const env = { adapter: adapterName, node: process.version, cpu: os.cpus()[0]?.model, cores: os.cpus().length,
              tfjs: tf?.version_core ?? null, date: new Date().toISOString(), budget_ms: budgetMs };
fs.mkdirSync(path.dirname(path.resolve(outFile)), { recursive: true });
fs.writeFileSync(outFile, JSON.stringify({ env, results, problems }, null, 1));
console.log(`wrote ${outFile}`);
device.destroy();
if (problems.length) process.exitCode = 1;
