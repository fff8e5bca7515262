// chart.js - a small line chart on a <canvas> for the pages (loss curves,
// fitted functions): series of [x, y] points, optional log-scale y, axis
// labels at the ends, sharp on high-DPI screens.  No dependencies.

const COLORS = ['#0b57d0', '#d93025', '#188038', '#f29900', '#9334e6', '#5f6368'];

function fmt(v) {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(1);
  return Number(v.toPrecision(3)).toString();
}

/**
 * Draws series on canvas.  series: [{ points: [[x, y], ...], label?, color? }];
 * opts: { logY, xLabel, yLabel, dots }.
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
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= 0.5; y1 += 0.5; }
  const pad = { l: 46, r: 10, t: 10, b: 22 };
  const px = (x) => pad.l + ((x - x0) / (x1 - x0)) * (w - pad.l - pad.r);
  const py = (y) => pad.t + (1 - (ty(y) - y0) / (y1 - y0)) * (h - pad.t - pad.b);
  const unY = (v) => (opts.logY ? 10 ** v : v);

  ctx.strokeStyle = '#e3e3e3';
  ctx.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const gy = pad.t + (i / 4) * (h - pad.t - pad.b);
    ctx.beginPath(); ctx.moveTo(pad.l, gy); ctx.lineTo(w - pad.r, gy); ctx.stroke();
    ctx.fillText(fmt(unY(y1 - (i / 4) * (y1 - y0))), 4, gy + 4);
  }
  ctx.fillText(fmt(x0), pad.l, h - 6);
  const right = fmt(x1) + (opts.xLabel ? ` ${opts.xLabel}` : '');
  ctx.fillText(right, w - pad.r - ctx.measureText(right).width, h - 6);
  if (opts.yLabel) ctx.fillText(opts.yLabel + (opts.logY ? ' (log)' : ''), pad.l + 4, pad.t + 10);

  series.forEach((s, k) => {
    ctx.strokeStyle = ctx.fillStyle = s.color ?? COLORS[k % COLORS.length];
    ctx.lineWidth = 2;
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
