// cluster_wire.test.mjs - web/cluster/wire.js: the payload is an aligned
// Float32Array view into the message at every header length (0..7 mod 4 and
// beyond), non-finite header numbers survive, bit patterns survive, and
// every kind of bad buffer throws a WireError with the right code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encode, decode, encodeMessage, decodeMessage, WireError, WIRE_LIMITS } from '../../web/cluster/wire.js';

const utf8 = new TextEncoder();

test('every header alignment: space padding, aligned in-place payload', () => {
  const payload = Float32Array.from([1.5, -2.25, 3e-8, 65504, -0]);
  const seen = new Set();
  // '{"k":""}' is 8 bytes; each extra character adds one, so 0..15 extra
  // characters give raw header lengths covering every residue mod 4 four times.
  for (let extra = 0; extra < 16; extra++) {
    const header = { k: 'x'.repeat(extra) };
    const raw = utf8.encode(JSON.stringify(header)).length;
    seen.add(raw % 8);
    const buf = encode(header, payload);
    const h = new DataView(buf).getUint32(0, true);
    assert.equal(h % 4, 0, `header length ${h} not a multiple of 4`);
    assert.equal(h, Math.ceil(raw / 4) * 4);
    const pad = new Uint8Array(buf, 4 + raw, h - raw);
    assert.ok(pad.every((b) => b === 0x20), 'padding is spaces');
    assert.equal(buf.byteLength, 4 + h + payload.byteLength);

    const out = decode(buf);
    assert.deepEqual(out.header, header);
    assert.ok(out.payload instanceof Float32Array);
    assert.equal(out.payload.buffer, buf, 'payload is a view, not a copy');
    assert.equal(out.payload.byteOffset, 4 + h);
    assert.equal(out.payload.byteOffset % 4, 0);
    assert.deepEqual(Array.from(out.payload), Array.from(payload));
    assert.ok(Object.is(out.payload[4], -0));
  }
  assert.equal(seen.size, 8, 'raw header lengths cover 0..7 mod 8, so 0..3 mod 4 twice');
});

test('multi-byte UTF-8 headers are measured in bytes, not characters', () => {
  for (const s of ['é', 'ß€', '😀', 'ключ', '漢字かな']) {
    const buf = encode({ s }, Float32Array.of(7));
    const { header, payload } = decode(buf);
    assert.equal(header.s, s);
    assert.equal(payload[0], 7);
  }
});

test('non-finite numbers in the header survive JSON, anywhere in it', () => {
  const header = { loss: NaN, hi: Infinity, lo: -Infinity, ok: 1.25, nested: { a: [1, NaN, -Infinity], b: { c: Infinity } } };
  const { header: out, payload } = decode(encode(header, null));
  assert.equal(payload, null);
  assert.ok(Number.isNaN(out.loss));
  assert.equal(out.hi, Infinity);
  assert.equal(out.lo, -Infinity);
  assert.equal(out.ok, 1.25);
  assert.ok(Number.isNaN(out.nested.a[1]));
  assert.equal(out.nested.a[2], -Infinity);
  assert.equal(out.nested.b.c, Infinity);
  // an ordinary string that merely looks like a tag stays a string
  assert.deepEqual(decode(encode({ s: 'NaN', t: { $nf: 'bogus' } })).header, { s: 'NaN', t: { $nf: 'bogus' } });
});

test('payload bit patterns survive, NaN payload bits included', () => {
  const words = Uint32Array.from([0x7fc00001, 0xffa00000, 0x00000001, 0x80000000, 0x7f800000, 0x3f800000]);
  const payload = new Float32Array(words.buffer);
  const out = decode(encode({}, payload)).payload;
  assert.deepEqual(Array.from(new Uint32Array(out.buffer, out.byteOffset, out.length)), Array.from(words));
});

test('encodeMessage / decodeMessage carry the payload as a field', () => {
  const grads = Float32Array.from({ length: 33 }, (_, i) => i / 3);
  const msg = decodeMessage(encodeMessage({ type: 'grad', loss: NaN, samples: 3, payload: grads }));
  assert.equal(msg.type, 'grad');
  assert.ok(Number.isNaN(msg.loss));
  assert.deepEqual(Array.from(msg.payload), Array.from(grads));
  assert.ok(!('payload' in decodeMessage(encodeMessage({ type: 'hb' }))));
  // a subarray payload encodes only its own elements
  const sub = grads.subarray(5, 9);
  assert.deepEqual(Array.from(decode(encode({}, sub)).payload), Array.from(sub));
});

