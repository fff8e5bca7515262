/* fuse_attention.c - the attention block pass.  Rooted at the output
 * projection matmul(o, Wo), it matches
 *
 *   qkv = matmul(x, W)  with W [E, 3 H Dh] (or concat(Wq, Wk, Wv) on axis 1)
 *   q, k, v = narrow(qkv, last axis, 0 / H Dh / 2 H Dh, H Dh)
 *        or  q, k, v = matmul(x, Wq), matmul(x, Wk), matmul(x, Wv)
 *   q, k, v -> reshapes/permutes -> [B, H, S, Dh] -> rope on q and k (or on
 *   neither) -> attention (any mask kind) -> reshapes/permutes -> o[.., S, H Dh]
 *
 * and replaces the root by one fused_attention node.  The layout chains may
 * be any sequence of reshape and permute nodes: the pass follows them as
 * strided views of the tensor at the chain's far end and accepts them when
 * head h, row s, column d of q/k/v is column h Dh + d of row s of the
 * projection (and o the same way around).  A concat whose only consumer is
 * the projection is bypassed (its three weights become inputs), otherwise W
 * itself is the packed input. */
#include "fuse_internal.h"

#include <string.h>

/* A strided view: element (i0, i1, ...) lies at sum i_k strides[k] of the
 * tensor the view was started from. */
typedef struct {
  int32_t rank;
  int64_t dims[RLX_MAX_RANK], strides[RLX_MAX_RANK];
} view;

static view contiguous(const rlx_shape *s) {
  view v;
  v.rank = s->rank;
  int64_t st = 1;
  for (int32_t i = s->rank - 1; i >= 0; i--) {
    v.dims[i] = s->dims[i];
    v.strides[i] = st;
    st *= s->dims[i];
  }
  return v;
}

/* Reshapes v to s when that is expressible with strides (it is whenever
 * only dims that lie contiguously in v are merged); 0 otherwise.  The
 * algorithm of stride computation for views in array libraries: group the
 * old dims into contiguous chunks and split each chunk into new dims. */
