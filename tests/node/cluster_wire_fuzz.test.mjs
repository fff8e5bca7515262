// cluster_wire_fuzz.test.mjs - a seeded, bounded fuzzer over the cluster's
// wire decoder (web/cluster/wire.js) and message validation
// (web/cluster/messages.js), the path every received buffer takes:
// decodeMessage, then validate.  Valid messages of every type are mutated
// (truncations, bit flips, byte runs, huge / zero / unaligned header lengths,
// header values swapped for hostile JSON such as {"toString": 1}, extra and
// "__proto__" keys, deep nesting, long strings; packed f16 / int8 payloads
// with their enc, n, chunk, base and hash fields, NaN words in their scales);
// every buffer must end as a
// decoded message, a WireError or an Invalid, within a time bound, and never
// as any other exception.  RLX_FUZZ_SEED and RLX_FUZZ_ITERS override the seed
// and the count; a failure prints the seed and the iteration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode, encodeMessage, decodeMessage, WireError } from '../../web/cluster/wire.js';
import { validate, Invalid } from '../../web/cluster/messages.js';
import { pack } from '../../web/cluster/compress.js';
import { prng } from '../common/prng.mjs';

const SEED = Number(process.env.RLX_FUZZ_SEED ?? 0x5eed) >>> 0;
const ITERS = Number(process.env.RLX_FUZZ_ITERS ?? 12000);
const PARAMS = 8;
const CALL_MS = 250; // one decode + validate, far above its real cost


const payload = () => Float32Array.from({ length: PARAMS }, (_, i) => i / 8);
const VALID = [
  { type: 'hb', from: 'a', term: 1, role: 'leader', leader: 'a', version: 3, step: 4, hbMs: 500, sps: 1.5,
    backend: 'cpu', fallback: null, hash: 'abcd', halted: null },
  { type: 'need', from: 'b', term: 0, version: -1 },
  { type: 'params', from: 'a', term: 2, version: 1, step: 1, go: true, members: ['a', 'b'],
    settings: { lr: 0.01, maxSteps: 0, slug: 'mnist-mlp' }, payload: payload() },
  { type: 'grad', from: 'b', term: 2, version: 1, step: 1, loss: 2.3, samples: 8, payload: payload() },
  { type: 'halt', from: 'a', term: 2, step: 9, reason: 'diverged' },
  { type: 'bye', from: 'c', term: 0 },
];
// packed payloads (compress.js): buckets, and params deltas with base / hash / excluded
for (const [enc, chunk] of [['f16', undefined], ['int8', 16]]) {
  const { payload: bytes, ...fields } = pack(payload(), enc, { chunk });
  VALID.push({ type: 'grad', from: 'b', term: 2, version: 1, step: 1, loss: 2.3, samples: 8, ...fields, payload: bytes });
  VALID.push({ type: 'params', from: 'a', term: 2, version: 2, step: 2, go: true, members: ['a', 'b'], base: 1, hash: '0badf00d',
    excluded: [{ id: 'c', reason: 'sent NaN' }], ...fields, payload: bytes });
}

const HOSTILE = [
  null, true, 0, -1, 1e308, -0, 2 ** 53, 2 ** 64, '', 'x'.repeat(5000), '\u0000', '\ud800', [], [1, 2], {},
  { toString: 1 }, { valueOf: 1 }, { toString: 1, valueOf: 1 }, { $nf: 'NaN' }, { $nf: 'Infinity' }, { $nf: 'bogus' },
  { __proto__: null, constructor: 1 }, JSON.parse('{"__proto__": {"x": 1}}'), { length: 2 ** 32 },
  Array.from({ length: 50 }, () => ({ toString: 1 })),
];

function deep(n) {
  let v = 0;
  for (let i = 0; i < n; i++) v = [v];
  return v;
}

/** A header mutated at the JSON level (encoded with wire.encode, so the bytes are well formed). */
function mutateHeader(r, msg) {
  const { payload: p = null, ...h } = msg;
  const keys = Object.keys(h);
  const out = { ...h };
  const n = 1 + r.int(3);
  for (let i = 0; i < n; i++) {
    switch (r.int(5)) {
      case 0: out[r.pick(keys)] = r.pick(HOSTILE); break;
      case 1: delete out[r.pick(keys)]; break;
      case 2: out[r.pick(['payload', '__proto__', 'constructor', 'settings', 'members', 'x', 'enc', 'n', 'chunk', 'base', 'hash', 'excluded'])] = r.pick([...HOSTILE, 'f16', 'int8', 'f32', 16, 7, PARAMS + 1]); break;
      case 3: out[r.pick(keys)] = deep(1 + r.int(2000)); break;
      default: if (out.settings) out.settings = { ...out.settings, [r.pick(['lr', 'maxSteps', 'k'.repeat(40), 'toString'])]: r.pick(HOSTILE) };
    }
  }
  const pay = r.int(4) === 0 ? Float32Array.from({ length: r.int(2 * PARAMS) }, () => r.pick([0, NaN, Infinity, 1])) : p;
  try {
    return encode(out, pay);
  } catch (err) {
    if (err instanceof WireError) return null; // e.g. an oversized header: encode refuses it, fine
    throw err;
  }
}

