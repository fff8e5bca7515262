// cluster_compress.test.mjs - web/cluster/compress.js and the compressed
// traffic of protocol.js: f16 conversion (every half round-trips, ties to
// even, saturation, NaN / Infinity kept), int8 with per-chunk scales (error
// at most half a step), error feedback (what the sender transmitted trails
// the true sum by one bounded residual; without it a small steady gradient
// is never sent), the wire format of packed payloads (bad encodings, counts,
// chunks, lengths are WireErrors; NaN scales and halves are nonFinite
// Invalids that name the sender), the auto policy (f32 up to 3 ranks), and
// stub cohorts (web/cluster/sim.js) whose buckets and parameter updates
// travel as f16 / int8: every rank, the leader included, holds the same
// parameter bytes after every step, a rank that misses a delta resyncs, and
// the messages shrink by 2x / ~4x; in a tree step the deltas are relayed
// down as they are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  pack, unpack, toHalfBits, fromHalfBits, ErrorFeedback, ParamsDelta, applyDelta, adoptDelta, encodingFor, encodedBytes,
  packedLayout, Traffic,
} from '../../web/cluster/compress.js';
import { encode, encodeMessage, decodeMessage, WireError } from '../../web/cluster/wire.js';
import { validate, Invalid } from '../../web/cluster/messages.js';
import { paramsHash } from '../../web/cluster/reduce.js';
import { SimCohort, rng } from '../../web/cluster/sim.js';

const bytesOf = (f32) => Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);

function randomVector(n, seed, scale = 1) {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale * (r() < 0.1 ? 30 : 1));
}

test('f16: every half value round-trips; ties to even; overflow saturates; NaN and Infinity stay non-finite', () => {
  for (let h = 0; h < 65536; h++) {
    const v = fromHalfBits(h);
    if (Number.isNaN(v)) {
      assert.ok(Number.isNaN(fromHalfBits(toHalfBits(v))));
      continue;
    }
    assert.equal(toHalfBits(v), h, `half 0x${h.toString(16)} (${v})`);
  }
  assert.equal(toHalfBits(1 + 2 ** -11), 0x3c00, 'a tie rounds to the even neighbour (down)');
  assert.equal(toHalfBits(1 + 3 * 2 ** -11), 0x3c02, 'a tie rounds to the even neighbour (up)');
  assert.equal(toHalfBits(1 + 2 ** -11 + 2 ** -20), 0x3c01, 'above a tie rounds up');
  assert.equal(fromHalfBits(toHalfBits(1e9)), 65504);
  assert.equal(fromHalfBits(toHalfBits(-65520)), -65504);
  assert.equal(fromHalfBits(toHalfBits(Infinity)), Infinity);
  assert.equal(fromHalfBits(toHalfBits(-Infinity)), -Infinity);
  assert.ok(Number.isNaN(fromHalfBits(toHalfBits(NaN))));
  assert.equal(fromHalfBits(toHalfBits(2 ** -25)), 0, 'half the smallest subnormal ties to 0');
  assert.equal(fromHalfBits(toHalfBits(2 ** -25 * 1.01)), 2 ** -24);
  // relative error of normal values is at most 2^-11
  const v = randomVector(5000, 3);
  for (const x of v) if (Math.abs(x) > 1e-4) assert.ok(Math.abs(fromHalfBits(toHalfBits(x)) - x) <= Math.abs(x) * 2 ** -11 * 1.0001);
});

