// wire.js - the one binary format every cluster transport carries: a message
// is a single ArrayBuffer
//
//   [u32 little-endian H][H bytes: UTF-8 JSON header, space-padded so H % 4 == 0][f32 payload]
//
// Because H is a multiple of 4, the payload starts 4-byte aligned and is read
// in place as a Float32Array view: decoding never copies a gradient bucket.
// JSON has no NaN or Infinity, so non-finite numbers in the header travel as
// {"$nf":"NaN"|"Infinity"|"-Infinity"} and come back as numbers. Anything
// that is not a well-formed message (short, oversized, bad length field, bad
// UTF-8, bad JSON, a header that is not an object) throws a WireError whose
// `code` is 'truncated', 'oversized' or 'malformed', so a receiver can drop
// and count it by kind.
// A header with an `enc` of 'f16' or 'int8' (compress.js) carries a packed
// payload instead: its bytes (padded to 4) come back as a Uint8Array view,
// after compress.js packedLayout() checked the encoding, value count, chunk
// and byte length (a mismatch is 'malformed'); the values themselves (NaN
// scales) are checked by messages.js, which can name the sender.
//
//   const buf = encode({ type: 'grad', loss: NaN }, grads);   // ArrayBuffer
//   const { header, payload } = decode(buf);                   // payload: Float32Array view | null
//   encodeMessage({ type: 'grad', loss, payload: grads }) / decodeMessage(buf)
//     carry the payload as the message's `payload` field instead.

/** Default ceilings; pass { maxHeaderBytes, maxBytes } to override per call. */
export const WIRE_LIMITS = Object.freeze({ maxHeaderBytes: 1 << 16, maxBytes: 1 << 28 });

import { packedLayout } from './compress.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

const NF_KEY = '$nf';
const NF_VALUES = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };
const SPACE = 0x20;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/** A buffer that is not a valid message (an RlxError of status INVALID_ARG); `code` says which kind of bad. */
export class WireError extends RlxError {
  constructor(code, message) {
    super(STATUS.INVALID_ARG, `wire: ${message}`);
    this.name = 'WireError';
    this.code = code;
  }
}

function limitsOf(opts) {
  return {
    maxHeaderBytes: opts?.maxHeaderBytes ?? WIRE_LIMITS.maxHeaderBytes,
    maxBytes: opts?.maxBytes ?? WIRE_LIMITS.maxBytes,
  };
}

function replaceNonFinite(_key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) return { [NF_KEY]: String(value) };
  return value;
}

function reviveNonFinite(_key, value) {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === NF_KEY && Object.hasOwn(NF_VALUES, value[NF_KEY])) {
      return NF_VALUES[value[NF_KEY]];
    }
  }
  return value;
}

/** A header naming a payload encoding other than plain f32. */
function isPacked(header) {
  return Object.hasOwn(header, 'enc') && header.enc !== 'f32';
}

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !ArrayBuffer.isView(v);
}

/**
 * Header object + optional Float32Array -> one ArrayBuffer (the payload is
 * copied once, into the message). Throws WireError on a header that is not an
 * object or a message over the limits.
 */
export function encode(header, payload = null, opts) {
  if (!LITTLE_ENDIAN) throw new WireError('malformed', 'big-endian hosts are not supported');
  if (!isPlainObject(header)) throw new WireError('malformed', 'header must be a plain object');
  const packed = isPacked(header);
  if (payload != null && !(packed ? payload instanceof Uint8Array && payload.byteLength % 4 === 0 : payload instanceof Float32Array)) {
    throw new WireError('malformed', packed ? 'a packed payload must be a Uint8Array of whole words' : 'payload must be a Float32Array or null');
  }
  const { maxHeaderBytes, maxBytes } = limitsOf(opts);
  let json;
  try {
    json = JSON.stringify(header, replaceNonFinite);
  } catch (err) {
    throw new WireError('malformed', `header is not serialisable: ${err.message}`);
  }
  const text = utf8Encoder.encode(json);
  const headerBytes = (text.length + 3) & ~3;
  if (headerBytes > maxHeaderBytes) {
    throw new WireError('oversized', `header of ${headerBytes} bytes exceeds ${maxHeaderBytes}`);
  }
  const payloadBytes = payload ? payload.byteLength : 0;
  const total = 4 + headerBytes + payloadBytes;
  if (total > maxBytes) throw new WireError('oversized', `message of ${total} bytes exceeds ${maxBytes}`);

  const buf = new ArrayBuffer(total);
  new DataView(buf).setUint32(0, headerBytes, true);
  const head = new Uint8Array(buf, 4, headerBytes);
  head.set(text);
  head.fill(SPACE, text.length);
  if (payloadBytes) {
    // Byte copy rather than element copy, so every f32 bit pattern survives.
    new Uint8Array(buf, 4 + headerBytes, payloadBytes)
      .set(new Uint8Array(payload.buffer, payload.byteOffset, payloadBytes));
  }
  return buf;
}

