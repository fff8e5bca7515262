// pages.test.mjs - web/index.html and web/vision-bench.html in Debian's
// chromium (headless, playwright-core) served by tools/serve.py: both load
// with no console errors, failed requests or uncaught exceptions; a training
// run on index.html lowers the loss and shows exactly the losses that the
// same calls give in Node; the vision bench runs in its Worker, shows the
// forward logits that Node computes, lowers the loss, stays responsive
// during a long run and stops on request, trains mnist-mlp on Fashion-MNIST
// with the test accuracy plotted while it runs, the training rate and the
// whole run's wall time (evaluations included) shown apart, and refuses data
// it cannot use; WebGPU picked by name on SwiftShader is warned about with
// its slowdown against the CPU, measured in the run; index.html lists every
// backend that works here; the pages fit a phone's width and keep an ASCII
// prologue.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { startServer, launch, newPage, valueOf, missing, REPO, screenshot } from './helpers.mjs';
import init, * as rlx from '../../web/pkg/rlx_web.js';
import { makeTask, splitParams } from '../../web/demo-task.js';

const why = missing();
let server;
let browser;

before(async () => {
  if (why) return;
  await init();
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

function closeTo(got, want, what, tol = 1e-6) {
  assert.ok(Math.abs(got - want) <= tol * (1 + Math.abs(want)), `${what}: page ${got} != node ${want}`);
}

/** True when the canvas has some non-white pixels (something was drawn). */
function drawn(page, selector) {
  return page.$eval(selector, (c) => {
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < data.length; i += 4) if (data[i + 3] && (data[i] < 200 || data[i + 2] < 200)) return true;
    return false;
  });
}

test('pages: ASCII before <head>, local references exist', () => {
  for (const page of ['index.html', 'train.html', 'vision-bench.html', 'cluster.html', 'finetune.html']) {
    const bytes = readFileSync(`${REPO}web/${page}`);
    const head = bytes.indexOf('<head');
    assert.ok(head > 0, `${page}: no <head>`);
    const bad = bytes.subarray(0, head).findIndex((b) => b > 0x7f);
    assert.equal(bad, -1, `${page}: non-ASCII byte at ${bad}, before <head>`);
    const html = bytes.toString('utf8');
    for (const [, ref] of html.matchAll(/(?:src|href)="\.\/([^"#?]+)"/g)) {
      assert.ok(existsSync(`${REPO}web/${ref}`), `${page} refers to missing ${ref}`);
    }
  }
});

test('index.html trains the MLP: the loss falls and matches Node', { skip: why ?? false, timeout: 90000 }, async () => {
  const { page, problems } = await newPage(browser);
  const steps = 300;
  await page.goto(`${server.url}index.html?steps=${steps}`);
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('status').textContent),
    null, { timeout: 20000 });
  assert.equal(await page.textContent('#status'), 'done', await page.textContent('#error'));
  assert.deepEqual(problems, []);

  const lr = Number(await page.$eval('#lr', (el) => el.value));
  const task = makeTask(1);
  const [i, h, o] = task.dims;
  let p = { w1: task.w1, b1: task.b1, w2: task.w2, b2: task.b2 };
  const loss0 = rlx.mlp_loss(task.x, task.t, i, h, o, p.w1, p.b1, p.w2, p.b2);
  for (let s = 0; s < steps; s++) p = splitParams(rlx.mlp_train_step(task.x, task.t, i, h, o, p.w1, p.b1, p.w2, p.b2, lr));
  const loss = rlx.mlp_loss(task.x, task.t, i, h, o, p.w1, p.b1, p.w2, p.b2);

  assert.equal(Number(await valueOf(page, '#step')), steps);
  closeTo(Number(await valueOf(page, '#loss0')), loss0, 'initial loss');
  closeTo(Number(await valueOf(page, '#loss')), loss, `loss after ${steps} steps`);
  assert.equal(await page.textContent('#loss'), loss.toPrecision(7));
  assert.ok(loss < loss0 / 4, `the loss did not fall enough: ${loss0} -> ${loss}`);
  assert.ok(await drawn(page, '#loss-chart'), 'loss chart is blank');
  assert.ok(await drawn(page, '#fit-chart'), 'fit chart is blank');
  assert.equal(await page.textContent('#backend'), 'cpu');
  // Every backend that can run here, the software renderers named (SwiftShader here).
  await page.waitForSelector('#preferred[data-state]', { timeout: 30000 });
  assert.equal(await page.textContent('#preferred'),
    'cpu, webgpu (SwiftShader, a software renderer), webgl (SwiftShader, a software renderer)');
  assert.doesNotMatch(await page.textContent('body'), /not in this build/);
  // A pause, not an end: Train goes on for another `steps`.
  assert.equal(await page.textContent('#train'), 'Train on');
  await page.click('#train');
  await page.waitForFunction((n) => document.getElementById('status').textContent === 'done' &&
    Number(document.getElementById('step').dataset.value) === n, 2 * steps, { timeout: 20000 });
  // A new seed starts over at once: the initial loss is the new task's.
  await page.fill('#seed', '7');
  await page.dispatchEvent('#seed', 'change');
  assert.equal(await valueOf(page, '#step'), '0');
  const t7 = makeTask(7);
  closeTo(Number(await valueOf(page, '#loss0')), rlx.mlp_loss(t7.x, t7.t, ...t7.dims, t7.w1, t7.b1, t7.w2, t7.b2), 'initial loss, seed 7');
  await screenshot(page, 'index');
  await page.close();
});

