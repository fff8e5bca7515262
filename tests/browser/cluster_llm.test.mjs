// cluster_llm.test.mjs - cluster.html's fine-tuning task across SEPARATE
// Chromium processes over WebRTC (a loopback-only network namespace, the
// static site, tools/nostr_relay.mjs, no STUN: mesh_env.mjs, as
// cluster_mesh.test.mjs): two processes fine-tune LoRA adapters of the
// llama-q4_0 test model (web/data/lm/, `make`) on the test corpus for 20
// steps and end with bit-identical adapters and a falling loss; the
// leader's adapter.gguf runs in the C CLI (build/rlx generate --lora); a
// third process with another base file is refused, and both sides say why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './helpers.mjs';
import { namespacedTests, launchPeerBrowser, servedSite, LEAVE_NOISE } from './mesh_env.mjs';

const NEEDED = ['web/vendor/trystero.js', 'web/pkg/rlx_llm_train.wasm', 'web/data/lm/llama-q4_0.gguf', 'web/data/lm/qwen2-q8_0.gguf',
  'web/data/lm/corpus.txt', 'build/rlx', 'build/lm/llama-q4_0.gguf'];
const why = NEEDED.map((f) => (existsSync(`${REPO}${f}`) ? null : `${f} is missing: run make`)).find(Boolean);
const STEPS = 20;

namespacedTests(import.meta.url, { title: 'cluster.html fine-tunes a language model across Chromium processes', timeoutMs: 300000, skip: why }, inside);

function inside() {
  const env = servedSite();

  function pageUrl(room, { base = 'llama-q4_0', steps = STEPS, min = 2 } = {}) {
    const q = new URLSearchParams({ task: 'llm', base, text: 'corpus', seq: '16', rank: '4', alpha: '8', targets: 'attn_q,attn_v',
      backend: 'cpu', batch: '4', lr: '0.2', steps: String(steps), min: String(min), autostart: '1', bye: '0',
      room, password: 'correct horse battery', relays: env.relay.url, stun: 'none' });
    return `${env.server.url}cluster.html?${q}`;
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

  test(`two processes fine-tune ${STEPS} steps: bit-identical adapters, falling loss, the adapter runs in the CLI`, { timeout: 240000 }, async () => {
    const room = `t${Math.random().toString(36).slice(2, 10)}`;
    const peers = await Promise.all([launchPeerBrowser(), launchPeerBrowser()]);
    await Promise.all(peers.map((p) => p.page.goto(pageUrl(room))));
    await Promise.all(peers.map((p) => p.page.waitForFunction((steps) => {
      const s = window.rlxCluster.state;
      return s && s.phase === 'finished' && s.step >= steps && s.roster.length === 2 && s.roster.every((r) => r.version === s.version);
    }, STEPS, { timeout: 200000, polling: 100 })));
    const [sa, sb] = await Promise.all(peers.map((p) => p.page.evaluate(() => window.rlxCluster.state)));
    assert.equal(sa.hash, sb.hash);
    assert.equal(sa.firstStep?.ranks, 2, 'both trained from the first step');
    const [pa, pb] = await Promise.all(peers.map((p) => p.page.evaluate(() => window.rlxCluster.params())));
    assert.deepEqual(pa.bits, pb.bits, 'the adapters differ between the processes');
    const info = await peers[0].page.evaluate(() => window.rlxCluster.info);
    assert.equal(info.task, 'llm');
    assert.match(info.slug, /^lora:[0-9a-f]{12}:[0-9a-f]{8}:r4a8s16:qv$/);
    const curve = await peers[0].page.evaluate(() => window.rlxCluster.points);
    const first = mean(curve.slice(0, 5).map((p) => p[1]));
    const last = mean(curve.slice(-5).map((p) => p[1]));
    assert.ok(last < first - 1, `the loss did not fall: ${first.toFixed(3)} -> ${last.toFixed(3)}`);
    // the leader's page writes the adapter; the C loader runs it
    const leader = peers.find((_, i) => [sa, sb][i].role === 'leader');
    assert.equal(await leader.page.evaluate(() => document.getElementById('adapter').disabled), false, 'the download button is on');
    const bytes = await leader.page.evaluate(async () => Array.from(await window.rlxCluster.adapter()));
    const dir = mkdtempSync(join(tmpdir(), 'rlx-cluster-llm-'));
    try {
      const file = join(dir, 'adapter.gguf');
      writeFileSync(file, Uint8Array.from(bytes));
      const out = execFileSync(`${REPO}build/rlx`, ['generate', '--model', `${REPO}build/lm/llama-q4_0.gguf`, '--lora', file, '--prompt', 'The', '--max-tokens', '4'],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
      assert.ok(out.length > 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    for (const p of peers) {
      assert.equal(await p.page.textContent('#error'), '');
      assert.deepEqual(p.problems.filter((m) => !LEAVE_NOISE.test(m)), []);
    }
    await Promise.all(peers.map((p) => p.close()));
  });

  test('a process with another base file is refused, and both sides say why', { timeout: 90000 }, async () => {
    const room = `t${Math.random().toString(36).slice(2, 10)}`;
    const [a, c] = await Promise.all([launchPeerBrowser(), launchPeerBrowser()]);
    await a.page.goto(pageUrl(room, { steps: 0, min: 1 }));
    await c.page.goto(pageUrl(room, { steps: 0, min: 1, base: 'qwen2-q8_0' }));
    for (const p of [a, c]) {
      await p.page.waitForFunction(() => window.rlxCluster.room.refusals.length > 0, null, { timeout: 60000, polling: 50 });
      const r = await p.page.evaluate(() => JSON.parse(JSON.stringify(window.rlxCluster.room)));
      assert.ok(r.refusals.some((x) => /model mismatch: .*another base model file \(sha256 [0-9a-f]{12}\.\.\. there, [0-9a-f]{12}\.\.\. here\)/.test(x.reason)),
        JSON.stringify(r.refusals));
      assert.equal(r.accepted, 0);
      assert.match(await p.page.textContent('#room-refused'), /another base model file/);
    }
    await Promise.all([a.close(), c.close()]);
  });
}