/** Normalises ArrayBuffer / typed-array views to an aligned (buffer, offset, length). */
function regionOf(data) {
  if (data instanceof ArrayBuffer) return { buffer: data, offset: 0, length: data.byteLength };
  if (ArrayBuffer.isView(data)) {
    if (data.byteOffset % 4 === 0) {
      return { buffer: data.buffer, offset: data.byteOffset, length: data.byteLength };
    }
    const copy = new Uint8Array(data.byteLength);
    copy.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    return { buffer: copy.buffer, offset: 0, length: copy.byteLength };
  }
  const kind = data === null ? 'null' : typeof data === 'object' ? data.constructor?.name ?? 'object' : typeof data;
  throw new WireError('malformed', `expected an ArrayBuffer, got ${kind}`);
}

/**
 * One ArrayBuffer (or aligned view) -> { header, payload }, payload a
 * Float32Array view into the same buffer, or null when there is none.
 * Throws WireError for anything that is not a well-formed message.
 */
export function decode(data, opts) {
  if (!LITTLE_ENDIAN) throw new WireError('malformed', 'big-endian hosts are not supported');
  const { maxHeaderBytes, maxBytes } = limitsOf(opts);
  const { buffer, offset, length } = regionOf(data);
  if (length < 4) {
    const why = length === 0 ? ' (empty, or detached by a transfer)' : '';
    throw new WireError('truncated', `${length} bytes${why}, shorter than the 4-byte length prefix`);
  }
  if (length > maxBytes) throw new WireError('oversized', `message of ${length} bytes exceeds ${maxBytes}`);
  const headerBytes = new DataView(buffer, offset, 4).getUint32(0, true);
  if (headerBytes === 0) throw new WireError('malformed', 'empty header');
  if (headerBytes % 4 !== 0) throw new WireError('malformed', `header length ${headerBytes} is not a multiple of 4`);
  if (headerBytes > maxHeaderBytes) {
    throw new WireError('oversized', `header of ${headerBytes} bytes exceeds ${maxHeaderBytes}`);
  }
  if (4 + headerBytes > length) {
    throw new WireError('truncated', `header claims ${headerBytes} bytes but only ${length - 4} follow`);
  }
  const payloadBytes = length - 4 - headerBytes;
  if (payloadBytes % 4 !== 0) {
    throw new WireError('malformed', `payload of ${payloadBytes} bytes is not a whole number of f32`);
  }
  let header;
  try {
    const text = utf8Decoder.decode(new Uint8Array(buffer, offset + 4, headerBytes));
    header = JSON.parse(text, reviveNonFinite);
  } catch (err) {
    throw new WireError('malformed', `header is not UTF-8 JSON: ${err.message}`);
  }
  if (!isPlainObject(header)) throw new WireError('malformed', 'header is not a JSON object');
  if (isPacked(header)) {
    try {
      packedLayout(header, payloadBytes);
    } catch (err) {
      throw new WireError('malformed', err.message);
    }
    return { header, payload: new Uint8Array(buffer, offset + 4 + headerBytes, payloadBytes) };
  }
  const payload = payloadBytes
    ? new Float32Array(buffer, offset + 4 + headerBytes, payloadBytes / 4)
    : null;
  return { header, payload };
}

/** A message object whose optional `payload` field is the Float32Array part. */
export function encodeMessage(msg, opts) {
  if (!isPlainObject(msg)) throw new WireError('malformed', 'message must be a plain object');
  const { payload = null, ...header } = msg;
  return encode(header, payload, opts);
}

/** Inverse of encodeMessage: the header's fields plus `payload` (when present). */
export function decodeMessage(data, opts) {
  const { header, payload } = decode(data, opts);
  if (Object.hasOwn(header, 'payload')) throw new WireError('malformed', 'header may not carry a "payload" field');
  if (payload) header.payload = payload;
  return header;
}

/** The header of a buffer, or null when it is not a well-formed message (never throws, never copies). */
export function peekHeader(data, opts) {
  try {
    return decode(data, opts).header;
  } catch {
    return null;
  }
}
