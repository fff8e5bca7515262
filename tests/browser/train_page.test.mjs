// train_page.test.mjs - web/train.html in Debian's chromium (headless,
// playwright-core) against tools/serve.py: a run on the real Fashion-MNIST
// subset reaches a stated test accuracy, with the loss and accuracy plots
// gaining points while it trains, the confusion matrix and the image grid
// filled; Stop acts within a step; bad fields and URL values are refused
// with a message next to them and nothing runs (the status names the
// fields by their labels); another backend and optimizer run; `auto` names
// what it picked and why not the others (and only auto does); a software
// GPU picked by name is warned about with its slowdown against the CPU,
// measured in the run; the elapsed time runs while the first step compiles;
// SGD at a learning rate far too high ends with "the loss did not fall".
// Screenshots go to build/screens/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, newPage, valueOf, missing, screenshot } from './helpers.mjs';

const why = missing();
let server;
let browser;

before(async () => {
  if (why) return;
  [server, browser] = await Promise.all([startServer(), launch()]);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const state = (page) => page.$eval('#status', (el) => el.dataset.state);
const settled = (page, timeout) => page.waitForFunction(() => ['finished', 'stopped', 'diverged', 'error']
  .includes(document.getElementById('status').dataset.state), null, { timeout });
const points = (page, id) => page.$eval(id, (el) => Number(el.dataset.points));

test('train.html: Adam on Fashion-MNIST passes 65% test accuracy in 200 steps, plots live', { skip: why ?? false, timeout: 90000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.goto(`${server.url}train.html?model=mnist-cnn&backend=cpu&optimizer=adam&lr=0.001&steps=200&evalEvery=50&seed=1&autostart=1`);
  // While it trains, the loss plot gains points before the end.
  await page.waitForFunction(() => Number(document.getElementById('loss-chart').dataset.points) > 0, null, { timeout: 30000 });
  const midway = await points(page, '#loss-chart');
  await settled(page, 60000);
  assert.equal(await state(page), 'finished', await page.textContent('#error'));
  assert.ok(midway < 200 || (await points(page, '#loss-chart')) === 200);
  assert.equal(await points(page, '#loss-chart'), 200);
  assert.equal(await points(page, '#acc-chart'), 4, 'accuracy measured at steps 50, 100, 150, 200');
  const acc = Number(await valueOf(page, '#r-acc'));
  assert.ok(acc >= 0.65, `test accuracy ${acc} after 200 Adam steps`);
  assert.match(await page.textContent('#status'), /^Finished: 200 steps, \d+ samples\/s, test accuracy \d+\.\d%\.$/);
  const rows = await page.$$eval('#confusion tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.accuracy)));
  assert.equal(rows.length, 10);
  const counted = await page.$$eval('#confusion tbody td', (tds) => tds.filter((td) => !td.textContent.includes('%'))
    .reduce((s, td) => s + Number(td.textContent), 0));
  assert.equal(counted, 1000, 'the confusion matrix counts every test image once');
  const grid = await page.$$eval('#grid figure', (fs) => fs.map((f) => [f.dataset.predicted, f.dataset.label, f.className]));
  assert.equal(grid.length, 24);
  for (const [p, l, cls] of grid) assert.equal(cls, p === l ? 'right' : 'wrong');
  assert.equal(await valueOf(page, '#r-backend'), 'cpu');
  assert.match(await page.textContent('#r-threads'), /^\d+ \(.+\)$/, 'the page says how many CPU threads run and why');
  assert.equal(await page.textContent('#backend-note'), '', 'the note on what auto picks is for auto only');
  assert.equal(await page.textContent('#software-warning'), '', 'no software-GPU warning on the CPU');
  assert.match(await page.textContent('#r-time'), /^\d+\.\d s$/);
  assert.equal(await page.$eval('#status', (el) => el.dataset.warning), undefined, 'a run that learned has no warning');
  assert.deepEqual(problems, []);
  await screenshot(page, 'train-finished');
  await page.close();
});

test('train.html: Stop acts within a step; a long run keeps the page responsive', { skip: why ?? false, timeout: 60000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}train.html?model=mnist-mlp&backend=cpu&steps=20000&evalEvery=20000&autostart=1`);
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'training', null, { timeout: 30000 });
  await page.click('#stop');
  const t0 = Date.now();
  await settled(page, 10000);
  assert.ok(Date.now() - t0 < 3000, `Stop took ${Date.now() - t0} ms`);
  assert.equal(await state(page), 'stopped');
  assert.match(await page.textContent('#status'), /^Stopped at step \d+ of 20000/);
  assert.equal(await page.isEnabled('#train'), true);
  assert.deepEqual(problems, []);
  await page.close();
});

test('train.html: bad fields and URL values are refused with a message, nothing runs', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}train.html?batch=100000&model=nonsense&lr=-1&autostart=1`);
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'ready', null, { timeout: 20000 });
  const error = await page.textContent('#error');
  assert.match(error, /URL parameter batch=100000: 100000 is outside 1 to 256/);
  assert.match(error, /URL parameter model=nonsense: "nonsense" is not one of mnist-cnn, mnist-mlp/);
  assert.match(error, /URL parameter lr=-1: must be greater than 0/);
  assert.match(await page.textContent('#status'), /refused/);
  assert.equal(await points(page, '#loss-chart'), 0, 'nothing ran');
  for (const [value, want] of [['', /enter a number/], ['abc', /"abc" is not a number/], ['0', /greater than 0/]]) {
    await page.fill('#lr', value);
    await page.click('#train');
    assert.match(await page.textContent('#lr-error'), want);
    assert.equal(await page.$eval('#lr', (el) => el.getAttribute('aria-invalid')), 'true');
    assert.equal(await state(page), 'error');
    assert.equal(await page.textContent('#status'), 'Not started: fix learning rate (marked above).');
  }
  await page.fill('#lr', '0.001');
  await page.fill('#batch', '2.5');
  await page.click('#train');
  assert.match(await page.textContent('#batch-error'), /"2.5" is not an integer/);
  assert.equal(await page.textContent('#lr-error'), '');
  await page.fill('#evalEvery', '0');
  await page.click('#train');
  assert.equal(await page.textContent('#status'), 'Not started: fix batch, test every (marked above).');
  assert.equal(await points(page, '#loss-chart'), 0, 'nothing ran');
  await screenshot(page, 'train-bad-input');
  assert.deepEqual(problems, []);
  await page.close();
});

