// constants.test.mjs - the library's enum values reach JS and Python only
// through the files `make` generates from the C sources
// (tools/gen_constants.py): web/runtime/constants.js and
// python/rlx/_constants.py hold exactly the enums of include/rlx.h (status
// codes, dtypes, attention masks, devices, optimizers; parsed here on their
// own), the data format and fine-tuning plan enums, split numbers and fine-tuning run defaults of
// include/rlx_llm_train.h, and the names of rlx_status_name
// (src/core/core.c), both are
// gitignored, and no other file under web/ (JS, TS) or python/rlx/ keeps a
// copy: a table or constants giving two or more members of one enum their
// numbers, a status number commented with its RLX_ERR_ name, a status
// name table, a literal status number passed to an error, or a status
// number next to its name fails the test naming the file and line.
// Build first: make (or make web/runtime/constants.js python/rlx/_constants.py)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (rel) => readFileSync(ROOT + rel, 'utf8');
const JS_OUT = 'web/runtime/constants.js';
const PY_OUT = 'python/rlx/_constants.py';
const GENERATED = new Set([JS_OUT, PY_OUT, 'web/rlx.js', 'web/rlx.d.ts']); // rlx.js, rlx.d.ts: compiled from rlx.ts

// ---- what the C sources say, parsed here independently of the generator -----
function cEnums(text) {
  const src = text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
  const enums = {};
  for (const [, body, name] of src.matchAll(/typedef\s+enum\s*\{([^}]*)\}\s*(\w+)\s*;/g)) {
    if (body.includes('#')) continue; // generated from a table (rlx_op)
    let next = 0;
    enums[name] = body.split(',').map((s) => s.trim()).filter(Boolean).map((item) => {
      const m = item.match(/^(\w+)\s*(?:=\s*(-?\d+))?$/);
      assert.ok(m, `${name}: cannot read the member '${item}'`);
      const value = m[2] === undefined ? next : Number(m[2]);
      next = value + 1;
      return [m[1], value];
    });
  }
  return enums;
}

const TRAIN_HEADER = read('include/rlx_llm_train.h');
const ENUMS = { ...cEnums(read('include/rlx.h')), ...cEnums(TRAIN_HEADER) };
// export name -> [C enum, prefix stripped from its members, lower-case keys]
const EXPORTS = {
  STATUS: ['rlx_status', /^RLX_(ERR_)?/, false],
  DTYPE: ['rlx_dtype', /^RLX_/, true],
  MASK: ['rlx_mask_kind', /^RLX_MASK_/, true],
  DEVICE: ['rlx_device', /^RLX_DEVICE_/, true],
  OPTIMIZER: ['rlx_optimizer_kind', /^RLX_OPT_/, true],
  DATA_FORMAT: ['rlx_llm_data_format', /^RLX_LLM_DATA_/, true],
  FINETUNE_PLAN: ['rlx_llm_finetune_plan', /^RLX_LLM_PLAN_/, true],
};
const EXPECTED = {}; // export name -> [[key, value, C name]]
for (const [name, [cName, prefix, lower]] of Object.entries(EXPORTS)) {
  assert.ok(ENUMS[cName], `no typedef enum ${cName} in include/rlx.h or include/rlx_llm_train.h`);
  EXPECTED[name] = ENUMS[cName].map(([c, v]) => {
    const key = c.replace(prefix, '');
    return [lower ? key.toLowerCase() : key, v, c];
  });
}
// export name -> [the #define names with the key as group 1]: numbers, keys in lower case
const DEFINE_EXPORTS = { DATA_SPLIT: 'RLX_LLM_DATA_(TRAIN|VALID)', FINETUNE_RUN: 'RLX_LLM_FINETUNE_RUN_(\\w+)' };
const DEFINED = {};
for (const [name, pattern] of Object.entries(DEFINE_EXPORTS)) {
  DEFINED[name] = [...TRAIN_HEADER.matchAll(new RegExp(`^#define ${pattern} (\\S+)$`, 'gm'))].map(([, k, v]) => [k.toLowerCase(), Number(v)]);
  assert.ok(DEFINED[name].length >= 2 && DEFINED[name].every(([, v]) => Number.isFinite(v)), `include/rlx_llm_train.h: ${name}`);
}
const core = read('src/core/core.c');
const fnBody = core.match(/const char \*rlx_status_name\(rlx_status s\) \{([\s\S]*?)\n\}/);
assert.ok(fnBody, 'src/core/core.c: rlx_status_name not found');
const cValue = Object.fromEntries(ENUMS.rlx_status);
const NAMES = [...fnBody[1].matchAll(/case\s+(RLX_\w+)\s*:\s*return\s+"([^"]*)"/g)].map(([, c, s]) => [cValue[c], s]);
assert.equal(NAMES.length, ENUMS.rlx_status.length, 'rlx_status_name names every status');

