// reference.mjs - llama.cpp's answers for one GGUF file, as JSON: the token
// ids of every line of tests/llm/tokenize_corpus.txt, and for every prompt of
// tests/llm/prompts.txt 32 greedy tokens with the gap between the top two
// logits at each step (so a comparison can skip steps that rounding may
// decide).  llama.cpp runs through node-llama-cpp on the CPU, one thread.
// --lora FILE:SCALE (repeatable) generates with those LoRA adapters applied;
// --no-tokenize leaves the tokenize cases out.  --lora-case NAME does both
// for a case of lora_cases.mjs (its model and adapters, made with build/rlx
// into build/lm/lora/, or the model they merge into there) and records the
// case as "lora_case".
//
//   node tests/llama_ref/reference.mjs FILE.gguf OUT.json [--lora FILE:SCALE ...] [--no-tokenize]
//   node tests/llama_ref/reference.mjs --lora-case NAME OUT.json
//
// Output fields:
//   bos            the id put first in every "ids" / "prompt_ids" list when
//                  the file's tokenizer.ggml.add_bos_token is true, else null
//   tokenize[]     {text, ids}: special-token text (e.g. "<|im_start|>") is
//                  parsed as the special token; "ids_text" is added where
//                  reading it as plain text gives other ids
//   generate[]     {prompt, prompt_ids, ids: 32 greedy tokens (no stop at
//                  end-of-generation tokens), second: the runner-up at each
//                  step, gap: logit(ids[i]) - logit(second[i]), 4 decimals}
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';
import {getLlama, LlamaLogLevel} from 'node-llama-cpp';
import {LORA_CASES, caseModel} from './lora_cases.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const STEPS = 32;

function parseArgs(argv) {
  const a = {
    corpus: path.join(here, '../llm/tokenize_corpus.txt'),
    prompts: path.join(here, '../llm/prompts.txt'),
    lora: [],
    tokenize: true,
  };
  const pos = [];
  let bad = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--corpus') a.corpus = argv[++i];
    else if (argv[i] === '--prompts') a.prompts = argv[++i];
    else if (argv[i] === '--no-tokenize') a.tokenize = false;
    else if (argv[i] === '--lora-case') a.loraCase = argv[++i];
    else if (argv[i] === '--lora') {
      const m = /^(.+):([-+0-9.e]+)$/.exec(argv[++i] ?? '');
      if (m) a.lora.push({filePath: m[1], scale: Number(m[2])});
      else bad = true;
    } else pos.push(argv[i]);
  }
  if (a.loraCase) {
    a.case = LORA_CASES.find((c) => c.name === a.loraCase);
    if (a.case && pos.length === 1 && !a.lora.length) {
      const root = path.join(here, '../..'), dir = path.join(root, 'build/lm/lora');
      fs.mkdirSync(dir, {recursive: true});
      const { model, lora } = caseModel(path.join(root, 'build/rlx'), path.join(root, 'build/lm'), a.case, dir);
      for (let i = 1; i < lora.length; i += 2) {
        const at = lora[i].lastIndexOf(':');
        a.lora.push({filePath: lora[i].slice(0, at), scale: Number(lora[i].slice(at + 1))});
      }
      pos.unshift(model);
      a.tokenize = false;
    } else bad = true;
  }
  if (bad || pos.length !== 2 || !a.corpus || !a.prompts) {
    console.error('usage: node reference.mjs FILE.gguf OUT.json [--corpus FILE] [--prompts FILE] [--lora FILE:SCALE ...] ' +
                  '[--no-tokenize]\n       node reference.mjs --lora-case NAME OUT.json');
    process.exit(2);
  }
  [a.model, a.out] = pos;
  return a;
}

// One line of the file per case (a last empty line is not a case).
function readLines(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// JSON with one case per line: small and readable in diffs.
function toJson(obj) {
  const out = ['{'];
  const keys = Object.keys(obj);
  keys.forEach((k, i) => {
    const v = obj[k], comma = i + 1 < keys.length ? ',' : '';
    if (Array.isArray(v) && v.length && typeof v[0] === 'object') {
      out.push(`  ${JSON.stringify(k)}: [`);
      v.forEach((e, j) => out.push(`    ${JSON.stringify(e)}${j + 1 < v.length ? ',' : ''}`));
      out.push(`  ]${comma}`);
    } else {
      out.push(`  ${JSON.stringify(k)}: ${JSON.stringify(v)}${comma}`);
    }
  });
  out.push('}');
  return out.join('\n') + '\n';
}

function readMeta(model) {
  const md = model.fileInfo.metadata;
  return {arch: md.general.architecture, addBos: md.tokenizer?.ggml?.add_bos_token === true};
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const llama = await getLlama({gpu: false, build: 'never', maxThreads: 1, logLevel: LlamaLogLevel.error});
  const model = await llama.loadModel({modelPath: args.model, gpuLayers: 0, useMmap: true});
  const meta = readMeta(model);
  const bos = meta.addBos ? model.tokens.bos : null;
  const withBos = (ids) => (bos == null ? ids : [bos, ...ids]);

  const tokenize = [];
  const texts = args.tokenize ? readLines(args.corpus) : [];
  // One case with newlines, which a line of the corpus cannot hold.
  if (args.tokenize) texts.push(texts.slice(0, 3).join('\n') + '\n\nend\n');
  for (const text of texts) {
    const ids = withBos(Array.from(model.tokenize(text, true)));
    const plain = withBos(Array.from(model.tokenize(text, false)));
    const e = {text, ids};
    if (plain.join() !== ids.join()) e.ids_text = plain;
    tokenize.push(e);
  }

  const prompts = readLines(args.prompts);
  const context = await model.createContext({contextSize: 256, batchSize: 256, threads: 1, sequences: 1,
                                             ...(args.lora.length ? {lora: {adapters: args.lora}} : {})});
  const generate = [];
  for (const prompt of prompts) {
    const sequence = context.getSequence();
    const promptIds = withBos(Array.from(model.tokenize(prompt, true)));
    const ids = [], second = [], gap = [];
    const it = sequence.evaluateWithMetadata(promptIds, {probabilities: true},
                                             {temperature: 0, yieldEogToken: true, repeatPenalty: false});
    for await (const step of it) {
      const top = step.probabilities.entries();
      const [t1, p1] = top.next().value, [t2, p2] = top.next().value;
      if (t1 !== step.token) throw new Error(`greedy token ${step.token} is not the most likely ${t1}`);
      ids.push(step.token);
      second.push(t2);
      gap.push(p2 > 0 ? Math.round(Math.log(p1 / p2) * 1e4) / 1e4 : null);
      if (ids.length === STEPS) break;
    }
    sequence.dispose();
    generate.push({prompt, prompt_ids: promptIds, ids, second, gap});
  }
  await context.dispose();

  const info = JSON.parse(fs.readFileSync(
      path.join(here, 'node_modules/node-llama-cpp/llama/llama.cpp.info.json'), 'utf8'));
  const result = {
    file: path.basename(args.model),
    arch: meta.arch,
    reference: `node-llama-cpp 3.21.1, llama.cpp ${info.tag}, CPU, 1 thread`,
    vocab: model.tokens ? model.fileInfo.metadata.tokenizer.ggml.tokens.length : null,
    bos,
    ...(args.case ? {lora_case: args.case} : {}),
    ...(args.tokenize ? {tokenize} : {}),
    generate,
  };
  await model.dispose();
  fs.writeFileSync(args.out, toJson(result));
}

main().catch((e) => {
  console.error(`reference.mjs: ${process.argv[2]}: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
