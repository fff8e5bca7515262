// cluster_llm.test.mjs - LoRA fine-tuning across a cohort (web/cluster/
// task_llm.js behind task.js's interface): 3 ranks in one process
// (cluster_cohort_harness.mjs: protocol.js Ranks on a wire-mode hub) tune
// the tiny llama test model (build/lm/llama-q8_0.gguf, `make lm-fixtures`)
// on tests/llm/corpus.txt for 10 steps and end with bit-identical adapters
// and a lower loss over every window; the first step's averaged gradient is
// the gradient of the step's whole batch computed by one rank (the mean over
// scored tokens, so ranks weigh by them); f16 and int8 buckets keep the
// ranks bit-identical; a rank of another base file is refused with the
// reason on both sides; the adapter the cohort writes loads in the C CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trainCohort } from './cluster_cohort_harness.mjs';
import { createTask } from '../../web/cluster/task.js';
import { modelKey } from '../../web/cluster/task_key.js';
import { VirtualClock } from '../../web/cluster/clock.js';
import { InProcessHub } from '../../web/cluster/bus.js';
import { Rank } from '../../web/cluster/protocol.js';
import { helloMismatch } from '../../web/cluster/mesh.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE = `${ROOT}build/lm/llama-q8_0.gguf`;
const OTHER = `${ROOT}build/lm/llama-f32.gguf`; // the same shapes, another file
const TEXT = readFileSync(`${ROOT}tests/llm/corpus.txt`);
const OPTS = { rank: 4, alpha: 8, targets: 'attn_q,attn_v', seq: 16, seed: 1 };
const BATCH = 2; // windows per rank and step
const skip = !existsSync(BASE) || !existsSync(OTHER) ? 'run make lm-fixtures' : false;

let task = null;
before(async () => {
  if (!skip) task = await createTask('llm', { model: readFileSync(BASE), text: TEXT, ...OPTS });
});
after(() => task?.free());

const allWindows = () => Int32Array.from({ length: task.windows }, (_, i) => i);

test('3 ranks fine-tune LoRA adapters: bit-identical, lower loss, first step = the whole batch\'s gradient', { skip }, async () => {
  const init = task.initParams();
  const before = task.gradsOf(init, allWindows()).loss;
  let first = null;
  const r = await trainCohort(null, {
    task, ranks: 3, batch: BATCH, samples: 10 * 3 * BATCH, lr: 0.2,
    onUpdate: (_id, p, g) => {
      first ??= { p: Float32Array.from(p), g: Float32Array.from(g) };
    },
  });
  assert.equal(r.halted, null);
  assert.equal(r.steps, 10);
  assert.ok(r.sameBytes, `adapters differ across ranks: ${r.hashes}`);
  const leader = r.cohort.find((x) => x.id === r.leader);
  const afterLoss = task.gradsOf(leader.params, allWindows()).loss;
  assert.ok(afterLoss < before - 0.5, `loss over every window ${before} -> ${afterLoss}`);
  // the first step: the sample-weighted mean of 3 shards = one rank's gradient of their union
  assert.deepEqual(first.p, init);
  const union = Int32Array.from([0, 1, 2].flatMap((i) => Array.from(task.indices(0, i, 3, BATCH))));
  assert.equal(new Set(union).size, 3 * BATCH, 'the shards of a step are disjoint');
  const whole = task.gradsOf(init, union).grads;
  let maxAbs = 0, maxDiff = 0;
  for (let i = 0; i < whole.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(whole[i]));
    maxDiff = Math.max(maxDiff, Math.abs(whole[i] - first.g[i]));
  }
  assert.ok(maxAbs > 0, 'a zero gradient proves nothing');
  assert.ok(maxDiff <= 1e-5 * maxAbs, `cohort vs whole batch: max diff ${maxDiff} of max ${maxAbs}`);
  // the adapter of the cohort's params loads and runs in the C CLI
  const dir = mkdtempSync(join(tmpdir(), 'rlx-cluster-llm-'));
  try {
    const file = join(dir, 'adapter.gguf');
    writeFileSync(file, task.adapter(leader.params));
    const out = execFileSync(`${ROOT}build/rlx`, ['generate', '--model', BASE, '--lora', file, '--prompt', 'The', '--max-tokens', '4', '--seed', '1'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    assert.ok(out.length > 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

for (const enc of ['f16', 'int8']) {
  test(`${enc} buckets keep the fine-tuning ranks bit-identical`, { skip }, async () => {
    const r = await trainCohort(null, { task, ranks: 2, batch: BATCH, samples: 4 * 2 * BATCH, lr: 0.2, settings: { enc } });
    assert.equal(r.halted, null);
    assert.equal(r.steps, 4);
    assert.ok(r.sameBytes, `${enc}: adapters differ across ranks: ${r.hashes}`);
    const leader = r.cohort.find((x) => x.id === r.leader);
    assert.notDeepEqual(leader.params, task.initParams(), 'the adapters moved');
  });
}

test('a rank of another base file is refused, with the reason on both sides', { skip }, async () => {
  const other = await createTask('llm', { model: readFileSync(OTHER), text: TEXT, ...OPTS });
  try {
    assert.equal(other.paramCount, task.paramCount, 'same shapes: only the file tells them apart');
    assert.notEqual(modelKey(other), modelKey(task));
    const clock = new VirtualClock();
    const hub = new InProcessHub({ clock, wire: true, delayMs: 1 });
    const ranks = [task, other].map((t, i) => new Rank({
      id: `r${i}`, bus: hub.connect(`r${i}`), clock, params: t.initParams(), lr: 0.1, model: modelKey(t),
      compute: (p, _v, ctx) => t.grads(p, { ...ctx, batch: 1 }),
    }).start());
    await clock.runUntil(() => ranks.every((r) => r.refused().length === 1), 10_000, 5);
    for (const r of ranks) {
      const [row] = r.refused();
      assert.match(row.reason, /another base model file \(sha256 [0-9a-f]{12}\.\.\. there, [0-9a-f]{12}\.\.\. here\)/);
    }
    for (const r of ranks) r.stop({ silent: true });
    // and the mesh handshake between two pages says it the same way
    const hello = (t) => ({ mesh: 1, protocol: 1, app: 'a', slug: t.slug, paramCount: t.paramCount });
    assert.match(helloMismatch(hello(task), hello(other)), /model mismatch: .*another base model file/);
    // other LoRA settings are named too
    const seq = await createTask('llm', { model: readFileSync(BASE), text: TEXT, ...OPTS, seq: 8 });
    try {
      assert.match(helloMismatch(hello(task), hello(seq)), /window length \(seq\) 8 there, 16 here/);
    } finally {
      seq.free();
    }
  } finally {
    other.free();
  }
});
