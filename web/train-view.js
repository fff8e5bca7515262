// train-view.js - the training view shared by the pages: a live loss plot
// (every step raw, and an exponential moving average), a test-accuracy
// plot, a confusion matrix with per-class accuracy, and a grid of test
// images with predicted and true labels.  Drawing is throttled to one
// redraw per animation frame and at most REDRAW_MS apart, so a page can
// feed it every step without slowing training.  noLearning() words the
// warning for a run that ended without learning.  Everything shown carries
// its value in data-* attributes for the browser tests.
import { drawChart } from './chart.js';

export const FASHION_CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker',
  'Bag', 'Ankle boot'];
const REDRAW_MS = 150;

/** Calls draw() at most once per frame and REDRAW_MS; flush() draws now. */
function throttled(draw) {
  let queued = false, last = 0;
  const run = () => {
    queued = false;
    last = performance.now();
    draw();
  };
  return {
    request() {
      if (queued) return;
      queued = true;
      const wait = Math.max(0, REDRAW_MS - (performance.now() - last));
      setTimeout(() => requestAnimationFrame(run), wait);
    },
    flush: run,
  };
}

/** Loss per step, raw and smoothed (EMA, weight `smoothing` on the past). */
export class LossPlot {
  constructor(canvas, { smoothing = 0.9, label = 'loss', logY = false } = {}) {
    this.canvas = canvas;
    this.smoothing = smoothing;
    this.label = label;
    this.logY = logY;
    this.enabled = true;
    this.clear();
    this.redraw = throttled(() => this.draw());
  }

  clear() {
    this.raw = [];
    this.smooth = [];
    this.ema = NaN;
    this.canvas.dataset.points = '0';
    if (this.redraw) this.redraw.flush();
  }

  /** points: [[step, loss], ...] in step order. */
  add(points) {
    for (const [x, y] of points) {
      this.raw.push([x, y]);
      if (Number.isFinite(y)) {
        this.ema = Number.isFinite(this.ema) ? this.smoothing * this.ema + (1 - this.smoothing) * y : y;
        this.smooth.push([x, this.ema]);
      }
    }
    this.canvas.dataset.points = String(this.raw.length);
    this.canvas.dataset.last = String(this.raw.length ? this.raw[this.raw.length - 1][1] : NaN);
    if (this.enabled) this.redraw.request();
  }

  draw() {
    drawChart(this.canvas, [
      { points: this.raw, label: `${this.label} (each step)`, color: '#9ab6ea', width: 1 },
      { points: this.smooth, label: 'smoothed', color: '#0b57d0', width: 2 },
    ], { xLabel: 'step', yLabel: this.label, logY: this.logY });
  }
}

/** Test accuracy (%) against the step it was measured at. */
export class AccuracyPlot {
  constructor(canvas) {
    this.canvas = canvas;
    this.enabled = true;
    this.clear();
    this.redraw = throttled(() => this.draw());
  }

  clear() {
    this.points = [];
    this.canvas.dataset.points = '0';
    if (this.redraw) this.redraw.flush();
  }

  add(step, accuracy) {
    this.points.push([step, 100 * accuracy]);
    this.canvas.dataset.points = String(this.points.length);
    this.canvas.dataset.last = String(accuracy);
    if (this.enabled) this.redraw.request();
  }

  draw() {
    drawChart(this.canvas, [{ points: this.points, label: 'test accuracy', color: '#188038', width: 2 }],
      { xLabel: 'step', yLabel: 'accuracy %', yMin: 0, yMax: 100, dots: true });
  }
}

/** A confusion matrix (rows: true class, columns: predicted) as a table, cells shaded by row share. */
export function renderConfusion(table, confusion, names = FASHION_CLASSES) {
  const head = `<tr><th>true \\ predicted</th>${names.map((n, c) => `<th title="${n}">${c}</th>`).join('')}` +
    '<th>accuracy</th></tr>';
  const rows = confusion.map((row, r) => {
    const n = row.reduce((a, b) => a + b, 0) || 1;
    const cells = row.map((v, c) => {
      const share = v / n;
      const hue = r === c ? '24, 128, 56' : '217, 48, 37';
      return `<td style="background: rgba(${hue}, ${(0.85 * share).toFixed(3)})" title="${names[r]} as ${names[c]}: ${v}">${v}</td>`;
    }).join('');
    const acc = row[r] / n;
    return `<tr data-class="${r}" data-accuracy="${acc}"><th>${r} ${names[r]}</th>${cells}<td>${(100 * acc).toFixed(1)}%</td></tr>`;
  });
  table.innerHTML = `<thead>${head}</thead><tbody>${rows.join('')}</tbody>`;
}

/** Test images (pixels in [0, 1], side x side each) with predicted and true labels; wrong ones marked. */
export function renderGrid(container, { pixels, labels, side }, predictions, names = FASHION_CLASSES) {
  if (container.children.length !== labels.length) {
    container.replaceChildren();
    for (let i = 0; i < labels.length; i++) {
      const fig = document.createElement('figure');
      const canvas = document.createElement('canvas');
      canvas.width = canvas.height = side;
      const img = new ImageData(side, side);
      for (let k = 0; k < side * side; k++) {
        const v = 255 - Math.round(255 * pixels[i * side * side + k]);
        img.data.set([v, v, v, 255], 4 * k);
      }
      canvas.getContext('2d').putImageData(img, 0, 0);
      const cap = document.createElement('figcaption');
      fig.append(canvas, cap);
      container.append(fig);
    }
  }
  [...container.children].forEach((fig, i) => {
    const p = predictions?.[i];
    const known = Number.isInteger(p);
    fig.className = known ? (p === labels[i] ? 'right' : 'wrong') : '';
    fig.dataset.predicted = known ? String(p) : '';
    fig.dataset.label = String(labels[i]);
    fig.lastChild.textContent = known ? `${names[p]}${p === labels[i] ? '' : ` (is ${names[labels[i]]})`}` : names[labels[i]];
  });
}

/**
 * Why a run that ended without diverging did not learn, or '' when it did:
 * the loss far above where it began (more than twice the first step's), or
 * the test accuracy (when measured) within a fifth of chance (1 / classes).
 * firstLoss: the first step's loss; lastLoss: the loss at the end (smoothed).
 */
export function noLearning({ firstLoss, lastLoss, accuracy = NaN, classes = 10 }) {
  const chance = 1 / classes;
  const rose = lastLoss > 2 * firstLoss;
  const atChance = Number.isFinite(accuracy) && accuracy < 1.2 * chance;
  if (!rose && !atChance) return '';
  const loss = `${firstLoss.toPrecision(4)} at the first step, ${lastLoss.toPrecision(4)} at the end`;
  const acc = atChance ? ` and the test accuracy, ${(100 * accuracy).toFixed(1)}%, is no better than chance ` +
    `(${(100 * chance).toFixed(0)}% for ${classes} classes)` : '';
  if (lastLoss >= firstLoss) return `The loss did not fall (${loss})${acc}: the learning rate may be too high; try a smaller one.`;
  return `The loss fell (${loss}) but the test accuracy, ${(100 * accuracy).toFixed(1)}%, is no better than chance ` +
    `(${(100 * chance).toFixed(0)}% for ${classes} classes): train for more steps, or try another learning rate.`;
}
