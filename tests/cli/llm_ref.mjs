// llm_ref.mjs - our native language-model runtime (build/rlx) against
// llama.cpp's answers for the same files (tests/llama_ref/expected/*.json,
// written by tests/llama_ref/reference.mjs over the build/lm fixtures,
// transformer-*.gguf among them: our transformer as rlx export-gguf writes
// it, so llama.cpp loading and running what we write is checked too):
//   * tokenization: every text of the corpus, with special-token text parsed
//     and as plain text, must give llama.cpp's ids exactly;
//   * the CLI: generate --ids's JSON line agrees with tokenize and with the
//     greedy trace; bad arguments are usage errors naming what is wrong;
//   * generation, teacher-forced over llama.cpp's 32 greedy tokens
//     (llm_trace.mjs, with the bounds per weight type).
// LoRA adapters: llm_lora_ref.mjs.
//
//   node tests/cli/llm_ref.mjs [RLX] [FIXTURE_DIR]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { boundsFor, nextTokens, runRlx, teacherForced } from './llm_trace.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const rlx = process.argv[2] ?? path.join(here, '../../build/rlx');
const fixtures = process.argv[3] ?? path.join(here, '../../build/lm');
const expectedDir = path.join(here, '../llama_ref/expected');

const run = (args) => runRlx(rlx, args);

let failures = 0;
const fail = (file, msg) => { failures++; console.log(`FAIL ${file}: ${msg}`); };

const files = fs.readdirSync(expectedDir).filter((f) => f.endsWith('.json')).sort();
if (files.length < 36) fail('expected/', `only ${files.length} reference files`);
console.log('file                    tokenize  steps compared flips(gap)       median |margin diff|');
for (const file of files) {
  const ref = JSON.parse(fs.readFileSync(path.join(expectedDir, file), 'utf8'));
  const model = path.join(fixtures, file.replace(/\.json$/, '.gguf'));
  const bounds = boundsFor(file.replace(/\.json$/, ''));

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
  const { steps, compared, flips, med } = teacherForced(rlx, model, ref, bounds, (msg) => fail(file, msg));
  console.log(`${file.padEnd(24)}${String(tokOk).padStart(3)}/${ref.tokenize.length}  ${String(steps).padStart(5)} ${String(compared).padStart(8)} ` +
    `${`${flips.length} ${JSON.stringify(flips)}`.padEnd(24).slice(0, 24)} ${med.toFixed(4)} (bound ${bounds[1]})`);
}
// generate --ids: the streamed text, then the JSON line; its prompt_ids are tokenize's ids.
{
  const model = path.join(fixtures, 'qwen3-q8_0.gguf');
  const out = run(['generate', '--model', model, '--prompt', 'Hello world', '--max-tokens', '6', '--ids']).trimEnd().split('\n');
  const last = JSON.parse(out[out.length - 1]);
  const tok = JSON.parse(run(['tokenize', '--model', model, '--text', 'Hello world']));
  if (JSON.stringify(last.prompt_ids) !== JSON.stringify(tok)) fail('generate --ids', `prompt_ids ${last.prompt_ids} != tokenize ${tok}`);
  if (last.ids.length !== 6) fail('generate --ids', `${last.ids.length} ids for --max-tokens 6`);
  const trace = nextTokens(rlx, model, { prompt_ids: tok, ids: last.ids }).map(([best]) => best);
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
