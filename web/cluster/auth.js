// auth.js - who sent a wire buffer. Every rank has a key pair (WebCrypto
// Ed25519; ECDSA P-256 where a runtime lacks Ed25519) and its rank id is
// derived from its public key, so an id cannot be used without its key:
//
//   pk = 'e' + base64url(raw Ed25519 key)  or  'p' + base64url(raw P-256 key)
//   id = base64url(SHA-256(pk))[0..22]     (132 bits)
//
// A signed wire.js buffer carries `pk` and, as the LAST header field, `sig`:
// 86 base64url characters (64 bytes) over the whole buffer (length prefix,
// header, payload) as it reads with those 86 characters set to 'A'. Since
// the key travels in every header, a receiver (or a relay) needs no state to
// verify a buffer: it checks id(pk) === from and the signature, caching
// imported keys. Relays forward verified buffers unchanged.
//
// A tree step's params travel through relays, each of which must name its
// own slice of the tree: the relay's message (signed by the relay) carries
// the leader's `lead`, a signed header of its own (JSON text with from, pk,
// ph: SHA-256 of the payload, and sig over the text), forwarded unchanged
// from hop to hop; the payload is the same bytes (ph ties the two).
//
//   const me = await createIdentity();                 // { id, pk, alg, privateKey, publicKey }
//   await signBuffer(me, buf);                         // buf encoded with pk and sig: SIG_PLACEHOLDER
//   const v = new Verifier(); const r = await v.check(buf);   // { ok, header } | { ok: false, code, why }
//   verifiedHeader(buf)                                // the header once this realm verified buf, else null
// The per-buffer cache (a WeakMap) lets the links of one page verify a
// buffer once: a Fabric and proxyRelay trust what a verifying link marked.
// SeenSet (first time a verified (from, seq) is met) lives here too: it is
// keyed on the verified sender, so a forged seq cannot pre-empt a real one.
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const subtleOf = () => {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new RlxError(STATUS.UNSUPPORTED, 'WebCrypto (crypto.subtle) is not available: the cluster needs a secure context (https or localhost)');
  return s;
};

export const SIG_CHARS = 86;
export const SIG_PLACEHOLDER = 'A'.repeat(SIG_CHARS);
const SIG_TAIL = '"sig":"';
const ID_CHARS = 22;
const MAX_PK = 100;
const ALGS = {
  e: { gen: { name: 'Ed25519' }, sign: { name: 'Ed25519' }, imp: { name: 'Ed25519' } },
  p: { gen: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' }, imp: { name: 'ECDSA', namedCurve: 'P-256' } },
};
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

// ---- base64url -----------------------------------------------------------------

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const B64_INDEX = new Int16Array(128).fill(-1);
for (let i = 0; i < 64; i++) B64_INDEX[B64.charCodeAt(i)] = i;

export function b64url(bytes) {
  const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = '';
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i] << 16) | ((b[i + 1] ?? 0) << 8) | (b[i + 2] ?? 0);
    out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63];
    if (i + 1 < b.length) out += B64[(n >> 6) & 63];
    if (i + 2 < b.length) out += B64[n & 63];
  }
  return out;
}

/** base64url text -> bytes, or null when it is not base64url. */
export function fromB64url(text) {
  if (typeof text !== 'string' || text.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let bits = 0, acc = 0, j = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const v = c < 128 ? B64_INDEX[c] : -1;
    if (v < 0) return null;
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (acc >> bits) & 255;
    }
  }
  return out;
}

// ---- identities ----------------------------------------------------------------------

/** The rank id of a public key string. */
export async function idOf(pk) {
  const h = await subtleOf().digest('SHA-256', utf8.encode(pk));
  return b64url(new Uint8Array(h)).slice(0, ID_CHARS);
}

async function describe(tag, privateKey, publicKey) {
  const raw = await subtleOf().exportKey('raw', publicKey);
  const pk = tag + b64url(new Uint8Array(raw));
  return Object.freeze({ id: await idOf(pk), pk, alg: tag === 'e' ? 'Ed25519' : 'ECDSA P-256', privateKey, publicKey });
}

