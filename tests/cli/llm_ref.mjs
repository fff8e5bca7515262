// llm_ref.mjs - our native language-model runtime (build/rlx) against
// llama.cpp's answers for the same files (tests/llama_ref/expected/*.json,
// written by tests/llama_ref/reference.mjs over the build/lm fixtures,
// transformer-*.gguf among them: our transformer as rlx export-gguf writes
// it, so llama.cpp loading and running what we write is checked too):
//   * tokenization: every text of the corpus, with special-token text parsed
//     and as plain text, must give llama.cpp's ids exactly;
//   * the CLI: generate --ids's JSON line agrees with tokenize and with the
//     greedy trace; bad arguments are usage errors naming what is wrong;
//   * generation, teacher-forced: after the prompt and after each of
//     llama.cpp's 32 greedy tokens, our greedy token must be llama.cpp's
//     wherever llama.cpp's top-2 margin exceeds what rounding can flip, and
//     our top-2 margin must follow llama.cpp's (median difference bounded).
// The bounds per weight type come from how llama.cpp computes: f32 exactly;
// f16 and bf16 weights with the activations rounded to f16 / bf16; quantized
// weights with the activations quantized to 8 bits (we keep f32
// activations), which moves a margin by about 0.2-0.4 logits on these
// models (the same shift as quantizing the weights to q8_0).
//
//   node tests/cli/llm_ref.mjs [RLX] [FIXTURE_DIR]
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const rlx = process.argv[2] ?? path.join(here, '../../build/rlx');
const fixtures = process.argv[3] ?? path.join(here, '../../build/lm');
const expectedDir = path.join(here, '../llama_ref/expected');

// [margin a flip is allowed below, largest median margin difference]
const BOUNDS = {
  f32: [0.1, 0.03], f16: [0.1, 0.05], bf16: [0.5, 0.15], quantized: [2.0, 0.6],
  // rlx export-gguf's transformer: small weights, so margins of 0.01-0.3 logits.
  'transformer-f32': [0.002, 0.0005], 'transformer-q8_0': [0.03, 0.01],
};
const MIN_COMPARED = 0.6; // of the steps, at least this share must be decided by the margin

const run = (args) => execFileSync(rlx, args, { encoding: 'utf8', maxBuffer: 1 << 24, stdio: ['ignore', 'pipe', 'pipe'] });
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

let failures = 0;
const fail = (file, msg) => { failures++; console.log(`FAIL ${file}: ${msg}`); };

