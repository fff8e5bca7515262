// matmul.wgsl - the tiled GEMM core behind matmul and the three convolution
// ops, which it runs as implicit GEMMs (no unfolded buffer: the tile loaders
// compute each element's input address):
//   C[M, N] = A[M, K] . B[K, N]   for each of Z batch entries (groups for
// the convolutions), the K range optionally cut into S splits whose partial
// products land side by side (the lowering then sums them, matmul_splitk).
//
// MODE 0 matmul         A = in0 (strided, batch-broadcast), B = in1
// MODE 1 conv2d         x = in0, w = in1: M = O/g, N = Nimg*OH*OW,
//                       K = C/g*KH*KW; A = w, B = the input windows
// MODE 2 conv2d_grad_input  dy = in0, w = in1: M = C/g, N = Nimg*H*W,
//                       K = O/g*KH*KW; A = w transposed per group, B = dy
//                       at the output cells each tap reaches (the
//                       transposed convolution; taps off the stride grid
//                       are zero)
// MODE 3 conv2d_grad_weight x = in0, dy = in1: M = O/g, N = C/g*KH*KW,
//                       K = Nimg*OH*OW; A = dy, B = the input windows
//
// A workgroup of 256 threads computes a BM x BN tile of C, BM = TM * WG_Y,
// BN = TN * WG_X: thread (tx, ty) holds TM rows x TN columns in registers,
// rows (ty + i*WG_Y)*4 + r (TM >= 4) or ty*TM + r, columns (tx + j*WG_X)*4 + c.
// K advances BK at a time through workgroup memory (A stored k-major as
// As[k][m], B as Bs[k][n], both as vec4); the next tile is fetched into
// registers while the current one is multiplied.  Every load is bounds
// checked (zero outside), every store guarded, so any shape works.
//
// Uniform words: 0 M, 1 N, 2 K, 3 Z, 4 S, 5 K per split (a multiple of BK),
// 6 row tiles, 7 column tiles, 8 elements per split in the output binding.
// MODE 0: 9 a row stride, 10 a k stride, 11 b k stride, 12 b column stride,
//   13 batch rank nb (<= 6), 14.. batch dims, 20.. a batch strides,
//   26.. b batch strides (element strides, 0 where broadcast).
// MODE 1-3: 9 Nimg, 10 C, 11 H, 12 W, 13 O, 14 KH, 15 KW, 16 OH, 17 OW,
//   18 stride_h, 19 stride_w, 20 pad_h, 21 pad_w, 22 dil_h, 23 dil_w,
//   24 C/g, 25 O/g.

@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read> in1: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> u: array<vec4<u32>, 8>;

override MODE: u32 = 0u;
override TRANS_A: u32 = 0u; // MODE 0: a stored [K, M]
override TRANS_B: u32 = 0u; // MODE 0: b stored [N, K]
override TM: u32 = 4u;      // rows per thread: 1, 2, 4 or 8
override TN: u32 = 4u;      // columns per thread: 4 or 8
override WG_X: u32 = 16u;   // threads along N (a power of two dividing 256)

override WG_Y: u32 = 256u / WG_X;
override BM: u32 = TM * WG_Y;
override BN: u32 = TN * WG_X;
// K depth of a tile: as deep as 16 KiB of workgroup memory allows (<= 32).
override BK: u32 = select(select(select(4u, 8u, BM + BN <= 512u), 16u, BM + BN <= 256u), 32u, BM + BN <= 128u);
// The K depth the product really has when it is shallower than one tile
// (set by the lowering, e.g. 9 for a 3x3 convolution of one channel): the
// multiply loop then skips the zero padding with a constant trip count.
override KD: u32 = 0u;
override K_STEPS: u32 = select(BK, min(BK, KD), KD > 0u);
// Whether consecutive k are adjacent in memory for A (B): the loaders then
// walk k fastest across threads, else m (n), so reads coalesce.
override A_KFAST: bool = MODE != 0u || TRANS_A == 0u;
override B_KFAST: bool = (MODE == 0u && TRANS_B != 0u) || MODE == 3u;
override A_SLOTS: u32 = BK * BM / 4u; // vec4 slots of a tile
override B_SLOTS: u32 = BK * BN / 4u;

var<workgroup> As: array<vec4<f32>, A_SLOTS>;
var<workgroup> Bs: array<vec4<f32>, B_SLOTS>;

var<private> acc: array<vec4<f32>, 16>; // [row r][column group j] at r*2 + j
var<private> pa: array<vec4<f32>, 4>;   // the next tile's slots, per thread
var<private> pb: array<vec4<f32>, 4>;
var<private> a_base: u32;
var<private> b_base: u32;
var<private> grp: u32;
var<private> kend: u32;

