// web_fatal.test.mjs - the fatal-error hook of web/pkg/rlx_web.js (the
// spec's `start`): a trap inside wasm (provoked here through a raw export
// given a pointer outside memory, which the public API never passes) is
// reported on console.error with a clear message and surfaces as an
// RlxError; the dead instance refuses further calls with a clear error;
// init() then loads a fresh, working instance.  Separate file: it kills the
// module instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import init, * as rlx from '../../web/pkg/rlx_web.js';

const skip = !existsSync(new URL('../../web/pkg/rlx_web.wasm', import.meta.url));

test('a wasm trap is routed to console.error and the instance is replaced by init()', { skip }, async () => {
  const first = await init();
  const logged = [];
  const original = console.error;
  console.error = (...args) => logged.push(args.join(' '));
  let err;
  try {
    first.exports.rlx_graph_status(0xfffffff0); // reads far outside wasm memory: traps
  } catch (e) {
    err = e;
  } finally {
    console.error = original;
  }
  assert.ok(err instanceof rlx.RlxError, `expected an RlxError, got ${err}`);
  assert.equal(err.status, -100);
  assert.equal(err.statusName, 'fatal');
  assert.ok(err.cause instanceof WebAssembly.RuntimeError, 'the original trap is kept as the cause');
  assert.match(err.message, /fatal error inside the wasm module \(in rlx_graph_status\)/);
  assert.match(err.message, /init\(\)/);
  assert.equal(logged.length, 1, 'reported exactly once on console.error');
  assert.match(logged[0], /rlx_web: fatal error inside the wasm module/);
  assert.match(logged[0], /memory access out of bounds|out of bounds/);

  // The dead instance refuses work (it may be corrupt) with a clear message.
  assert.throws(() => rlx.list_vision_models(), /fatal error earlier.*init\(\)/);
  assert.throws(() => first.graph(), /fatal error earlier/);
  assert.throws(() => rlx.runtime(), /fatal error earlier/);

  const second = await init();
  assert.notEqual(second, first, 'init() after a fatal error loads a fresh instance');
  assert.equal(await init(), second, 'and is idempotent again');
  assert.deepEqual(rlx.list_vision_models(), ['mnist-cnn', 'mnist-mlp', 'cifar-cnn', 'resnet']);
  const y = rlx.mlp_forward([1, 2], 2, 1, 1, [1, 1], [0], [2], [1]);
  assert.deepEqual(Array.from(y), [7]);
});