test('train.html: WebGL2 with momentum runs, warned about with its measured slowdown; auto avoids the software GPUs and says why',
  { skip: why ?? false, timeout: 120000 }, async () => {
  const { page, problems } = await newPage(browser);
  // Each text the elapsed time shows while the run compiles its first step.
  await page.addInitScript(() => {
    window.whileCompiling = [];
    new MutationObserver(() => {
      if (document.getElementById('status')?.dataset.state !== 'compiling') return;
      window.whileCompiling.push(document.getElementById('r-time').textContent);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  await page.goto(`${server.url}train.html?model=mnist-mlp&steps=20&evalEvery=20&optimizer=momentum&lr=0.02`);
  await page.waitForFunction(() => document.getElementById('status').dataset.state === 'ready', null, { timeout: 20000 });
  assert.match(await page.textContent('#backend-note'), /^auto runs mnist-mlp on cpu \(not webgpu: .*software.*; webgl: .*software/);
  await page.selectOption('#backend', 'webgl');
  assert.match(await page.textContent('#backend-note'), /^WebGL2 here is SwiftShader, a software renderer .*the run measures by how much\.$/);
  await page.click('#train');
  await settled(page, 100000);
  assert.equal(await state(page), 'finished', await page.textContent('#error'));
  assert.equal(await valueOf(page, '#r-backend'), 'webgl');
  assert.equal(await points(page, '#loss-chart'), 20);
  assert.ok(Number(await valueOf(page, '#r-acc')) > 0.3, 'momentum on WebGL2 learned something in 20 steps');
  // The figure is measured in the run (its value depends on the machine: only its form is checked).
  assert.match(await page.textContent('#software-warning'), new RegExp('^WebGL2 here is SwiftShader, a software renderer \\(no graphics hardware\\): ' +
    '\\d+(\\.\\d)?x (slower than the CPU|faster than the CPU here); a training step took [\\d.]+ ms on it and [\\d.]+ ms on the CPU ' +
    '\\(measured in this run\\)\\.'));
  assert.ok(Number(await page.$eval('#software-warning', (el) => el.dataset.ratio)) > 0, 'the ratio is kept in data-ratio');
  const compiling = await page.evaluate(() => window.whileCompiling);
  assert.ok(compiling.length > 0 && compiling.every((t) => /^\d+\.\d s, compiling$/.test(t)), `elapsed while compiling: ${compiling}`);
  assert.match(await page.textContent('#r-time'), /^\d+\.\d s$/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('train.html: a diverging run stops and says at which step', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}train.html?model=mnist-mlp&backend=cpu&optimizer=sgd&lr=1e9&steps=500&evalEvery=500&autostart=1`);
  await settled(page, 25000);
  assert.equal(await state(page), 'diverged');
  assert.match(await page.textContent('#status'), /^Diverged at step \d+: the loss became (NaN|Infinity)\. Try a smaller learning rate\.$/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('train.html: SGD at a learning rate far too high finishes with "the loss did not fall"', { skip: why ?? false, timeout: 30000 }, async () => {
  const { page, problems } = await newPage(browser);
  await page.goto(`${server.url}train.html?model=mnist-mlp&backend=cpu&optimizer=sgd&lr=1000&steps=20&evalEvery=20&autostart=1`);
  await settled(page, 25000);
  assert.equal(await state(page), 'finished', await page.textContent('#error'));
  assert.match(await page.textContent('#status'), new RegExp('^Finished: 20 steps, \\d+ samples/s, test accuracy \\d+\\.\\d%\\. ' +
    'The loss did not fall \\([^)]+ at the first step, [^)]+ at the end\\).*: the learning rate may be too high; try a smaller one\\.$'));
  assert.equal(await page.$eval('#status', (el) => el.dataset.warning), 'no-learning');
  assert.deepEqual(problems, []);
  await page.close();
});