/** A fresh key pair (the private key is not extractable) and the rank id it gives. */
export async function createIdentity({ algorithm = 'auto' } = {}) {
  const s = subtleOf();
  const tags = algorithm === 'ECDSA' ? ['p'] : algorithm === 'Ed25519' ? ['e'] : ['e', 'p'];
  let lastErr = null;
  for (const tag of tags) {
    try {
      const kp = await s.generateKey(ALGS[tag].gen, false, ['sign', 'verify']);
      return await describe(tag, kp.privateKey, kp.publicKey);
    } catch (err) {
      lastErr = err;
    }
  }
  throw new RlxError(STATUS.UNSUPPORTED, `no signature algorithm available (Ed25519, ECDSA P-256): ${lastErr?.message ?? lastErr}`);
}

/** The identity of a key pair handed over (e.g. posted to a Worker as CryptoKeys). */
export async function identityFromKeys({ privateKey, publicKey } = {}) {
  const name = publicKey?.algorithm?.name;
  if (!privateKey || (name !== 'Ed25519' && name !== 'ECDSA')) throw new RlxError(STATUS.INVALID_ARG, 'identityFromKeys needs an Ed25519 or ECDSA P-256 key pair');
  return describe(name === 'Ed25519' ? 'e' : 'p', privateKey, publicKey);
}

export const isIdentity = (v) => !!v && typeof v === 'object' && typeof v.id === 'string' && typeof v.pk === 'string' && !!v.privateKey;

// ---- where the signature sits ---------------------------------------------------------

/**
 * Offset of the sig value inside a wire buffer (the header's last field,
 * before '}' and the padding), or -1. Reads the length prefix and the
 * header's tail only.
 */
export function sigOffset(buf) {
  if (!(buf instanceof ArrayBuffer) || buf.byteLength < 8) return -1;
  const h = new DataView(buf).getUint32(0, true);
  if (h > buf.byteLength - 4) return -1;
  const b = new Uint8Array(buf, 0, 4 + h);
  let end = 4 + h - 1;
  while (end >= 4 && b[end] === 0x20) end--;
  if (b[end] !== 0x7d || b[end - 1] !== 0x22) return -1; // "}
  const at = end - 1 - SIG_CHARS;
  if (at - SIG_TAIL.length < 5) return -1;
  for (let i = 0; i < SIG_TAIL.length; i++) if (b[at - SIG_TAIL.length + i] !== SIG_TAIL.charCodeAt(i)) return -1;
  const before = b[at - SIG_TAIL.length - 1];
  return before === 0x2c || before === 0x7b ? at : -1; // , or {
}

function writeAscii(bytes, at, text) {
  for (let i = 0; i < text.length; i++) bytes[at + i] = text.charCodeAt(i);
}

/** Signs a buffer encoded with pk and sig: SIG_PLACEHOLDER (last); writes the signature in place. */
export async function signBuffer(identity, buf) {
  const at = sigOffset(buf);
  if (at < 0) throw new RlxError(STATUS.INVALID_ARG, 'signBuffer: the header does not end with a sig placeholder');
  const sig = await subtleOf().sign(ALGS[identity.pk[0]].sign, identity.privateKey, buf);
  writeAscii(new Uint8Array(buf), at, b64url(new Uint8Array(sig)));
  return buf;
}

/** SHA-256 of a payload view, base64url: a lead's `ph`. */
export async function payloadHash(view) {
  const bytes = view ? new Uint8Array(view.buffer, view.byteOffset, view.byteLength) : new Uint8Array(0);
  return b64url(new Uint8Array(await subtleOf().digest('SHA-256', bytes)));
}

/** A tree step's lead: the fields, from, pk and ph of `payload`, signed as JSON text (see the top). */
export async function sealLead(identity, fields, payload) {
  const { sig: _s, pk: _p, ph: _h, from: _f, ...rest } = fields;
  const text = JSON.stringify({ ...rest, from: identity.id, pk: identity.pk, ph: await payloadHash(payload), sig: SIG_PLACEHOLDER });
  const bytes = utf8.encode(text);
  const sig = await subtleOf().sign(ALGS[identity.pk[0]].sign, identity.privateKey, bytes);
  return text.slice(0, text.length - 2 - SIG_CHARS) + b64url(new Uint8Array(sig)) + '"}';
}

// ---- verifying ----------------------------------------------------------------------------

const VERIFIED = new WeakMap(); // ArrayBuffer -> its verified header (this realm)

