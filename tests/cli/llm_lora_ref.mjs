// llm_lora_ref.mjs - LoRA adapters in our native runtime (build/rlx
// next-tokens --lora) against llama.cpp with the same adapters
// (tests/llama_ref/expected_lora/*.json, one per case of
// tests/llama_ref/lora_cases.mjs, whose adapters rlx make-lora writes again
// here, byte for byte):
//   * teacher-forced over llama.cpp's greedy tokens with the adapters, ours
//     must agree as for the plain models (llm_trace.mjs, the model's bounds);
//   * a merged case (rlx export-lora) runs the merged file in both, and
//     llama.cpp's run of it must also be ours of the base with the
//     adapters applied;
//   * the adapters matter: without them, our greedy token differs from
//     llama.cpp's adapted one at a good share of the steps its margin
//     decides, so the comparison cannot pass with an adapter ignored;
//   * the CLI: --lora refusals are usage errors naming the flag or the
//     adapter and what is wrong; generate --lora streams what next-tokens
//     --lora traces.
//
//   node tests/cli/llm_lora_ref.mjs [RLX] [FIXTURE_DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { boundsFor, nextTokens, runRlx, teacherForced } from './llm_trace.mjs';
import { LORA_CASES, caseModel, loraArgs } from '../llama_ref/lora_cases.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const rlx = process.argv[2] ?? path.join(here, '../../build/rlx');
const fixtures = process.argv[3] ?? path.join(here, '../../build/lm');
const expectedDir = path.join(here, '../llama_ref/expected_lora');
const MIN_CHANGED = 0.25; // of the compared steps, the share the adapters must decide otherwise

let failures = 0;
const fail = (name, msg) => { failures++; console.log(`FAIL ${name}: ${msg}`); };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rlx-lora-'));

try {
  console.log('case                  steps compared flips(gap)       median |margin diff|  changed without adapters');
  for (const c of LORA_CASES) {
    const file = path.join(expectedDir, `${c.name}.json`);
    if (!fs.existsSync(file)) { fail(c.name, `no ${file} (make llama-ref writes it)`); continue; }
    const ref = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (JSON.stringify(ref.lora_case) !== JSON.stringify(c)) {
      fail(c.name, `${file} was made for another case (${JSON.stringify(ref.lora_case)}): run make llama-ref`);
      continue;
    }
    const base = path.join(fixtures, `${c.model}.gguf`), bounds = boundsFor(c.model);
    const { model, lora, adapters } = caseModel(rlx, fixtures, c, dir);
    const { steps, compared, flips, med } = teacherForced(rlx, model, ref, bounds, (msg) => fail(c.name, msg), lora);
    // merged: llama.cpp's run of the merged file is ours of the base with the adapters applied too
    if (c.merge) teacherForced(rlx, base, ref, bounds, (msg) => fail(`${c.name} (adapters applied)`, msg), adapters);
    let changed = 0;
    for (const g of ref.generate)
      nextTokens(rlx, base, g).forEach(([best], i) => { changed += g.gap[i] > bounds[0] && best !== g.ids[i]; });
    if (changed < MIN_CHANGED * compared) fail(c.name, `without its adapters only ${changed} of ${compared} steps change`);
    console.log(`${c.name.padEnd(20)} ${String(steps).padStart(5)} ${String(compared).padStart(8)} ` +
      `${`${flips.length} ${JSON.stringify(flips)}`.padEnd(24).slice(0, 24)} ${med.toFixed(4)} (bound ${bounds[1]})  ` +
      `${changed} of ${compared}`);
  }

  // generate --lora --ids: the greedy ids are next-tokens --lora's trace.
  const c = LORA_CASES[0], model = path.join(fixtures, `${c.model}.gguf`), lora = loraArgs(rlx, fixtures, c, dir);
  const out = runRlx(rlx, ['generate', '--model', model, '--prompt', 'Hello world', '--max-tokens', '6', '--ids',
    ...lora]).trimEnd().split('\n');
  const last = JSON.parse(out[out.length - 1]);
  const trace = nextTokens(rlx, model, { prompt_ids: last.prompt_ids, ids: last.ids }, lora).map(([best]) => best);
  if (trace.join() !== last.ids.join()) fail('generate --lora', `greedy ids ${last.ids} != next-tokens trace ${trace}`);

  // Refusals: a usage error (exit 2) naming what is wrong.
  const adapter = lora[1].slice(0, lora[1].lastIndexOf(':'));
  const other = path.join(fixtures, 'qwen3-f32.gguf');
  for (const [args, pattern, base] of [
    [['--lora', `${adapter}:x`], /--lora must be FILE or FILE:SCALE/],
    [['--lora', ':1'], /--lora needs a FILE/],
    [['--lora', path.join(dir, 'none.gguf')], /LoRA adapter 0 \(.*none\.gguf\)/],
    [['--lora', adapter, '--lora', 'Makefile'], /LoRA adapter 1 \(Makefile\): GGUF: not a GGUF file/],
    [['--lora', model], /LoRA adapter 0 .*general\.type/],
    [['--lora', adapter], /'general\.architecture' is 'llama'; a LoRA adapter for this model has 'qwen3'/, other],
    [Array(100).fill(['--lora', adapter]).flat(), /at most \d+ --lora adapters/],
  ]) {
    const all = ['next-tokens', '--model', base ?? model, '--ids', '1,2', ...args];
    try {
      runRlx(rlx, all);
      fail(args.join(' '), 'was accepted');
    } catch (e) {
      if (e.status !== 2 || !pattern.test(e.stderr)) fail(args.join(' '), `exit ${e.status}, stderr ${JSON.stringify(e.stderr)}`);
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
if (failures) {
  console.log(`${failures} failure(s)`);
  process.exit(1);
}
console.log(`all ${LORA_CASES.length} LoRA cases agree with llama.cpp`);
