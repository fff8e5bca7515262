// static_site.mjs - the static site for the browser tests: tools/build_site.py
// into a temp folder, served by Python's http.server on 127.0.0.1 (what a
// static host does: nothing of ours runs at request time), with the
// isolation headers of web/isolation-headers.json as the Space sends them
// (custom_headers), or with none (`headers: []`: a host that cannot set
// them, where web/coi-sw.js isolates the pages).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './server.mjs';

/** Builds the site: { tmp (remove it when done), site, log }; throws with the builder's output if it fails. */
export function buildSite() {
  const tmp = mkdtempSync(join(tmpdir(), 'rlx-site-'));
  const site = join(tmp, 'site');
  const log = execFileSync('python3', ['tools/build_site.py', '--out', site], { cwd: REPO, encoding: 'utf8' });
  if (!/^site: \d+ files, [\d,]+ bytes in /m.test(log)) throw new Error(`tools/build_site.py said:\n${log}`);
  return { tmp, site, log };
}

export const ISOLATION_HEADERS = JSON.parse(readFileSync(join(REPO, 'web/isolation-headers.json'), 'utf8'));

// http.server's own handler, every response with the headers of RLX_SITE_HEADERS (a JSON list of pairs)
const SERVE = `import http.server, json, os
HEADERS = json.loads(os.environ["RLX_SITE_HEADERS"])
class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        for name, value in HEADERS:
            self.send_header(name, value)
        super().end_headers()
http.server.test(HandlerClass=Handler, ServerClass=http.server.ThreadingHTTPServer, port=0, bind="127.0.0.1")
`;

/** Python's http.server on a free port of 127.0.0.1 in dir, sending `headers` ([name, value] pairs): resolves to { url, stop() }. */
export function httpServer(dir, { headers = ISOLATION_HEADERS } = {}) {
  const child = spawn('python3', ['-u', '-c', SERVE],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RLX_SITE_HEADERS: JSON.stringify(headers) } });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err = (err + d).slice(-4000); }); // its request log: drained
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`http.server did not start in 60 s:\n${out}${err}`)), 60000); // a bound on a hang, not a speed
    function fail(e) {
      clearTimeout(timer);
      child.kill();
      reject(e);
    }
    child.on('exit', (code) => fail(new Error(`http.server exited (${code}):\n${out}${err}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /Serving HTTP on \S+ port (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({
        url: `http://127.0.0.1:${m[1]}/`,
        stop: () => new Promise((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once('exit', () => done());
          child.kill();
        }),
      });
    });
  });
}

