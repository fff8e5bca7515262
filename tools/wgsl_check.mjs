#!/usr/bin/env node
// wgsl_check.mjs - compiles WGSL files in Dawn (WebGPU for Node) and prints
// their diagnostics, then builds a compute pipeline from each (entry point
// `main` unless -e NAME) so override and binding errors show too.
//   node tools/wgsl_check.mjs [-e entry] [-D NAME=value ...] [--no-pipeline] file.wgsl ...
// A line `//!include NAME.wgsl` is replaced by NAME.wgsl from the including
// file's directory, as tools/embed_sources.sh does when it embeds the
// kernels; diagnostics name the original file and line.  The sub-op
// constants a file names (OP_<NAME>: the binary, unary and grad_pointwise
// rows of include/rlx_ops.def, and include/rlx_subops.def) are appended, as
// embed_sources.sh --consts prepends them (WGSL declarations are unordered).
// Exit status 0 when every file compiles (warnings allowed), 1 otherwise.
// Needs npm `webgpu` (npm install) and a Vulkan driver: the environment for
// Chromium's SwiftShader is added automatically when missing.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

const INCLUDE = /^[ \t]*\/\/!include[ \t]+(\S+)[ \t]*$/;

/** file's text with its `//!include` lines expanded: { lines, origin } where
 *  origin[i] is { file, line } of lines[i].  Throws on a missing file, a bad
 *  name or a cycle. */
function expandIncludes(file, stack = []) {
  if (stack.includes(file)) throw new Error(`${stack.at(-1)}: include cycle through ${file}`);
  const text = readFileSync(file, 'utf8');
  const lines = [];
  const origin = [];
  text.split('\n').forEach((line, i) => {
    const m = INCLUDE.exec(line.replace(/\r$/, ''));
    if (!m) { lines.push(line); origin.push({ file, line: i + 1 }); return; }
    if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(m[1])) throw new Error(`${file}:${i + 1}: bad include "${m[1]}"`);
    const inner = expandIncludes(join(dirname(file), m[1]), [...stack, file]);
    lines.push(...inner.lines);
    origin.push(...inner.origin);
  });
  return { lines, origin };
}

// NAME -> code, as embed_sources.sh --consts computes it: an op of
// include/rlx_ops.def whose shape rule is binary, unary or grad_pointwise is
// NAME = ID with its index among the rows of that rule; then the
// RLX_SUBOP(FAMILY, NAME, name, code) rows of include/rlx_subops.def.
const SUBOPS = new Map();
const includeDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'include');
const ruleCount = { binary: 0, unary: 0, grad_pointwise: 0 };
for (const m of readFileSync(join(includeDir, 'rlx_ops.def'), 'utf8').matchAll(/^RLX_OP\(\s*(\w+)\s*,(?:\s*\w+\s*,){3}\s*(\w+)\s*,/gm)) {
  if (Object.hasOwn(ruleCount, m[2])) SUBOPS.set(m[1], ruleCount[m[2]]++);
}
for (const m of readFileSync(join(includeDir, 'rlx_subops.def'), 'utf8').matchAll(/^RLX_SUBOP\(\s*\w+\s*,\s*(\w+)\s*,\s*\w+\s*,\s*(\d+)\s*\)/gm)) {
  SUBOPS.set(m[1], Number(m[2]));
}
const subopConsts = (code) => [...SUBOPS].filter(([n]) => new RegExp(`\\bOP_${n}\\b`).test(code))
  .map(([n, v]) => `const OP_${n}: u32 = ${v}u;`).join('\n');

let failed = 0;
for (const file of files) {
  let code, lines, origin;
  try {
    ({ lines, origin } = expandIncludes(file));
    code = lines.join('\n') + '\n' + subopConsts(lines.join('\n'));
  } catch (e) { console.error(`${file}: ${e.message}`); failed++; continue; }
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code, label: file });
  const info = await module.getCompilationInfo();
  await device.popErrorScope();
  let errors = 0;
  for (const m of info.messages) {
    if (m.type === 'error') errors++;
    const at = origin[m.lineNum - 1] ?? { file, line: m.lineNum };
    console.log(`${at.file}:${at.line}:${m.linePos}: ${m.type}: ${m.message}`);
    const line = lines[m.lineNum - 1];
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
