// server.mjs - starts tools/serve.py on a free port for the tests (browser
// and Node): resolves to { url, output(), stop() } once it printed its
// "serving DIR on http(s)://HOST:PORT/" line.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));

export function startServer(extraArgs = [], { host = '127.0.0.1', env = process.env } = {}) {
  const child = spawn('python3', ['tools/serve.py', '--port', '0', '--host', host, '--quiet', ...extraArgs],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`serve.py did not start in 15 s:\n${out}${err}`)), 15000);
    function fail(e) {
      clearTimeout(timer);
      child.kill();
      reject(e);
    }
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => fail(new Error(`serve.py exited (${code}):\n${out}${err}`)));
    child.stdout.on('data', (d) => {
      out += d;
      const m = /serving .* on (https?):\/\/[^\s]+:(\d+)\/\n(?:.*\n)*?  local: .*\n/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({
        url: `${m[1]}://127.0.0.1:${m[2]}/`,
        port: Number(m[2]),
        output: () => out,
        stop: () => new Promise((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          child.once('exit', () => done());
          child.kill();
        }),
      });
    });
  });
}