test('index.html: bad seeds and URL values are refused with a message, never changed', { skip: why ?? false, timeout: 20000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}index.html?seed=1e30&steps=abc`);
  await page.waitForFunction(() => document.getElementById('status').textContent === 'ready', null, { timeout: 10000 });
  const error = await page.textContent('#error');
  assert.match(error, /URL parameter seed=1e30: 1e\+30 is outside 0 to 2147483647/);
  assert.match(error, /URL parameter steps=abc: "abc" is not an integer/);
  await page.waitForTimeout(300);
  assert.equal(await valueOf(page, '#step'), '0', 'nothing ran with values the user did not give');
  for (const [bad, want] of [['-5', /-5 is outside 0 to 2147483647/], ['1.5', /"1.5" is not an integer/]]) {
    await page.fill('#seed', bad);
    await page.dispatchEvent('#seed', 'change');
    assert.match(await page.textContent('#seed-error'), want);
    assert.equal(await page.$eval('#seed', (el) => el.value), bad, 'the box keeps what the user typed');
    await page.click('#train');
    assert.equal(await page.textContent('#status'), 'ready', 'Train does not start with a bad seed');
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('index.html: Pause stops training, Reset starts over', { skip: why ?? false, timeout: 45000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}index.html?steps=1000000`);
  // Bounded far above a loaded machine's time (the GPU cross-check shares the page's thread meanwhile).
  await page.waitForFunction(() => Number(document.getElementById('step').dataset.value) > 50, null, { timeout: 30000 });
  await page.click('#train'); // pause
  assert.equal(await page.textContent('#status'), 'paused');
  const at = Number(await valueOf(page, '#step'));
  await page.waitForTimeout(300);
  assert.equal(Number(await valueOf(page, '#step')), at, 'training went on while paused');
  await page.click('#reset');
  assert.equal(await valueOf(page, '#step'), '0');
  assert.equal(await page.textContent('#status'), 'ready');
  assert.deepEqual(problems, []);
  await page.close();
});