fn w(i: u32) -> u32 { return u[i / 4u][i % 4u]; }

// ---- A: A[m, k] = (in0 for matmul, else in1)[a_row(m) + a_col(k)] ----
fn a_row(m: u32) -> u32 {
  if (MODE == 0u) { return a_base + m * w(9u); }
  if (MODE == 1u) { return (grp * w(25u) + m) * w(2u); }                       // w[o, (c,kh,kw)]
  if (MODE == 2u) { return (grp * w(25u) * w(24u) + m) * w(14u) * w(15u); }    // w[o, c, (kh,kw)]
  return (grp * w(25u) + m) * w(16u) * w(17u);                                 // dy[n, o, p]
}

fn a_col(k: u32) -> u32 {
  if (MODE == 0u) { return k * w(10u); }
  if (MODE == 1u) { return k; }
  if (MODE == 2u) {
    let khw = w(14u) * w(15u);
    return (k / khw) * w(24u) * khw + k % khw;
  }
  let ohw = w(16u) * w(17u);
  return (k / ohw) * w(13u) * ohw + k % ohw;
}

fn a_load(i: u32) -> f32 {
  if (MODE == 0u) { return in0[i]; }
  return in1[i];
}

// ---- B of matmul: B[k, n] = in1[b_base + k*b_sk + n*b_sn] ----
fn b_at(k: u32, n: u32) -> f32 { return in1[b_base + k * w(11u) + n * w(12u)]; }

// ---- B of the convolutions: the thread's 4 columns n are fixed for a
// whole output tile, so what depends on n alone is worked out once per tile
// (col_*), leaving per k only its own split (c, kh, kw) or (img, oh, ow).
//  MODE 1: n = (img, oh, ow): col_off = x offset of the image's group,
//          col_h/w = oh*sh - ph, ow*sw - pw
//  MODE 2: n = (img, ih, iw): col_off = dy offset of the image's group,
//          col_h/w = ih + ph, iw + pw
//  MODE 3: n = (c, kh, kw): col_off = x offset of channel c,
//          col_h/w = kh*dh - ph, kw*dw - pw
// Columns past N get col_h far negative, which fails every bounds test.
var<private> col_off: vec4<u32>;
var<private> col_h: vec4<i32>;
var<private> col_w: vec4<i32>;

fn setup_columns(lid: u32, n0: u32) {
  var nb: u32;
  if (B_BLOCK) { nb = n0 + (lid / (BK / 4u)) * 4u; } else { nb = n0 + (lid % (BN / 4u)) * 4u; }
  let H = w(11u);
  let W = w(12u);
  let OH = w(16u);
  let OW = w(17u);
  for (var c = 0u; c < 4u; c++) {
    let n = nb + c;
    var off = 0u;
    var h = -0x20000000;
    var ww = 0;
    if (n < w(1u)) {
      if (MODE == 1u) {
        let img = n / (OH * OW);
        let p = n % (OH * OW);
        off = (img * w(10u) + grp * w(24u)) * H * W;
        h = i32((p / OW) * w(18u)) - i32(w(20u));
        ww = i32((p % OW) * w(19u)) - i32(w(21u));
      } else if (MODE == 2u) {
        let img = n / (H * W);
        let q = n % (H * W);
        off = (img * w(13u) + grp * w(25u)) * OH * OW;
        h = i32(q / W + w(20u));
        ww = i32(q % W + w(21u));
      } else {
        let khw = w(14u) * w(15u);
        let r = n % khw;
        off = (grp * w(24u) + n / khw) * H * W;
        h = i32((r / w(15u)) * w(22u)) - i32(w(20u));
        ww = i32((r % w(15u)) * w(23u)) - i32(w(21u));
      }
    }
    col_off[c] = off;
    col_h[c] = h;
    col_w[c] = ww;
  }
}

