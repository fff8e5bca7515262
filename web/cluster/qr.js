// qr.js - QR codes for the cluster page's join URL, on top of the vendored
// encoder (web/vendor/qrcode.js, qrcode-generator 2.0.4). Text is always
// encoded as UTF-8 in byte mode at the smallest version (1-40) that fits, so
// a URL with non-ASCII characters survives a phone's scanner. Nothing touches
// the DOM at import time: it runs in browsers and in Node.
//
//   const qr = qrMatrix(url, { ecc: 'M' });   // ecc: 'L' | 'M' | 'Q' | 'H'
//   qr -> { size, version, ecc, modules: Uint8Array(size*size) row-major, 1 = dark, dark(row, col) }
//   drawQr(canvas, url, { scale, margin = 4, ecc })  // black on white, 4-module quiet zone; returns qr
//   qrSvg(url, { scale = 4, margin = 4, ecc })       // '<svg ...>' string, viewBox in module units
//
// Text longer than a version-40 symbol holds at that ECC level throws an
// RlxError (INVALID_ARG) that names the byte count and the maximum.

import qrcode from '../vendor/qrcode.js';
import { RlxError } from '../runtime/errors.js';
import { STATUS } from '../runtime/constants.js';

/** Most UTF-8 bytes one QR code (version 40, byte mode) holds per ECC level. */
export const QR_MAX_BYTES = Object.freeze({ L: 2953, M: 2331, Q: 1663, H: 1273 });

const utf8 = new TextEncoder();

export function qrMatrix(text, { ecc = 'M' } = {}) {
  if (typeof text !== 'string') throw new RlxError(STATUS.INVALID_ARG, 'qrMatrix: text must be a string');
  if (!(ecc in QR_MAX_BYTES)) throw new RlxError(STATUS.INVALID_ARG, `qrMatrix: error correction level must be L, M, Q or H, not ${ecc}`);
  const bytes = utf8.encode(text);
  const max = QR_MAX_BYTES[ecc];
  if (bytes.length > max) {
    throw new RlxError(STATUS.INVALID_ARG, `Text too long for a QR code: ${bytes.length} bytes (UTF-8); the maximum at error correction ${ecc} is ${max} bytes`);
  }
  const qr = qrcode(0, ecc);              // type number 0 = smallest version that fits
  // qrcode-generator turns the string into bytes with the factory's
  // stringToBytes when addData runs; its default keeps only the low 8 bits of
  // each UTF-16 unit, so swap in UTF-8 for this one call.
  const saved = qrcode.stringToBytes;
  qrcode.stringToBytes = () => Array.from(bytes);
  try { qr.addData(text, 'Byte'); } finally { qrcode.stringToBytes = saved; }
  try { qr.make(); } catch (e) {          // the library throws plain strings
    throw new RlxError(STATUS.INVALID_ARG, `QR encoding failed for ${bytes.length} bytes at error correction ${ecc}: ${e}`);
  }
  const size = qr.getModuleCount();
  const modules = new Uint8Array(size * size);
  for (let r = 0; r < size; r++) for (let c = 0; c < size; c++) modules[r * size + c] = qr.isDark(r, c) ? 1 : 0;
  return {
    size, version: (size - 17) / 4, ecc, modules,
    dark: (row, col) => row >= 0 && col >= 0 && row < size && col < size && modules[row * size + col] === 1,
  };
}

/** Dark runs per row: [row, col, length], for drawing with few rectangles. */
function runs({ size, modules }) {
  const out = [];
  for (let r = 0; r < size; r++) {
    for (let c = 0; c < size; c++) {
      if (!modules[r * size + c]) continue;
      let e = c;
      while (e + 1 < size && modules[r * size + e + 1]) e++;
      out.push([r, c, e - c + 1]);
      c = e;
    }
  }
  return out;
}

/** Draw on a canvas (HTMLCanvasElement or OffscreenCanvas); resizes it. Default scale fills its current width. */
export function drawQr(canvas, text, { scale, margin = 4, ecc = 'M' } = {}) {
  const qr = qrMatrix(text, { ecc });
  const n = qr.size + 2 * margin;
  const s = scale ?? Math.max(1, Math.floor((canvas.width || 0) / n) || 4);
  canvas.width = canvas.height = n * s;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, n * s, n * s);
  ctx.fillStyle = '#000';
  for (const [r, c, len] of runs(qr)) ctx.fillRect((c + margin) * s, (r + margin) * s, len * s, s);
  return qr;
}

/** SVG markup: white background, one black path of 1-module-high runs; viewBox = (size + 2*margin)^2. */
export function qrSvg(text, { scale = 4, margin = 4, ecc = 'M' } = {}) {
  const qr = qrMatrix(text, { ecc });
  const n = qr.size + 2 * margin;
  const d = runs(qr).map(([r, c, len]) => `M${c + margin} ${r + margin}h${len}v1h-${len}z`).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${n} ${n}" width="${n * scale}" height="${n * scale}" shape-rendering="crispEdges">`
    + `<rect width="${n}" height="${n}" fill="#fff"/><path fill="#000" d="${d}"/></svg>`;
}