test('int8: per-chunk scales, error at most half a step, zero chunks exact, non-finite chunks get a NaN scale', () => {
  const n = 1000;
  const v = randomVector(n, 5, 0.01);
  v.fill(0, 256, 512); // one all-zero chunk
  const p = pack(v, 'int8', { chunk: 256 });
  assert.equal(p.payload.length, 4 * 4 + 1000);
  assert.equal(encodedBytes('int8', n, 256), 1016);
  const back = unpack(p);
  const scales = new Float32Array(p.payload.buffer, 0, 4);
  for (let i = 0; i < n; i++) {
    const s = scales[Math.floor(i / 256)];
    assert.ok(Math.abs(back[i] - v[i]) <= s / 2 + 1e-12, `value ${i}: ${back[i]} vs ${v[i]} (scale ${s})`);
  }
  for (let i = 256; i < 512; i++) assert.equal(back[i], 0);
  for (let c = 0; c < 4; c++) {
    let max = 0;
    for (let i = c * 256; i < Math.min(n, c * 256 + 256); i++) max = Math.max(max, Math.abs(v[i]));
    assert.equal(scales[c], Math.fround(max / 127));
  }
  const bad = Float32Array.from(v);
  bad[700] = NaN;
  const pb = pack(bad, 'int8');
  assert.ok(Number.isNaN(new Float32Array(pb.payload.buffer, 0, 4)[2]));
  assert.ok(!Number.isNaN(new Float32Array(pb.payload.buffer, 0, 4)[1]));
  // an odd count pads the payload to whole words; f16 too
  assert.equal(pack(new Float32Array(5), 'int8', { chunk: 16 }).payload.length, 12);
  assert.equal(pack(new Float32Array(5), 'f16').payload.length, 12);
  assert.throws(() => pack(v, 'int8', { chunk: 3 }), /chunk/);
  assert.throws(() => pack(v, 'f8'), /unknown encoding/);
});

test('error feedback: the transmitted sum trails the true sum by one bounded residual; without it a small gradient is lost', () => {
  const n = 512;
  for (const enc of ['f16', 'int8']) {
    const ef = new ErrorFeedback();
    const trueSum = new Float64Array(n);
    const sentSum = new Float64Array(n);
    const noEfSum = new Float64Array(n);
    const r = rng(11);
    for (let t = 0; t < 200; t++) {
      // a large noisy part and a tiny steady part on every coordinate
      const g = Float32Array.from({ length: n }, (_, i) => (i === 0 ? 1 : (r() * 2 - 1) * 0.5) + 1e-5);
      const sent = unpack(ef.pack(g, enc));
      const plain = unpack(pack(g, enc));
      for (let i = 0; i < n; i++) {
        trueSum[i] += g[i];
        sentSum[i] += sent[i];
        noEfSum[i] += plain[i];
      }
      // invariant: sent so far + residual == true so far (up to f32 rounding of the running values)
      for (let i = 0; i < n; i += 37) {
        assert.ok(Math.abs(sentSum[i] + ef.residual[i] - trueSum[i]) <= 1e-4, `${enc} t=${t} i=${i}: ${sentSum[i]} + ${ef.residual[i]} vs ${trueSum[i]}`);
      }
      const step = enc === 'int8' ? 1 / 127 : 2 ** -11; // the largest value is 1 (i = 0), so the int8 step is 1 / 127
      for (let i = 0; i < n; i++) assert.ok(Math.abs(ef.residual[i]) <= step, `${enc}: residual ${ef.residual[i]} above one step`);
    }
    // the steady 1e-5 drift: EF delivers it, plain quantization drops part of it (int8 drops it outright)
    let efErr = 0;
    let plainErr = 0;
    for (let i = 1; i < n; i++) {
      efErr += Math.abs(sentSum[i] - trueSum[i]);
      plainErr += Math.abs(noEfSum[i] - trueSum[i]);
    }
    assert.ok(efErr < plainErr / 3, `${enc}: error feedback error ${efErr} vs ${plainErr} without it`);
    assert.ok(ef.residualNorm() > 0);
    // f32 flushes the residual: the next bucket carries it exactly
    const g = new Float32Array(n).fill(0.25);
    const before = Float32Array.from(ef.residual);
    const flushed = unpack(ef.pack(g, 'f32'));
    for (let i = 0; i < n; i++) assert.equal(flushed[i], Math.fround(0.25 + before[i]));
    assert.equal(ef.residual, null);
  }
  // a non-finite bucket does not poison the next ones
  const ef = new ErrorFeedback();
  ef.pack(Float32Array.of(1, 2, 3), 'int8', { chunk: 16 });
  ef.pack(Float32Array.of(NaN, 2, 3), 'int8', { chunk: 16 });
  assert.equal(ef.residual, null);
  assert.ok(unpack(ef.pack(Float32Array.of(1, 2, 3), 'int8', { chunk: 16 })).every(Number.isFinite));
});

