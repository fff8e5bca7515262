// types.test.mjs - web/pkg/rlx_web.d.ts: tests/types/check.ts (every export
// used as documented, plus @ts-expect-error misuses) compiles with
// `tsc --noEmit --strict` (npm typescript), and the .d.ts declares exactly
// the names rlx_web.js exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as rlx from '../../web/pkg/rlx_web.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = `${ROOT}node_modules/typescript/bin/tsc`;

test('tests/types/check.ts compiles against rlx_web.d.ts with --strict', { skip: !existsSync(TSC) && 'npm typescript missing: make setup' }, () => {
  const args = [TSC, '--noEmit', '--strict', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler',
    '--lib', 'es2022,dom', 'tests/types/check.ts'];
  try {
    execFileSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  }
});

test('rlx_web.d.ts declares exactly the exports of rlx_web.js', () => {
  const dts = readFileSync(new URL('../../web/pkg/rlx_web.d.ts', import.meta.url), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:default )?(?:declare )?(?:function|class|const) (\w+)/gm)].map((m) => m[1]));
  if (/^export default function init/m.test(dts)) declared.add('default');
  declared.delete('init');
  const actual = new Set(Object.keys(rlx));
  assert.deepEqual([...actual].filter((n) => !declared.has(n)).sort(), [], 'exported but not declared');
  assert.deepEqual([...declared].filter((n) => !actual.has(n)).sort(), [], 'declared but not exported');
});
