// gguf-cached.js - the pages' view of the models downloaded by URL and
// cached in this browser (runtime/llm_cache.js, loadGguf's options.cache):
// in #cached, per URL "load NAME (SIZE) cached in this browser" (or "resume
// NAME (x of SIZE)" for a download that stopped) and Delete; #cached-note
// says what a delete did or why nothing is cached here.
import { cachedModels, deleteCached } from './runtime/llm_cache.js';
import { hasOpfs } from './runtime/opfs.js';
import { mib } from './gguf-kept.js';

const $ = (id) => document.getElementById(id);

/** The name a URL's model is shown by: its file name. */
export const urlName = (url) => decodeURIComponent(new URL(url).pathname.split('/').pop() || url);

export class CachedUrls {
  /** onLoad(url): an offer was clicked. */
  constructor(onLoad) {
    this.onLoad = onLoad;
    this.urls = []; // [{ url, size, have, complete }]
  }

  /** Lists what is cached now; message: what just happened. */
  async refresh(message = '') {
    const box = $('cached');
    this.urls = await cachedModels().catch(() => []);
    box.replaceChildren(...this.urls.map((c) => {
      const row = document.createElement('span');
      row.className = 'cached-url';
      row.dataset.url = c.url;
      const load = document.createElement('button');
      load.textContent = c.complete ? `load ${urlName(c.url)} (${mib(c.size)}) cached in this browser`
        : `resume ${urlName(c.url)} (${mib(c.have)} of ${c.size ? mib(c.size) : '?'} cached in this browser)`;
      load.title = c.url;
      load.addEventListener('click', () => this.onLoad(c.url));
      const del = document.createElement('button');
      del.textContent = 'Delete';
      del.addEventListener('click', async () => {
        const r = await deleteCached(c.url);
        await this.refresh(r.ok ? `Deleted ${urlName(c.url)} from this browser.` : `Could not delete ${urlName(c.url)}: ${r.reason}.`);
      });
      row.append(load, del);
      return row;
    }));
    box.hidden = this.urls.length === 0;
    $('cached-note').textContent = hasOpfs() ? message
      : 'Downloads are not cached in this browser (no Origin Private File System): a URL is downloaded each time.';
  }
}