test('params as deltas: held + deQ(delta) on every side, error feedback tracks the wanted params, a missing base resyncs', () => {
  const n = 300;
  const r = rng(2);
  const wanted = Float32Array.from({ length: n }, () => r() - 0.5);
  let held = Float32Array.from(wanted);
  const codec = new ParamsDelta();
  for (let t = 0; t < 100; t++) {
    // many tiny updates, far below the int8 step of a delta that also moves one value a lot
    const next = Float32Array.from(held);
    for (let i = 0; i < n; i++) {
      const d = i === 0 ? 0.1 * Math.sin(t) : 1e-4;
      wanted[i] += d;
      next[i] = held[i] + d + (wanted[i] - d - held[i]); // the optimizer's step from what is held, towards wanted
    }
    const { params, packed, hash } = codec.step(held, next, 'int8', { key: 1 });
    const follower = applyDelta(held, packed);
    assert.ok(bytesOf(follower).equals(bytesOf(params)), 'the follower computes the leader\'s bytes');
    assert.equal(paramsHash(follower), hash);
    const msg = { term: 1, version: t + 1, base: t, hash, ...packed };
    const got = adoptDelta({ params: held, version: t, term: 1, hash: paramsHash(held), needSync: false }, msg);
    assert.ok(bytesOf(got.params).equals(bytesOf(params)));
    assert.ok(adoptDelta({ params: held, version: t - 1, term: 1, hash: 'x', needSync: false }, msg).resync, 'a missed delta asks for params');
    assert.ok(adoptDelta({ params: params, version: t + 1, term: 1, hash, needSync: false }, msg).same);
    assert.ok(adoptDelta({ params: held, version: t + 5, term: 1, hash: 'x', needSync: false }, msg).stale);
    assert.ok(adoptDelta({ params: held, version: t, term: 1, hash: paramsHash(held), needSync: true }, msg).resync);
    assert.ok(adoptDelta({ params: held, version: t, term: 0, hash: paramsHash(held), needSync: false }, msg).resync, 'a newer term resyncs');
    const tampered = new Uint8Array(packed.payload);
    tampered[tampered.length - 1] ^= 1;
    assert.ok(adoptDelta({ params: held, version: t, term: 1, hash: paramsHash(held), needSync: false }, { ...msg, payload: tampered }).resync,
      'bytes that decode to another hash resync');
    held = params;
  }
  // 100 updates of 1e-4: the held params moved by 0.01 (to within one int8 step of the delta), not by 0
  for (let i = 1; i < n; i++) assert.ok(Math.abs(held[i] - wanted[i]) <= 0.1 / 127 + 1e-6, `param ${i}: held ${held[i]}, wanted ${wanted[i]}`);
});

test('policy: auto sends f32 up to 3 ranks and int8 from 4; a setting forces one; no setting is f32', () => {
  assert.deepEqual([1, 2, 3, 4, 10, 1000].map((n) => encodingFor('auto', n)), ['f32', 'f32', 'f32', 'int8', 'int8', 'int8']);
  for (const enc of ['f32', 'f16', 'int8']) assert.equal(encodingFor(enc, 2), enc);
  assert.equal(encodingFor(undefined, 100), 'f32');
  const t = new Traffic();
  const g = randomVector(40, 1);
  assert.equal(t.bucketFields(g, 'auto', 3).payload, g, 'f32 sends the bucket itself');
  assert.equal(t.bucketFields(g, 'auto', 4).enc, 'int8');
});

// ---- the wire ------------------------------------------------------------------------

const N = 40;
function packedMsg(enc, type = 'grad', values = randomVector(N, 9)) {
  const p = pack(values, enc, { chunk: 16 });
  const base = type === 'grad'
    ? { type, from: 'b', term: 1, version: 2, step: 2, loss: 1.5, samples: 8 }
    : { type, from: 'a', term: 1, version: 3, step: 3, go: true, members: ['a', 'b'], base: 2, hash: 'deadbeef' };
  return { ...base, enc: p.enc, n: p.n, ...(p.chunk ? { chunk: p.chunk } : {}), payload: p.payload };
}

