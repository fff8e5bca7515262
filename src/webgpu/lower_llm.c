/* lower_llm.c - WebGPU lowerings of the quantized language-model ops.  The
 * weights (matmul_q's w, gather_q's table) are bound as they are, the i32
 * words of the GGUF rows, and every kernel decodes its blocks in place
 * (wgsl/_llm_quant.wgsl): the GPU never holds an f32 copy of a weight.
 *  - matmul_q, trans 0: up to MATVEC_MAX_M rows of x (decoding, short
 *    prompt steps) by llm_matvec_q.wgsl (a workgroup per 8 weight rows, 32
 *    threads per row, partial sums added in workgroup memory); more rows
 *    (prompts) by the tiled llm_matmul_q.wgsl; trans 1 (fine-tuning's
 *    input gradients) by llm_matmul_qt.wgsl, the same tiling over the
 *    other axis;
 *  - gather_q: llm_gather_q.wgsl;
 *  - attention_kv: causal attention with the keys split over workgroups
 *    (llm_attention_kv.wgsl, which also writes this step's k, v into the
 *    caches, inputs 3 and 4 bound writable: the op's side effect; with
 *    rope it rotates q and k as it reads them), then the splits merged
 *    (llm_attention_kv_merge.wgsl).
 * The kernels take the weight type as the override QTYPE, its sub-op code
 * RLX_SUBOP_WT_<TYPE> (include/rlx_subops.def).
 *
 * Tolerances against the CPU: the products sum in f32 in another order
 * (about 1e-6 relative for the op cases' sizes); the attention's softmax
 * uses WGSL's exp (a few ulp). */
#include <math.h>

#include "../core/subops.h"
#include "rlx_gguf.h"
#include "wgpu.h"

#define MATVEC_MAX_M 4u
#define MATVEC_ROWS 8u /* weight rows per workgroup (RPW in llm_matvec_q.wgsl) */
#define TILE_M 32u     /* llm_matmul_q.wgsl's TM, TN; llm_matmul_qt.wgsl's TM, TK */
#define TILE_N 64u
#define ATTN_MAX_D 256u
#define ATTN_LANES 16u       /* score lanes per key (LN in llm_attention_kv.wgsl) */
#define ATTN_COLS 64u        /* value columns per pass (T / VG there) */
#define ATTN_SPLIT_KEYS 128u /* cache positions per key split, at least */
#define ATTN_MAX_SPLITS 64u  /* key splits per query row (the merge's threads) */
#define ATTN_GROUPS 128u     /* workgroups aimed at, all rows together */

/* The table of a matmul_q / gather_q node: sub-op code, rows, cols, row
 * stride in bytes. */
typedef struct {
  uint32_t subop, rows, cols, stride, chunks;
} qtable;

static rlx_status table_of(const rlx_wgpu_ctx *c, qtable *t) {
  const int32_t code = ATTR_I(c->node, QTABLE, QTYPE);
  int32_t elems, bytes;
  const int32_t sub = rlx_wt_of_gguf_type(code, &elems, &bytes);
  uint64_t stride = 0;
  if (sub < 0 || rlx_gguf_row_bytes((rlx_gguf_type)code, ATTR_I(c->node, QTABLE, COLS), &stride) != RLX_OK)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: %s: weight type %d has no WebGPU kernel", rlx_op_name(c->node->op),
                     (int)code);
  t->subop = (uint32_t)sub;
  t->rows = (uint32_t)ATTR_I(c->node, QTABLE, ROWS);
  t->cols = (uint32_t)ATTR_I(c->node, QTABLE, COLS);
  t->stride = (uint32_t)stride;
  t->chunks = (t->cols + 7) / 8;
  return RLX_OK;
}

/* x[..., K] -> y[..., N] = x W^T (trans 0), or x[..., N] -> y[..., K] = x W
 * (trans 1); w the N x K table; + acc (input 2, y's shape) when given. */
