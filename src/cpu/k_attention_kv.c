/* k_attention_kv.c - causal attention over a KV cache (attention_kv), the
 * decoding step of a language model.  The kernel writes this call's keys
 * and values into the caches (its inputs 3 and 4, the caller's memory)
 * before reading them, so a prompt run and the token runs after it share
 * one cache.  Scores are f32, softmax with the row max subtracted.  With
 * rope, q and k are rotated first as the rope kernel does (k_rope.c's
 * table and rows), so the cache holds rotated keys.  The rows (s, h) of
 * the output are spread over the thread pool (src/core/pool.h), each with
 * its own scores. */
#include <math.h>
#include <string.h>

#include "../core/pool.h"
#include "kernels.h"
#include "seq_shared.h"

/* The rows' loop: the (rotated) q, the caches, the sizes. */
typedef struct {
  const float *q, *kc, *vc;
  float *out, scale;
  size_t hq, S, D, Dv, C, group, pos, live;
  int failed;
} kv_rows;

/* Output rows [b, e) of the S * Hq, row s * Hq + h; scores [C] and sums
 * [Dv] in ws. */
static void kv_row_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  kv_rows *r = ctx;
  const size_t C = r->C, D = r->D, Dv = r->Dv, S = r->S;
  float *scores = rlx_scratch_get(ws, (C + Dv) * sizeof(float));
  if (!scores) {
    rlx_task_failed(&r->failed, 1);
    return;
  }
  float *acc = scores + C;
  for (size_t row = b; row < e; row++) {
    const size_t s = row / r->hq, h = row % r->hq;
    float *o = r->out + row * Dv;
    if (s >= r->live) {
      memset(o, 0, Dv * sizeof(float));
      continue;
    }
    size_t n_keys = r->pos + s + 1, g = h / r->group;
    const float *qr = r->q + (h * S + s) * D, *kh = r->kc + g * C * D, *vh = r->vc + g * C * Dv;
    float mx = -INFINITY;
    for (size_t j = 0; j < n_keys; j++) {
      const float *kr = kh + j * D;
      float dot = 0.0f;
      for (size_t i = 0; i < D; i++) dot += qr[i] * kr[i];
      scores[j] = dot * r->scale;
      if (scores[j] > mx) mx = scores[j];
    }
    float sum = 0.0f;
    for (size_t i = 0; i < Dv; i++) acc[i] = 0.0f;
    for (size_t j = 0; j < n_keys; j++) {
      float ex = expf(scores[j] - mx);
      const float *vr = vh + j * Dv;
      sum += ex;
      for (size_t i = 0; i < Dv; i++) acc[i] += ex * vr[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < Dv; i++) o[i] = acc[i] * inv;
  }
}

/* (q[Hq, S, D], k[Hkv, S, D], v[Hkv, S, Dv], k_cache[Hkv, C, D],
 * v_cache[Hkv, C, Dv], pos[1] i32) -> out[S, Hq, Dv].  For s < S with
 * p = pos + s < C: k_cache[h, p] = k[h, s], v_cache[h, p] = v[h, s]; then
 * out[s, h] = sum_j softmax_j(scale q[h, s] . k_cache[h', j]) v_cache[h', j]
 * over j = 0 .. p, h' = h / (Hq / Hkv).  Rows with p >= C are zero.
 * rope 1 / 2 (theta): q[h, s] and k[h, s] rotated at position p first
 * (rope's mode 0 / 1). */
rlx_status rlx_cpu_attention_kv(const rlx_kargs *a) {
  const rlx_shape *qs = &a->in_node[0]->shape, *vs = &a->in_node[2]->shape, *cs = &a->in_node[3]->shape;
  const size_t hq = (size_t)qs->dims[0], S = (size_t)qs->dims[1], D = (size_t)qs->dims[2];
  const size_t hkv = (size_t)vs->dims[0], Dv = (size_t)vs->dims[2], C = (size_t)cs->dims[1], group = hq / hkv;
  const int64_t pos = ((const int32_t *)a->in[5])[0];
  if (pos < 0) return rlx_error(RLX_ERR_INVALID_ARG, "attention_kv: pos is %lld; it must be >= 0", (long long)pos);
  const float *q = a->in[0], *k = a->in[1], *v = a->in[2];
  float *kc = (float *)a->in[3], *vc = (float *)a->in[4], *out = a->out;
  float scale = ATTR_F(a->node, ATTENTION_KV, SCALE);
  if (!(scale > 0.0f)) scale = 1.0f / sqrtf((float)D);
  const int32_t rope = a->node->n_iattr > RLX_IATTR_ATTENTION_KV_ROPE ? ATTR_I(a->node, ATTENTION_KV, ROPE) : 0;
  /* rows s < live land in the cache; the others are past its end */
  size_t live = (uint64_t)pos >= C ? 0 : (C - (size_t)pos < S ? C - (size_t)pos : S);

  /* scratch: a row's scores [C] and sums [Dv]; with rope the cos/sin
   * table of the S positions [S, D] and the rotated q [Hq, S, D] */
  const size_t rot = rope ? S * D + hq * S * D : 0;
  float *scores = rlx_scratch_get(a->scratch, (C + Dv + rot) * sizeof(float));
  if (!scores) return rlx_error(RLX_ERR_NO_MEMORY, "attention_kv: no memory for a row of %zu scores", C);
  float *table = scores + C + Dv;
  if (rope) {
    float *q_rot = table + S * D;
    rlx_rope_table(table, S, D, (double)ATTR_F(a->node, ATTENTION_KV, THETA), (double)pos, 1.0);
    for (size_t h = 0; h < hq; h++)
      for (size_t s = 0; s < live; s++) rlx_rope_row(q + (h * S + s) * D, table + s * D, q_rot + (h * S + s) * D, D / 2, rope == 2);
    q = q_rot;
  }

  for (size_t h = 0; h < hkv; h++)
    for (size_t s = 0; s < live; s++) {
      size_t p = (size_t)pos + s;
      if (rope)
        rlx_rope_row(k + (h * S + s) * D, table + s * D, kc + (h * C + p) * D, D / 2, rope == 2);
      else
        memmove(kc + (h * C + p) * D, k + (h * S + s) * D, D * sizeof(float));
      memmove(vc + (h * C + p) * Dv, v + (h * S + s) * Dv, Dv * sizeof(float));
    }

  kv_rows r = {q, kc, vc, out, scale, hq, S, D, Dv, C, group, (size_t)pos, live, 0};
  rlx_scratch row_ws = {scores, (C + Dv) * sizeof(float)}; /* the rows' buffers when the loop runs inline */
  rlx_parallel_for(S * hq, 1, ((size_t)pos + S) * (D + Dv), kv_row_range, &r, &row_ws);
  if (r.failed) return rlx_error(RLX_ERR_NO_MEMORY, "attention_kv: no memory for a row of %zu scores", C);
  return RLX_OK;
}
