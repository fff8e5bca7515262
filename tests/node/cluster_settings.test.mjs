// cluster_settings.test.mjs - web/cluster/settings.js, the one check of what a
// user may ask of cluster.html (form, URL, and again in the Worker): good
// values parse; every bad one gives a sentence naming the setting and its
// range; room ids and passwords are checked; newRoom() makes URL-safe ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSettings, newRoom, LIMITS } from '../../web/cluster/settings.js';

const models = ['mnist-cnn', 'mnist-mlp'];
const good = { model: 'mnist-cnn', backend: 'auto', batch: '32', lr: '0.1', steps: '0', min: '1' };

test('good settings parse to numbers', () => {
  const { settings, errors } = checkSettings(good, { models });
  assert.deepEqual(errors, []);
  assert.deepEqual(settings, { model: 'mnist-cnn', backend: 'auto', batch: 32, lr: 0.1, steps: 0, min: 1, room: '', password: '' });
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