const files = fs.readdirSync(expectedDir).filter((f) => f.endsWith('.json')).sort();
if (files.length < 36) fail('expected/', `only ${files.length} reference files`);
console.log('file                    tokenize  steps compared flips(gap)       median |margin diff|');
for (const file of files) {
  const ref = JSON.parse(fs.readFileSync(path.join(expectedDir, file), 'utf8'));
  const model = path.join(fixtures, file.replace(/\.json$/, '.gguf'));
  const name = file.replace(/\.json$/, ''), type = name.split('-').pop();
  const [flipBelow, medianMax] = BOUNDS[name] ?? BOUNDS[type] ?? BOUNDS.quantized;

  // Tokenization: one process for all texts, with and without special parsing.
  const texts = ref.tokenize.flatMap((t) => ['--text', t.text]);
  const special = run(['tokenize', '--model', model, ...texts]).split('\n');
  const plain = run(['tokenize', '--model', model, '--no-special', ...texts]).split('\n');
  let tokOk = 0;
  ref.tokenize.forEach((t, i) => {
    const want = JSON.stringify(t.ids), wantPlain = JSON.stringify(t.ids_text ?? t.ids);
    special[i] = JSON.stringify(JSON.parse(special[i] || 'null'));
    plain[i] = JSON.stringify(JSON.parse(plain[i] || 'null'));
    if (special[i] !== want) fail(file, `tokenize ${JSON.stringify(t.text)}: ${special[i]} != llama.cpp ${want}`);
    else if (plain[i] !== wantPlain) fail(file, `tokenize as text ${JSON.stringify(t.text)}: ${plain[i]} != llama.cpp ${wantPlain}`);
    else tokOk++;
  });

  // Teacher-forced greedy trace over each prompt.
  let steps = 0, compared = 0;
  const flips = [], diffs = [];
  for (const g of ref.generate) {
    const out = run(['next-tokens', '--model', model, '--ids', g.prompt_ids.join(','), '--follow', g.ids.slice(0, -1).join(',')])
      .trim().split('\n').map((l) => l.split(' ').map(Number));
    if (out.length !== g.ids.length) fail(file, `next-tokens gave ${out.length} steps for ${g.ids.length}`);
    out.forEach(([best, second, margin], i) => {
      steps++;
      if (g.gap[i] === null) return;
      if (g.gap[i] > flipBelow) {
        compared++;
        if (best !== g.ids[i]) fail(file, `prompt ${JSON.stringify(g.prompt)} step ${i}: ${best} != llama.cpp ${g.ids[i]} (its margin ${g.gap[i]})`);
      } else if (best !== g.ids[i]) flips.push(g.gap[i]);
      if (best === g.ids[i] && second === g.second[i]) diffs.push(Math.abs(margin - g.gap[i]));
    });
  }
  const med = diffs.length ? median(diffs) : Infinity;
  if (compared < MIN_COMPARED * steps) fail(file, `only ${compared} of ${steps} steps had a margin above ${flipBelow}`);
  if (!(med <= medianMax)) fail(file, `median margin difference ${med.toFixed(4)} > ${medianMax}`);
  console.log(`${file.padEnd(24)}${String(tokOk).padStart(3)}/${ref.tokenize.length}  ${String(steps).padStart(5)} ${String(compared).padStart(8)} ` +
    `${`${flips.length} ${JSON.stringify(flips)}`.padEnd(24).slice(0, 24)} ${med.toFixed(4)} (bound ${medianMax})`);
}
// generate --ids: the streamed text, then the JSON line; its prompt_ids are tokenize's ids.
{
  const model = path.join(fixtures, 'qwen3-q8_0.gguf');
  const out = run(['generate', '--model', model, '--prompt', 'Hello world', '--max-tokens', '6', '--ids']).trimEnd().split('\n');
  const last = JSON.parse(out[out.length - 1]);
  const tok = JSON.parse(run(['tokenize', '--model', model, '--text', 'Hello world']));
  if (JSON.stringify(last.prompt_ids) !== JSON.stringify(tok)) fail('generate --ids', `prompt_ids ${last.prompt_ids} != tokenize ${tok}`);
  if (last.ids.length !== 6) fail('generate --ids', `${last.ids.length} ids for --max-tokens 6`);
  const trace = run(['next-tokens', '--model', model, '--ids', tok.join(','), '--follow', last.ids.slice(0, -1).join(',')])
    .trim().split('\n').map((l) => Number(l.split(' ')[0]));
  if (trace.join() !== last.ids.join()) fail('generate --ids', `greedy ids ${last.ids} != next-tokens trace ${trace}`);
}
// Refusals: a usage error (exit 2) with a message naming what is wrong.
for (const [args, pattern] of [
  [['generate', '--model', 'build/lm/none.gguf', '--prompt', 'x'], /none\.gguf/],
  [['generate', '--model', path.join(fixtures, 'qwen3-q8_0.gguf')], /--prompt TEXT or --prompt-ids/],
  [['generate', '--model', path.join(fixtures, 'qwen3-q8_0.gguf'), '--prompt', 'x', '--temperature', '-1'], /--temperature must be a number from 0/],
  [['generate', '--model', path.join(fixtures, 'qwen3-q8_0.gguf'), '--prompt-ids', '1,x'], /token ids separated by commas/],
  [['generate', '--model', path.join(fixtures, 'qwen3-q8_0.gguf'), '--prompt-ids', '99999'], /outside the vocabulary/],
  [['generate', '--model', path.join(fixtures, 'qwen3-q8_0.gguf'), '--prompt', 'x', '--ctx', '100000'], /n_ctx/],
  [['tokenize', '--model', path.join(fixtures, 'qwen3-q8_0.gguf')], /--text TEXT is required/],
  [['gguf-info', 'Makefile'], /gguf-info/],
]) {
  try {
    run(args);
    fail(args.join(' '), 'was accepted');
  } catch (e) {
    if (e.status !== 2 || !pattern.test(e.stderr)) fail(args.join(' '), `exit ${e.status}, stderr ${JSON.stringify(e.stderr)}`);
  }
}
if (failures) {
  console.log(`${failures} failure(s)`);
  process.exit(1);
}
console.log(`all ${files.length} files agree with llama.cpp`);