// The 4 columns' values at row k (MODE 1 or 2; k < kend).
fn conv_b_row(k: u32) -> vec4<f32> {
  let KW = w(15u);
  let khw = w(14u) * KW;
  let kc = k / khw;
  let r = k % khw;
  let dh = i32((r / KW) * w(22u));
  let dw = i32((r % KW) * w(23u));
  var v = vec4<f32>(0.0);
  if (MODE == 1u) {
    // x[img, c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw]
    let H = w(11u);
    let W = w(12u);
    for (var c = 0u; c < 4u; c++) {
      let ih = col_h[c] + dh;
      let iw = col_w[c] + dw;
      if (ih >= 0 && iw >= 0 && u32(ih) < H && u32(iw) < W) {
        v[c] = in0[col_off[c] + (kc * H + u32(ih)) * W + u32(iw)];
      }
    }
  } else {
    // dy[img, o, oh, ow] where ih + ph - kh*dh = oh*sh (and likewise for w)
    let OH = w(16u);
    let OW = w(17u);
    let sh = w(18u);
    let sw = w(19u);
    for (var c = 0u; c < 4u; c++) {
      let th = col_h[c] - dh;
      let tw = col_w[c] - dw;
      if (th >= 0 && tw >= 0) {
        let oh = u32(th) / sh;
        let ow = u32(tw) / sw;
        if (oh * sh == u32(th) && ow * sw == u32(tw) && oh < OH && ow < OW) {
          v[c] = in0[col_off[c] + (kc * OH + oh) * OW + ow];
        }
      }
    }
  }
  return v;
}

// The 4 columns' values at row k (MODE 3, k < kend): k = (img, oh, ow).
fn conv_dw_row(k: u32) -> vec4<f32> {
  let H = w(11u);
  let W = w(12u);
  let OW = w(17u);
  let ohw = w(16u) * OW;
  let img = k / ohw;
  let p = k % ohw;
  let bh = i32((p / OW) * w(18u));
  let bw = i32((p % OW) * w(19u));
  let xo = img * w(10u) * H * W;
  var v = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    let ih = bh + col_h[c];
    let iw = bw + col_w[c];
    if (ih >= 0 && iw >= 0 && u32(ih) < H && u32(iw) < W) {
      v[c] = in0[xo + col_off[c] + u32(ih) * W + u32(iw)];
    }
  }
  return v;
}

// Index in `out` of C[m, n] for split s.
fn out_index(s: u32, z: u32, m: u32, n: u32) -> u32 {
  let base = s * w(8u);
  if (MODE == 0u) { return base + (z * w(0u) + m) * w(1u) + n; }
  if (MODE == 1u) {
    let ohw = w(16u) * w(17u);
    return base + ((n / ohw) * w(13u) + grp * w(25u) + m) * ohw + n % ohw;
  }
  if (MODE == 2u) {
    let hw = w(11u) * w(12u);
    return base + ((n / hw) * w(10u) + grp * w(24u) + m) * hw + n % hw;
  }
  return base + (grp * w(25u) + m) * w(1u) + n;
}

// Fetching a tile into registers.  Workgroup memory is always written as
// whole vec4s of 4 consecutive m (n) at one k.  Slots: a thread loads 4
// consecutive m (n) at one k; consecutive threads take consecutive slots
// along m (n) or, when k is the contiguous index (A_KFAST, B_KFAST), along
// k so that reads still coalesce.  Blocks (A_BLOCK, B_BLOCK): a thread
// loads 4 rows of 4 consecutive k and transposes them in registers, which
// shares the k-dependent address work of a convolution among 16 loads but
// holds 4 vec4 registers.  Chosen by measurement on an H200 (4096^3):
// untransposed A with an untransposed B as blocks (32 TFLOP/s; slots gave
// 30), but as slots under a transposed B (blocks there: 18, slots: 29).
override A_BLOCK: bool = A_KFAST && MODE != 3u && !(MODE == 0u && TRANS_B != 0u);
override B_BLOCK: bool = MODE == 3u;
override A_PER: u32 = select((A_SLOTS + 255u) / 256u, 4u, A_BLOCK); // vec4 registers per thread
override B_PER: u32 = select((B_SLOTS + 255u) / 256u, 4u, B_BLOCK);

// Slot s of a tile with `width` vec4s per k row: its (k, m-or-n quad).
fn slot_a(s: u32) -> vec2<u32> {
  if (A_KFAST) { return vec2<u32>(s % BK, s / BK); }
  return vec2<u32>(s / (BM / 4u), s % (BM / 4u));
}

fn slot_b(s: u32) -> vec2<u32> {
  if (B_KFAST) { return vec2<u32>(s % BK, s / BK); }
  return vec2<u32>(s / (BN / 4u), s % (BN / 4u));
}