/** The header of a buffer this realm verified (null: not verified here). */
export function verifiedHeader(buf) {
  return (buf && typeof buf === 'object' && VERIFIED.get(buf)) || null;
}

/** Marks a copy of a verified buffer as verified too (the same bytes). */
export function markCopy(copy, header) {
  if (header) VERIFIED.set(copy, header);
  return copy;
}

const fail = (code, why) => ({ ok: false, code, why });

/**
 * subtle.verify over `buf` as it reads with its signature set to the
 * placeholder, without copying it here: WebCrypto takes its copy of the
 * bytes when called, so the signature is put back at once.
 */
function verifyInPlace(alg, key, sig, buf, at) {
  const bytes = new Uint8Array(buf);
  const saved = bytes.slice(at, at + SIG_CHARS);
  writeAscii(bytes, at, SIG_PLACEHOLDER);
  try {
    return subtleOf().verify(alg, key, sig, bytes);
  } finally {
    bytes.set(saved, at);
  }
}

/** A buffer's header (its JSON, whatever value that is), or undefined when unreadable. */
function headerOf(buf) {
  try {
    return JSON.parse(utf8Decoder.decode(new Uint8Array(buf, 4, new DataView(buf).getUint32(0, true))));
  } catch {
    return undefined;
  }
}

/**
 * Checks signed buffers: { ok: true, header } or { ok: false, code, why }
 * with code 'unsigned' (no pk / sig), 'wrongId' (from is not id(pk)),
 * 'badSignature' (or a bad lead). Imported keys are cached (at most maxKeys).
 */
export class Verifier {
  constructor({ maxKeys = 4096 } = {}) {
    this.maxKeys = maxKeys;
    this._keys = new Map(); // pk -> Promise<{ id, key }>
    this.stats = { verified: 0, unsigned: 0, wrongId: 0, badSignature: 0 };
  }

  _key(pk) {
    let entry = this._keys.get(pk);
    if (entry) {
      this._keys.delete(pk); // most recently used last
      this._keys.set(pk, entry);
      return entry;
    }
    const tag = pk[0];
    const raw = fromB64url(pk.slice(1));
    if (!ALGS[tag] || !raw) return null;
    entry = Promise.all([idOf(pk), subtleOf().importKey('raw', raw, ALGS[tag].imp, false, ['verify'])])
      .then(([id, key]) => ({ id, key }), () => null);
    if (this._keys.size >= this.maxKeys) this._keys.delete(this._keys.keys().next().value);
    this._keys.set(pk, entry);
    return entry;
  }

  /**
   * Whether `sigText` signs what `verify(alg, key, sig)` checks (it calls
   * subtle.verify) under pk, and pk is `from`'s key: null (yes) or a failure.
   */
  async _signed(from, pk, sigText, verify) {
    if (typeof pk !== 'string' || pk.length > MAX_PK || typeof sigText !== 'string' || sigText.length !== SIG_CHARS) return fail('unsigned', 'no pk or sig');
    const k = await this._key(pk);
    if (!k) return fail('unsigned', 'pk is not a public key');
    if (k.id !== from) return fail('wrongId', 'from is not the id of pk');
    let ok = false;
    try {
      ok = await verify(ALGS[pk[0]].sign, k.key, fromB64url(sigText));
    } catch {
      ok = false;
    }
    return ok ? null : fail('badSignature', 'the signature does not verify');
  }

  /** `header`: the buffer's header when the caller parsed it already (headerOf), else read here. */
  async check(buf, header = undefined) {
    const r = await this._check(buf, header);
    if (r.ok) {
      this.stats.verified++;
      VERIFIED.set(buf, r.header);
    } else this.stats[r.code]++;
    return r;
  }

  async _check(buf, parsed) {
    const known = verifiedHeader(buf);
    if (known) return { ok: true, header: known };
    const at = sigOffset(buf);
    if (at < 0) return fail('unsigned', 'no signature');
    const header = parsed === undefined ? headerOf(buf) : parsed;
    if (header === undefined) return fail('unsigned', 'unreadable header');
    if (!header || typeof header !== 'object' || typeof header.from !== 'string') return fail('unsigned', 'no from');
    const sigText = utf8Decoder.decode(new Uint8Array(buf, at, SIG_CHARS));
    if (header.sig !== sigText) return fail('unsigned', 'sig is not the last field');
    const bad = await this._signed(header.from, header.pk, sigText, (alg, key, sig) => verifyInPlace(alg, key, sig, buf, at));
    if (bad) return bad;
    if (header.lead !== undefined) {
      const lead = await this._lead(header.lead, buf);
      if (!lead.ok) return lead;
    }
    return { ok: true, header };
  }

