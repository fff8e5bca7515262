// serve.mjs - a small static file server for the demo (plain Node, no deps).
// Serves the repo's web/ folder; binds 0.0.0.0 by default so a phone on the
// same network can open the LAN URL it prints.
//
//   node tools/serve.mjs [--port N] [--host ADDR]     (default 0.0.0.0:8000)
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../web/', import.meta.url)));

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.bin': 'application/octet-stream',
};

function parseArgs(argv) {
  const opts = { port: 8000, host: '0.0.0.0' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--port') opts.port = Number(argv[++i]);
    else if (argv[i] === '--host') opts.host = argv[++i];
    else {
      console.error(`unknown argument: ${argv[i]}\nusage: node tools/serve.mjs [--port N] [--host ADDR]`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    console.error('--port needs a number between 0 and 65535');
    process.exit(2);
  }
  return opts;
}

function lanAddress() {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return null;
}

function send(res, code, text) {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${code} ${text}\n`);
}

/** Maps a URL path to a file under ROOT; null if it would leave ROOT, undefined if malformed. */
function toFile(urlPath) {
  let path;
  try {
    path = decodeURIComponent(urlPath.split('?')[0].split('#')[0]);
  } catch {
    return undefined;
  }
  if (path.includes('\0') || path.split(/[\\/]/).includes('..')) return null;
  const file = resolve(join(ROOT, path));
  return file === ROOT || file.startsWith(ROOT + sep) ? file : null;
}

async function handle(req, res) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'Method Not Allowed');
  let file = toFile(req.url);
  if (file === undefined) return send(res, 400, 'Bad Request');
  if (!file) return send(res, 403, 'Forbidden');
  try {
    let info = await stat(file);
    if (info.isDirectory()) {
      if (!req.url.split('?')[0].endsWith('/')) {
        res.writeHead(301, { Location: req.url.split('?')[0] + '/' });
        return res.end();
      }
      file = join(file, 'index.html');
      info = await stat(file);
    }
    if (!info.isFile()) return send(res, 404, 'Not Found');
    res.writeHead(200, {
      'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': info.size,
      'Cache-Control': 'no-cache',
    });
    if (req.method === 'HEAD') return res.end();
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
  } catch {
    send(res, 404, 'Not Found');
  }
}

const opts = parseArgs(process.argv.slice(2));
const server = createServer((req, res) => {
  handle(req, res).catch(() => send(res, 500, 'Internal Server Error'));
  res.on('finish', () => console.log(`${res.statusCode} ${req.method} ${req.url}`));
});
server.on('error', (e) => {
  console.error(`cannot listen on ${opts.host}:${opts.port}: ${e.message}`);
  process.exit(1);
});
server.listen(opts.port, opts.host, () => {
  const { port } = server.address();
  console.log(`serving ${ROOT} on ${opts.host}:${port}`);
  console.log(`  local: http://localhost:${port}/`);
  const lan = lanAddress();
  if (lan && (opts.host === '0.0.0.0' || opts.host === lan)) console.log(`  LAN:   http://${lan}:${port}/`);
});