test('vision-bench.html: forward logits match Node, the loss falls, the table fills', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  const batch = 2;
  await page.goto(`${server.url}vision-bench.html?model=mnist-cnn&batch=${batch}&steps=6&autorun=1`);
  await page.waitForFunction(() => ['finished', 'error'].includes(document.getElementById('progress-text').dataset.state),
    null, { timeout: 25000 });
  assert.equal(await page.textContent('#error'), '');
  assert.equal(await page.textContent('#progress-text'), 'mnist-cnn: finished, 6 steps.');
  assert.equal(await page.$eval('#loss-chart', (el) => Number(el.dataset.points)), 6);
  assert.equal(await page.isHidden('#acc-box'), true, 'no accuracy plot on synthetic data');
  assert.deepEqual(problems, []);

  const bench = new rlx.VisionBench('mnist-cnn');
  const params = bench.init_params(42);
  const logits = bench.forward_cpu(bench.synthetic_batch(42, batch).x, params);
  const shown = (await valueOf(page, '#logits')).split(',').map(Number);
  assert.equal(shown.length, 10);
  shown.forEach((v, k) => closeTo(v, logits[k], `logit ${k}`, 1e-5));
  closeTo(Number(await valueOf(page, '#logits-sum')), logits.reduce((a, b) => a + b, 0), 'sum of logits', 1e-5);

  const last = Number(await valueOf(page, '#r-loss'));
  const first = Number(await page.$eval('#r-loss', (el) => el.dataset.first));
  assert.ok(last < first, `loss did not fall: ${first} -> ${last}`);
  assert.ok(Number(await valueOf(page, '#r-steps')) > 0);
  closeTo(Number(await valueOf(page, '#r-samples')), batch * Number(await valueOf(page, '#r-steps')), 'samples/s', 1e-9);
  assert.ok(await drawn(page, '#loss-chart'), 'loss chart is blank');
  assert.equal(await page.$$eval('#table tbody tr', (rows) => rows.map((r) => r.dataset.slug).join()), 'mnist-cnn');
  assert.equal(await page.$$eval('#models tbody tr', (rows) => rows.length), 4);
  // SwiftShader gives the Worker WebGPU and WebGL2: every backend can be picked (web_api_gpu.test.mjs runs them).
  assert.deepEqual(await page.$$eval('#backend option', (os) => os.map((o) => `${o.value}:${o.disabled}`)),
    ['cpu:false', 'webgpu:false', 'webgl:false']);
  assert.equal(await page.$eval('#table tbody tr', (tr) => tr.children[2].textContent), 'cpu');
  assert.match(await page.textContent('#r-threads'), /^\d+ \(.+\)$/, 'the page says how many CPU threads run and why');
  await page.setViewportSize({ width: 1280, height: 900 });
  const [right, edge] = await page.$eval('#table', (t) => [t.getBoundingClientRect().right, t.parentElement.getBoundingClientRect().right]);
  assert.ok(right <= edge + 1, `the table's last column is cut off at 1280 px (${right} > ${edge})`);
  await screenshot(page, 'vision-bench');
  await page.close();
});