function receive(buf, paramCount = N) {
  let msg;
  try {
    msg = decodeMessage(buf);
  } catch (err) {
    if (err instanceof WireError) return { wire: err };
    throw err;
  }
  try {
    validate(msg, paramCount);
  } catch (err) {
    if (err instanceof Invalid) return { invalid: err };
    throw err;
  }
  return { msg };
}

test('wire: packed buckets and params round-trip; bad encodings, counts, chunks and lengths are rejected cleanly', () => {
  for (const enc of ['f16', 'int8']) {
    for (const type of ['grad', 'params']) {
      const m = packedMsg(enc, type);
      const buf = encodeMessage(m);
      const { msg } = receive(buf);
      assert.ok(msg, `${enc} ${type}`);
      assert.ok(msg.payload instanceof Uint8Array);
      assert.deepEqual(unpack(msg), unpack(m));
      assert.equal(buf.byteLength % 4, 0);
    }
  }
  const h = (over) => {
    const { payload, ...rest } = packedMsg('int8');
    return { header: { ...rest, ...over }, payload };
  };
  const wireBad = [
    h({ enc: 'int4' }), h({ enc: 7 }), h({ enc: { toString: 1 } }), h({ enc: null }),
    h({ n: 41 }), h({ n: 39 }), h({ n: 0 }), h({ n: -1 }), h({ n: 1.5 }), h({ n: '40' }), h({ n: 2 ** 60 }),
    h({ chunk: 15 }), h({ chunk: 8 }), h({ chunk: 2 ** 20 }), h({ chunk: undefined }),
    { header: h({}).header, payload: new Uint8Array(h({}).payload.length + 4) },
    { header: h({}).header, payload: new Uint8Array(h({}).payload.length - 4) },
    { header: h({}).header, payload: null },
    { header: { ...packedMsg('f16').header, chunk: 16 }, payload: packedMsg('f16').payload },
  ];
  for (const { header, payload } of wireBad) {
    let buf;
    try {
      buf = encode(header, payload);
    } catch (err) {
      assert.ok(err instanceof WireError, err.message);
      continue;
    }
    const got = receive(buf);
    const what = JSON.stringify(header, (k, v) => (k === 'payload' ? undefined : v));
    // n = 39 pads to the bytes of 40: well formed on the wire, refused by validate for the model's 40
    if (header.n === 39) assert.equal(got.invalid?.kind, 'malformed', what);
    else assert.ok(got.wire && got.wire.code === 'malformed', `${what}: ${JSON.stringify(Object.keys(got))}`);
  }
  // a Uint8Array payload is only for a header that names a packed encoding; f32 stays a Float32Array
  assert.throws(() => encode({ type: 'grad' }, new Uint8Array(8)), WireError);
  assert.throws(() => encode({ type: 'grad', enc: 'int8' }, new Float32Array(2)), WireError);
  assert.throws(() => encode({ type: 'grad', enc: 'int8' }, new Uint8Array(5)), WireError);
  // an enc of 'f32' is plain f32
  const f32 = receive(encode({ ...packedMsg('int8'), payload: undefined, enc: 'f32', n: undefined, chunk: undefined }, randomVector(N, 4)));
  assert.ok(f32.msg && f32.msg.payload instanceof Float32Array);
});