/** A valid buffer mutated at the byte level. */
function mutateBytes(r, buf) {
  const bytes = new Uint8Array(buf.slice(0));
  const view = new DataView(bytes.buffer);
  switch (r.int(7)) {
    case 6: { // a NaN / Infinity / negative word in the payload (an int8 scale, two halves, an f32)
      const head = view.getUint32(0, true);
      const words = (bytes.length - 4 - head) >> 2;
      if (words > 0) view.setFloat32(4 + head + 4 * r.int(words), r.pick([NaN, Infinity, -Infinity, -1]), true);
      return bytes.buffer;
    }
    case 0: return bytes.buffer.slice(0, r.int(bytes.length + 1)); // truncation
    case 1: { // bit flips
      const flips = 1 + r.int(8);
      for (let i = 0; i < flips; i++) bytes[r.int(bytes.length)] ^= 1 << r.int(8);
      return bytes.buffer;
    }
    case 2: view.setUint32(0, r.pick([0, 1, 2, 3, 0xfffffffc, 0xffffffff, 2 ** 31, 1 << 16, (1 << 16) + 4, bytes.length]), true); return bytes.buffer;
    case 3: { // a run of random bytes inside the header
      const at = 4 + r.int(Math.max(1, bytes.length - 4));
      for (let i = at; i < Math.min(bytes.length, at + 1 + r.int(16)); i++) bytes[i] = r.int(256);
      return bytes.buffer;
    }
    case 4: { // extra bytes at the end
      const more = new Uint8Array(bytes.length + 1 + r.int(9));
      more.set(bytes);
      return more.buffer;
    }
    default: return Uint8Array.from({ length: r.int(64) }, () => r.int(256)).buffer; // noise
  }
}

/** Decode and validate one buffer: 'ok', 'wire' or 'invalid'; anything else throws. */
function receive(buf) {
  let msg;
  try {
    msg = decodeMessage(buf);
  } catch (err) {
    if (err instanceof WireError) return 'wire';
    throw err;
  }
  try {
    validate(msg, PARAMS);
  } catch (err) {
    if (err instanceof Invalid) return 'invalid';
    throw err;
  }
  return 'ok';
}

test('every valid message decodes and validates', () => {
  for (const m of VALID) assert.equal(receive(encodeMessage(m)), 'ok', m.type);
});

test('a header whose type is {"toString": 1} is a clean rejection, not a TypeError', () => {
  const buf = encode({ type: { toString: 1 }, from: 'a', term: 0 });
  assert.equal(receive(buf), 'invalid');
  for (const type of [{ toString: 1 }, { valueOf: 1, toString: 1 }, [], null, 5]) {
    assert.throws(() => validate({ type, from: 'a', term: 0 }, PARAMS), (e) => e instanceof Invalid && e.kind === 'malformed');
  }
});

test(`fuzz: ${ITERS} mutated buffers end as messages, WireErrors or Invalids (seed ${SEED})`, () => {
  const r = prng(SEED);
  const counts = { ok: 0, wire: 0, invalid: 0 };
  const t0 = performance.now();
  for (let i = 0; i < ITERS; i++) {
    const msg = r.pick(VALID);
    const buf = r.int(2) === 0 ? mutateHeader(r, msg) : mutateBytes(r, encodeMessage(msg));
    if (buf === null) continue;
    const c0 = performance.now();
    let kind;
    try {
      kind = receive(buf);
    } catch (err) {
      assert.fail(`seed ${SEED} (RLX_FUZZ_SEED=${SEED}), iteration ${i}: ${err?.constructor?.name} escaped: ${err?.message}`);
    }
    const ms = performance.now() - c0;
    if (ms > CALL_MS) assert.fail(`seed ${SEED}, iteration ${i}: one receive took ${ms.toFixed(0)} ms`);
    counts[kind]++;
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log(`cluster wire fuzz: seed ${SEED}, ${ITERS} iterations in ${seconds.toFixed(2)} s: ` +
    `${counts.ok} accepted, ${counts.wire} WireErrors, ${counts.invalid} Invalids, 0 escapes`);
  assert.ok(counts.wire > 0 && counts.invalid > 0, 'the mutations reach both the decoder and the validator');
});