test('vision-bench.html: bad settings and URL values are refused; a diverging run says where', { skip: why ?? false, timeout: 40000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}vision-bench.html?batch=100000&model=nonsense&backend=bogus&autorun=1`);
  await page.waitForFunction(() => document.getElementById('progress-text').dataset.state === 'ready', null, { timeout: 20000 });
  const error = await page.textContent('#error');
  assert.match(error, /batch=100000: 100000 is outside 1 to 256/);
  assert.match(error, /model=nonsense: "nonsense" is not one of/);
  assert.match(error, /backend=bogus: "bogus" is not one of/);
  assert.match(await page.textContent('#progress-text'), /refused .* nothing ran/);
  assert.equal(await page.$$eval('#table tbody tr', (rows) => rows.length), 0);
  for (const [value, want] of [['', /enter a number/], ['-1', /greater than 0/], ['x', /"x" is not a number/]]) {
    await page.fill('#lr', value);
    await page.click('#run');
    assert.match(await page.textContent('#lr-error'), want);
    assert.equal(await page.textContent('#progress-text'), 'Not started: fix learning rate (marked above).');
  }
  assert.equal(await page.$$eval('#table tbody tr', (rows) => rows.length), 0, 'nothing ran');
  await page.fill('#lr', '1e9');
  await page.fill('#batch', '4');
  await page.fill('#steps', '50');
  await page.selectOption('#model', 'mnist-cnn');
  await page.click('#run');
  await page.waitForFunction(() => ['finished', 'diverged', 'error'].includes(document.getElementById('progress-text').dataset.state),
    null, { timeout: 30000 });
  assert.match(await page.textContent('#progress-text'), /^mnist-cnn: diverged at step \d+: the loss became (NaN|Infinity)\. Try a smaller learning rate\.$/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('vision-bench.html: mnist-mlp on Fashion-MNIST, the test accuracy plotted as it trains, above 50%', { skip: why ?? false, timeout: 60000 }, async () => {
  const { page, problems } = await newPage(browser);
  // Each time the accuracy plot gains a point: its count and the run's state then.
  await page.addInitScript(() => {
    window.accSeen = [];
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.target.id !== 'acc-chart') continue;
        window.accSeen.push([Number(r.target.dataset.points), document.getElementById('progress-text').dataset.state]);
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-points'] });
  });
  const steps = 40;
  await page.goto(`${server.url}vision-bench.html?model=mnist-mlp&backend=cpu&data=fashion&batch=16&steps=${steps}&lr=0.05&seed=42&autorun=1`);
  await page.waitForFunction(() => ['finished', 'stopped', 'diverged', 'error'].includes(document.getElementById('progress-text').dataset.state),
    null, { timeout: 50000 });
  assert.equal(await page.textContent('#error'), '');
  const acc = Number(await valueOf(page, '#r-acc'));
  assert.match(await page.textContent('#progress-text'), /^mnist-mlp: finished, 40 steps, test accuracy \d+\.\d% after step 40\.$/);
  // The training rate leaves the evaluations out; the wall time is the whole run, their share said.
  assert.match(await page.textContent('#r-wall'), /^\d+\.\d s \(10 test evaluations: \d+\.\d s; compiling: \d+\.\d s\)$/);
  assert.ok(Number(await valueOf(page, '#r-wall')) > 0);
  assert.equal(await page.textContent('#software-warning'), '', 'no software-GPU warning on the CPU');
  // 64.2% measured (chance: 10%; trained on anything but the training images: about 10%).
  assert.ok(acc > 0.5, `test accuracy ${acc} after ${steps} steps`);
  assert.equal(await page.$eval('#loss-chart', (el) => Number(el.dataset.points)), steps);
  // Scored 10 times (every 4 steps), each point drawn while the run was still going.
  const seen = (await page.evaluate(() => window.accSeen)).filter(([n]) => n > 0);
  assert.deepEqual(seen.map(([n]) => n), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  for (const [n, state] of seen) assert.equal(state, 'evaluating', `accuracy point ${n} came when the run was ${state}`);
  assert.equal(Number(await page.$eval('#acc-chart', (el) => el.dataset.last)), acc);
  assert.ok(await drawn(page, '#acc-chart'), 'accuracy chart is blank');
  const counted = await page.$$eval('#confusion tbody td', (tds) => tds.filter((td) => !td.textContent.includes('%'))
    .reduce((s, td) => s + Number(td.textContent), 0));
  assert.equal(counted, 1000, 'the confusion matrix counts every test image once');
  assert.deepEqual(await page.$eval('#table tbody tr', (tr) => [tr.children[3].textContent, tr.lastChild.textContent]),
    ['fashion', `${(100 * acc).toFixed(1)}%`]);
  assert.equal(await page.$eval('#table thead tr', (tr) => tr.children[9].textContent), 'wall s (eval)');
  assert.match(await page.$eval('#table tbody tr', (tr) => tr.children[9].textContent), /^\d+\.\d \(\d+\.\d\)$/);
  assert.deepEqual(problems, []);
  await screenshot(page, 'vision-bench-fashion');
  await page.close();
});

test('vision-bench.html: data=bogus, and Fashion-MNIST for a CIFAR-shaped model, are refused; nothing runs', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}vision-bench.html?model=mnist-mlp&data=bogus&steps=3&autorun=1`);
  await page.waitForFunction(() => document.getElementById('progress-text').dataset.state === 'ready', null, { timeout: 20000 });
  assert.match(await page.textContent('#error'), /URL parameter data=bogus: "bogus" is not one of synthetic, fashion/);
  assert.match(await page.textContent('#data-error'), /"bogus" is not one of synthetic, fashion/);
  assert.equal(await page.$eval('#data', (el) => el.value), 'synthetic', 'the field keeps its default');
  assert.match(await page.textContent('#progress-text'), /refused .* nothing ran/);
  await page.waitForTimeout(300);
  assert.equal(await page.$$eval('#table tbody tr', (rows) => rows.length), 0, 'nothing ran');

  await page.goto(`${server.url}vision-bench.html?model=cifar-cnn&data=fashion&steps=3&autorun=1`);
  await page.waitForFunction(() => document.getElementById('progress-text').dataset.state === 'error', null, { timeout: 20000 });
  assert.match(await page.textContent('#data-note'), /^cifar-cnn takes \[3, 32, 32\] inputs and the Fashion-MNIST subset is 28x28 grayscale: it trains on the synthetic batch only\.$/);
  assert.match(await page.textContent('#data-error'), /cifar-cnn takes \[3, 32, 32\] inputs .*pick synthetic/);
  assert.equal(await page.textContent('#progress-text'), 'Not started: fix data (marked above).');
  assert.equal(await page.$$eval('#table tbody tr', (rows) => rows.length), 0, 'nothing ran');
  await page.selectOption('#model', 'mnist-mlp');
  assert.match(await page.textContent('#data-note'), /^Fashion-MNIST: each step trains on the next batch/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('vision-bench.html: WebGPU picked on SwiftShader is warned about with its slowdown, measured in the run', { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}vision-bench.html?model=mnist-mlp&backend=webgpu&batch=2&steps=4`);
  await page.waitForFunction(() => document.getElementById('progress-text').dataset.state === 'ready', null, { timeout: 20000 });
  assert.match(await page.textContent('#backend-note'), /^The Worker can run cpu, webgpu \(SwiftShader, a software renderer\), webgl \(SwiftShader, a software renderer\)\./);
  assert.match(await page.textContent('#software-warning'), /^WebGPU here is SwiftShader, a software renderer .*the run measures by how much\.$/);
  await page.click('#run');
  await page.waitForFunction(() => ['finished', 'stopped', 'diverged', 'error'].includes(document.getElementById('progress-text').dataset.state),
    null, { timeout: 100000 });
  assert.equal(await page.textContent('#error'), '');
  // The figure's value depends on the machine: only its form is checked.
  assert.match(await page.textContent('#software-warning'), new RegExp('^WebGPU here is SwiftShader, a software renderer \\(no graphics hardware\\): ' +
    '\\d+(\\.\\d)?x (slower than the CPU|faster than the CPU here); a training step took [\\d.]+ ms on it and [\\d.]+ ms on the CPU ' +
    '\\(measured in this run\\)\\.'));
  assert.ok(Number(await page.$eval('#software-warning', (el) => el.dataset.ratio)) > 0, 'the ratio is kept in data-ratio');
  await page.selectOption('#backend', 'cpu');
  assert.equal(await page.textContent('#software-warning'), '', 'cpu: no warning');
  assert.deepEqual(problems, []);
  await page.close();
});

test('vision-bench.html stays responsive during a long run and stops on request', { skip: why ?? false, timeout: 30000 }, async (t) => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}vision-bench.html?model=cifar-cnn&batch=16&steps=2000&autorun=1`);
  await page.waitForFunction(() => /step \d+ \/ 2000/.test(document.getElementById('progress-text').textContent),
    null, { timeout: 20000 });
  // The main thread's timers keep firing while the Worker trains: ten of them
  // run between two readings that both show the run going (the worst delay is
  // reported, not asserted: it depends on the machine's load).
  const { worst, during } = await page.evaluate(async () => {
    const running = () => /step \d+ \/ 2000/.test(document.getElementById('progress-text').textContent);
    const before = running();
    let worst = 0;
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 10));
      worst = Math.max(worst, performance.now() - t0 - 10);
    }
    return { worst, during: before && running() };
  });
  assert.ok(during, 'the run ended while the main thread\'s timers were measured');
  t.diagnostic(`worst timer delay during the run: ${worst.toFixed(0)} ms`);
  assert.equal(await page.isEnabled('#stop'), true);
  await page.waitForFunction(() => Number(document.getElementById('loss-chart').dataset.points) > 0, null, { timeout: 10000 });
  await page.click('#stop');
  await page.waitForFunction(() => document.getElementById('progress-text').dataset.state === 'stopped', null, { timeout: 15000 });
  assert.match(await page.textContent('#progress-text'), /stopped after \d+ of 2000 steps/);
  assert.equal(await page.isEnabled('#run'), true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the pages fit a phone screen', { skip: why ?? false, timeout: 45000 }, async () => {
  for (const path of ['index.html?autostart=0', 'vision-bench.html', 'train.html']) {
    const { page, problems } = await newPage(browser);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(server.url + path);
    await page.waitForLoadState('networkidle');
    const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, innerWidth]);
    assert.ok(scroll <= width, `${path}: ${scroll} px wide on a ${width} px screen`);
    assert.deepEqual(problems, []);
    await page.close();
  }
});

