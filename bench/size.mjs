// size.mjs - sizes of what a browser downloads for RLX: the training module
// web/pkg/rlx_web.wasm, the language-model module web/pkg/rlx_llm.wasm
// (fetched only by pages that run GGUF models), their relaxed-SIMD builds
// (a page fetches one build of each: web/runtime/simd.js) and the JS
// modules, in bytes, KiB and gzip -9 KiB, next to each module's budget
// (bytes of the raw file: 300,000 for rlx_web.wasm, the language-model
// module's from tests/common/llm_budget.mjs).  No dependencies.
//
//   node bench/size.mjs            prints the table
//   node bench/size.mjs --json     one JSON object instead
//   node bench/size.mjs --check    also exits 1 when the wasm is over budget
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { LLM_BUDGET } from '../tests/common/llm_budget.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const WASM = 'web/pkg/rlx_web.wasm';
const LLM_WASM = 'web/pkg/rlx_llm.wasm';
const RELAXED = ['web/pkg/rlx_web_relaxed.wasm', 'web/pkg/rlx_llm_relaxed.wasm'];
const WASM_BUDGET = 300_000; /* rlx_web.wasm's */
const budgetOf = (file) => (/rlx_llm/.test(file) ? LLM_BUDGET : WASM_BUDGET);

/** Files a page may load: the wasm, then every .js/.mjs/.css/.html under web/ (not node_modules). */
function files() {
  const list = [WASM, LLM_WASM, ...RELAXED, 'web/pkg/rlx_web.js', 'web/pkg/rlx_web.d.ts'];
  const walk = (dir) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const rel = `${dir}/${name}`;
      if (statSync(join(ROOT, rel)).isDirectory()) {
        if (name !== 'data' && name !== 'pkg') walk(rel);
      } else if (/\.(m?js|css|html)$/.test(name) && !list.includes(rel)) {
        list.push(rel);
      }
    }
  };
  walk('web');
  return list;
}

function measure(rel) {
  const path = join(ROOT, rel);
  if (!existsSync(path)) return { file: rel, missing: true };
  const bytes = readFileSync(path);
  return { file: rel, bytes: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
}

const kib = (n) => (n / 1024).toFixed(1);
const args = new Set(process.argv.slice(2));
const rows = files().map(measure);
const wasm = rows[0], llmWasm = rows[1], relaxed = rows.slice(2, 2 + RELAXED.length);
const js = rows.filter((r) => !r.missing && /\.m?js$/.test(r.file));
const total = (key, list) => list.reduce((a, r) => a + r[key], 0);
const summary = {
  wasm_bytes: wasm.bytes ?? null,
  wasm_budget_bytes: WASM_BUDGET,
  wasm_within_budget: !wasm.missing && wasm.bytes <= WASM_BUDGET,
  llm_wasm_bytes: llmWasm.bytes ?? null,
  llm_wasm_budget_bytes: LLM_BUDGET,
  llm_wasm_within_budget: !llmWasm.missing && llmWasm.bytes <= LLM_BUDGET,
  relaxed_wasm_bytes: relaxed.map((r) => r.bytes ?? null),
  relaxed_wasm_within_budget: relaxed.every((r) => !r.missing && r.bytes <= budgetOf(r.file)),
  js_bytes: total('bytes', js),
  js_gzip_bytes: total('gzip', js),
  files: rows,
};

if (args.has('--json')) {
  console.log(JSON.stringify(summary, null, 2));
} else {
  const w = Math.max(...rows.map((r) => r.file.length));
  console.log(`${'file'.padEnd(w)}  ${'bytes'.padStart(9)}  ${'KiB'.padStart(7)}  ${'gzip KiB'.padStart(8)}`);
  for (const r of rows) {
    if (r.missing) console.log(`${r.file.padEnd(w)}  ${'missing'.padStart(9)}`);
    else console.log(`${r.file.padEnd(w)}  ${String(r.bytes).padStart(9)}  ${kib(r.bytes).padStart(7)}  ${kib(r.gzip).padStart(8)}`);
  }
  console.log(`${'all JS'.padEnd(w)}  ${String(summary.js_bytes).padStart(9)}  ${kib(summary.js_bytes).padStart(7)}  ${kib(summary.js_gzip_bytes).padStart(8)}`);
  for (const m of [wasm, llmWasm, ...relaxed]) {
    if (m.missing) {
      console.log(`${m.file} is missing: run \`make wasm\``);
    } else {
      const diff = m.bytes - budgetOf(m.file);
      console.log(`${relative(ROOT, join(ROOT, m.file))}: ${m.bytes} bytes of its ${budgetOf(m.file)} byte budget: ` +
        (diff <= 0 ? `ok, ${-diff} bytes left` : `OVER by ${diff} bytes`));
    }
  }
}
if (args.has('--check') && !(summary.wasm_within_budget && summary.llm_wasm_within_budget && summary.relaxed_wasm_within_budget)) process.exit(1);
