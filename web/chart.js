// chart.js - the one chart module of the pages: a small line chart on a
// <canvas> (loss curves, accuracy, fitted functions): series of [x, y]
// points, optional log-scale y or a fixed y range, labelled axes, a legend,
// sharp on high-DPI screens.  Ours rather than a charting library: ~100
// lines and no dependency, where Chart.js or uPlot would add 40-200 KB for
// the same few line plots; a redraw of a few thousand points takes well
// under a millisecond, so pages redraw while training.

const COLORS = ['#0b57d0', '#d93025', '#188038', '#f29900', '#9334e6', '#5f6368'];

function fmt(v) {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(1);
  return Number(v.toPrecision(3)).toString();
}

/**
 * Draws series on canvas.  series: [{ points: [[x, y], ...], label?, color?,
 * width? (line width, default 2) }]; opts: { logY, xLabel, yLabel, dots,
 * yMin, yMax (a fixed y range) }.
 */
export function drawChart(canvas, series, opts = {}) {
  const dpr = (typeof devicePixelRatio === 'number' && devicePixelRatio) || 1;
  const w = Math.max(1, Math.round(canvas.clientWidth || canvas.width));
  const h = Math.max(1, Math.round(canvas.clientHeight || canvas.height));
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const ty = (y) => (opts.logY ? Math.log10(Math.max(y, 1e-12)) : y);
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const s of series) {
    for (const [x, y] of s.points) {
      if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x);
      y0 = Math.min(y0, ty(y)); y1 = Math.max(y1, ty(y));
    }
  }
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillStyle = '#5f6368';
  if (x0 > x1) {
    ctx.fillText('no data yet', 8, h / 2);
    return;
  }
  if (Number.isFinite(opts.yMin)) y0 = ty(opts.yMin);
  if (Number.isFinite(opts.yMax)) y1 = ty(opts.yMax);
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const pad = { l: opts.yLabel ? 60 : 46, r: 10, t: 10, b: opts.xLabel ? 34 : 22 };
  const px = (x) => pad.l + ((x - x0) / (x1 - x0)) * (w - pad.l - pad.r);
  const py = (y) => pad.t + (1 - (ty(y) - y0) / (y1 - y0)) * (h - pad.t - pad.b);
  const unY = (v) => (opts.logY ? 10 ** v : v);

  ctx.strokeStyle = '#e3e3e3';
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const gy = pad.t + (i / 4) * (h - pad.t - pad.b);
    ctx.beginPath(); ctx.moveTo(pad.l, gy); ctx.lineTo(w - pad.r, gy); ctx.stroke();
    ctx.fillText(fmt(unY(y1 - (i / 4) * (y1 - y0))), pad.l - 42, gy + 4);
  }
  const tickY = h - pad.b + 14;
  ctx.fillText(fmt(x0), pad.l, tickY);
  const right = fmt(x1);
  ctx.fillText(right, w - pad.r - ctx.measureText(right).width, tickY);
  if (opts.xLabel) ctx.fillText(opts.xLabel, pad.l + (w - pad.l - pad.r - ctx.measureText(opts.xLabel).width) / 2, h - 4);
  if (opts.yLabel) {
    const label = opts.yLabel + (opts.logY ? ' (log)' : '');
    ctx.save();
    ctx.translate(11, pad.t + (h - pad.t - pad.b + ctx.measureText(label).width) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText(label, 0, 0);
    ctx.restore();
  }

  series.forEach((s, k) => {
    ctx.strokeStyle = ctx.fillStyle = s.color ?? COLORS[k % COLORS.length];
    ctx.lineWidth = s.width ?? 2;
    ctx.beginPath();
    let started = false;
    for (const [x, y] of s.points) {
      if (!Number.isFinite(x) || !Number.isFinite(y)) continue;
      if (started) ctx.lineTo(px(x), py(y)); else ctx.moveTo(px(x), py(y));
      started = true;
      if (s.dots || opts.dots) ctx.fillRect(px(x) - 1.5, py(y) - 1.5, 3, 3);
    }
    ctx.stroke();
  });
  let lx = w - pad.r - 4;
  for (let k = series.length - 1; k >= 0; k--) {
    const label = series[k].label;
    if (!label) continue;
    lx -= ctx.measureText(label).width + 18;
    ctx.fillStyle = series[k].color ?? COLORS[k % COLORS.length];
    ctx.fillRect(lx, pad.t + 2, 10, 3);
    ctx.fillStyle = '#1d1d1f';
    ctx.fillText(label, lx + 14, pad.t + 8);
  }
}
