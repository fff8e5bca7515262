// isolated_server.mjs - the read-only HTTP server of the Chromium benches
// (bench/llm.mjs, bench/gemm_chromium.mjs): on 127.0.0.1, a free port, every
// response cross-origin isolated (COOP same-origin + COEP require-corp: the
// threaded wasm builds need SharedArrayBuffer) and uncached.  `pages` maps
// a URL path to a file of the repository (the bench's page); any other path
// is served only under one of the repository folders in `dirs` (403
// elsewhere, 404 when missing).  Resolves to { origin, close() }.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../', import.meta.url));
const MIME = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };

export async function serveIsolated({ pages = {}, dirs = [] }) {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const page = Object.hasOwn(pages, rel) ? path.join(REPO, pages[rel]) : null;
    const file = page ?? path.join(REPO, path.normalize(rel));
    if (!page && !dirs.some((d) => file.startsWith(path.join(REPO, d)))) return res.writeHead(403).end();
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) return res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': MIME[path.extname(file)] ?? 'application/octet-stream', 'Content-Length': st.size,
        'Cache-Control': 'no-store', 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
      fs.createReadStream(file).pipe(res);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}
