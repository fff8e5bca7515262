// llm_download.js - an http(s) download for loadGguf (llm_source.js) that
// survives a dropped connection: the body is read as { at, data } pieces
// (data goes at byte `at` of the file), and when it stops early (a network
// error, or fewer bytes than Content-Length / Content-Range announced) the
// rest is asked for with `Range: bytes=N-` and `If-Range` (the ETag, else
// Last-Modified, of the first answer), at most `retries` times in a row,
// each said through onEvent({ stage: 'resume', attempt, retries, at,
// reason }).  A server that answers 200 instead of 206 (no ranges, or the
// file changed: If-Range) sends the file again from byte 0: onEvent({ stage:
// 'restart', reason }) and pieces from at 0 again.  `from` resumes a
// download kept before (llm_cache.js): its bytes and validator.
//
// Cross-origin (a Hugging Face `resolve` URL): fetch runs in mode 'cors',
// so the server must send Access-Control-Allow-Origin (CORS_NEEDS); a
// refusal reaches a page only as a TypeError, said here with what the
// server must send.  Resuming sends If-Range, which a browser asks the
// server about first (a preflight OPTIONS).
import { RlxError } from './loader.js';
import { STATUS } from './llm_common.js';

/** What a server must send for a page on another origin to download from it. */
export const CORS_NEEDS = "'Access-Control-Allow-Origin: *' (or the page's origin) on its answers; to resume, " +
  "'Access-Control-Allow-Headers: Range, If-Range' on its OPTIONS answer and " +
  "'Access-Control-Expose-Headers: Content-Range, ETag' (a cross-origin isolated page needs nothing more: the fetch is CORS)";
export const DEFAULT_RETRIES = 4;

const short = (url) => String(url).slice(0, 200);
const retryable = (status) => status === 408 || status === 429 || status >= 500;

/** The validator of a response: { etag, lastModified } (null each when absent; a weak ETag is no validator). */
function validatorOf(response) {
  const etag = response.headers.get('etag');
  return { etag: etag && !etag.startsWith('W/') ? etag : null, lastModified: response.headers.get('last-modified') };
}

/** Whether a range answered with validator b is of another file than the one validator a came with. */
const changedSince = (a, b) => (a.etag && b.etag ? a.etag !== b.etag
  : !a.etag && a.lastModified && b.lastModified ? a.lastModified !== b.lastModified : false);

/** The file's size from a 200's Content-Length (unencoded) or a 206's Content-Range, or null. */
function sizeOf(response) {
  if (response.status === 206) {
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.headers.get('content-range')?.trim() ?? '');
    return m ? { start: Number(m[1]), size: Number(m[3]) } : null;
  }
  const encoding = (response.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  const length = response.headers.get('content-length')?.trim();
  return { start: 0, size: encoding === 'identity' && length && /^\d+$/.test(length) ? Number(length) : null };
}

/** An RlxError for a fetch that threw (a TypeError: no answer, or a cross-origin answer without CORS). */
function fetchFailed(fn, url, err) {
  const target = new URL(url);
  const page = globalThis.location?.origin;
  const cross = page && page !== 'null' && target.origin !== page;
  const why = cross
    ? `the server at ${target.origin} did not answer, or did not allow this page's origin (${page}) to read it: ` +
      `a server must send ${CORS_NEEDS}`
    : `${err?.message ?? err}${err?.cause?.message ? ` (${err.cause.message})` : ''}`;
  const e = new RlxError(STATUS.NOT_FOUND, `${fn}: cannot fetch ${short(url)}: ${why}`, 'not found');
  e.cause = err;
  return e;
}

function aborted(fn, url, signal) {
  const e = new RlxError(STATUS.STATE, `${fn}: the download of ${short(url)} was aborted`, 'aborted');
  e.cause = signal.reason;
  return e;
}

/**
 * Starts a download: { size (null when not said), validator, start (the
 * byte its first piece begins at: from.at when the server resumed it, else
 * 0), chunks (async iterable of { at, data })}.  options: { signal, retries (0 .. 100,
 * default DEFAULT_RETRIES), onEvent, from: { at, etag, lastModified } }.
 */
