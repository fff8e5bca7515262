// cluster_periodic.test.mjs - web/cluster/periodic.js: a rank's H local
// optimizer steps (SGD, momentum, Adam with state kept across rounds) and the
// leader's outer step (Nesterov / heavy ball); H = 1 with an outer SGD step of
// lr 1 is the lockstep update; and a stub cohort (web/cluster/sim.js) in
// periodic mode converges on the least-squares task with about 1/H of the
// lockstep traffic per training sample, every rank holding the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalSteps, outerStep } from '../../web/cluster/periodic.js';
import { sgd } from '../../web/cluster/reduce.js';
import { SimCohort, rng, shardGradient } from '../../web/cluster/sim.js';

const bytesOf = (f32) => Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);

function vec(n, seed) {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => r() - 0.5);
}

test('local steps: H SGD steps from the params, the delta params - local, mean loss, summed samples', async () => {
  const p0 = vec(32, 1);
  const steps = [vec(32, 2), vec(32, 3), vec(32, 4)];
  const local = new LocalSteps();
  const out = await local.run(p0, { H: 3, lr: 0.1, optimizer: 'sgd', grads: (p, h) => ({ grads: steps[h], loss: h + 1, samples: h === 2 ? 2 : 1 }) });
  let want = p0;
  for (const g of steps) want = sgd(want, g, 0.1);
  for (let i = 0; i < 32; i++) assert.ok(Math.abs(out.grads[i] - (p0[i] - want[i])) < 1e-6);
  assert.equal(out.samples, 4);
  assert.equal(out.loss, (1 + 2 + 3 * 2) / 4);
  assert.deepEqual(p0, vec(32, 1), 'the cohort params are not touched');
  // an async gradient (a WebGPU rank) works the same
  const again = await new LocalSteps().run(p0, { H: 3, lr: 0.1, grads: (p, h) => Promise.resolve({ grads: steps[h], loss: 1, samples: 1 }) });
  assert.deepEqual(again.grads, out.grads);
  await assert.rejects(() => local.run(p0, { H: 0, lr: 0.1, grads: () => null }), /H must be a positive integer/);
  await assert.rejects(() => local.run(p0, { H: 1, lr: 0.1, optimizer: 'lion', grads: () => null }), /optimizer must be one of/);
  await assert.rejects(() => local.run(p0, { H: 1, lr: 0.1, grads: () => ({ grads: new Float32Array(3), loss: 1, samples: 1 }) }), /model size/);
});

test('local steps: momentum and Adam keep their state from one round to the next', async () => {
  const g = Float32Array.from({ length: 4 }, (_, i) => i + 1);
  const grads = () => ({ grads: g, loss: 1, samples: 1 });
  const p0 = new Float32Array(4);
  const adam = new LocalSteps();
  const a1 = await adam.run(p0, { H: 1, lr: 0.01, optimizer: 'adam', grads });
  // first Adam step: the bias-corrected update is lr * sign(g)
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(a1.grads[i] - 0.01) < 1e-6, `adam step 1: ${a1.grads[i]}`);
  await adam.run(p0, { H: 1, lr: 0.01, optimizer: 'adam', grads });
  assert.equal(adam.state.t, 2, 'the step count carries over');
  const mom = new LocalSteps();
  const m1 = await mom.run(p0, { H: 1, lr: 0.1, optimizer: 'momentum', grads });
  const m2 = await mom.run(p0, { H: 1, lr: 0.1, optimizer: 'momentum', grads });
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(m2.grads[i] - 1.9 * m1.grads[i]) < 1e-5, 'the velocity carries over (0.9 v + g)');
  await mom.run(p0, { H: 1, lr: 0.1, optimizer: 'sgd', grads });
  assert.equal(mom.state.optimizer, 'sgd', 'another optimizer starts fresh');
});