// ---- the generated files -------------------------------------------------------
const missing = [JS_OUT, PY_OUT].filter((f) => !existsSync(ROOT + f));

test('the generated files exist (make writes them)', () => {
  assert.deepEqual(missing, [], `missing ${missing.join(', ')}: run make`);
});

test(`${JS_OUT} holds the enums of include/rlx.h and the names of rlx_status_name, frozen`, { skip: missing.length > 0 }, async () => {
  const C = await import(`../../${JS_OUT}`);
  for (const [name, pairs] of Object.entries(EXPECTED)) {
    assert.deepEqual(Object.entries(C[name]), pairs.map(([k, v]) => [k, v]), `${name} differs from ${EXPORTS[name][0]}`);
    assert.ok(Object.isFrozen(C[name]), `${name} is not frozen`);
  }
  assert.deepEqual(Object.keys(C.STATUS_NAME).length, NAMES.length, 'STATUS_NAME has one name per status');
  for (const [v, s] of NAMES) assert.equal(C.STATUS_NAME[v], s, `STATUS_NAME[${v}]`);
  assert.ok(Object.isFrozen(C.STATUS_NAME), 'STATUS_NAME is not frozen');
  for (const [name, pairs] of Object.entries(DEFINED)) {
    assert.deepEqual(Object.entries(C[name]), pairs, `${name} differs from include/rlx_llm_train.h`);
    assert.ok(Object.isFrozen(C[name]), `${name} is not frozen`);
  }
  assert.deepEqual(Object.keys(C).sort(), [...Object.keys(EXPORTS), ...Object.keys(DEFINED), 'STATUS_NAME'].sort(), 'exports');
});

test(`${PY_OUT} holds the same, read-only, with the status codes as module constants`, { skip: missing.length > 0 }, () => {
  const script = 'import json, runpy, sys\nns = runpy.run_path(sys.argv[1])\n' +
    'out = {k: [[a, b] for a, b in ns[k].items()] for k in sys.argv[2:]}\n' +
    'out["_consts"] = {k: v for k, v in ns.items() if k.isupper() and isinstance(v, int)}\n' +
    'for k in sys.argv[2:]:\n' +
    '    try:\n        ns[k]["x"] = 1\n        out["_consts"]["writable " + k] = 1\n    except TypeError:\n        pass\n' +
    'print(json.dumps(out))\n';
  const python = process.env.PYTHON ?? 'python3';
  const r = spawnSync(python, ['-c', script, ROOT + PY_OUT, ...Object.keys(EXPECTED), ...Object.keys(DEFINED), 'STATUS_NAME'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `${python} could not read ${PY_OUT}: ${r.stderr || r.error}`);
  const got = JSON.parse(r.stdout);
  for (const [name, pairs] of Object.entries(EXPECTED)) {
    assert.deepEqual(got[name], pairs.map(([k, v]) => [k, v]), `${name} differs from ${EXPORTS[name][0]}`);
  }
  for (const [name, pairs] of Object.entries(DEFINED)) assert.deepEqual(got[name], pairs, `${name} differs from include/rlx_llm_train.h`);
  assert.deepEqual(new Map(got.STATUS_NAME), new Map(NAMES), 'STATUS_NAME differs from rlx_status_name');
  assert.deepEqual(got._consts, Object.fromEntries(EXPECTED.STATUS.map(([k, v]) => [k, v])), 'status module constants (or a writable table)');
});

test('the generated files are gitignored', () => {
  const ignored = read('.gitignore').split('\n').map((l) => l.trim());
  for (const f of [JS_OUT, PY_OUT]) assert.ok(ignored.includes(f), `.gitignore does not list ${f}`);
});

// ---- no copy by hand -------------------------------------------------------------
function sources() {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(ROOT + dir, { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) {
        if (!['vendor', 'node_modules', 'data'].includes(e.name)) walk(rel);
      } else if (/\.(m?js|ts)$/.test(e.name) && !GENERATED.has(rel)) {
        out.push(rel);
      }
    }
  };
  walk('web');
  for (const e of readdirSync(ROOT + 'python/rlx')) {
    if (e.endsWith('.py') && !GENERATED.has(`python/rlx/${e}`)) out.push(`python/rlx/${e}`);
  }
  return out.sort();
}

