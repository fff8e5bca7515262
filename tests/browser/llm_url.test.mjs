// llm_url.test.mjs - generate.html (served cross-origin isolated by
// tools/serve.py) loads a model from a second loopback origin: with CORS
// headers (and a first answer that drops mid-body: the page says the
// resume), a reload resumes it from the part kept in this browser's OPFS
// cache, and it generates the same greedy tokens as Node's loadGguf of the
// file; a later reload loads it from the cache with the second server
// stopped; a server without CORS
// headers is refused with the reason next to the URL box.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer, launch, newPage, missing } from './helpers.mjs';
import { loadGguf } from '../../web/runtime/llm.js';

const FILE = fileURLToPath(new URL('../../build/lm/llama-q4_0.gguf', import.meta.url));
const PROMPT = 'The miller counted the sacks';
const TOKENS = 6;
const why = missing() ?? (!existsSync(FILE) ? `missing ${FILE}: run make lm-fixtures` : null);
let server, browser, other, expected;

/**
 * The second origin: /cors/m.gguf with CORS headers, /plain/m.gguf without.
 * Its first two answers to /cors/ stop after 100000 bytes each and hold the
 * connection until drop() ends it or the page goes away.
 */
function secondOrigin(bytes) {
  let holds = 2;
  let held = null;
  const seen = []; // [method, path, Range, If-Range] of each request
  const srv = createServer((req, res) => {
    seen.push([req.method, req.url, req.headers.range ?? null, req.headers['if-range'] ?? null]);
    const cors = req.url.startsWith('/cors/');
    const headers = cors ? { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'Content-Range, ETag' } : {};
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...headers, ...(cors ? { 'Access-Control-Allow-Headers': 'Range, If-Range' } : {}) });
      res.end();
      return;
    }
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const start = m && (!req.headers['if-range'] || req.headers['if-range'] === '"m1"') ? Number(m[1]) : 0;
    const body = bytes.subarray(start);
    res.writeHead(start ? 206 : 200, { ...headers, 'Content-Length': body.length, ETag: '"m1"', 'Content-Type': 'application/octet-stream',
      ...(start ? { 'Content-Range': `bytes ${start}-${bytes.length - 1}/${bytes.length}` } : {}) });
    if (req.method === 'HEAD') { res.end(); return; }
    if (cors && req.method === 'GET' && holds > 0 && body.length > 100000) {
      holds--;
      res.write(body.subarray(0, 100000));
      held = res;
      return;
    }
    res.end(body);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${srv.address().port}`,
    drop: () => held.socket.destroy(),
    seen,
    stop: () => new Promise((r) => { srv.closeAllConnections(); srv.close(r); }),
  })));
}

before(async () => {
  if (why) return;
  const model = await loadGguf(FILE, { backend: 'cpu', threads: 1 });
  expected = await model.generate(PROMPT, { maxTokens: TOKENS, temperature: 0 });
  model.free();
  [server, browser, other] = await Promise.all([startServer(), launch(), secondOrigin(readFileSync(FILE))]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await other?.stop();
});

const settled = (page) => page.waitForFunction(() => ['ready', 'error'].includes(document.getElementById('status').dataset.state),
  null, { timeout: 60000 });

async function greedy(page) {
  await page.fill('#prompt', PROMPT);
  await page.fill('#maxTokens', String(TOKENS));
  await page.fill('#temperature', '0');
  await page.click('#generate');
  await page.waitForFunction(() => ['finished', 'stopped', 'error'].includes(document.getElementById('status').dataset.state), null, { timeout: 60000 });
  return JSON.parse(await page.$eval('#output', (el) => el.dataset.ids));
}

test('generate.html: a model from another origin with CORS loads, resumes, generates as Node does and is cached; without CORS it is refused',
  { skip: why ?? false, timeout: 120000 }, async () => {
    const { page } = await newPage(browser);
    await page.addInitScript(() => {
      window.statuses = [];
      new MutationObserver(() => {
        const el = document.getElementById('status');
        if (el && window.statuses.at(-1) !== el.textContent) window.statuses.push(el.textContent);
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    await page.goto(`${server.url}generate.html?mode=complete`);
    assert.equal(await page.evaluate(() => crossOriginIsolated), true, 'the page is cross-origin isolated');

    // Without CORS headers: refused, with what the server must send
    await page.fill('#url', `${other.url}/plain/m.gguf`);
    await page.click('#load');
    await settled(page);
    assert.match(await page.textContent('#url-error'), new RegExp(`cannot fetch ${other.url}/plain/m\\.gguf: the server at ${other.url} did not answer, ` +
      `or did not allow this page's origin \\(${server.url.slice(0, -1)}\\) to read it: a server must send 'Access-Control-Allow-Origin: \\*'`));

    // With CORS headers: the first answer stops at 100000 bytes and is dropped: the page resumes
    // from there (Range, If-Range); the resumed answer stops at 200000 and the page is reloaded:
    // the part kept in OPFS is offered and resumed from where its record says.
    await page.fill('#url', `${other.url}/cors/m.gguf`);
    await page.click('#load');
    await page.waitForFunction(() => /Loading m\.gguf: 0\.10 MiB of 0\.80 MiB/.test(document.getElementById('status').textContent));
    other.drop();
    await page.waitForFunction(() => /Loading m\.gguf: 0\.19 MiB of 0\.80 MiB/.test(document.getElementById('status').textContent));
    const seen = await page.evaluate(() => window.statuses);
    assert.ok(seen.some((s) => /the download stopped \(.*\); resuming from 0\.10 MiB, attempt 1 of 4\.\.\.$/.test(s)), seen.join('\n'));
    const kept = await page.waitForFunction(async () => {
      const { cachedModels } = await import('./runtime/llm_cache.js');
      const [c] = await cachedModels();
      return c && !c.complete && c.have >= 131072 ? c.have : false;
    });
    const have = await kept.jsonValue();
    await page.reload();
    await page.waitForSelector(`#cached .cached-url[data-url="${other.url}/cors/m.gguf"]`);
    assert.match(await page.textContent('#cached button'), /^resume m\.gguf \(0\.\d\d MiB of 0\.80 MiB cached in this browser\)$/);
    await page.click('#cached .cached-url button:first-child');
    await settled(page);
    assert.equal(await page.$eval('#status', (el) => el.dataset.state), 'ready', await page.textContent('#url-error'));
    assert.deepEqual(other.seen.filter(([, path]) => path === '/cors/m.gguf'), [['GET', '/cors/m.gguf', null, null],
      ['OPTIONS', '/cors/m.gguf', null, null], ['GET', '/cors/m.gguf', 'bytes=100000-', '"m1"'],
      ['OPTIONS', '/cors/m.gguf', null, null], ['GET', '/cors/m.gguf', `bytes=${have}-`, '"m1"']],
      'each rest asked for with Range and If-Range, after the preflight that If-Range needs; after the reload from the kept part');
    assert.deepEqual(await greedy(page), expected.ids);
    await page.waitForSelector(`#cached .cached-url[data-url="${other.url}/cors/m.gguf"]`);
    assert.match(await page.textContent('#cached button'), /^load m\.gguf \(0\.80 MiB\) cached in this browser$/);

    // Cached: a reload loads it with the second origin stopped
    await other.stop();
    other = null;
    await page.reload();
    await page.click(`#cached .cached-url[data-url$="/cors/m.gguf"] button:first-child`);
    await settled(page);
    assert.equal(await page.$eval('#status', (el) => el.dataset.state), 'ready', await page.textContent('#url-error'));
    const again = await page.evaluate(() => window.statuses);
    assert.ok(again.some((s) => /from this browser's cache \(the server was not reached\)/.test(s)), again.join('\n'));
    assert.deepEqual(await greedy(page), expected.ids);
    // Delete empties the list
    await page.click(`#cached .cached-url button:last-child`);
    await page.waitForFunction(() => document.getElementById('cached').hidden);
  });
