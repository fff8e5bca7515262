// qr_reference.mjs - an independent, minimal QR Code encoder (ISO/IEC 18004,
// model 2) used only by tests to re-encode what web/vendor/qrcode.js made and
// compare the matrices bit for bit. It shares no code or tables with the
// vendored library: the block layout is derived from the module count plus
// two per-version tables (EC codewords per block, number of blocks).
//
// Scope: byte mode, ECC L/M/Q/H, versions 1-40: data codewords (mode,
// count, terminator, 0xEC/0x11 padding), Reed-Solomon over GF(256) with the
// 0x11D polynomial, block interleaving, function patterns, zigzag module
// placement, the 8 masks, format info (BCH 15,5, XOR 0x5412), version info
// (BCH 18,6, version >= 7), and mask selection by the standard penalty rules
// N1..N4 (3, 3, 40, 10).
//
//   const m = encodeReference(bytes, { ecc: 'M' });            // smallest version, penalty mask
//   const m = encodeReference(bytes, { ecc: 'M', version: 5, mask: 3 });
//   m -> { version, size, mask, modules: Uint8Array(size*size), 1 = dark, row-major }

export const ECC_LEVELS = ['L', 'M', 'Q', 'H'];
const FORMAT_ECC_BITS = { L: 1, M: 0, Q: 3, H: 2 };