const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const NAME_ALT = NAMES.map(([, s]) => esc(s)).join('|');
const lineOf = (text, index) => text.slice(0, index).split('\n').length;

/** "file:line: what" for every hand-kept copy in text. */
function copies(file, text) {
  const found = [];
  const at = (index, what) => found.push(`${file}:${lineOf(text, index)}: ${what}`);
  // Two or more members of one enum given their numbers (a table, or constants).
  for (const [name, pairs] of Object.entries(EXPECTED)) {
    const hits = new Map();
    for (const [key, value, c] of pairs) {
      const keys = [...new Set([key, c, c.replace(/^RLX_/, '')])].map(esc).join('|');
      const rx = new RegExp(`(?<![\\w$])['"]?(?:${keys})['"]?\\s*[:=]\\s*${esc(String(value))}(?![\\w.])`, 'g');
      for (const m of text.matchAll(rx)) if (!hits.has(key)) hits.set(key, m.index);
    }
    if (hits.size >= 2) at(Math.min(...hits.values()), `${name} members ${[...hits.keys()].join(', ')} given by hand (use ${EXPORTS[name][0]} from the generated constants)`);
  }
  // A status number commented with its name, e.g. `const INVALID = -1; // RLX_ERR_INVALID_ARG`.
  for (const m of text.matchAll(/-\d+\b[^\n]*(?:\/\/|#)\s*RLX_(?:ERR_\w+|OK)\b/g)) at(m.index, 'a status number commented with its RLX_ERR_ name');
  // A table of status names.
  const named = new Map();
  for (const m of text.matchAll(new RegExp(`:\\s*['"](${NAME_ALT})['"]`, 'g'))) if (!named.has(m[1])) named.set(m[1], m.index);
  if (named.size >= 2) at(Math.min(...named.values()), `a table of status names (${[...named.keys()].join(', ')}): use STATUS_NAME`);
  // A literal status number given to an error, or next to its name.
  for (const m of text.matchAll(/\b\w*Error\(\s*-\d+\b/g)) at(m.index, `a literal status number: ${m[0]}`);
  for (const [v, s] of NAMES) {
    if (v === 0) continue;
    for (const m of text.matchAll(new RegExp(`(?<![\\w.])${v}\\b[^\\n]*['"]${esc(s)}['"]`, 'g'))) at(m.index, `status ${v} next to its name '${s}'`);
  }
  return [...new Set(found)];
}

// Files whose literal status numbers are still to be taken from the generated
// constants (the SDK is TypeScript: it needs them through typed exports).
test('no hand-written copy of the constants under web/ and python/rlx/', () => {
  const found = [];
  for (const file of sources()) found.push(...copies(file, read(file)));
  assert.deepEqual(found, [], `hand-written constants (import them from ${JS_OUT} or rlx._constants):\n${found.join('\n')}`);
});

test('the scan finds each kind of copy', () => {
  const cases = {
    'const STATUS = { INVALID_ARG: -1, STATE: -7 };': /STATUS members INVALID_ARG, STATE/,
    'INVALID_ARG = -1\nNOT_FOUND = -5\n': /STATUS members/,
    "const DEVICES = { cpu: 0, webgpu: 1, webgl: 2 };": /DEVICE members cpu, webgpu, webgl/,
    '_OPTIMIZERS = {"sgd": 0, "momentum": 1}': /OPTIMIZER members sgd, momentum/,
    "const FORMAT = { text: 1, jsonl: 2 };": /DATA_FORMAT members text, jsonl/,
    'const INVALID = -1; // RLX_ERR_INVALID_ARG': /commented/,
    "NAMES = { OK: 'ok', NUMERIC: 'numeric error' }": /table of status names/,
    "throw new RlxError(-7, 'gone', 'x');": /literal status number/,
    "report(-8, 'numeric error')": /status -8 next to its name/,
  };
  for (const [text, want] of Object.entries(cases)) assert.match(copies('x.js', text).join('\n'), want, text);
  assert.deepEqual(copies('x.js', "const order = { cpu: 0 }; f(x, -1); new RlxError(STATUS.STATE, 'm', 'bad state');"), []);
});
