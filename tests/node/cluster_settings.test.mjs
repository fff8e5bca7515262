// cluster_settings.test.mjs - web/cluster/settings.js, the one check of what a
// user may ask of cluster.html (form, URL, and again in the Worker): good
// values parse; every bad one gives a sentence naming the setting and its
// range; room ids and passwords are checked; newRoom() makes URL-safe ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSettings, checkScale, newRoom, LIMITS, SCALE_DEFAULTS } from '../../web/cluster/settings.js';

const models = ['mnist-cnn', 'mnist-mlp'];
const good = { model: 'mnist-cnn', backend: 'auto', batch: '32', lr: '0.1', steps: '0', min: '1' };

test('good settings parse to numbers', () => {
  const { settings, errors } = checkSettings(good, { models });
  assert.deepEqual(errors, []);
  assert.deepEqual(settings, { model: 'mnist-cnn', backend: 'auto', batch: 32, lr: 0.1, steps: 0, min: 1, room: '', password: '', scale: { ...SCALE_DEFAULTS } });
  assert.deepEqual(checkSettings({ ...good, lr: '1e9', batch: 512, steps: '20' }, { models }).errors, []);
});

test('every bad value is refused with the setting and its range', () => {
  const cases = [
    [{ batch: '100000' }, /^batch per rank: "100000" is not a whole number from 1 to 512$/],
    [{ batch: '2.5' }, /batch per rank/],
    [{ batch: '' }, /batch per rank: "" is not/],
    [{ lr: '-1' }, /^learning rate: "-1" is not a number above 0 and at most 1e\+9$/],
    [{ lr: '0' }, /learning rate/],
    [{ lr: '' }, /learning rate: ""/],
    [{ lr: 'abc' }, /learning rate/],
    [{ lr: '1e10' }, /learning rate/],
    [{ steps: '-3' }, /^stop at step: "-3" is not a whole number from 0/],
    [{ min: '0' }, /^ranks to wait for/],
    [{ model: 'nonsense' }, /^model: "nonsense" is not one of mnist-cnn, mnist-mlp$/],
    [{ backend: 'bogus' }, /^backend: "bogus" is not one of auto, cpu, webgpu, webgl$/],
    [{ room: 'a b' }, /^room: a room id is 4 to 64/],
    [{ password: 'x'.repeat(300) }, /^room password: at most 256/],
  ];
  for (const [change, want] of cases) {
    const { errors } = checkSettings({ ...good, ...change }, { models });
    assert.equal(errors.length, 1, JSON.stringify(change));
    assert.match(errors[0], want);
  }
  assert.equal(checkSettings({}, { models }).errors.length, 3, 'model, batch and lr are required');
  assert.equal(LIMITS.batch[1], 512);
});

test('newRoom gives a valid room id and password', () => {
  const a = newRoom();
  const b = newRoom();
  assert.notEqual(a.room, b.room);
  assert.deepEqual(checkSettings({ ...good, ...a }, { models }).errors, []);
  assert.match(a.password, /^[0-9a-f]{24}$/);
});

test('sync settings: defaults, good values, and a sentence for every bad one', () => {
  assert.deepEqual(checkScale({}), { scale: { ...SCALE_DEFAULTS }, errors: [] });
  assert.equal(SCALE_DEFAULTS.enc, 'auto');
  assert.equal(SCALE_DEFAULTS.sync, 'lockstep');
  assert.equal(SCALE_DEFAULTS.agg, 'mean');
  const good = checkScale({ enc: 'int8', sync: 'periodic', H: '16', outerLr: '0.5', outerMomentum: '0', agg: 'trimmed', clip: '3', clipMax: '100', strikes: '2' });
  assert.deepEqual(good, { scale: { enc: 'int8', sync: 'periodic', H: 16, outerLr: 0.5, outerMomentum: 0, agg: 'trimmed', clip: 3, clipMax: 100, strikes: 2 }, errors: [] });
  const cases = [
    [{ enc: 'f64' }, /^encoding: "f64" is not one of auto, f32, f16, int8$/],
    [{ sync: 'sometimes' }, /^sync: "sometimes" is not one of lockstep, periodic$/],
    [{ H: '0' }, /^local steps H: "0" is not a whole number from 1 to 1,000$/],
    [{ H: '2.5' }, /^local steps H/],
    [{ outerLr: '0' }, /^outer learning rate: "0" is not a number above 0 and at most 10$/],
    [{ outerMomentum: '1' }, /^outer momentum: "1" is not a number from 0 to 0.999$/],
    [{ agg: 'mode' }, /^aggregation: "mode" is not one of mean, trimmed, median$/],
    [{ clip: '-1' }, /^clip \(x median norm\): "-1" is not a number from 0/],
    [{ clipMax: 'NaN' }, /^clip \(largest norm\)/],
    [{ strikes: '0' }, /^strikes: "0" is not a whole number from 1/],
    [{ enc: { toString: 1 } }, /^encoding: "\(object\)" is not one of/],
    [{ clip: { valueOf: 1 } }, /^clip \(x median norm\): "object" is not a number/],
  ];
  for (const [change, want] of cases) {
    const { errors } = checkScale(change);
    assert.equal(errors.length, 1, JSON.stringify(change));
    assert.match(errors[0], want);
    assert.equal(checkSettings({ model: 'mnist-cnn', batch: 1, lr: 1, ...change }, { models }).errors.length, 1);
  }
});
