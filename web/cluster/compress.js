// compress.js - fewer bytes per step: gradient buckets and the leader's
// parameter updates can travel as f16 or as int8 with one f32 scale per
// chunk of values instead of f32, with error feedback on the sender so that
// what quantization drops is not lost but sent with the next step.
//
// Encodings (a message says which in its header: enc, n, chunk):
//   f32   the payload is n f32 values (no enc field; the default)
//   f16   n IEEE half floats (u16 little-endian), zero-padded to 4 bytes;
//         round to nearest even, finite values beyond +-65504 saturate,
//         NaN / Infinity stay non-finite (so the receiver rejects them)
//   int8  ceil(n / chunk) f32 scales, then n signed bytes q, zero-padded to
//         4 bytes; value i = q[i] * scale[floor(i / chunk)], where a chunk's
//         scale is max|x| / 127 (a chunk holding NaN / Infinity gets a NaN
//         scale, which the receiver rejects)
// Bytes per value: 4, 2, and 1 + 4 / chunk (1.016 at chunk 256).
//
// Error feedback (ErrorFeedback): the sender keeps the residual r of the
// quantization and sends Q(g + r) next time, with r <- (g + r) - deQ(Q(g + r)).
// The sum of what a sender transmitted then trails the sum of its true
// gradients by one residual (at most half a quantization step per value), so
// compressed SGD follows uncompressed SGD instead of drifting from it.
//
// Parameters stay bit-identical on every rank: the leader broadcasts the
// update as a compressed DELTA against the parameters everyone holds
// (ParamsDelta), with the version it applies to (base) and the FNV-1a hash of
// the result; every rank, the leader included, adopts
// held + deQ(delta) computed by the same function (applyDelta), and the leader
// feeds the difference to the update it wanted into its next delta. A rank
// that does not hold the base (it missed a broadcast) or whose result has
// another hash asks for the full f32 parameters, which newcomers always get.
//
// Policy (encodingFor): 'auto' is f32 up to 3 ranks (traffic is small and the
// step is not bandwidth-bound) and int8 from 4 ranks on; 'f32', 'f16', 'int8'
// force one.
//
// wire.js calls packedLayout() on every header that names an encoding
// (structure: encoding, counts, byte length); messages.js calls
// packedProblem() (values: non-finite scales or halves) before a rank acts.
import { paramsHash } from './reduce.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

export const ENCODINGS = Object.freeze(['f32', 'f16', 'int8']);
export const ENCODING_SETTINGS = Object.freeze(['auto', ...ENCODINGS]);
export const DEFAULT_CHUNK = 256;
export const CHUNK_LIMITS = Object.freeze([16, 65536]);
export const AUTO_COMPRESS_FROM = 4; // ranks

/** The encoding a message carries, for a setting ('auto' | one of ENCODINGS; none: f32) and a cohort of `ranks`. */
export function encodingFor(setting, ranks) {
  if (setting === 'f16' || setting === 'int8' || setting === 'f32') return setting;
  if (setting === 'auto') return ranks >= AUTO_COMPRESS_FROM ? 'int8' : 'f32';
  return 'f32'; // no setting: a Rank built without one sends what it always sent
}

/** Payload bytes of n values in an encoding (before padding to 4). */
export function encodedBytes(enc, n, chunk = DEFAULT_CHUNK) {
  if (enc === 'f32') return 4 * n;
  if (enc === 'f16') return 2 * n;
  if (enc === 'int8') return 4 * Math.ceil(n / chunk) + n;
  throw new RlxError(STATUS.INVALID_ARG, `unknown encoding ${String(enc)}`);
}

const pad4 = (b) => (b + 3) & ~3;

// ---- f16 ----------------------------------------------------------------------

const f32Box = new Float32Array(1);
const u32Box = new Uint32Array(f32Box.buffer);
let halfTable = null;