rlx_status rlx_wgpu_lower_matmul_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  if (c->node->n_iattr > RLX_IATTR_QMATMUL_XQ8 && ATTR_I(c->node, QMATMUL, XQ8))
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: matmul_q with xq8 (x rounded to 8 bits) runs on the CPU only");
  qtable t;
  rlx_status st = table_of(c, &t);
  if (st != RLX_OK) return st;
  const int trans = ATTR_I(c->node, QMATMUL, TRANS) != 0;
  const uint32_t M = (uint32_t)(rlx_shape_numel(&c->in_node[0]->shape) / (trans ? t.rows : t.cols));
  const char *shader = trans ? "llm_matmul_qt" : M <= MATVEC_MAX_M ? "llm_matvec_q" : "llm_matmul_q";
  const int norm = c->node->n_iattr > RLX_IATTR_QMATMUL_NORM && ATTR_I(c->node, QMATMUL, NORM);
  const int acc = !norm && c->node->n_inputs > 2;
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, shader);
  rlx_wgpu_override(d, "QTYPE", t.subop);
  rlx_wgpu_override(d, "ACC", (uint32_t)acc);
  if (!trans) rlx_wgpu_override(d, "NORM", (uint32_t)norm); /* the norm needs trans 0 (its shape rule) */
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 1, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, c->node->n_inputs > 2 ? 2 : 0, 0, 0, 0); /* acc or g, else x (not read) */
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  rlx_wgpu_u32(d, t.rows);
  rlx_wgpu_u32(d, t.cols);
  rlx_wgpu_u32(d, M);
  rlx_wgpu_u32(d, t.stride);
  if (trans) {
    const uint32_t tiles_k = (t.cols + TILE_N - 1) / TILE_N;
    rlx_wgpu_u32(d, tiles_k);
    rlx_wgpu_grid1d(d, (size_t)tiles_k * ((M + TILE_M - 1) / TILE_M), 1);
  } else if (M <= MATVEC_MAX_M) {
    rlx_wgpu_u32(d, t.chunks);
    rlx_wgpu_f32(d, norm ? ATTR_F(c->node, QMATMUL, EPS) : 0.0f);
    rlx_wgpu_grid1d(d, t.rows, MATVEC_ROWS);
  } else {
    const uint32_t tiles_n = (t.rows + TILE_N - 1) / TILE_N;
    rlx_wgpu_u32(d, tiles_n);
    rlx_wgpu_f32(d, norm ? ATTR_F(c->node, QMATMUL, EPS) : 0.0f);
    rlx_wgpu_grid1d(d, (size_t)tiles_n * ((M + TILE_M - 1) / TILE_M), 1);
  }
  return RLX_OK;
}

/* table (V x K), ids[...] -> y[..., K]. */
rlx_status rlx_wgpu_lower_gather_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  qtable t;
  rlx_status st = table_of(c, &t);
  if (st != RLX_OK) return st;
  const size_t n_ids = rlx_shape_numel(&c->in_node[1]->shape);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "llm_gather_q");
  rlx_wgpu_override(d, "QTYPE", t.subop);
  rlx_wgpu_override(d, "IDS_I32", c->in_node[1]->dtype == RLX_I32);
  rlx_wgpu_bind_inputs(d, 2);
  rlx_wgpu_u32(d, (uint32_t)n_ids);
  rlx_wgpu_u32(d, t.cols);
  rlx_wgpu_u32(d, t.rows);
  rlx_wgpu_u32(d, t.stride);
  rlx_wgpu_u32(d, t.chunks);
  rlx_wgpu_grid1d(d, n_ids * t.chunks, 64);
  return RLX_OK;
}

/* (q[Hq, S, D], k[Hkv, S, D], v[Hkv, S, Dv], k_cache[Hkv, C, D],
 * v_cache[Hkv, C, Dv], pos i32 [1]) -> out[S, Hq, Dv]; writes the caches.
 * llm_attention_kv.wgsl: a workgroup per (query row, key split) and the
 * cache append; llm_attention_kv_merge.wgsl merges the splits (none with
 * one split: the first dispatch writes out). */