export async function download(fn, url, options = {}) {
  const { signal, onEvent, from } = options;
  url = String(new URL(url, globalThis.location?.href));
  const retries = options.retries ?? DEFAULT_RETRIES;
  const ask = async (at, validator) => {
    const headers = {};
    if (at > 0) {
      headers.Range = `bytes=${at}-`;
      const v = validator?.etag ?? validator?.lastModified;
      if (v) headers['If-Range'] = v;
    }
    if (signal?.aborted) throw aborted(fn, url, signal);
    try {
      return await fetch(url, { headers, signal, mode: 'cors', cache: 'no-store' });
    } catch (err) {
      throw signal?.aborted ? aborted(fn, url, signal) : fetchFailed(fn, url, err);
    }
  };
  const httpError = (response) => new RlxError(STATUS.NOT_FOUND,
    `${fn}: cannot fetch ${short(url)}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`, 'not found');

  // The first answer: from byte 0, or from where a kept download stopped
  let response = await ask(from?.at ?? 0, from);
  if (response.status === 416 && from?.at) response = await ask(0, null); // the kept part is longer than the file now
  if (!response.ok) throw httpError(response);
  let place = sizeOf(response);
  if (!place) throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${short(url)} answered 206 without a Content-Range this page ` +
    'may read (the server must send Access-Control-Expose-Headers: Content-Range)', 'invalid argument');
  if (from?.at && response.status === 200) onEvent?.({ stage: 'restart', reason: 'the server sent the whole file (it changed, or takes no ranges)' });
  const validator = validatorOf(response);
  const size = place.size;
  if (response.status === 206 && place.start !== from?.at) {
    throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${short(url)} answered a range from byte ${place.start}, not ${from.at}`, 'invalid argument');
  }

  async function* pieces() {
    let at = place.start;
    let attempt = 0;
    for (;;) {
      let reason = null;
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (!value?.length) continue;
          if (size !== null && at + value.length > size) {
            throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${short(url)} sent more than the ${size} bytes it announced`, 'invalid argument');
          }
          yield { at, data: value };
          at += value.length;
          attempt = 0; // bytes came: the count of retries in a row starts again
        }
        if (size === null || at === size) return;
        reason = `the body ended after ${at} of ${size} bytes`;
      } catch (err) {
        if (err instanceof RlxError) throw err;
        if (signal?.aborted) throw aborted(fn, url, signal);
        reason = `the connection failed after ${at} bytes (${err?.message ?? err})`;
      } finally {
        reader.releaseLock?.();
      }
      // Resume from `at` (or from 0 when the size is not known)
      for (;;) {
        attempt++;
        if (attempt > retries) {
          throw new RlxError(STATUS.NOT_FOUND, `${fn}: the download of ${short(url)} stopped (${reason}) ` +
            `and ${retries} resume(s) did not finish it`, 'not found');
        }
        const resumeAt = size === null ? 0 : at;
        onEvent?.({ stage: 'resume', attempt, retries, at: resumeAt, reason });
        try {
          response = await ask(resumeAt, validator);
        } catch (err) {
          if (signal?.aborted) throw err;
          reason = err.message.replace(/^.*?: cannot fetch [^:]*: /, '');
          continue;
        }
        if (!response.ok) {
          if (!retryable(response.status)) throw httpError(response);
          reason = `HTTP ${response.status}`;
          continue;
        }
        place = sizeOf(response);
        if (response.status === 200) {
          if (resumeAt > 0) onEvent?.({ stage: 'restart', reason: 'the server sent the whole file again (it changed, or takes no ranges)' });
          if (place.size !== null && size !== null && place.size !== size) {
            throw new RlxError(STATUS.STATE, `${fn}: ${short(url)} changed while it was downloaded (${place.size} bytes, not ${size}): load it again`, 'bad state');
          }
          at = 0;
        } else if (!place || place.start !== resumeAt || place.size !== size) {
          throw new RlxError(STATUS.INVALID_ARG, `${fn}: ${short(url)} answered a resume from byte ${resumeAt} with ` +
            `${place ? `bytes ${place.start}- of ${place.size}` : 'no Content-Range this page may read'}`, 'invalid argument');
        } else if (changedSince(validator, validatorOf(response))) { // a server that ignored If-Range
          throw new RlxError(STATUS.STATE, `${fn}: ${short(url)} changed while it was downloaded (ETag / Last-Modified): load it again`, 'bad state');
        }
        break;
      }
    }
  }
  return { size, validator, start: place.start, chunks: pieces() };
}