test('outer step: Nesterov and heavy ball; H = 1 with outer lr 1 and no momentum is the lockstep SGD step', async () => {
  const p = vec(16, 5);
  const d = [vec(16, 6), vec(16, 7), vec(16, 8)];
  const nes = outerStep({ lr: 0.7, momentum: 0.9, nesterov: true });
  const hb = outerStep({ lr: 0.7, momentum: 0.9, nesterov: false });
  let pn = p;
  let ph = p;
  const v = new Float64Array(16);
  const wantN = Float64Array.from(p);
  const wantH = Float64Array.from(p);
  for (const delta of d) {
    pn = nes(pn, delta);
    ph = hb(ph, delta);
    for (let i = 0; i < 16; i++) {
      v[i] = 0.9 * v[i] + delta[i];
      wantN[i] -= 0.7 * (delta[i] + 0.9 * v[i]);
      wantH[i] -= 0.7 * v[i];
    }
  }
  for (let i = 0; i < 16; i++) {
    assert.ok(Math.abs(pn[i] - wantN[i]) < 1e-5, `nesterov ${i}`);
    assert.ok(Math.abs(ph[i] - wantH[i]) < 1e-5, `heavy ball ${i}`);
  }
  // H = 1: the same update as the lockstep protocol's SGD, up to f32 rounding of the delta
  const g = vec(16, 9);
  const one = await new LocalSteps().run(p, { H: 1, lr: 0.1, grads: () => ({ grads: g, loss: 1, samples: 1 }) });
  const got = outerStep({ lr: 1, momentum: 0 })(p, one.grads);
  const want = sgd(p, g, 0.1);
  for (let i = 0; i < 16; i++) assert.ok(Math.abs(got[i] - want[i]) <= 1e-7, `${got[i]} vs ${want[i]}`);
  // options may be read at every call
  let lr = 1;
  const live = outerStep({ lr: () => lr, momentum: 0 });
  const a = live(p, g);
  lr = 0;
  assert.deepEqual(live(a, g), a);
});

/** A stub cohort of 5; periodic with H local steps when H > 0, else lockstep. */
async function train(H, samplesWanted) {
  const batch = 8;
  const lr = 0.05;
  const sim = new SimCohort({ dim: 256, hub: { delayMs: 2, wire: true }, rank: { lr, policy: { quorumFraction: 1 } } });
  for (let i = 0; i < 5; i++) {
    const id = `r${i}`;
    const local = new LocalSteps();
    const outer = outerStep({ lr: 0.7, momentum: 0.5 });
    const opts = H > 0
      ? {
        compute: (p, _v, ctx) => local.run(p, { H, lr, grads: (q, h) => shardGradient(q, id, ctx.step * H + h, batch) }),
        update: (p, d) => outer(p, d),
        settings: { sync: 'periodic', H },
      }
      : { batch };
    sim.add(id, opts);
  }
  await sim.until(() => sim.converged() && sim.leader().step >= 1);
  const l = sim.leader();
  const bytes0 = sim.live().reduce((s, r) => s + r.bus.stats.bytesOut, 0);
  const samples0 = l.history.reduce((s, h) => s + h.samples, 0);
  await sim.until(() => l.history.reduce((s, h) => s + h.samples, 0) >= samplesWanted + samples0, 600_000);
  l.maxSteps = l.step;
  await sim.until(() => sim.live().every((r) => r.version === l.version), 10_000);
  const samples = l.history.reduce((s, h) => s + h.samples, 0) - samples0;
  const bytes = sim.live().reduce((s, r) => s + r.bus.stats.bytesOut, 0) - bytes0;
  const out = { bytesPerSample: bytes / samples, loss: shardGradient(l.params, 'eval', 0, 512).loss, first: l.history[0].loss, steps: l.step, ranks: sim.live() };
  sim.stopAll();
  return out;
}

test('stub cohort: periodic averaging (H = 8) converges like lockstep with about 1/8 of the traffic per sample', async () => {
  const lock = await train(0, 8000);
  const per = await train(8, 8000);
  console.log(`stub cohort, 8,000 samples: lockstep ${lock.bytesPerSample.toFixed(1)} B/sample (loss ${lock.loss.toFixed(4)}), ` +
    `periodic H=8 ${per.bytesPerSample.toFixed(1)} B/sample (loss ${per.loss.toFixed(4)})`);
  assert.ok(lock.loss < lock.first / 10, `lockstep did not converge: ${lock.first} -> ${lock.loss}`);
  assert.ok(per.loss < per.first / 10, `periodic did not converge: ${per.first} -> ${per.loss}`);
  assert.ok(per.loss < 2 * lock.loss + 1e-3, `periodic ${per.loss} vs lockstep ${lock.loss}`);
  const ratio = per.bytesPerSample / lock.bytesPerSample;
  assert.ok(ratio < 1 / 5 && ratio > 1 / 12, `traffic per sample: periodic / lockstep = ${ratio}`);
  const [first, ...rest] = per.ranks;
  for (const r of rest) assert.ok(bytesOf(r.params).equals(bytesOf(first.params)), `${r.id} holds other params`);
});