test('decode accepts aligned and unaligned views of a message', () => {
  const buf = encode({ a: 1 }, Float32Array.of(1, 2, 3));
  const aligned = new Uint8Array(buf.byteLength + 8);
  aligned.set(new Uint8Array(buf), 8);
  assert.deepEqual(Array.from(decode(aligned.subarray(8)).payload), [1, 2, 3]);
  const odd = new Uint8Array(buf.byteLength + 3);
  odd.set(new Uint8Array(buf), 3);
  const out = decode(odd.subarray(3));
  assert.deepEqual(Array.from(out.payload), [1, 2, 3]);
  assert.equal(out.payload.byteOffset % 4, 0);
});

function expectWire(fn, code, pattern) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof WireError, `expected WireError, got ${err}`);
    assert.equal(err.code, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

function withHeader(length, text, payloadBytes = 0) {
  const bytes = utf8.encode(text);
  const buf = new ArrayBuffer(4 + Math.max(bytes.length, 0) + payloadBytes);
  new DataView(buf).setUint32(0, length, true);
  new Uint8Array(buf, 4).set(bytes);
  return buf;
}

test('truncated buffers throw "truncated"', () => {
  expectWire(() => decode(new ArrayBuffer(0)), 'truncated', /detached/);
  expectWire(() => decode(new ArrayBuffer(3)), 'truncated', /length prefix/);
  const good = encode({ type: 'x' }, Float32Array.of(1));
  expectWire(() => decode(good.slice(0, 6)), 'truncated', /only 2 follow/);
  // a buffer that was transferred away reads as empty
  const { port1, port2 } = new MessageChannel();
  const gone = encode({ a: 1 });
  port1.postMessage(gone, [gone]);
  port1.close();
  port2.close();
  expectWire(() => decode(gone), 'truncated');
});

test('oversized buffers and headers throw "oversized"', () => {
  const buf = encode({ a: 1 }, new Float32Array(100));
  expectWire(() => decode(buf, { maxBytes: 64 }), 'oversized');
  expectWire(() => encode({ a: 1 }, new Float32Array(100), { maxBytes: 64 }), 'oversized');
  expectWire(() => encode({ s: 'x'.repeat(100) }, null, { maxHeaderBytes: 64 }), 'oversized');
  expectWire(() => decode(withHeader(WIRE_LIMITS.maxHeaderBytes + 4, '{}')), 'oversized');
});

test('malformed buffers throw "malformed"', () => {
  expectWire(() => decode(withHeader(0, '')), 'malformed', /empty header/);
  expectWire(() => decode(withHeader(3, '{} ')), 'malformed', /multiple of 4/);
  expectWire(() => decode(withHeader(4, '{"a"')), 'malformed', /JSON/);
  expectWire(() => decode(withHeader(4, '[1] ')), 'malformed', /not a JSON object/);
  expectWire(() => decode(withHeader(4, 'null')), 'malformed', /not a JSON object/);
  expectWire(() => decode(withHeader(4, '{}  ', 2)), 'malformed', /whole number of f32/);
  const badUtf8 = withHeader(4, '    ');
  new Uint8Array(badUtf8, 4).set([0x7b, 0xff, 0x7d, 0x20]);
  expectWire(() => decode(badUtf8), 'malformed', /UTF-8/);
  expectWire(() => decode('not a buffer'), 'malformed', /expected an ArrayBuffer/);
  expectWire(() => decode(null), 'malformed');
  expectWire(() => decode({ byteLength: 8 }), 'malformed');
  expectWire(() => encode([1, 2]), 'malformed');
  expectWire(() => encode({}, [1, 2]), 'malformed', /Float32Array/);
  expectWire(() => encode({}, new Float64Array(2)), 'malformed');
  const cyclic = {};
  cyclic.self = cyclic;
  expectWire(() => encode(cyclic), 'malformed', /serialisable/);
  expectWire(() => decodeMessage(encode({ payload: 1 })), 'malformed', /payload/);
});

test('random garbage never escapes as anything but a WireError', () => {
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
  const real = new Uint8Array(encode({ type: 'grad', loss: 0.5, samples: 4 }, new Float32Array(8)));
  let decoded = 0;
  for (let i = 0; i < 3000; i++) {
    let bytes;
    if (i % 2) {
      bytes = new Uint8Array(next() % 64);
      for (let j = 0; j < bytes.length; j++) bytes[j] = next() & 0xff;
      if (bytes.length >= 4 && i % 4 === 1) new DataView(bytes.buffer).setUint32(0, (next() % 16) * 4, true);
    } else {
      bytes = real.slice(0, 4 + (next() % (real.length - 3)));
      bytes[next() % bytes.length] ^= 1 << (next() % 8); // flip one bit
    }
    try {
      decode(bytes.buffer);
      decoded++;
    } catch (err) {
      assert.ok(err instanceof WireError, `non-WireError escaped: ${err}`);
      assert.ok(['truncated', 'oversized', 'malformed'].includes(err.code));
    }
  }
  assert.ok(decoded < 3000);
});

test('the cluster throws RlxErrors whose status says what went wrong', async () => {
  const { RlxError } = await import('../../web/runtime/loader.js');
  const { STATUS } = await import('../../web/runtime/constants.js');
  const { validate, Invalid } = await import('../../web/cluster/messages.js');
  const { parseTurn, parseRelays, iceConfig, checkTrysteroApi } = await import('../../web/cluster/mesh.js');
  const { InProcessHub } = await import('../../web/cluster/bus.js');
  const { Rank } = await import('../../web/cluster/protocol.js');
  const { treeLayout } = await import('../../web/cluster/tree.js');
  const { pack } = await import('../../web/cluster/compress.js');
  const { Buckets } = await import('../../web/cluster/compute.js');
  const { qrMatrix } = await import('../../web/cluster/qr.js');
  const { aggregate } = await import('../../web/cluster/robust.js');
  const { LocalSteps } = await import('../../web/cluster/periodic.js');
  const { edgeRoomId } = await import('../../web/cluster/overlay.js');
  const is = (status, message, extra = () => true) => (e) =>
    e instanceof RlxError && e.status === status && e.message === message && extra(e);
  const { INVALID_ARG, STATE } = STATUS;
  // Wire and message errors keep their classes, codes and kinds.
  assert.throws(() => decode(new ArrayBuffer(2)), is(INVALID_ARG, 'wire: 2 bytes, shorter than the 4-byte length prefix', (e) => e instanceof WireError && e.code === 'truncated'));
  assert.throws(() => validate({ type: 'nope', from: 'a', term: 0 }, 4), is(INVALID_ARG, 'unknown type nope', (e) => e instanceof Invalid && e.kind === 'malformed'));
  // Bad arguments, settings and URL values.
  assert.throws(() => parseTurn(42), is(INVALID_ARG, 'turn: expected a string like turn:host:3478|user|credential'));
  assert.throws(() => parseRelays('http://x'), is(INVALID_ARG, 'relay "http://x": only ws:// and wss:// relays are supported'));
  assert.throws(() => iceConfig({ relayOnly: true }), is(INVALID_ARG, 'relay-only mode needs a TURN server (?turn=url|user|credential)'));
  assert.throws(() => checkTrysteroApi(null), is(INVALID_ARG, 'mesh module: expected an ES module, got null'));
  assert.throws(() => new Rank({}), is(INVALID_ARG, 'Rank needs a bus'));
  assert.throws(() => treeLayout([], 2), is(INVALID_ARG, 'treeLayout needs members'));
  assert.throws(() => pack(new Float32Array(1), 'f8'), is(INVALID_ARG, 'pack: unknown encoding f8'));
  assert.throws(() => new Buckets(null, 'mlp', 'cuda'), is(INVALID_ARG, 'Buckets: backend must be cpu, webgpu or webgl, got cuda'));
  assert.throws(() => qrMatrix(42), is(INVALID_ARG, 'qrMatrix: text must be a string'));
  assert.throws(() => aggregate([], 1, { rule: 'max' }), is(INVALID_ARG, 'aggregate: rule must be one of mean, trimmed, median'));
  await assert.rejects(new LocalSteps().run(new Float32Array(1), { H: 0, lr: 0.1, grads: () => null }), is(INVALID_ARG, 'LocalSteps: H must be a positive integer'));
  assert.throws(() => edgeRoomId('r', 'a', 'a'), is(INVALID_ARG, 'edgeRoomId needs two different rank ids'));
  // Calls out of order.
  const hub = new InProcessHub();
  hub.connect('a');
  assert.throws(() => hub.connect('a'), is(STATE, 'id a is already connected'));
});
