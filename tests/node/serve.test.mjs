// serve.test.mjs - tools/serve.py: MIME types (wasm, JS modules, ...),
// Content-Length and HEAD, directory redirects, 404, 405, the cross-origin
// isolation headers on every response, every way of
// leaving the served root refused with 403 (.., encoded .., backslashes,
// symlinks), the printed local/LAN URLs, --open without a display, and
// --tls: a self-signed certificate with localhost, 127.0.0.1 and the LAN
// address in its SAN (checked with `openssl x509 -text`), made once and reused;
// the limits printed at start and the --request-deadline and
// --max-per-address options reaching the server (tests/python/test_serve.py
// tests the slow-header attack itself).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, symlinkSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import https from 'node:https';
import { startServer, REPO } from '../browser/server.mjs';

const TMP = mkdtempSync(join(tmpdir(), 'rlx-serve-test-'));
const ROOT = join(TMP, 'root');
const SECRET = 'top secret, outside the root';
const WASM_BYTES = Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
let server;
const RAW_TIMEOUT_MS = 20_000; // a request the server never answers fails (it answers in milliseconds)

/** Waits until the server's output holds `re` (its banner lines arrive one after another). */
async function printed(srv, re) {
  for (let i = 0; i < 600 && !re.test(srv.output()); i++) await new Promise((done) => setTimeout(done, 50));
  return srv.output();
}

function setupRoot() {
  mkdirSync(join(ROOT, 'sub'), { recursive: true });
  writeFileSync(join(ROOT, 'index.html'), '<!doctype html><title>root</title>');
  writeFileSync(join(ROOT, 'a.js'), 'export const a = 1;\n');
  writeFileSync(join(ROOT, 'b.mjs'), 'export const b = 2;\n');
  writeFileSync(join(ROOT, 'c.wasm'), WASM_BYTES);
  writeFileSync(join(ROOT, 'd.css'), 'body{}');
  writeFileSync(join(ROOT, 'e.json'), '{}');
  writeFileSync(join(ROOT, 'noext'), 'x');
  writeFileSync(join(ROOT, 'sub', 'index.html'), 'sub index');
  writeFileSync(join(ROOT, 'sub', 'x y.txt'), 'spaced');
  writeFileSync(join(TMP, 'secret.txt'), SECRET);
  symlinkSync(join(TMP, 'secret.txt'), join(ROOT, 'secret-link'));
  symlinkSync(TMP, join(ROOT, 'outside-dir'));
}

/** A raw HTTP/1.1 request (no client-side path normalization): { status, headers, body }. */
function raw(port, path, method = 'GET') {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    });
    sock.setTimeout(RAW_TIMEOUT_MS, () => sock.destroy(new Error(`no answer to ${method} ${path} within ${RAW_TIMEOUT_MS} ms`)));
    const chunks = [];
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', reject);
    sock.on('end', () => {
      const buf = Buffer.concat(chunks);
      const split = buf.indexOf('\r\n\r\n');
      const head = buf.subarray(0, split).toString('latin1').split('\r\n');
      const headers = {};
      for (const line of head.slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(head[0].split(' ')[1]), headers, body: buf.subarray(split + 4) });
    });
  });
}

/** A connection that sends `bytes` and no more: { connected, answer } (all the server sent until it closed;
 * `connected` settles on a close before the connection too, so nothing waits for a connection that failed). */
