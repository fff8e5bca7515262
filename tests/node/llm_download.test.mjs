// llm_download.test.mjs - web/runtime/llm_download.js against a loopback
// HTTP server that drops the connection mid-body: the rest comes with
// `Range: bytes=N-` and If-Range (the first answer's ETag); a server that
// answers 200 to a resume begins again from byte 0; a file that changed
// between the answers is not spliced (If-Range honoured: the whole new
// file); resumes are bounded; HTTP 404 is refused by status; an aborted
// signal and bad download options are refused.  Then loadGguf over that
// server, and of a model split by build/gguf_split (llama.cpp's gguf-split
// layout; from a URL, a path and a list of Files), gives the whole file's logits, and
// a lone part or a list missing a part is refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { download } from '../../web/runtime/llm_download.js';
import { loadGguf, RlxError } from '../../web/runtime/llm.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MODEL = `${ROOT}build/lm/llama-q4_0.gguf`;

/**
 * A server of files { path: { bytes, etag } } (changed by the test as it
 * likes) that ends the connection after `dropAt` bytes of each of the
 * first `drops` answers, and answers ranges unless `noRanges`; `seen` lists
 * each request's { path, range, ifRange }.
 */
async function serve(files, plan) {
  const seen = [];
  const server = createServer((req, res) => {
    const path = req.url.split('?')[0];
    seen.push({ path, range: req.headers.range ?? null, ifRange: req.headers['if-range'] ?? null });
    const file = files[path];
    if (!file) { res.writeHead(404); res.end(); return; }
    if (plan.fail?.(seen.length)) { res.writeHead(503); res.end(); return; }
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const ifRange = req.headers['if-range'];
    const ranged = m && !plan.noRanges && (!ifRange || ifRange === file.etag);
    const start = ranged ? Number(m[1]) : 0;
    const body = file.bytes.subarray(start);
    res.writeHead(ranged ? 206 : 200, {
      'Content-Length': body.length, ETag: file.etag, 'Accept-Ranges': 'bytes',
      ...(ranged ? { 'Content-Range': `bytes ${start}-${file.bytes.length - 1}/${file.bytes.length}` } : {}),
    });
    if (plan.drops > 0 && body.length > plan.dropAt) {
      plan.drops--;
      res.write(body.subarray(0, plan.dropAt), () => res.socket.destroy());
      return;
    }
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { seen, url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** The file a download gives: its pieces written at their offsets; events in `events`. */
async function fetchAll(url, options = {}) {
  const events = [];
  const got = await download('test', url, { onEvent: (e) => events.push(e), ...options });
  const out = new Uint8Array(got.size);
  let end = 0;
  for await (const { at, data } of got.chunks) { out.set(data, at); end = at + data.length; }
  assert.equal(end, got.size);
  return { bytes: out, events };
}

const bytesOf = (n, seed) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);

test('a dropped body resumes with Range and If-Range; 200 to a resume begins again', async () => {
  const file = { bytes: bytesOf(200_000, 1), etag: '"v1"' };
  const s = await serve({ '/m.gguf': file }, { drops: 2, dropAt: 70_000 });
  try {
    const { bytes, events } = await fetchAll(`${s.url}/m.gguf`);
    assert.deepEqual(bytes, file.bytes);
    assert.deepEqual(s.seen.map((r) => [r.range, r.ifRange]), [[null, null], ['bytes=70000-', '"v1"'], ['bytes=140000-', '"v1"']]);
    assert.deepEqual(events.map((e) => [e.stage, e.attempt, e.at]), [['resume', 1, 70_000], ['resume', 1, 140_000]]);
  } finally { await s.close(); }

  const noRanges = await serve({ '/m.gguf': file }, { drops: 1, dropAt: 50_000, noRanges: true });
  try {
    const { bytes, events } = await fetchAll(`${noRanges.url}/m.gguf`);
    assert.deepEqual(bytes, file.bytes);
    assert.deepEqual(events.map((e) => e.stage), ['resume', 'restart']);
  } finally { await noRanges.close(); }
});

test('a file that changed between the answers is not spliced: If-Range sends the new file whole', async () => {
  const files = { '/m.gguf': { bytes: bytesOf(100_000, 1), etag: '"v1"' } };
  const plan = { drops: 1, dropAt: 40_000 };
  const s = await serve(files, plan);
  try {
    const events = [];
    const got = await download('test', `${s.url}/m.gguf`, { onEvent: (e) => events.push(e) });
    const out = new Uint8Array(got.size);
    for await (const { at, data } of got.chunks) {
      out.set(data, at);
      files['/m.gguf'] = { bytes: bytesOf(100_000, 2), etag: '"v2"' }; // changed after the first bytes
    }
    assert.deepEqual(out, bytesOf(100_000, 2));
    assert.deepEqual(events.map((e) => e.stage), ['resume', 'restart']);
  } finally { await s.close(); }
});

test('resumes are bounded; HTTP 404, an aborted signal and bad options are refused', async () => {
  const file = { bytes: bytesOf(50_000, 3), etag: '"v1"' };
  const s = await serve({ '/m.gguf': file }, { drops: 1, dropAt: 10_000, fail: (n) => n > 1 });
  try {
    await assert.rejects(fetchAll(`${s.url}/m.gguf`, { retries: 3 }), (err) => err instanceof RlxError &&
      /stopped \(HTTP 503\) and 3 resume\(s\) did not finish it/.test(err.message));
    assert.equal(s.seen.length, 4);
    await assert.rejects(download('loadGguf', `${s.url}/absent.gguf`), (err) => err instanceof RlxError &&
      err.statusName === 'not found' && /cannot fetch http:\/\/127\.0\.0\.1:\d+\/absent\.gguf: HTTP 404/.test(err.message));
    await assert.rejects(download('loadGguf', `${s.url}/m.gguf`, { signal: AbortSignal.abort() }),
      (err) => err instanceof RlxError && /^loadGguf: the download of .*\/m\.gguf was aborted$/.test(err.message));
    // Bad download options are RlxErrors naming the option, whatever the source
    for (const [options, re] of [[{ cache: 5 }, /options\.cache must be true or 'no', got number 5/],
      [{ retries: -1 }, /options\.retries must be an integer from 0 to 100, got number -1/],
      [{ signal: 'stop' }, /options\.signal must be an AbortSignal, got string stop/]]) {
      await assert.rejects(loadGguf(new Uint8Array(8), options), (err) => err instanceof RlxError && /^loadGguf: /.test(err.message) && re.test(err.message));
    }
  } finally { await s.close(); }
});

test('loadGguf over a dropping server, and of split parts, gives the whole file\'s logits', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlx-split-'));
  execFileSync(`${ROOT}build/gguf_split`, [MODEL, '3', join(dir, 'm')]);
  const whole = readFileSync(MODEL);
  const files = { '/m.gguf': { bytes: whole, etag: '"w"' } };
  for (let k = 1; k <= 3; k++) {
    files[`/m-0000${k}-of-00003.gguf`] = { bytes: readFileSync(join(dir, `m-0000${k}-of-00003.gguf`)), etag: `"p${k}"` };
  }
  const s = await serve(files, { drops: 2, dropAt: 30_000 });
  const ids = [1, 5, 9, 2, 7];
  const models = [];
  try {
    const events = [];
    models.push(await loadGguf(MODEL, { backend: 'cpu', threads: 1 }));
    models.push(await loadGguf(`${s.url}/m.gguf`, { backend: 'cpu', threads: 1, onProgress: (e) => events.push(e) }));
    models.push(await loadGguf(`${s.url}/m-00001-of-00003.gguf`, { backend: 'cpu', threads: 1 }));
    models.push(await loadGguf(join(dir, 'm-00001-of-00003.gguf'), { backend: 'cpu', threads: 1 }));
    const files = [3, 1, 2].map((k) => new File([readFileSync(join(dir, `m-0000${k}-of-00003.gguf`))], `m-0000${k}-of-00003.gguf`));
    models.push(await loadGguf(files, { backend: 'cpu', threads: 1 })); // Files in any order: put in order by name
    assert.ok(events.some((e) => e.stage === 'resume'), 'the dropped download resumed');
    assert.deepEqual(events.at(-1), { loaded: whole.length, total: whole.length });
    const ref = models[0].logits(ids);
    for (const m of models.slice(1)) assert.deepEqual(m.logits(ids), ref);
    await assert.rejects(loadGguf(join(dir, 'm-00002-of-00003.gguf'), { backend: 'cpu', threads: 1 }),
      /part 2 of a model split in 3 parts \(split\.count\): give all 3 parts/);
    await assert.rejects(loadGguf([join(dir, 'm-00001-of-00003.gguf'), join(dir, 'm-00003-of-00003.gguf')], { backend: 'cpu', threads: 1 }),
      /loadGguf: source: part 2 of 3 \(-00002-of-00003\.gguf\) is missing/);
  } finally {
    for (const m of models) m.free();
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