static int view_reshape(view *v, const rlx_shape *s) {
  int64_t strides[RLX_MAX_RANK];
  if (v->rank < 1 || s->rank < 1) return 0;
  int32_t vd = s->rank - 1;
  int64_t chunk_stride = v->strides[v->rank - 1], tensor_numel = 1, view_numel = 1;
  for (int32_t td = v->rank - 1; td >= 0; td--) {
    tensor_numel *= v->dims[td];
    if (td == 0 || (v->dims[td - 1] != 1 && v->strides[td - 1] != tensor_numel * chunk_stride)) {
      while (vd >= 0 && (view_numel < tensor_numel || s->dims[vd] == 1)) {
        strides[vd] = view_numel * chunk_stride;
        view_numel *= s->dims[vd];
        vd--;
      }
      if (view_numel != tensor_numel) return 0;
      if (td > 0) {
        chunk_stride = v->strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (vd != -1) return 0;
  v->rank = s->rank;
  for (int32_t i = 0; i < s->rank; i++) v->dims[i] = s->dims[i], v->strides[i] = strides[i];
  return 1;
}

/* The view of the output of layout node n given the view of its input. */
static int view_forward(view *v, const rlx_node_t *n) {
  if (n->op == RLX_OP_RESHAPE) return view_reshape(v, &n->shape);
  view in = *v;
  const int32_t *perm = &ATTR_I(n, PERM, PERM);
  for (int32_t i = 0; i < v->rank; i++) v->dims[i] = in.dims[perm[i]], v->strides[i] = in.strides[perm[i]];
  return 1;
}

/* The view of the input of layout node n given the view of its output. */
static int view_backward(view *v, const rlx_node_t *n, const rlx_shape *in_shape) {
  if (n->op == RLX_OP_RESHAPE) return view_reshape(v, in_shape);
  view out = *v;
  const int32_t *perm = &ATTR_I(n, PERM, PERM);
  for (int32_t i = 0; i < v->rank; i++) v->dims[perm[i]] = out.dims[i], v->strides[perm[i]] = out.strides[i];
  return 1;
}

/* v is [B, H, S, Dh] with element (b, h, s, d) at b S HD + s HD + h Dh + d,
 * i.e. head-split rows of HD = H Dh values (strides of size-1 dims free). */
static int is_head_split(const view *v, const int64_t want_dims[4], int64_t HD) {
  const int64_t want[4] = {want_dims[2] * HD, want_dims[3], HD, 1};
  if (v->rank != 4) return 0;
  for (int32_t i = 0; i < 4; i++)
    if (v->dims[i] != want_dims[i] || (v->dims[i] > 1 && v->strides[i] != want[i])) return 0;
  return 1;
}

static int is_layout(const rlx_node_t *n) { return n->op == RLX_OP_RESHAPE || n->op == RLX_OP_PERMUTE; }

/* Follows reshapes/permutes back from id; the chain (nearest the far end
 * first) goes into chain/n_chain and into the pattern set; returns the first
 * node that is not a layout op. */
static int32_t follow_layout(const rlx_graph *g, int32_t id, int32_t *chain, int32_t *n_chain, fuse_set *set) {
  *n_chain = 0;
  while (is_layout(&g->nodes[id])) {
    if (*n_chain == RLX_MAX_RANK * 2 || !fuse_set_add(set, id)) return -1;
    chain[(*n_chain)++] = id;
    id = g->nodes[id].inputs[0];
  }
  return id;
}

typedef struct {
  int32_t B, H, S, Dh, HD;
  int64_t dims[4]; /* B, H, S, Dh */
  int32_t lead_rank; /* x's rank - 2 */
} block_dims;

/* The projection output [.., S, HD] at src, carried through the chain
 * (far end first) to the attention's [B, H, S, Dh] operand. */
static int input_layout_ok(const rlx_graph *g, int32_t src, const int32_t *chain, int32_t n_chain,
                           const block_dims *d) {
  const rlx_shape *s = &g->nodes[src].shape;
  if (s->rank < 2 || s->dims[s->rank - 1] != d->HD || s->dims[s->rank - 2] != d->S) return 0;
  view v = contiguous(s);
  for (int32_t i = n_chain - 1; i >= 0; i--)
    if (!view_forward(&v, &g->nodes[chain[i]])) return 0;
  return is_head_split(&v, d->dims, d->HD);
}

/* One of q, k, v: optional rope, layout chain, projection source. */
typedef struct {
  int32_t rope;   /* rope node or -1 */
  int32_t src;    /* narrow or matmul at the chain's far end */
} operand;

static int match_operand(const rlx_graph *g, int32_t id, int allow_rope, const block_dims *d, fuse_set *set,
                         operand *op) {
  int32_t chain[RLX_MAX_RANK * 2], n_chain;
  op->rope = -1;
  /* the fused kernel does NeoX RoPE at fixed positions: no offset input, mode 0 */
  if (allow_rope && g->nodes[id].op == RLX_OP_ROPE && g->nodes[id].n_inputs == 1 &&
      ATTR_I(&g->nodes[id], ROPE, MODE) == 0) {
    if (!fuse_set_add(set, id)) return 0;
    op->rope = id;
    id = g->nodes[id].inputs[0];
  }
  op->src = follow_layout(g, id, chain, &n_chain, set);
  if (op->src < 0) return 0;
  rlx_op src_op = g->nodes[op->src].op;
  if (src_op != RLX_OP_NARROW && src_op != RLX_OP_MATMUL) return 0;
  return input_layout_ok(g, op->src, chain, n_chain, d);
}

static int plain_matmul(const rlx_node_t *n) { return n->op == RLX_OP_MATMUL && !ATTR_I(n, MATMUL, TRANS_A) && !ATTR_I(n, MATMUL, TRANS_B); }

/* The weights of the projection: packed W, or the three parts.  Returns the
 * number of weight inputs written to w (1 or 3), 0 if no match; *x gets
 * the projected activations. */
static int match_projection(const fuse_ctx *c, const operand ops[3], const block_dims *d, fuse_set *set, int32_t *x,
                            int32_t w[3]) {
  const rlx_graph *g = c->g;
  const rlx_node_t *n[3] = {&g->nodes[ops[0].src], &g->nodes[ops[1].src], &g->nodes[ops[2].src]};
  if (n[0]->op == RLX_OP_MATMUL) { /* three projections of one x */
    for (int t = 0; t < 3; t++) {
      if (!plain_matmul(n[t]) || n[t]->inputs[0] != n[0]->inputs[0] || g->nodes[n[t]->inputs[1]].shape.rank != 2)
        return 0;
      w[t] = n[t]->inputs[1];
      if (!fuse_set_add(set, ops[t].src)) return 0;
    }
    *x = n[0]->inputs[0];
    return 3;
  }
  /* three narrows of one packed projection */
  int32_t qkv = n[0]->inputs[0];
  const rlx_node_t *p = &g->nodes[qkv];
  for (int t = 0; t < 3; t++) {
    const rlx_node_t *nt = n[t];
    if (nt->op != RLX_OP_NARROW || nt->inputs[0] != qkv || ATTR_I(nt, NARROW, AXIS) != p->shape.rank - 1 ||
        ATTR_I(nt, NARROW, START) != t * d->HD || ATTR_I(nt, NARROW, LENGTH) != d->HD)
      return 0;
    if (!fuse_set_add(set, ops[t].src)) return 0;
  }
  if (!plain_matmul(p) || p->shape.dims[p->shape.rank - 1] != 3 * d->HD || !fuse_set_add(set, qkv)) return 0;
  int32_t wid = p->inputs[1];
  const rlx_node_t *wn = &g->nodes[wid];
  *x = p->inputs[0];
  if (wn->shape.rank != 2) return 0;
  if (wn->op == RLX_OP_CONCAT && wn->n_inputs == 3 && ATTR_I(wn, AXIS, AXIS) == 1 && c->uses[wid] == 1 && !c->output[wid]) {
    for (int t = 0; t < 3; t++) {
      w[t] = wn->inputs[t];
      if (g->nodes[w[t]].shape.dims[1] != d->HD) return 0;
    }
    return fuse_set_add(set, wid) ? 3 : 0;
  }
  w[0] = wid;
  return 1;
}

int rlx_fuse_attention_block(fuse_ctx *c, int32_t root) {
  const rlx_graph *g = c->g;
  const rlx_node_t *r = &g->nodes[root];
  if (!plain_matmul(r) || g->nodes[r->inputs[1]].shape.rank != 2) return 0;
  fuse_set set;
  set.n = 0;
  int32_t chain[RLX_MAX_RANK * 2], n_chain;
  int32_t att_id = follow_layout(g, r->inputs[0], chain, &n_chain, &set);
  if (att_id < 0 || g->nodes[att_id].op != RLX_OP_ATTENTION || !fuse_set_add(&set, att_id)) return 0;
  const rlx_node_t *att = &g->nodes[att_id];
  const rlx_shape *qs = &g->nodes[att->inputs[0]].shape;
  /* self-attention with equal q, k, v shapes */
  if (!rlx_shape_equal(qs, &g->nodes[att->inputs[1]].shape) || !rlx_shape_equal(qs, &g->nodes[att->inputs[2]].shape))
    return 0;
  block_dims d;
  d.B = qs->dims[0], d.H = qs->dims[1], d.S = qs->dims[2], d.Dh = qs->dims[3], d.HD = d.H * d.Dh;
  for (int i = 0; i < 4; i++) d.dims[i] = qs->dims[i];

  /* o: the attention output [B, H, S, Dh] read back from the root's a */
  const rlx_shape *os = &g->nodes[r->inputs[0]].shape;
  if (os->rank < 2 || os->dims[os->rank - 1] != d.HD || os->dims[os->rank - 2] != d.S) return 0;
  view v = contiguous(os);
  for (int32_t i = 0; i < n_chain; i++) {
    const rlx_node_t *ln = &g->nodes[chain[i]];
    if (!view_backward(&v, ln, &g->nodes[ln->inputs[0]].shape)) return 0;
  }
  if (!is_head_split(&v, d.dims, d.HD)) return 0;

  operand ops[3];
  for (int t = 0; t < 3; t++)
    if (!match_operand(g, att->inputs[t], t < 2, &d, &set, &ops[t])) return 0;
  /* rope on both q and k with the same settings, or on neither */
  int rope = ops[0].rope >= 0;
  if (rope != (ops[1].rope >= 0)) return 0;
  const rlx_node_t *rq = rope ? &g->nodes[ops[0].rope] : NULL, *rk = rope ? &g->nodes[ops[1].rope] : NULL;
  if (rope && (ATTR_I(rq, ROPE, POS_OFFSET) != ATTR_I(rk, ROPE, POS_OFFSET) || ATTR_I(rq, ROPE, INVERSE) != ATTR_I(rk, ROPE, INVERSE) ||
               ATTR_F(rq, ROPE, THETA) != ATTR_F(rk, ROPE, THETA)))
    return 0;

  int32_t x, w[3];
  int n_w = match_projection(c, ops, &d, &set, &x, w);
  if (!n_w) return 0;
  /* x[S, E] (B = 1) or x[B, S, E], and o shaped like it */
  const rlx_shape *xs = &g->nodes[x].shape;
  if (!(xs->rank == 2 && d.B == 1) && !(xs->rank == 3 && xs->dims[0] == d.B)) return 0;
  if (xs->dims[xs->rank - 2] != d.S || os->rank != xs->rank || (xs->rank == 3 && os->dims[0] != d.B)) return 0;
  if (!fuse_only_feeds(c, &set, root)) return 0;

  rlx_node_t f;
  memset(&f, 0, sizeof f);
  f.op = RLX_OP_FUSED_ATTENTION;
  f.inputs[f.n_inputs++] = x;
  for (int t = 0; t < n_w; t++) f.inputs[f.n_inputs++] = w[t];
  f.inputs[f.n_inputs++] = r->inputs[1];
  if (att->n_inputs > 3) f.inputs[f.n_inputs++] = att->inputs[3];
  f.n_iattr = RLX_IATTR_FUSED_ATTENTION_ROPE_INVERSE + 1;
  ATTR_I(&f, FUSED_ATTENTION, HEADS) = d.H;
  ATTR_I(&f, FUSED_ATTENTION, HEAD_DIM) = d.Dh;
  ATTR_I(&f, FUSED_ATTENTION, MASK) = ATTR_I(att, ATTENTION, MASK);
  ATTR_I(&f, FUSED_ATTENTION, WINDOW) = ATTR_I(att, ATTENTION, WINDOW);
  ATTR_I(&f, FUSED_ATTENTION, PACKED) = n_w == 1;
  ATTR_I(&f, FUSED_ATTENTION, ROPE) = rope;
  ATTR_I(&f, FUSED_ATTENTION, POS_OFFSET) = rope ? ATTR_I(rq, ROPE, POS_OFFSET) : 0;
  ATTR_I(&f, FUSED_ATTENTION, ROPE_INVERSE) = rope ? ATTR_I(rq, ROPE, INVERSE) : 0;
  f.n_fattr = RLX_FATTR_FUSED_ATTENTION_THETA + 1;
  ATTR_F(&f, FUSED_ATTENTION, SCALE) = ATTR_F(att, ATTENTION, SCALE);
  ATTR_F(&f, FUSED_ATTENTION, THETA) = rope ? ATTR_F(rq, ROPE, THETA) : 10000.0f;
  return fuse_replace(c, root, &f);
}
