// page_modules.test.mjs - the pages' small modules in Node: optim.js's
// optimizers against a float64 reference written from their definitions
// (SGD, heavy-ball momentum, bias-corrected Adam) and on a quadratic they
// must minimise; fields.js's rules refuse what is not a valid value instead
// of changing it; software-gpu.js's warning writes its times as plain
// numbers at every size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeOptimizer, OPTIMIZERS } from '../../web/optim.js';
import { intRule, numberRule, choiceRule } from '../../web/fields.js';
import { slowdownText } from '../../web/software-gpu.js';

function reference(kind, lr, steps, p0, grad) {
  const p = Float64Array.from(p0), v = new Float64Array(p.length), m = new Float64Array(p.length);
  for (let t = 1; t <= steps; t++) {
    const g = grad(p);
    for (let i = 0; i < p.length; i++) {
      if (kind === 'sgd') p[i] -= lr * g[i];
      else if (kind === 'momentum') { v[i] = 0.9 * v[i] + g[i]; p[i] -= lr * v[i]; }
      else {
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
        p[i] -= (lr * m[i] / (1 - 0.9 ** t)) / (Math.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8);
      }
    }
  }
  return p;
}

// f(p) = sum c_i (p_i - t_i)^2, gradient 2 c_i (p_i - t_i)
const c = [1, 3, 0.5, 2], target = [1, -2, 0.5, 3];
const grad = (p) => Array.from(p, (x, i) => 2 * c[i] * (x - target[i]));

test('optim.js: each optimizer equals its float64 reference and minimises a quadratic', () => {
  for (const [kind, lr, steps] of [['sgd', 0.05, 200], ['momentum', 0.02, 200], ['adam', 0.05, 400]]) {
    const p = new Float32Array([0, 0, 0, 0]);
    const opt = makeOptimizer({ kind, lr }, p.length);
    for (let s = 0; s < 5; s++) opt.step(p, Float32Array.from(grad(p)));
    const want = reference(kind, lr, 5, [0, 0, 0, 0], grad);
    p.forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 1e-5, `${kind} step 5 param ${i}: ${v} vs ${want[i]}`));
    for (let s = 5; s < steps; s++) opt.step(p, Float32Array.from(grad(p)));
    p.forEach((v, i) => assert.ok(Math.abs(v - target[i]) < 0.02, `${kind} did not converge: p[${i}] = ${v}`));
  }
  assert.deepEqual(Object.keys(OPTIMIZERS), ['sgd', 'momentum', 'adam']);
});

test('optim.js: bad settings are refused, not defaulted', () => {
  assert.throws(() => makeOptimizer({ kind: 'rmsprop', lr: 0.1 }, 1), /optimizer must be one of sgd, momentum, adam/);
  assert.throws(() => makeOptimizer({ kind: 'toString', lr: 0.1 }, 1), /optimizer must be one of/);
  for (const lr of [0, -1, NaN, Infinity, undefined]) assert.throws(() => makeOptimizer({ kind: 'sgd', lr }, 1), /learning rate must be a number > 0/);
});

test('fields.js: rules give the value or a message, never a changed value', () => {
  const int = intRule(0, 10);
  assert.deepEqual(int('7'), { value: 7 });
  assert.deepEqual(int(' 3 '), { value: 3 });
  assert.match(int('').error, /enter an integer from 0 to 10/);
  assert.match(int('-5').error, /-5 is outside 0 to 10/);
  assert.match(int('1e30').error, /outside/);
  assert.match(int('2.5').error, /"2.5" is not an integer/);
  assert.match(int('abc').error, /"abc" is not an integer/);
  const num = numberRule({ gt: 0, max: 1e9 });
  assert.deepEqual(num('0.001'), { value: 0.001 });
  assert.match(num('').error, /enter a number/);
  assert.match(num('0').error, /greater than 0/);
  assert.match(num('-1').error, /greater than 0/);
  assert.match(num('1e10').error, /at most 1000000000/);
  assert.match(num('NaN').error, /not a number/);
  assert.match(num('Infinity').error, /not a number/);
  const pick = choiceRule(['cpu', 'webgl']);
  assert.deepEqual(pick('webgl'), { value: 'webgl' });
  assert.match(pick('bogus').error, /"bogus" is not one of cpu, webgl/);
  const select = { options: [{ value: 'a', disabled: false }, { value: 'b', disabled: true }] };
  assert.deepEqual(choiceRule()('a', select), { value: 'a' });
  assert.match(choiceRule()('b', select).error, /"b" is not one of a$/, 'a disabled option is not a choice');
});

test('software-gpu.js: the warning writes each time as a plain number (no exponent at 99.5 .. 100 ms)', () => {
  for (const [gpuMs, cpuMs, want] of [[99.97, 1.7, '100 ms on it and 1.7 ms'], [99.4, 0.5, '99 ms on it and 0.50 ms'],
    [1234.5, 12.3, '1235 ms on it and 12 ms'], [3.14159, 250, '3.1 ms on it and 250 ms']]) {
    const text = slowdownText({ backend: 'webgpu', software: 'SwiftShader', what: 'a training step', gpuMs, cpuMs,
      ratio: gpuMs / cpuMs }, 'Pick cpu.');
    assert.ok(text.includes(`took ${want} on the CPU`), text);
    assert.doesNotMatch(text, /e[+-]\d/, text);
  }
});
