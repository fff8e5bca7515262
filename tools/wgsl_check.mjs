#!/usr/bin/env node
// wgsl_check.mjs - compiles WGSL files in Dawn (WebGPU for Node) and prints
// their diagnostics, then builds a compute pipeline from each (entry point
// `main` unless -e NAME) so override and binding errors show too.
//   node tools/wgsl_check.mjs [-e entry] [-D NAME=value ...] [--no-pipeline] file.wgsl ...
// Exit status 0 when every file compiles (warnings allowed), 1 otherwise.
// Needs npm `webgpu` (npm install) and a Vulkan driver: the environment for
// Chromium's SwiftShader is added automatically when missing.
import { readFileSync } from 'node:fs';
import { withDawnEnv, dawnDevice } from './dawn_node.mjs';

withDawnEnv();

const args = process.argv.slice(2);
const files = [];
const constants = {};
let entry = 'main';
let pipeline = true;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '-e') entry = args[++i];
  else if (a === '-D') { const [k, v] = args[++i].split('='); constants[k] = Number(v); }
  else if (a.startsWith('-D')) { const [k, v] = a.slice(2).split('='); constants[k] = Number(v); }
  else if (a === '--no-pipeline') pipeline = false;
  else if (a === '-h' || a === '--help') {
    console.log('usage: node tools/wgsl_check.mjs [-e entry] [-D NAME=value ...] [--no-pipeline] file.wgsl ...');
    process.exit(0);
  } else files.push(a);
}
if (files.length === 0) { console.error('wgsl_check: no files given (-h for usage)'); process.exit(2); }

let device;
try {
  ({ device } = await dawnDevice());
} catch (e) {
  console.error(`wgsl_check: ${e.message}`);
  process.exit(2);
}
device.onuncapturederror = () => {};

let failed = 0;
for (const file of files) {
  let code;
  try { code = readFileSync(file, 'utf8'); } catch (e) { console.error(`${file}: ${e.message}`); failed++; continue; }
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code, label: file });
  const info = await module.getCompilationInfo();
  await device.popErrorScope();
  let errors = 0;
  for (const m of info.messages) {
    if (m.type === 'error') errors++;
    console.log(`${file}:${m.lineNum}:${m.linePos}: ${m.type}: ${m.message}`);
    const line = code.split('\n')[m.lineNum - 1];
    if (line !== undefined) console.log(`  ${line}\n  ${' '.repeat(Math.max(0, m.linePos - 1))}^`);
  }
  if (errors === 0 && pipeline) {
    // Overrides the shader declares without a default must be given; use 1
    // for any not passed with -D so the pipeline still builds.
    const consts = { ...constants };
    for (const m of code.matchAll(/override\s+(\w+)\s*:\s*\w+\s*;/g)) if (!(m[1] in consts)) consts[m[1]] = 1;
    device.pushErrorScope('validation');
    try {
      await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: entry, constants: consts } });
    } catch (e) {
      errors++;
      console.log(`${file}: error: pipeline (entry '${entry}'): ${e.message}`);
    }
    const err = await device.popErrorScope();
    if (err) { errors++; console.log(`${file}: error: pipeline (entry '${entry}'): ${err.message}`); }
  }
  if (errors) failed++;
  else console.log(`${file}: ok`);
}
device.destroy();
process.exit(failed ? 1 : 0);
