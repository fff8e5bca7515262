// webgpu_pending.mjs - (Node only) the ops whose WebGPU lowering is still
// pending: op name -> family letter, read from the files
// src/webgpu/lower_pending_<family>.c that still exist.  A WebGPU compile
// may refuse such an op (the case is skipped and counted); any other
// refusal is a failure (tests/common/gpu_compare.mjs, allowedRefusal).
import { readFileSync, readdirSync } from 'node:fs';

const PENDING_DIR = new URL('../../src/webgpu/', import.meta.url);

/** The pending lowering files that remain (names). */
export function pendingFiles() {
  return readdirSync(PENDING_DIR).filter((f) => /^lower_pending_\w+\.c$/.test(f));
}

/** op name -> pending family letter. */
export function pendingOps() {
  const ops = new Map();
  for (const f of pendingFiles()) {
    const family = /^lower_pending_(\w+)\.c$/.exec(f)[1];
    const src = readFileSync(new URL(f, PENDING_DIR), 'utf8');
    for (const [, op] of src.matchAll(/rlx_wgpu_lower_(\w+)\s*\(/g)) ops.set(op, family);
  }
  return ops;
}