test('validate: NaN / Infinity scales and halves are nonFinite, a count above the model oversized, and the sender is known', () => {
  for (const bad of [NaN, Infinity, -Infinity]) {
    const m = packedMsg('int8');
    new Float32Array(m.payload.buffer, 0, 3)[1] = bad;
    const got = receive(encodeMessage(m));
    assert.equal(got.invalid?.kind, 'nonFinite', `scale ${bad}`);
    assert.match(got.invalid.message, /int8 scale 1 is/);
  }
  const neg = packedMsg('int8');
  new Float32Array(neg.payload.buffer, 0, 3)[0] = -1;
  assert.equal(receive(encodeMessage(neg)).invalid?.kind, 'malformed');
  const v = randomVector(N, 9);
  v[7] = NaN;
  assert.equal(receive(encodeMessage(packedMsg('f16', 'grad', v))).invalid?.kind, 'nonFinite');
  v[7] = Infinity;
  assert.equal(receive(encodeMessage(packedMsg('int8', 'grad', v))).invalid?.kind, 'nonFinite', 'an infinite value makes its chunk\'s scale NaN');
  assert.equal(receive(encodeMessage(packedMsg('f16')), N - 1).invalid?.kind, 'oversized');
  assert.equal(receive(encodeMessage(packedMsg('f16')), N + 1).invalid?.kind, 'malformed');
  // the same checks hold for messages that never went through the wire (an object-mode hub)
  assert.throws(() => validate({ ...packedMsg('int8'), payload: new Float32Array(14) }, N), (e) => e.kind === 'malformed');
  assert.throws(() => validate({ ...packedMsg('int8'), chunk: 32 }, N), (e) => e.kind === 'malformed');
  assert.throws(() => validate({ ...packedMsg('f16', 'params'), base: 3 }, N), /base is not below version/);
  assert.throws(() => validate({ ...packedMsg('f16', 'params'), hash: 5 }, N), (e) => e.kind === 'malformed');
  assert.throws(() => validate({ ...packedMsg('f16', 'params'), excluded: [{ id: 'x' }] }, N), (e) => e.kind === 'malformed');
  validate({ ...packedMsg('f16', 'params'), excluded: [{ id: 'x', reason: 'sent NaN' }] }, N);
  assert.throws(() => packedLayout({ enc: 'int8', n: 10, chunk: 16 }, 12), /16 bytes, got 12/);
});

// ---- stub cohorts ---------------------------------------------------------------------

function cohort(enc, { ranks = 5, dim = 1024, wire = true, drop = null, policy = { quorumFraction: 1 } } = {}) {
  const sim = new SimCohort({ dim, hub: { delayMs: 2, wire, drop }, rank: { lr: 0.05, settings: enc ? { enc } : {}, policy } });
  for (let i = 0; i < ranks; i++) sim.add(`r${i}`, { batch: 32 });
  return sim;
}

function assertSameBytes(sim) {
  const [first, ...rest] = sim.live();
  for (const r of rest) {
    assert.equal(r.version, first.version);
    assert.ok(bytesOf(r.params).equals(bytesOf(first.params)), `${r.id} params differ from ${first.id}`);
  }
}