test('rlx_web.js in a page and a module Worker: backends probed, MLP numbers equal Node', { skip: why ?? false, timeout: 20000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}index.html?autostart=0`);
  await page.waitForFunction(() => document.getElementById('status').textContent === 'ready', null, { timeout: 10000 });
  const task = makeTask(3);
  const args = [Array.from(task.x), Array.from(task.t), ...task.dims, Array.from(task.w1), Array.from(task.b1),
    Array.from(task.w2), Array.from(task.b2)];
  const want = rlx.mlp_grads(...args);
  const probe = async (gradArgs) => {
    const m = await import('./pkg/rlx_web.js');
    await m.default();
    const out = { parsed: ['GL', 'wgpu', 'x'].map(m.parse_backend), preferred: m.preferred_backend(),
      grads: Array.from(m.mlp_grads(...gradArgs)) };
    return out;
  };
  const inPage = await page.evaluate(probe, args);
  // tools/serve.py's COOP / COEP headers: the page is cross-origin isolated (SharedArrayBuffer available)
  assert.deepEqual(await page.evaluate(() => [crossOriginIsolated, typeof SharedArrayBuffer]), [true, 'function']);
  assert.deepEqual(inPage.parsed, ['webgl', 'webgpu', 'auto']);
  assert.equal(inPage.preferred, 'webgpu', 'chromium with --enable-unsafe-webgpu offers navigator.gpu');
  assert.deepEqual(inPage.grads, Array.from(want), 'page and Node differ');
  // Without navigator.gpu the WebGL2 probe decides (SwiftShader has EXT_color_buffer_float), in a Worker too.
  const inWorker = await page.evaluate(async (gradArgs) => {
    const src = `Object.defineProperty(WorkerNavigator.prototype, 'gpu', { get: () => undefined });
      const m = await import(${JSON.stringify(new URL('./pkg/rlx_web.js', location.href).href)});
      await m.default();
      postMessage({ isolated: self.crossOriginIsolated, preferred: m.preferred_backend(),
        grads: Array.from(m.mlp_grads(...${JSON.stringify(gradArgs)})) });`;
    const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    const w = new Worker(url, { type: 'module' });
    return new Promise((resolve, reject) => {
      w.onmessage = (e) => resolve(e.data);
      w.onerror = (e) => reject(new Error(e.message));
    });
  }, args);
  assert.equal(inWorker.isolated, true, 'the module Worker is cross-origin isolated as its page');
  assert.equal(inWorker.preferred, 'webgl');
  assert.deepEqual(inWorker.grads, Array.from(want), 'Worker and Node differ');
  const noGpu = await page.evaluate(async () => {
    Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true });
    const m = await import('./pkg/rlx_web.js');
    return m.preferred_backend();
  });
  assert.equal(noGpu, 'webgl');
  assert.deepEqual(problems, []);
  await page.close();
});