// Index 0 unused; [ecc][version].
const EC_PER_BLOCK = {
  L: [0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
  M: [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
  Q: [0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
  H: [0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
};
const NUM_BLOCKS = {
  L: [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
  M: [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
  Q: [0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56, 59, 62, 65, 68],
  H: [0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66, 70, 74, 77, 81],
};

/** Alignment pattern centre coordinates (same list for rows and columns). */
export function alignmentPositions(version) {
  if (version === 1) return [];
  const n = Math.floor(version / 7) + 2;
  const size = 17 + 4 * version;
  const step = version === 32 ? 26 : Math.ceil((4 * version + 4) / (2 * n - 2)) * 2;
  const out = [6];
  for (let pos = size - 7; out.length < n; pos -= step) out.splice(1, 0, pos);
  return out;
}

/** Modules left for data + EC codewords (and remainder bits) in a version. */
export function rawDataModules(version) {
  let r = (16 * version + 128) * version + 64;
  if (version >= 2) {
    const n = Math.floor(version / 7) + 2;
    r -= (25 * n - 10) * n - 55;
    if (version >= 7) r -= 36;
  }
  return r;
}

/** Data codewords (excluding EC) for a version and ECC level. */
export function dataCodewords(version, ecc) {
  return Math.floor(rawDataModules(version) / 8) - EC_PER_BLOCK[ecc][version] * NUM_BLOCKS[ecc][version];
}

/** Most bytes byte mode holds at (version, ecc): 4 mode bits + 8/16 count bits. */
export function byteCapacity(version, ecc) {
  const countBits = version <= 9 ? 8 : 16;
  return Math.floor((dataCodewords(version, ecc) * 8 - 4 - countBits) / 8);
}

// ---- GF(256), polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D) ----
const EXP = new Uint8Array(512);
const LOG = new Uint8Array(256);
for (let i = 0, x = 1; i < 255; i++) {
  EXP[i] = x; LOG[x] = i;
  x <<= 1; if (x & 0x100) x ^= 0x11d;
}
for (let i = 255; i < 512; i++) EXP[i] = EXP[i - 255];
const gfMul = (a, b) => (a === 0 || b === 0 ? 0 : EXP[LOG[a] + LOG[b]]);

/** Generator polynomial prod_{i<n} (x - a^i), coefficients highest first, leading 1 dropped. */
function rsGenerator(n) {
  let g = [1];
  for (let i = 0; i < n; i++) {
    const next = new Array(g.length + 1).fill(0);
    for (let j = 0; j < g.length; j++) {
      next[j] ^= g[j];                    // * x
      next[j + 1] ^= gfMul(g[j], EXP[i]); // * a^i
    }
    g = next;
  }
  return g.slice(1);
}

/** EC codewords: remainder of data(x) * x^n divided by the generator. */
export function rsRemainder(data, n) {
  const gen = rsGenerator(n);
  const rem = new Array(n).fill(0);
  for (const b of data) {
    const f = b ^ rem.shift();
    rem.push(0);
    for (let j = 0; j < n; j++) rem[j] ^= gfMul(gen[j], f);
  }
  return rem;
}

/** Final interleaved codeword sequence for the bytes at (version, ecc). */
export function codewords(bytes, version, ecc) {
  const cap = dataCodewords(version, ecc);
  const bits = [];
  const put = (v, n) => { for (let i = n - 1; i >= 0; i--) bits.push((v >>> i) & 1); };
  put(0b0100, 4);
  put(bytes.length, version <= 9 ? 8 : 16);
  for (const b of bytes) put(b, 8);
  if (bits.length > cap * 8) throw new Error(`reference: ${bytes.length} bytes do not fit version ${version}-${ecc}`);
  put(0, Math.min(4, cap * 8 - bits.length));
  while (bits.length % 8) bits.push(0);
  const data = [];
  for (let i = 0; i < bits.length; i += 8) data.push(bits.slice(i, i + 8).reduce((a, b) => (a << 1) | b, 0));
  for (let pad = 0xec; data.length < cap; pad ^= 0xec ^ 0x11) data.push(pad);

  // Blocks: the short ones first, long ones carry one more data codeword.
  const ecLen = EC_PER_BLOCK[ecc][version];
  const nBlocks = NUM_BLOCKS[ecc][version];
  const raw = Math.floor(rawDataModules(version) / 8);
  const nShort = nBlocks - (raw % nBlocks);
  const shortData = Math.floor(raw / nBlocks) - ecLen;
  const blocks = [];
  for (let b = 0, k = 0; b < nBlocks; b++) {
    const len = shortData + (b < nShort ? 0 : 1);
    const d = data.slice(k, k + len);
    k += len;
    blocks.push({ d, ec: rsRemainder(d, ecLen) });
  }
  const out = [];
  for (let i = 0; i <= shortData; i++) for (const bl of blocks) if (i < bl.d.length) out.push(bl.d[i]);
  for (let i = 0; i < ecLen; i++) for (const bl of blocks) out.push(bl.ec[i]);
  return out;
}

/** 15-bit format word: (ecc bits, mask) + BCH(15,5) with 0x537, XOR 0x5412. */
export function formatBits(ecc, mask) {
  const data = (FORMAT_ECC_BITS[ecc] << 3) | mask;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  return ((data << 10) | (rem & 0x3ff)) ^ 0x5412;
}

/** 18-bit version word: version + BCH(18,6) with 0x1F25. */
export function versionBits(version) {
  let rem = version;
  for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
  return (version << 12) | (rem & 0xfff);
}

const MASKS = [
  (r, c) => (r + c) % 2 === 0,
  (r) => r % 2 === 0,
  (r, c) => c % 3 === 0,
  (r, c) => (r + c) % 3 === 0,
  (r, c) => (Math.floor(r / 2) + Math.floor(c / 3)) % 2 === 0,
  (r, c) => ((r * c) % 2) + ((r * c) % 3) === 0,
  (r, c) => (((r * c) % 2) + ((r * c) % 3)) % 2 === 0,
  (r, c) => (((r + c) % 2) + ((r * c) % 3)) % 2 === 0,
];

/** Matrix with every function pattern set; `fn` marks them (format area reserved). */
function functionPatterns(version) {
  const size = 17 + 4 * version;
  const m = new Uint8Array(size * size);
  const fn = new Uint8Array(size * size);
  const set = (r, c, v) => { m[r * size + c] = v ? 1 : 0; fn[r * size + c] = 1; };
  for (let i = 0; i < size; i++) { set(6, i, i % 2 === 0); set(i, 6, i % 2 === 0); } // timing
  for (const [r0, c0] of [[3, 3], [3, size - 4], [size - 4, 3]]) {                   // finders + separators
    for (let dr = -4; dr <= 4; dr++) for (let dc = -4; dc <= 4; dc++) {
      const r = r0 + dr, c = c0 + dc;
      if (r < 0 || c < 0 || r >= size || c >= size) continue;
      const d = Math.max(Math.abs(dr), Math.abs(dc));
      set(r, c, d !== 2 && d !== 4);
    }
  }
  const al = alignmentPositions(version);
  const last = al[al.length - 1];
  for (const r0 of al) for (const c0 of al) {
    if ((r0 === 6 && (c0 === 6 || c0 === last)) || (r0 === last && c0 === 6)) continue; // finder corners
    for (let dr = -2; dr <= 2; dr++) for (let dc = -2; dc <= 2; dc++) set(r0 + dr, c0 + dc, Math.max(Math.abs(dr), Math.abs(dc)) !== 1);
  }
  placeFormat(m, fn, size, 0);            // reserve; real bits come later
  if (version >= 7) {
    const v = versionBits(version);
    for (let i = 0; i < 18; i++) {
      const bit = (v >>> i) & 1, a = size - 11 + (i % 3), b = Math.floor(i / 3);
      set(b, a, bit);                     // top-right block
      set(a, b, bit);                     // bottom-left block
    }
  }
  return { size, m, fn };
}

function placeFormat(m, fn, size, bits) {
  const set = (r, c, v) => { m[r * size + c] = v; fn[r * size + c] = 1; };
  const bit = (i) => (bits >>> i) & 1;
  for (let i = 0; i <= 5; i++) set(i, 8, bit(i));
  set(7, 8, bit(6)); set(8, 8, bit(7)); set(8, 7, bit(8));
  for (let i = 9; i < 15; i++) set(8, 14 - i, bit(i));
  for (let i = 0; i < 8; i++) set(8, size - 1 - i, bit(i));
  for (let i = 8; i < 15; i++) set(size - 15 + i, 8, bit(i));
  set(size - 8, 8, 1);                    // the dark module
}

/** Standard penalty score (N1=3, N2=3, N3=40, N4=10) of a finished matrix. */
export function penalty(m, size) {
  const at = (r, c) => m[r * size + c];
  let score = 0;
  for (let pass = 0; pass < 2; pass++) {  // rows, then columns
    const get = pass === 0 ? (i, j) => at(i, j) : (i, j) => at(j, i);
    for (let i = 0; i < size; i++) {
      let run = 1;
      for (let j = 1; j <= size; j++) {   // N1: runs of >= 5 same colour
        if (j < size && get(i, j) === get(i, j - 1)) run++;
        else { if (run >= 5) score += 3 + (run - 5); run = 1; }
      }
      // N3: 1011101 with 4 light modules on one side (outside counts as light).
      const light = (j) => j < 0 || j >= size || get(i, j) === 0;
      for (let j = 0; j + 7 <= size; j++) {
        if (!(get(i, j) && !get(i, j + 1) && get(i, j + 2) && get(i, j + 3) && get(i, j + 4) && !get(i, j + 5) && get(i, j + 6))) continue;
        if ([1, 2, 3, 4].every((k) => light(j - k))) score += 40;
        if ([7, 8, 9, 10].every((k) => light(j + k))) score += 40;
      }
    }
  }
  for (let r = 0; r + 1 < size; r++) for (let c = 0; c + 1 < size; c++) { // N2: 2x2 blocks
    const v = at(r, c);
    if (v === at(r, c + 1) && v === at(r + 1, c) && v === at(r + 1, c + 1)) score += 3;
  }
  let dark = 0;
  for (const v of m) dark += v;
  score += Math.floor((Math.abs(2 * dark - size * size) * 10) / (size * size)) * 10; // N4: 5% steps from 50%
  return score;
}

/** Smallest version (1-40) that holds n bytes at ecc, or 0 if none does. */
export function smallestVersion(n, ecc) {
  for (let v = 1; v <= 40; v++) if (byteCapacity(v, ecc) >= n) return v;
  return 0;
}

/** Encode bytes (Uint8Array | number[]); mask omitted = lowest standard penalty. */
export function encodeReference(bytes, { ecc = 'M', version = 0, mask } = {}) {
  if (!ECC_LEVELS.includes(ecc)) throw new Error(`reference: ecc ${ecc}`);
  version = version || smallestVersion(bytes.length, ecc);
  if (!version) throw new Error(`reference: ${bytes.length} bytes fit no version at ${ecc}`);
  const { size, m, fn } = functionPatterns(version);
  const cw = codewords(Array.from(bytes), version, ecc);
  // Zigzag: column pairs from the right, skipping the vertical timing column.
  let i = 0;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    const upward = ((right + 1) & 2) === 0;
    for (let k = 0; k < size; k++) {
      const r = upward ? size - 1 - k : k;
      for (let j = 0; j < 2; j++) {
        const c = right - j;
        if (fn[r * size + c]) continue;
        m[r * size + c] = i < cw.length * 8 ? (cw[i >>> 3] >>> (7 - (i & 7))) & 1 : 0;
        i++;
      }
    }
  }
  const withMask = (k) => {
    const out = m.slice();
    for (let r = 0; r < size; r++) for (let c = 0; c < size; c++) if (!fn[r * size + c] && MASKS[k](r, c)) out[r * size + c] ^= 1;
    placeFormat(out, fn.slice(), size, formatBits(ecc, k));
    return out;
  };
  let best = mask, bestMods = mask === undefined ? null : withMask(mask);
  if (mask === undefined) {
    let bestScore = Infinity;
    for (let k = 0; k < 8; k++) {
      const cand = withMask(k), s = penalty(cand, size);
      if (s < bestScore) { bestScore = s; best = k; bestMods = cand; }
    }
  }
  return { version, size, mask: best, ecc, modules: bestMods };
}

/** Read (ecc, mask) from the format bits around the top-left finder, or null if not a valid word. */
export function readFormat(modules, size) {
  let bits = 0;
  const at = (r, c) => modules[r * size + c];
  const seq = [[0, 8], [1, 8], [2, 8], [3, 8], [4, 8], [5, 8], [7, 8], [8, 8], [8, 7], [8, 5], [8, 4], [8, 3], [8, 2], [8, 1], [8, 0]];
  seq.forEach(([r, c], i) => { bits |= at(r, c) << i; });
  for (const ecc of ECC_LEVELS) for (let mask = 0; mask < 8; mask++) if (formatBits(ecc, mask) === bits) return { ecc, mask };
  return null;
}