fn fetch(lid: u32, m0: u32, n0: u32, k0: u32) {
  let M = w(0u);
  let N = w(1u);
  if (A_BLOCK) {
    let kq = lid % (BK / 4u);
    let mb = m0 + (lid / (BK / 4u)) * 4u;
    var kc: vec4<u32>;
    var kin: vec4<bool>;
    for (var q = 0u; q < 4u; q++) {
      let k = k0 + kq * 4u + q;
      kin[q] = k < kend;
      if (kin[q]) { kc[q] = a_col(k); }
    }
    for (var r = 0u; r < 4u; r++) {
      var v = vec4<f32>(0.0);
      if (lid < A_SLOTS / 4u && mb + r < M) {
        let ro = a_row(mb + r);
        for (var q = 0u; q < 4u; q++) {
          if (kin[q]) { v[q] = a_load(ro + kc[q]); }
        }
      }
      pa[r] = v;
    }
  } else {
    for (var i = 0u; i < A_PER; i++) {
      let s = lid + i * 256u;
      let km = slot_a(s);
      let k = k0 + km.x;
      let m = m0 + km.y * 4u;
      var v = vec4<f32>(0.0);
      if (s < A_SLOTS && k < kend) {
        let kc = a_col(k);
        for (var c = 0u; c < 4u; c++) {
          if (m + c < M) { v[c] = a_load(a_row(m + c) + kc); }
        }
      }
      pa[i] = v;
    }
  }
  if (B_BLOCK) {
    let kq = lid % (BK / 4u);
    let n = n0 + (lid / (BK / 4u)) * 4u;
    if (MODE == 3u) {
      var t: array<vec4<f32>, 4>; // [k][column]
      for (var q = 0u; q < 4u; q++) {
        let k = k0 + kq * 4u + q;
        t[q] = vec4<f32>(0.0);
        if (lid < B_SLOTS / 4u && k < kend) { t[q] = conv_dw_row(k); }
      }
      for (var c = 0u; c < 4u; c++) { pb[c] = vec4<f32>(t[0][c], t[1][c], t[2][c], t[3][c]); }
    } else {
      for (var c = 0u; c < 4u; c++) {
        var v = vec4<f32>(0.0);
        if (lid < B_SLOTS / 4u && n + c < N) {
          for (var q = 0u; q < 4u; q++) {
            let k = k0 + kq * 4u + q;
            if (k < kend) { v[q] = b_at(k, n + c); }
          }
        }
        pb[c] = v;
      }
    }
  } else {
    for (var i = 0u; i < B_PER; i++) {
      let s = lid + i * 256u;
      let kn = slot_b(s);
      let k = k0 + kn.x;
      let n = n0 + kn.y * 4u;
      var v = vec4<f32>(0.0);
      if (s < B_SLOTS && k < kend) {
        if (MODE == 0u) {
          for (var c = 0u; c < 4u; c++) {
            if (n + c < N) { v[c] = b_at(k, n + c); }
          }
        } else {
          v = conv_b_row(k);
        }
      }
      pb[i] = v;
    }
  }
}

// Writes the fetched registers into workgroup memory.
fn stash(lid: u32) {
  if (A_BLOCK) {
    if (lid < A_SLOTS / 4u) {
      let kq = lid % (BK / 4u);
      let mq = lid / (BK / 4u);
      for (var q = 0u; q < 4u; q++) {
        As[(kq * 4u + q) * (BM / 4u) + mq] = vec4<f32>(pa[0][q], pa[1][q], pa[2][q], pa[3][q]);
      }
    }
  } else {
    for (var i = 0u; i < A_PER; i++) {
      let s = lid + i * 256u;
      let km = slot_a(s);
      if (s < A_SLOTS) { As[km.x * (BM / 4u) + km.y] = pa[i]; }
    }
  }
  if (B_BLOCK) {
    if (lid < B_SLOTS / 4u) {
      let kq = lid % (BK / 4u);
      let nq = lid / (BK / 4u);
      for (var q = 0u; q < 4u; q++) {
        Bs[(kq * 4u + q) * (BN / 4u) + nq] = vec4<f32>(pb[0][q], pb[1][q], pb[2][q], pb[3][q]);
      }
    }
  } else {
    for (var i = 0u; i < B_PER; i++) {
      let s = lid + i * 256u;
      let kn = slot_b(s);
      if (s < B_SLOTS) { Bs[kn.x * (BN / 4u) + kn.y] = pb[i]; }
    }
  }
}

