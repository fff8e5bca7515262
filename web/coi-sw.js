// coi-sw.js - a service worker that makes this site's pages cross-origin
// isolated on a static host that cannot send headers (SharedArrayBuffer, so
// wasm threads, needs COOP and COEP): it answers every same-origin request
// with the network's response plus the headers of isolation-headers.json
// (the list tools/serve.py and the Space card send too). Cross-origin
// requests are left to the browser. isolation.js registers it and reloads
// the page once, since a page is isolated only by its own response. Should
// the list not load, responses pass unchanged (the page then says it is not
// isolated) rather than fail.
const HEADERS = fetch('./isolation-headers.json') // relative to this worker's URL
  .then((r) => (r.ok ? r.json() : []))
  .catch(() => []);

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (new URL(req.url).origin !== self.location.origin) return;
  if (req.cache === 'only-if-cached' && req.mode !== 'same-origin') return;
  event.respondWith((async () => {
    const res = await fetch(req);
    if (res.type === 'opaque' || res.type === 'opaqueredirect' || res.status === 0) return res;
    const headers = new Headers(res.headers);
    for (const [name, value] of await HEADERS) headers.set(name, value);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  })());
});