/** f32 -> IEEE half bits, round to nearest even; finite overflow saturates to +-65504. */
export function toHalfBits(x) {
  f32Box[0] = x;
  const b = u32Box[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 112; // rebias 127 -> 15
  if (e >= 0x1f) return sign | 0x7bff;
  if (e <= 0) {
    if (e < -10) return sign; // below half the smallest subnormal
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  if (h >= 0x7c00) h = 0x7bff; // rounding carried into the infinity exponent
  return sign | h;
}

/** IEEE half bits -> the f32 value (exact). */
export function fromHalfBits(h) {
  if (!halfTable) {
    halfTable = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) {
      const s = i & 0x8000 ? -1 : 1;
      const e = (i >>> 10) & 0x1f;
      const m = i & 0x3ff;
      halfTable[i] = e === 0 ? s * m * 2 ** -24 : e === 0x1f ? (m ? NaN : s * Infinity) : s * (1024 + m) * 2 ** (e - 25);
    }
  }
  return halfTable[h & 0xffff];
}

// ---- pack / unpack ---------------------------------------------------------------

/**
 * values (Float32Array) -> { enc, n, chunk?, payload }: payload is the
 * Float32Array itself for f32, else the encoded bytes (Uint8Array, padded to
 * a multiple of 4). The message carries these fields as they are.
 */
export function pack(values, enc, { chunk = DEFAULT_CHUNK } = {}) {
  const n = values.length;
  if (enc === 'f32') return { enc, n, payload: values };
  if (enc === 'f16') {
    const bytes = new Uint8Array(pad4(2 * n));
    const h = new Uint16Array(bytes.buffer, 0, n);
    for (let i = 0; i < n; i++) h[i] = toHalfBits(values[i]);
    return { enc, n, payload: bytes };
  }
  if (enc === 'int8') {
    checkChunk(chunk);
    const chunks = Math.ceil(n / chunk);
    const bytes = new Uint8Array(pad4(4 * chunks + n));
    const scales = new Float32Array(bytes.buffer, 0, chunks);
    const q = new Int8Array(bytes.buffer, 4 * chunks, n);
    for (let c = 0; c < chunks; c++) {
      const lo = c * chunk;
      const hi = Math.min(n, lo + chunk);
      let max = 0;
      for (let i = lo; i < hi; i++) {
        const a = Math.abs(values[i]);
        if (!(a <= max)) {
          max = a; // Infinity makes max non-finite, and so does NaN:
          if (a !== a) break;
        }
      }
      if (!Number.isFinite(max)) {
        scales[c] = NaN;
        continue;
      }
      const scale = Math.fround(max / 127);
      scales[c] = scale;
      if (scale === 0) continue;
      const inv = 1 / scale;
      for (let i = lo; i < hi; i++) {
        const v = Math.round(values[i] * inv);
        q[i] = v > 127 ? 127 : v < -127 ? -127 : v;
      }
    }
    return { enc, n, chunk, payload: bytes };
  }
  throw new RlxError(STATUS.INVALID_ARG, `pack: unknown encoding ${String(enc)}`);
}

/** { enc, n, chunk?, payload } -> Float32Array of the n decoded values (a new array for f16 / int8). */
export function unpack(packed, out = new Float32Array(packed.n)) {
  const { enc, n, payload } = packed;
  if (enc === undefined || enc === 'f32') return payload;
  const bytes = payload;
  if (enc === 'f16') {
    const h = new Uint16Array(bytes.buffer, bytes.byteOffset, n);
    fromHalfBits(0);
    const table = halfTable;
    for (let i = 0; i < n; i++) out[i] = table[h[i]];
    return out;
  }
  if (enc === 'int8') {
    const chunk = packed.chunk;
    const chunks = Math.ceil(n / chunk);
    const scales = scaleView(bytes, chunks);
    const q = new Int8Array(bytes.buffer, bytes.byteOffset + 4 * chunks, n);
    for (let c = 0; c < chunks; c++) {
      const s = scales[c];
      const hi = Math.min(n, (c + 1) * chunk);
      for (let i = c * chunk; i < hi; i++) out[i] = q[i] * s;
    }
    return out;
  }
  throw new RlxError(STATUS.INVALID_ARG, `unpack: unknown encoding ${String(enc)}`);
}

/** The scales of an int8 payload as f32 (a view when aligned, else a copy). */
function scaleView(bytes, chunks) {
  if (bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, chunks);
  return new Float32Array(bytes.slice(0, 4 * chunks).buffer);
}

function checkChunk(chunk) {
  if (!Number.isInteger(chunk) || chunk < CHUNK_LIMITS[0] || chunk > CHUNK_LIMITS[1]) {
    throw new RlxError(STATUS.INVALID_ARG, `int8 chunk must be an integer from ${CHUNK_LIMITS[0]} to ${CHUNK_LIMITS[1]}`);
  }
}

// ---- checks on received messages ------------------------------------------------------

/**
 * Structure of a header that names an encoding, against the payload's byte
 * length (padded to 4): returns the unpadded byte count, or throws an RlxError (INVALID_ARG)
 * saying what is wrong (wire.js turns it into a WireError 'malformed').
 */
export function packedLayout(header, payloadBytes, maxValues = 1 << 26) {
  const { enc, n, chunk } = header;
  if (enc !== 'f16' && enc !== 'int8') throw new RlxError(STATUS.INVALID_ARG, `unknown payload encoding ${typeof enc === 'string' ? JSON.stringify(enc.slice(0, 16)) : typeof enc}`);
  if (!Number.isSafeInteger(n) || n < 1 || n > maxValues) throw new RlxError(STATUS.INVALID_ARG, `${enc} payload needs a value count n from 1 to ${maxValues}`);
  if (enc === 'int8') {
    if (!Number.isSafeInteger(chunk) || chunk < CHUNK_LIMITS[0] || chunk > CHUNK_LIMITS[1]) {
      throw new RlxError(STATUS.INVALID_ARG, `int8 payload needs chunk from ${CHUNK_LIMITS[0]} to ${CHUNK_LIMITS[1]}`);
    }
  } else if (chunk !== undefined) {
    throw new RlxError(STATUS.INVALID_ARG, 'an f16 payload has no chunk');
  }
  const bytes = encodedBytes(enc, n, chunk);
  if (payloadBytes !== pad4(bytes)) throw new RlxError(STATUS.INVALID_ARG, `${enc} payload of ${n} values is ${pad4(bytes)} bytes, got ${payloadBytes}`);
  return bytes;
}

/**
 * What is wrong with a packed message for a model of paramCount values, as
 * { kind: 'malformed' | 'oversized' | 'nonFinite', why }, or null when nothing.
 * Checks the structure again (a message need not have come through wire.js)
 * and every value: NaN / Infinity scales or halves are 'nonFinite'.
 */
export function packedProblem(msg, paramCount) {
  const p = msg.payload;
  if (!(p instanceof Uint8Array)) return { kind: 'malformed', why: 'a packed payload is not bytes' };
  if (typeof msg.n === 'number' && msg.n > paramCount) return { kind: 'oversized', why: `payload of ${msg.n} values, model has ${paramCount}` };
  try {
    packedLayout(msg, p.length, paramCount);
  } catch (err) {
    return { kind: 'malformed', why: err.message };
  }
  if (msg.n !== paramCount) return { kind: 'malformed', why: `payload of ${msg.n} values, model has ${paramCount}` };
  if (msg.enc === 'int8') {
    const chunks = Math.ceil(msg.n / msg.chunk);
    const scales = scaleView(p, chunks);
    for (let c = 0; c < chunks; c++) {
      const s = scales[c];
      if (!Number.isFinite(s)) return { kind: 'nonFinite', why: `int8 scale ${c} is ${s}` };
      if (s < 0) return { kind: 'malformed', why: `int8 scale ${c} is negative` };
    }
  } else {
    const h = p.byteOffset % 2 === 0 ? new Uint16Array(p.buffer, p.byteOffset, msg.n) : new Uint16Array(p.slice(0, 2 * msg.n).buffer);
    for (let i = 0; i < h.length; i++) if ((h[i] & 0x7c00) === 0x7c00) return { kind: 'nonFinite', why: 'f16 payload holds NaN or Infinity' };
  }
  return null;
}

// ---- error feedback -------------------------------------------------------------------

/** One sender's quantizer with error feedback (see the top of the file). */
export class ErrorFeedback {
  constructor() {
    this.residual = null;
  }

  /** Packs values + residual in `enc`; keeps what the encoding dropped for the next call. */
  pack(values, enc, opts) {
    const n = values.length;
    let x = values;
    const r = this.residual;
    if (r && r.length === n) {
      // f32 sends x itself; the others only read it, so a scratch array will do
      x = enc === 'f32' ? new Float32Array(n) : this._scratch('sum', n);
      for (let i = 0; i < n; i++) x[i] = values[i] + r[i];
    }
    const packed = pack(x, enc, opts);
    if (enc === 'f32') {
      this.residual = null; // sent exactly
      return packed;
    }
    const back = unpack(packed, this._scratch('back', n));
    const res = r && r.length === n ? r : new Float32Array(n);
    let finite = true;
    for (let i = 0; i < n; i++) {
      const d = x[i] - back[i];
      if (!Number.isFinite(d)) finite = false;
      res[i] = d;
    }
    this.residual = finite ? res : null; // a non-finite bucket must not poison the next ones
    return packed;
  }

  _scratch(key, n) {
    this._bufs ??= {};
    if (this._bufs[key]?.length !== n) this._bufs[key] = new Float32Array(n);
    return this._bufs[key];
  }

  /** Euclidean norm of the residual (0 when there is none). */
  residualNorm() {
    let s = 0;
    if (this.residual) for (const v of this.residual) s += v * v;
    return Math.sqrt(s);
  }

  reset() {
    this.residual = null;
  }
}

// ---- the leader's parameter broadcast ----------------------------------------------------

/** held + deQ(delta), as a new Float32Array: what every rank adopts from a delta broadcast. */
export function applyDelta(held, packed) {
  const d = unpack(packed);
  const out = new Float32Array(held.length);
  for (let i = 0; i < held.length; i++) out[i] = held[i] + d[i];
  return out;
}

/**
 * The leader's side of compressed parameter broadcasts: step(held, next, enc)
 * packs next - held (plus what earlier deltas left out) and returns
 * { params, packed, hash }: params = applyDelta(held, packed), the bytes the
 * leader itself adopts and every follower computes from the broadcast.
 */
export class ParamsDelta {
  constructor() {
    this.ef = new ErrorFeedback();
    this.key = null;
  }

  /** key: e.g. the leader's term; a new key drops the residual of another reign. */
  step(held, next, enc, { chunk = DEFAULT_CHUNK, key = null } = {}) {
    if (key !== this.key) {
      this.ef.reset();
      this.key = key;
    }
    const n = held.length;
    const delta = new Float32Array(n);
    for (let i = 0; i < n; i++) delta[i] = next[i] - held[i];
    const packed = this.ef.pack(delta, enc, { chunk });
    const params = applyDelta(held, packed);
    return { params, packed, hash: paramsHash(params) };
  }
}

/**
 * A follower's side: the parameters to adopt from a delta broadcast
 * {base, hash, enc, n, chunk, payload} given what it holds
 * ({params, version, term, needSync}), as
 *   { params }          the new parameters (their hash matches msg.hash)
 *   { same: true }      it already holds them (version and hash equal)
 *   { stale: true }     an older broadcast
 *   { resync: why }     it cannot apply it: ask the leader for full params
 */
export function adoptDelta(held, msg) {
  if (held.needSync) return { resync: 'this rank is not synchronised yet' };
  if (msg.term < held.term || (msg.term === held.term && msg.version < held.version)) return { stale: true };
  if (msg.term > held.term) return { resync: `the update is of term ${msg.term}, this rank holds term ${held.term}` };
  if (msg.version === held.version) return msg.hash === held.hash ? { same: true } : { resync: 'same version, another hash' };
  if (msg.base !== held.version) return { resync: `holds version ${held.version}, the update applies to ${msg.base}` };
  const params = applyDelta(held.params, msg);
  if (paramsHash(params) !== msg.hash) return { resync: "the decoded parameters have another hash than the leader's" };
  return { params };
}

/**
 * What one rank keeps for compressed traffic, used by protocol.js at its
 * send / receive / resolve points: the error feedback of its buckets, and
 * (as leader) that of its parameter deltas and the delta of the version it
 * is about to broadcast.
 */
export class Traffic {
  constructor() {
    this.buckets = new ErrorFeedback();
    this.params = new ParamsDelta();
    this.pending = null; // { version, fields } of the next broadcast
  }

  /** The payload fields of a grad message for `grads` ({payload} for f32). */
  bucketFields(grads, setting, ranks) {
    const enc = encodingFor(setting, ranks);
    if (enc === 'f32' && !this.buckets.residual) return { payload: grads };
    const { n, chunk, payload } = this.buckets.pack(grads, enc);
    return enc === 'f32' ? { payload } : chunk === undefined ? { enc, n, payload } : { enc, n, chunk, payload };
  }

  /**
   * The leader resolved a step: next is the update it wants, held what every
   * rank holds at `version`. Returns the parameters to adopt: next itself for
   * f32 (the broadcast carries them whole), else held + deQ(delta), whose
   * delta fields paramsFields(version + 1) then gives.
   */
  leaderStep(held, next, { setting, ranks, version, term }) {
    const enc = encodingFor(setting, ranks);
    this.pending = null;
    if (enc === 'f32') {
      this.params.ef.reset();
      return next;
    }
    const { params, packed, hash } = this.params.step(held, next, enc, { key: term });
    const fields = { enc, n: packed.n, base: version, hash, payload: packed.payload };
    if (packed.chunk !== undefined) fields.chunk = packed.chunk;
    this.pending = { version: version + 1, fields };
    return params;
  }

  /** Delta fields for the broadcast of `version`, or null (send the params whole). */
  paramsFields(version) {
    return this.pending && this.pending.version === version ? this.pending.fields : null;
  }
}