rlx_status rlx_wgpu_lower_attention_kv(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *qs = &c->in_node[0]->shape, *vs = &c->in_node[2]->shape, *cs = &c->in_node[3]->shape;
  const uint32_t hq = (uint32_t)qs->dims[0], S = (uint32_t)qs->dims[1], D = (uint32_t)qs->dims[2];
  const uint32_t hkv = (uint32_t)vs->dims[0], Dv = (uint32_t)vs->dims[2], C = (uint32_t)cs->dims[1];
  if (D > ATTN_MAX_D || Dv > ATTN_MAX_D)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: attention_kv with heads of %u / %u values (at most %u on WebGPU)",
                     (unsigned)D, (unsigned)Dv, (unsigned)ATTN_MAX_D);
  const uint32_t rope = c->node->n_iattr > RLX_IATTR_ATTENTION_KV_ROPE ? (uint32_t)ATTR_I(c->node, ATTENTION_KV, ROPE) : 0u;
  if (rope && D / 2 > RLX_WGPU_ROPE_FREQS)
    return rlx_error(RLX_ERR_UNSUPPORTED,
                     "webgpu: attention_kv with rope rotates heads of up to %u values in its kernel (D = %u): build "
                     "rope as its own op for wider heads",
                     (unsigned)(2 * RLX_WGPU_ROPE_FREQS), (unsigned)D);
  float scale = ATTR_F(c->node, ATTENTION_KV, SCALE);
  if (!(scale > 0.0f)) scale = 1.0f / sqrtf((float)D);
  const uint32_t rows = S * hq;
  /* key splits per row: about ATTN_GROUPS workgroups in all (one per
   * multiprocessor of a large GPU; each costs a CPU Vulkan such as
   * SwiftShader ~0.2 ms, live or not), each split at least ATTN_SPLIT_KEYS
   * of the cache; the kernels size them from pos, in whole tiles of 32
   * keys (SmolLM's decode, C 2048: 14 splits, 6 of them live at pos 160) */
  uint32_t splits = (C + ATTN_SPLIT_KEYS - 1) / ATTN_SPLIT_KEYS;
  if (splits > ATTN_MAX_SPLITS) splits = ATTN_MAX_SPLITS;
  if (rows && splits > ATTN_GROUPS / rows) splits = ATTN_GROUPS / rows;
  if (splits < 1) splits = 1;
  const size_t slots = (size_t)rows * splits, part_bytes = slots * (Dv + 2) * sizeof(float);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "llm_attention_kv");
  rlx_wgpu_override(d, "NV", (Dv + ATTN_COLS - 1) / ATTN_COLS);
  rlx_wgpu_override(d, "ND", (D + ATTN_LANES - 1) / ATTN_LANES);
  rlx_wgpu_override(d, "DIRECT", splits == 1);
  rlx_wgpu_override(d, "ROPE", rope);
  for (int32_t k = 0; k < 6; k++) rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, k == 3 || k == 4); /* caches written */
  if (splits > 1) {
    out->scratch_bytes = part_bytes; /* rounded up to 256 by prepare.c */
    rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, part_bytes, 1);
  } else {
    rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  }
  rlx_wgpu_u32(d, hq);
  rlx_wgpu_u32(d, S);
  rlx_wgpu_u32(d, D);
  rlx_wgpu_u32(d, Dv);
  rlx_wgpu_u32(d, C);
  rlx_wgpu_u32(d, hq / hkv);
  rlx_wgpu_f32(d, scale);
  rlx_wgpu_u32(d, splits);
  rlx_wgpu_u32(d, (uint32_t)slots);
  rlx_wgpu_u32(d, (uint32_t)(slots * Dv));
  if (rope) {
    rlx_wgpu_u32(d, 0);
    rlx_wgpu_u32(d, 0);
    rlx_wgpu_rope_freqs(d, ATTR_F(c->node, ATTENTION_KV, THETA), D, 0, D / 2);
  }
  rlx_wgpu_grid1d(d, slots, 1);
  if (splits == 1) return RLX_OK;
  d = rlx_wgpu_add(out, "llm_attention_kv_merge");
  rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, part_bytes, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 5, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  rlx_wgpu_u32(d, hq);
  rlx_wgpu_u32(d, Dv);
  rlx_wgpu_u32(d, C);
  rlx_wgpu_u32(d, splits);
  rlx_wgpu_u32(d, rows);
  rlx_wgpu_u32(d, (uint32_t)(slots * Dv));
  rlx_wgpu_grid1d(d, rows, 1);
  return RLX_OK;
}
