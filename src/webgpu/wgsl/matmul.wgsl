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

// x[img, grp*Cg + c, ih, iw] or 0 in the padding (x is in0).
fn x_at(img: u32, c: u32, ih: i32, iw: i32) -> f32 {
  let H = w(11u);
  let W = w(12u);
  if (ih < 0 || iw < 0 || u32(ih) >= H || u32(iw) >= W) { return 0.0; }
  return in0[((img * w(10u) + grp * w(24u) + c) * H + u32(ih)) * W + u32(iw)];
}

// The input cell that tap (kh, kw) of output (oh, ow) reads.
fn conv_x(img: u32, c: u32, oh: u32, ow: u32, kh: u32, kw: u32) -> f32 {
  let ih = i32(oh * w(18u) + kh * w(22u)) - i32(w(20u));
  let iw = i32(ow * w(19u) + kw * w(23u)) - i32(w(21u));
  return x_at(img, c, ih, iw);
}

// A[m, k], m < M and k < K.
fn a_at(m: u32, k: u32) -> f32 {
  if (MODE == 0u) { return in0[a_base + m * w(9u) + k * w(10u)]; }
  if (MODE == 1u) { return in1[(grp * w(25u) + m) * w(2u) + k]; }
  let khw = w(14u) * w(15u);
  if (MODE == 2u) {
    let o = k / khw;
    return in1[((grp * w(25u) + o) * w(24u) + m) * khw + k % khw];
  }
  let ohw = w(16u) * w(17u);
  let img = k / ohw;
  return in1[(img * w(13u) + grp * w(25u) + m) * ohw + k % ohw];
}

// B[k, n], k < K and n < N.
fn b_at(k: u32, n: u32) -> f32 {
  if (MODE == 0u) { return in1[b_base + k * w(11u) + n * w(12u)]; }
  let KW = w(15u);
  let khw = w(14u) * KW;
  if (MODE == 1u) {
    let OW = w(17u);
    let ohw = w(16u) * OW;
    let p = n % ohw;
    let r = k % khw;
    return conv_x(n / ohw, k / khw, p / OW, p % OW, r / KW, r % KW);
  }
  if (MODE == 2u) {
    // dx cell (ih, iw) of image img takes dy[o, oh, ow] through tap (kh, kw)
    // when ih = oh*sh + kh*dh - ph (and likewise for w).
    let W = w(12u);
    let hw = w(11u) * W;
    let img = n / hw;
    let q = n % hw;
    let o = k / khw;
    let r = k % khw;
    let th = i32(q / W + w(20u)) - i32((r / KW) * w(22u));
    let tw = i32(q % W + w(21u)) - i32((r % KW) * w(23u));
    if (th < 0 || tw < 0) { return 0.0; }
    let sh = w(18u);
    let sw = w(19u);
    let oh = u32(th) / sh;
    let ow = u32(tw) / sw;
    let OW = w(17u);
    if (oh * sh != u32(th) || ow * sw != u32(tw) || oh >= w(16u) || ow >= OW) { return 0.0; }
    return in0[((img * w(13u) + grp * w(25u) + o) * w(16u) + oh) * OW + ow];
  }
  let OW = w(17u);
  let ohw = w(16u) * OW;
  let p = k % ohw;
  let r = n % khw;
  return conv_x(k / ohw, n / khw, p / OW, p % OW, r / KW, r % KW);
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

// Fetching a tile into registers.  An operand whose m (n) index is the
// contiguous one loads slots of 4 consecutive m (n) at one k, consecutive
// threads taking consecutive slots.  One whose k is contiguous loads 4x4
// blocks (4 rows of 4 consecutive k, consecutive threads along k) and
// transposes them in registers, so workgroup memory is always written as
// whole vec4s of 4 consecutive m (n).
override A_PER: u32 = select((A_SLOTS + 255u) / 256u, 4u, A_KFAST); // vec4 registers per thread
override B_PER: u32 = select((B_SLOTS + 255u) / 256u, 4u, B_KFAST);

fn fetch(lid: u32, m0: u32, n0: u32, k0: u32) {
  let M = w(0u);
  let N = w(1u);
  if (A_KFAST) {
    let kq = lid % (BK / 4u);
    let m = m0 + (lid / (BK / 4u)) * 4u;
    for (var r = 0u; r < 4u; r++) {
      var v = vec4<f32>(0.0);
      if (lid < A_SLOTS / 4u && m + r < M) {
        for (var q = 0u; q < 4u; q++) {
          let k = k0 + kq * 4u + q;
          if (k < kend) { v[q] = a_at(m + r, k); }
        }
      }
      pa[r] = v;
    }
  } else {
    for (var i = 0u; i < A_PER; i++) {
      let s = lid + i * 256u;
      let k = k0 + s / (BM / 4u);
      let m = m0 + (s % (BM / 4u)) * 4u;
      var v = vec4<f32>(0.0);
      if (s < A_SLOTS && k < kend) {
        for (var c = 0u; c < 4u; c++) {
          if (m + c < M) { v[c] = a_at(m + c, k); }
        }
      }
      pa[i] = v;
    }
  }
  if (B_KFAST) {
    let kq = lid % (BK / 4u);
    let n = n0 + (lid / (BK / 4u)) * 4u;
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
  } else {
    for (var i = 0u; i < B_PER; i++) {
      let s = lid + i * 256u;
      let k = k0 + s / (BN / 4u);
      let n = n0 + (s % (BN / 4u)) * 4u;
      var v = vec4<f32>(0.0);
      if (s < B_SLOTS && k < kend) {
        for (var c = 0u; c < 4u; c++) {
          if (n + c < N) { v[c] = b_at(k, n + c); }
        }
      }
      pb[i] = v;
    }
  }
}

// Writes the fetched registers into workgroup memory.
fn stash(lid: u32) {
  if (A_KFAST) {
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
      if (s < A_SLOTS) { As[s] = pa[i]; }
    }
  }
  if (B_KFAST) {
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
      if (s < B_SLOTS) { Bs[s] = pb[i]; }
    }
  }
}

// acc += As[kk] x Bs[kk] over the tile's depth, for this thread's cells.
fn multiply(tx: u32, ty: u32) {
  for (var kk = 0u; kk < BK; kk++) {
    var bv: array<vec4<f32>, 2>;
    for (var j = 0u; j < TN / 4u; j++) { bv[j] = Bs[kk * (BN / 4u) + tx + j * WG_X]; }
    if (TM >= 4u) {
      for (var i = 0u; i < TM / 4u; i++) {
        let av = As[kk * (BM / 4u) + ty + i * WG_Y];
        for (var r = 0u; r < 4u; r++) {
          for (var j = 0u; j < TN / 4u; j++) {
            acc[(i * 4u + r) * 2u + j] = fma(vec4<f32>(av[r]), bv[j], acc[(i * 4u + r) * 2u + j]);
          }
        }
      }
    } else {
      for (var r = 0u; r < TM; r++) {
        let m = ty * TM + r;
        let av = As[kk * (BM / 4u) + m / 4u][m % 4u];
        for (var j = 0u; j < TN / 4u; j++) {
          acc[r * 2u + j] = fma(vec4<f32>(av), bv[j], acc[r * 2u + j]);
        }
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
