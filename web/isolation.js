// isolation.js - cross-origin isolation of the page wherever the site is
// served: tools/serve.py and the Space send COOP / COEP themselves; on a
// static host that cannot, this registers coi-sw.js (which adds them) and
// reloads the page once, when the service worker first controls it.
// Imported by nav.js, so every page runs it first thing.
//
//   const { isolated, via, why } = await isolation;   also window.rlxIsolation once settled
//     via: 'headers' (the server's), 'service worker', or null (not isolated: why says why)
const RELOADED = 'rlx-coi-reloaded'; // sessionStorage: this tab reloaded once for the worker already

async function isolate() {
  if (self.crossOriginIsolated) {
    const viaWorker = !!navigator.serviceWorker?.controller;
    return { isolated: true, via: viaWorker ? 'service worker' : 'headers', why: null };
  }
  if (!self.isSecureContext) return { isolated: false, via: null, why: 'the page is not a secure context (https or localhost), so no service worker can isolate it' };
  if (!('serviceWorker' in navigator)) return { isolated: false, via: null, why: 'this browser has no service workers' };
  let reg;
  try {
    reg = await navigator.serviceWorker.register(new URL('./coi-sw.js', import.meta.url));
  } catch (err) {
    return { isolated: false, via: null, why: `the isolating service worker did not register: ${err?.message ?? err}` };
  }
  if (sessionStorage.getItem(RELOADED)) {
    // reloaded once and still not isolated: the browser does not honour the worker's headers
    return { isolated: false, via: null, why: 'the service worker controls the page but the browser did not isolate it' };
  }
  // a new worker takes the page over when it activates (clients.claim); an active one after a
  // reload that bypassed it (shift-reload) controls the next normal load
  if (!navigator.serviceWorker.controller && !reg.active) {
    await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }));
  }
  sessionStorage.setItem(RELOADED, '1');
  location.reload();
  return new Promise(() => {}); // the page goes away
}

export const isolation = isolate().then((r) => {
  if (r.isolated) sessionStorage.removeItem(RELOADED);
  self.rlxIsolation = r;
  return r;
});