test('stub cohort of 5: f16 and int8 buckets and deltas, every rank the same bytes after every step, loss like f32, 2x / 4x fewer bytes', async () => {
  const results = {};
  for (const enc of [undefined, 'f16', 'int8', 'auto']) {
    const sim = cohort(enc);
    await sim.until(() => sim.converged() && sim.leader().step >= 1);
    const leader = sim.leader();
    const sameVersion = () => sim.live().every((r) => r.version === leader.version);
    const follower = sim.live().find((r) => r !== leader);
    const out0 = { ...Object.fromEntries(sim.live().map((r) => [r.id, r.bus.stats.bytesOut])) };
    const step0 = leader.step;
    for (let s = 0; s < 60; s++) {
      const target = leader.step + 1;
      await sim.until(() => leader.step >= target && sameVersion(), 60_000, 1);
      assertSameBytes(sim);
    }
    const steps = leader.step - step0;
    results[enc ?? 'none'] = {
      loss: leader.history.slice(-5).reduce((s, h) => s + h.loss, 0) / 5,
      first: leader.history[0].loss,
      follower: (follower.bus.stats.bytesOut - out0[follower.id]) / steps,
      leader: (leader.bus.stats.bytesOut - out0[leader.id]) / steps,
      resyncs: sim.live().reduce((s, r) => s + r.stats.resyncs, 0),
    };
    for (const r of sim.live()) assert.equal(r.stats.handlerErrors, 0);
    sim.stopAll();
  }
  const f32 = results.none;
  console.log(`stub cohort (1024 values): bytes per step, follower / leader: ${Object.entries(results)
    .map(([k, v]) => `${k} ${v.follower.toFixed(0)} / ${v.leader.toFixed(0)}`).join(', ')}`);
  for (const [k, v] of Object.entries(results)) {
    assert.ok(v.loss < v.first / 3, `${k}: the loss fell from ${v.first} to only ${v.loss}`);
    assert.ok(Math.abs(v.loss - f32.loss) <= 0.05 * f32.loss + 1e-3, `${k}: loss ${v.loss} vs f32 ${f32.loss}`);
    assert.equal(v.resyncs, 0, `${k}: no rank should have needed a resync`);
  }
  // heartbeats are a few hundred bytes a step; buckets dominate
  assert.ok(results.f16.follower < 0.6 * f32.follower && results.f16.follower > 0.45 * f32.follower, JSON.stringify(results));
  assert.ok(results.int8.follower < 0.32 * f32.follower, JSON.stringify(results));
  assert.ok(results.int8.leader < 0.32 * f32.leader, JSON.stringify(results));
  assert.ok(Math.abs(results.auto.follower - results.int8.follower) < 0.02 * results.int8.follower, 'auto is int8 at 5 ranks');
  // 3 ranks on auto stay f32
  const three = cohort('auto', { ranks: 3 });
  await three.until(() => three.converged() && three.leader().step >= 3);
  const sent = [];
  three.live()[1].bus.onMessage(() => {});
  const origSend = three.leader().bus.send.bind(three.leader().bus);
  three.leader().bus.send = (to, msg) => {
    sent.push(msg);
    return origSend(to, msg);
  };
  await three.until(() => three.leader().step >= 6);
  assert.ok(sent.some((m) => m.type === 'params') && sent.every((m) => m.enc === undefined), 'three ranks on auto send f32');
  three.stopAll();
});

test('a follower that misses a compressed delta asks for the full params and ends with the same bytes', async () => {
  let dropped = 0;
  // drop every 7th params broadcast to r3 (with the object hub, 'to' is known per recipient)
  let seen = 0;
  const drop = (from, to, msg) => {
    if (to === 'r3' && msg.type === 'params' && msg.base !== undefined && ++seen % 7 === 0) {
      dropped++;
      return true;
    }
    return false;
  };
  // the default quorum (3 of 5): the cohort steps on without r3, whose next delta then has a base it lacks
  const sim = cohort('int8', { wire: false, drop, policy: {} });
  await sim.until(() => sim.converged() && sim.leader().step >= 60, 120_000);
  sim.leader().maxSteps = sim.leader().step; // no more steps: everyone ends on the last broadcast
  await sim.until(() => sim.synced(), 10_000);
  assert.ok(dropped >= 3, `only ${dropped} deltas dropped`);
  const r3 = sim.get('r3');
  assert.ok(r3.stats.resyncs >= 1, 'r3 asked for the full params');
  assertSameBytes(sim);
  sim.stopAll();
});

test('in a tree step (forced: treeAbove 0, fanout 2) int8 deltas are relayed down as they are: 9 ranks, the same bytes', async () => {
  const sim = new SimCohort({ dim: 300, hub: { delayMs: 2, wire: true }, rank: { lr: 0.05, settings: { enc: 'int8' }, policy: { treeAbove: 0, fanout: 2 } } });
  for (let i = 0; i < 9; i++) sim.add(`r${i}`, { batch: 16 });
  await sim.until(() => sim.converged() && sim.leader().step >= 30, 120_000);
  const l = sim.leader();
  l.maxSteps = l.step;
  await sim.until(() => sim.synced(), 10_000);
  assert.equal(l.history[l.history.length - 1].topology, 'tree');
  assert.ok(l.history[l.history.length - 1].loss < l.history[0].loss / 2);
  assertSameBytes(sim);
  for (const r of sim.live()) assert.equal(r.stats.handlerErrors, 0);
  sim.stopAll();
});