// acc += As[kk] x Bs[kk] over the tile's depth, for this thread's cells.
// Written out with constant accumulator indices (branches on the overrides
// fold away): CPU Vulkan drivers (SwiftShader) keep a dynamically indexed
// private array in memory, which made this loop ~4x slower there.
// Accumulator (row r, column group j) is acc[r * 2 + j].
fn multiply(tx: u32, ty: u32) {
  for (var kk = 0u; kk < K_STEPS; kk++) {
    let b0 = Bs[kk * (BN / 4u) + tx];
    var b1 = vec4<f32>(0.0);
    if (TN == 8u) { b1 = Bs[kk * (BN / 4u) + tx + WG_X]; }
    var a0 = vec4<f32>(0.0);
    if (TM >= 4u) {
      a0 = As[kk * (BM / 4u) + ty];       // rows ty*4 .. ty*4 + 3
    } else {
      let m = ty * TM;                      // rows m .. m + TM - 1, one vec4 slot
      let q = As[kk * (BM / 4u) + m / 4u];
      a0.x = q[m % 4u];
      if (TM == 2u) { a0.y = q[m % 4u + 1u]; }
    }
    acc[0] = fma(vec4<f32>(a0.x), b0, acc[0]);
    if (TM >= 2u) { acc[2] = fma(vec4<f32>(a0.y), b0, acc[2]); }
    if (TM >= 4u) {
      acc[4] = fma(vec4<f32>(a0.z), b0, acc[4]);
      acc[6] = fma(vec4<f32>(a0.w), b0, acc[6]);
    }
    if (TN == 8u) {
      acc[1] = fma(vec4<f32>(a0.x), b1, acc[1]);
      if (TM >= 2u) { acc[3] = fma(vec4<f32>(a0.y), b1, acc[3]); }
      if (TM >= 4u) {
        acc[5] = fma(vec4<f32>(a0.z), b1, acc[5]);
        acc[7] = fma(vec4<f32>(a0.w), b1, acc[7]);
      }
    }
    if (TM == 8u) {
      let a1 = As[kk * (BM / 4u) + ty + WG_Y]; // rows (ty + WG_Y)*4 .. + 3
      acc[8] = fma(vec4<f32>(a1.x), b0, acc[8]);
      acc[10] = fma(vec4<f32>(a1.y), b0, acc[10]);
      acc[12] = fma(vec4<f32>(a1.z), b0, acc[12]);
      acc[14] = fma(vec4<f32>(a1.w), b0, acc[14]);
      if (TN == 8u) {
        acc[9] = fma(vec4<f32>(a1.x), b1, acc[9]);
        acc[11] = fma(vec4<f32>(a1.y), b1, acc[11]);
        acc[13] = fma(vec4<f32>(a1.z), b1, acc[13]);
        acc[15] = fma(vec4<f32>(a1.w), b1, acc[15]);
      }
    }
  }
}

fn row_of(ty: u32, r: u32) -> u32 {
  if (TM >= 4u) { return (ty + (r / 4u) * WG_Y) * 4u + r % 4u; }
  return ty * TM + r;
}

// One output tile: batch entry z, split s, tile (mt, nt).
fn tile(lid: u32, zs: u32, mt: u32, nt: u32) {
  let Z = w(3u);
  let z = zs % Z;
  let s = zs / Z;
  let tx = lid % WG_X;
  let ty = lid / WG_X;
  let m0 = mt * BM;
  let n0 = nt * BN;
  if (MODE == 0u) {
    var rem = z;
    a_base = 0u;
    b_base = 0u;
    let nb = w(13u);
    for (var d = 0u; d < nb; d++) {
      let i = nb - 1u - d;
      let dim = w(14u + i);
      let idx = rem % dim;
      rem = rem / dim;
      a_base += idx * w(20u + i);
      b_base += idx * w(26u + i);
    }
  } else {
    grp = z;
    setup_columns(lid, n0);
  }
  let kbeg = s * w(5u);
  let kstop = min(w(2u), kbeg + w(5u));
  kend = kstop;
  for (var i = 0u; i < 16u; i++) { acc[i] = vec4<f32>(0.0); }
  fetch(lid, m0, n0, kbeg);
  for (var k0 = kbeg; k0 < kstop; k0 += BK) {
    workgroupBarrier();
    stash(lid);
    workgroupBarrier();
    if (k0 + BK < kstop) { fetch(lid, m0, n0, k0 + BK); }
    multiply(tx, ty);
  }
  let M = w(0u);
  let N = w(1u);
  for (var r = 0u; r < TM; r++) {
    let m = m0 + row_of(ty, r);
    if (m >= M) { continue; }
    for (var j = 0u; j < TN / 4u; j++) {
      let n = n0 + (tx + j * WG_X) * 4u;
      let v = acc[r * 2u + j];
      for (var c = 0u; c < 4u; c++) {
        if (n + c < N) { out[out_index(s, z, m, n + c)] = v[c]; }
      }
    }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let zs_count = w(3u) * w(4u);
  for (var zs = wid.z; zs < zs_count; zs += nwg.z) {
    for (var mt = wid.y; mt < w(6u); mt += nwg.y) {
      for (var nt = wid.x; nt < w(7u); nt += nwg.x) {
        tile(lid, zs, mt, nt);
      }
    }
  }
}