  /** A relayed lead: signed by its own from, over the same payload as the buffer. */
  async _lead(text, buf) {
    if (typeof text !== 'string' || text.length > 1 << 15 || !text.endsWith('"}')) return fail('badSignature', 'lead is not signed text');
    let lead;
    try {
      lead = JSON.parse(text);
    } catch {
      return fail('badSignature', 'lead is not JSON');
    }
    if (!lead || typeof lead !== 'object' || Array.isArray(lead) || typeof lead.from !== 'string' || lead.lead !== undefined) return fail('badSignature', 'bad lead');
    const sigText = text.slice(text.length - 2 - SIG_CHARS, text.length - 2);
    if (lead.sig !== sigText) return fail('badSignature', 'lead sig is not its last field');
    const h = new DataView(buf).getUint32(0, true);
    const payload = new Uint8Array(buf, 4 + h);
    const [ph, bad] = await Promise.all([
      payloadHash(payload),
      this._signed(lead.from, lead.pk, sigText, (alg, key, sig) => subtleOf().verify(alg, key, sig, utf8.encode(text.slice(0, text.length - 2 - SIG_CHARS) + SIG_PLACEHOLDER + '"}'))),
    ]);
    if (bad) return fail('badSignature', `lead: ${bad.why}`);
    if (lead.ph !== ph) return fail('badSignature', 'lead is over another payload');
    return { ok: true, lead };
  }
}

/**
 * A Verifier for links that meet the same buffer many times (a flooded
 * overlay): a copy of a (from, seq) that verified already is reported as
 * { ok: false, code: 'duplicate' } without verifying it again; a copy that
 * arrives while the first is being checked waits for that verdict. Only
 * verified pairs are remembered, so a forged copy that came first does not
 * shadow the real one.
 */
export class OnceVerifier extends Verifier {
  constructor(opts) {
    super(opts);
    this.stats.duplicate = 0;
    this._seen = new SeenSet();
    this._pending = new Map(); // 'from seq' -> Promise of the first copy's verdict
  }

  async check(buf) {
    const h = headerOf(buf); // read once, for the (from, seq) here and for the verdict
    if (!h || typeof h.from !== 'string' || !Number.isSafeInteger(h.seq)) return super.check(buf, h);
    const key = `${h.from} ${h.seq}`;
    const first = this._pending.get(key);
    if (first && (await first)) return this._duplicate();
    if (this._seen.has(h)) return this._duplicate();
    const r = super.check(buf, h);
    const verdict = r.then((x) => x.ok);
    this._pending.set(key, verdict);
    const out = await r;
    this._pending.delete(key);
    if (out.ok) this._seen.first(out.header);
    return out;
  }

  _duplicate() {
    this.stats.duplicate++;
    return fail('duplicate', 'a copy of a buffer verified before');
  }
}

// ---- duplicates --------------------------------------------------------------------------

const SEEN_PER_SENDER = 512; // seqs remembered per sender
const MAX_SENDERS = 4096;

/** The (from, seq) pairs met lately: first(header) is true the first time. Buffers without a seq always pass. */
export class SeenSet {
  constructor() {
    this._seen = new Map(); // sender id -> Set of recent seqs (insertion-ordered)
  }

  /** Whether (from, seq) was met (without recording it). */
  has(h) {
    return typeof h.from === 'string' && !!this._seen.get(h.from)?.has(h.seq);
  }

  first(h) {
    if (typeof h.from !== 'string' || !Number.isSafeInteger(h.seq)) return true;
    let seen = this._seen.get(h.from);
    if (!seen) {
      if (this._seen.size >= MAX_SENDERS) this._seen.delete(this._seen.keys().next().value);
      seen = new Set();
      this._seen.set(h.from, seen);
    }
    if (seen.has(h.seq)) return false;
    seen.add(h.seq);
    if (seen.size > SEEN_PER_SENDER) seen.delete(seen.values().next().value);
    return true;
  }
}