function stalled(port, bytes) {
  const sock = net.connect(port, '127.0.0.1');
  const connected = new Promise((resolve) => {
    sock.once('connect', () => { sock.write(bytes); resolve(); });
    sock.once('close', resolve);
  });
  const chunks = [];
  sock.on('data', (d) => chunks.push(d));
  const answer = new Promise((resolve) => {
    sock.on('error', () => {});
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
  return { connected, answer };
}

before(async () => {
  setupRoot();
  server = await startServer(['--root', ROOT]);
});

after(async () => {
  await server?.stop();
  rmSync(TMP, { recursive: true, force: true });
});

test('MIME types, lengths and bodies', async () => {
  const want = {
    '/': 'text/html; charset=utf-8',
    '/index.html': 'text/html; charset=utf-8',
    '/a.js': 'text/javascript; charset=utf-8',
    '/b.mjs': 'text/javascript; charset=utf-8',
    '/c.wasm': 'application/wasm',
    '/d.css': 'text/css; charset=utf-8',
    '/e.json': 'application/json; charset=utf-8',
    '/noext': 'application/octet-stream',
    '/a.js?v=3#frag': 'text/javascript; charset=utf-8',
  };
  for (const [path, type] of Object.entries(want)) {
    const r = await raw(server.port, path);
    assert.equal(r.status, 200, path);
    assert.equal(r.headers['content-type'], type, path);
    assert.equal(Number(r.headers['content-length']), r.body.length, path);
  }
  assert.deepEqual((await raw(server.port, '/c.wasm')).body, WASM_BYTES);
  assert.equal((await raw(server.port, '/sub/x%20y.txt')).body.toString(), 'spaced');
  const head = await raw(server.port, '/c.wasm', 'HEAD');
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-length'], String(WASM_BYTES.length));
  assert.equal(head.body.length, 0);
});

test('the real web/ folder serves the module and the wasm with the right types', async () => {
  const web = await startServer();
  try {
    const js = await raw(web.port, '/pkg/rlx_web.js');
    assert.equal(js.status, 200);
    assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
    const wasm = await raw(web.port, '/pkg/rlx_web.wasm', 'HEAD');
    assert.equal(wasm.status, 200, 'build web/pkg/rlx_web.wasm first (make wasm)');
    assert.equal(wasm.headers['content-type'], 'application/wasm');
    assert.equal(Number(wasm.headers['content-length']), statSync(join(REPO, 'web/pkg/rlx_web.wasm')).size);
    for (const page of ['/index.html', '/vision-bench.html', '/runtime/loader.js', '/vision-worker.js']) {
      assert.equal((await raw(web.port, page, 'HEAD')).status, 200, page);
    }
  } finally {
    await web.stop();
  }
});

test('every response carries the cross-origin isolation headers (files, redirects, errors)', async () => {
  for (const [path, method, status] of [['/index.html', 'GET', 200], ['/c.wasm', 'HEAD', 200], ['/sub', 'GET', 301],
    ['/nope.html', 'GET', 404], ['/../secret.txt', 'GET', 403], ['/index.html', 'POST', 405]]) {
    const r = await raw(server.port, path, method);
    assert.equal(r.status, status, path);
    assert.equal(r.headers['cross-origin-opener-policy'], 'same-origin', `${method} ${path}`);
    assert.equal(r.headers['cross-origin-embedder-policy'], 'require-corp', `${method} ${path}`);
  }
});

test('directories redirect to a trailing slash; 404 and 405 are clean', async () => {
  const r = await raw(server.port, '/sub');
  assert.equal(r.status, 301);
  assert.equal(r.headers.location, '/sub/');
  assert.equal((await raw(server.port, '/sub/')).body.toString(), 'sub index');
  const missing = await raw(server.port, '/nope.html');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.toString(), '404 Not Found\n');
  assert.equal((await raw(server.port, '/sub/nope/')).status, 404);
  assert.equal((await raw(server.port, '/index.html', 'POST')).status, 405);
});

test('paths outside the served root are refused with 403', async () => {
  const attempts = ['/../secret.txt', '/sub/../../secret.txt', '/%2e%2e/secret.txt', '/%2E%2E%2Fsecret.txt',
    '/..%2fsecret.txt', '/sub/..%5c..%5csecret.txt', '/sub/..\\..\\secret.txt', '/..', '/secret-link',
    '/outside-dir/secret.txt', '/./../secret.txt', '//../secret.txt'];
  for (const path of attempts) {
    const r = await raw(server.port, path);
    assert.equal(r.status, 403, `${path} gave ${r.status}`);
    assert.ok(!r.body.toString().includes(SECRET), `${path} leaked the file`);
  }
  // '..' inside a name is not a traversal.
  writeFileSync(join(ROOT, 'a..b.txt'), 'dots');
  assert.equal((await raw(server.port, '/a..b.txt')).status, 200);
  assert.equal((await raw(server.port, '/bad%00name')).status, 400);
});

test('prints the local and LAN URLs of the page; --open without a display only prints', async () => {
  const env = { ...process.env };
  delete env.DISPLAY;
  delete env.WAYLAND_DISPLAY;
  const s = await startServer(['--root', ROOT, '--open', 'sub/index.html'], { host: '0.0.0.0', env });
  try {
    const out = await printed(s, /no browser available here/); // the banner's last line
    assert.match(out, /^serving .* on http:\/\/0\.0\.0\.0:\d+\/$/m);
    assert.match(out, new RegExp(`^  local: http://localhost:${s.port}/sub/index\\.html$`, 'm'));
    const lan = /^ {2}LAN: {3}http:\/\/([\d.]+):(\d+)\/sub\/index\.html$/m.exec(out);
    if (lan) assert.equal(Number(lan[2]), s.port);
    assert.match(out, /no browser available here: open http:\/\/localhost:\d+\/sub\/index\.html yourself/);
    assert.equal((await raw(s.port, '/index.html')).status, 200);
  } finally {
    await s.stop();
  }
});

test('limits: printed at start, --request-deadline and --max-per-address enforced', async () => {
  assert.match(await printed(server, /limits:/), /^ {2}limits: idle \d+ s, request head \d+ s, \d+ connections, \d+ per address$/m);
  const s = await startServer(['--root', ROOT, '--request-deadline', '1', '--max-per-address', '2', '--idle-timeout', '60']);
  try {
    assert.match(await printed(s, /limits:/), /^ {2}limits: idle 60 s, request head 1 s, \d+ connections, 2 per address$/m);
    const heads = [stalled(s.port, 'GET / HTTP/1.1\r\nHost: x\r\n'), stalled(s.port, 'GET / HTTP/1.1\r\nHost: x\r\n')];
    await Promise.all(heads.map((h) => h.connected));
    const third = stalled(s.port, '');
    assert.match(await third.answer, /^HTTP\/1\.1 503 [^]*too many connections from your address/);
    for (const h of heads) assert.match(await h.answer, /^HTTP\/1\.1 408 /, 'a request head never finished is cut at the deadline');
    let r;
    for (let i = 0; i < 300 && r?.status !== 200; i++) { // the slots come back as the server's threads end
      if (i) await new Promise((done) => setTimeout(done, 100));
      r = await raw(s.port, '/index.html').catch((err) => ({ status: err.message }));
    }
    assert.equal(r.status, 200);
  } finally {
    await s.stop();
  }
});

test('bad arguments exit with a usage error', () => {
  for (const args of [['--port', '70000'], ['--root', join(TMP, 'missing')], ['--host', 'not-an-ip'], ['--nope'],
    ['--request-deadline', '0'], ['--max-per-address', '-1']]) {
    let code = 0;
    try {
      execFileSync('python3', ['tools/serve.py', ...args], { cwd: REPO, stdio: 'pipe', timeout: 10000 });
    } catch (e) {
      code = e.status;
    }
    assert.equal(code, 2, `serve.py ${args.join(' ')}`);
  }
});

function httpsGet(url) {
  return new Promise((resolve, reject) => {
    https.get(url, { rejectUnauthorized: false }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });
}

test('--tls: self-signed certificate with the right SAN, made once and reused', async () => {
  const tlsDir = join(TMP, 'tls');
  const first = await startServer(['--root', ROOT, '--tls', '--tls-dir', tlsDir], { host: '0.0.0.0' });
  let lan = null;
  try {
    const out = await printed(first, /limits:/);
    assert.match(out, /tls: made a self-signed certificate/);
    assert.match(out, /^serving .* on https:\/\/0\.0\.0\.0:\d+\/$/m);
    lan = /LAN: {3}https:\/\/([\d.]+):/.exec(out)?.[1] ?? null;
    const r = await httpsGet(`https://127.0.0.1:${first.port}/c.wasm`);
    assert.equal(r.status, 200);
    assert.equal(r.type, 'application/wasm');
    assert.deepEqual(r.body, WASM_BYTES);
  } finally {
    await first.stop();
  }
  const cert = join(tlsDir, 'cert.pem');
  const text = execFileSync('openssl', ['x509', '-in', cert, '-noout', '-text'], { encoding: 'utf8' });
  const san = /X509v3 Subject Alternative Name:[^\n]*\n\s*([^\n]+)/.exec(text)?.[1] ?? '';
  assert.match(san, /DNS:localhost/);
  assert.match(san, /IP Address:127\.0\.0\.1/);
  if (lan) assert.ok(san.includes(`IP Address:${lan}`), `SAN ${san} lacks the LAN address ${lan}`);
  const before = readFileSync(cert);
  const second = await startServer(['--root', ROOT, '--tls', '--tls-dir', tlsDir]);
  try {
    assert.match(second.output(), /tls: reusing/);
    assert.equal((await httpsGet(`https://127.0.0.1:${second.port}/a.js`)).type, 'text/javascript; charset=utf-8');
  } finally {
    await second.stop();
  }
  assert.deepEqual(readFileSync(cert), before, 'the certificate was made again');
});
