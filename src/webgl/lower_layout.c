/* lower_layout.c - WebGL2 lowerings of the layout ops and their gradients:
 * reshape (a copy; the planner normally makes it a view), permute, narrow
 * and expand (strided.frag: one strided read per element), concat
 * (concat.frag, several passes past 6 inputs), gather, narrow_grad
 * (pad.frag) and scatter_add (a gather-style sum per output element). */
#include "gl_plan.h"

static size_t dims_product(const rlx_shape *s, int32_t from, int32_t to) {
  size_t n = 1;
  for (int32_t i = from; i < to; i++) n *= (size_t)s->dims[i];
  return n;
}

/* x[...] -> y[target dims]: a copy */
rlx_status rlx_gl_lower_reshape(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  (void)c;
  rlx_gl_in(rlx_gl_add(out, "copy"), RLX_GLT_INPUT, 0);
  return RLX_OK;
}

/* One strided.frag pass: out element at coords -> x[base + coords . strides]. */
static rlx_status lower_strided(const rlx_gl_ctx *c, rlx_gl_lowering *out, const int32_t *strides, int32_t base) {
  rlx_gl_pass *p = rlx_gl_add(out, "strided");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_iter(p, &c->node->shape, 1, (const int32_t(*)[RLX_MAX_RANK])strides, &base);
  return RLX_OK;
}

/* x[d0, ..., d(r-1)] -> y[d(perm[0]), ..., d(perm[r-1])] */
rlx_status rlx_gl_lower_permute(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  int32_t in_strides[RLX_MAX_RANK], strides[RLX_MAX_RANK];
  rlx_gl_contiguous_strides(&c->in_node[0]->shape, in_strides);
  for (int32_t d = 0; d < c->node->shape.rank; d++) strides[d] = in_strides[c->node->iattr[d]];
  return lower_strided(c, out, strides, 0);
}

/* x[..., D, ...] -> y[..., length, ...] from start; iattr = {axis, start, length} */
rlx_status rlx_gl_lower_narrow(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  int32_t strides[RLX_MAX_RANK];
  rlx_gl_contiguous_strides(&c->in_node[0]->shape, strides);
  return lower_strided(c, out, strides, ATTR_I(c->node, NARROW, START) * strides[ATTR_I(c->node, NARROW, AXIS)]);
}

/* x[...] -> y[node shape], numpy broadcast */
rlx_status rlx_gl_lower_expand(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  int32_t strides[RLX_MAX_RANK];
  rlx_gl_broadcast_strides(&c->in_node[0]->shape, &c->node->shape, strides);
  return lower_strided(c, out, strides, 0);
}

/* x0[..., d0, ...], x1[..., d1, ...], ... -> y[..., d0+d1+..., ...] along
 * iattr = {axis}.  Up to 6 inputs per pass; each later pass takes up to 5
 * more plus the previous pass's result (ping-ponging between two temps). */
rlx_status rlx_gl_lower_concat(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_shape *y = &c->node->shape;
  int32_t axis = ATTR_I(c->node, AXIS, AXIS), n_in = c->node->n_inputs, start[RLX_MAX_INPUTS];
  int32_t inner = (int32_t)dims_product(y, axis + 1, y->rank);
  for (int32_t k = 0, at = 0; k < n_in; k++) {
    start[k] = at;
    at += c->in_node[k]->shape.dims[axis];
  }
  int32_t first = 0, prev_temp = -1, temps[2] = {-1, -1};
  while (first < n_in) {
    int prev = first > 0;
    int32_t n = n_in - first;
    if (n > RLX_GL_MAX_INPUTS - prev) n = RLX_GL_MAX_INPUTS - prev;
    rlx_gl_pass *p = rlx_gl_add(out, "concat");
    rlx_gl_define(p, "N", n);
    rlx_gl_define(p, "PREV", prev);
    rlx_gl_int(p, inner);
    rlx_gl_int(p, y->dims[axis]);
    for (int32_t k = first; k < first + n; k++) {
      rlx_gl_in(p, RLX_GLT_INPUT, k);
      rlx_gl_int(p, start[k]);
      rlx_gl_int(p, c->in_node[k]->shape.dims[axis]);
    }
    if (prev) rlx_gl_in(p, RLX_GLT_TEMP, prev_temp);
    first += n;
    if (first < n_in) { /* not the last pass: into a temp the next one reads */
      int32_t slot = prev_temp == temps[0] ? 1 : 0;
      if (temps[slot] < 0) temps[slot] = rlx_gl_temp(out, rlx_shape_numel(y));
      rlx_gl_out(p, RLX_GLT_TEMP, temps[slot]);
      prev_temp = temps[slot];
    }
  }
  return RLX_OK;
}

/* table[V, D], ids[...] -> y[..., D]; ids outside [0, V) give zero rows */
rlx_status rlx_gl_lower_gather(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  rlx_gl_pass *p = rlx_gl_add(out, "gather");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  rlx_gl_int(p, c->in_node[0]->shape.dims[1]);
  rlx_gl_int(p, c->in_node[0]->shape.dims[0]);
  return RLX_OK;
}

/* dy[..., len, ...] -> dx[..., full, ...], zeros outside [start, start + len);
 * iattr = {axis, start, full} */
rlx_status rlx_gl_lower_narrow_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_shape *dy = &c->in_node[0]->shape;
  int32_t axis = ATTR_I(c->node, NARROW_GRAD, AXIS);
  rlx_gl_pass *p = rlx_gl_add(out, "pad");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_int(p, (int32_t)dims_product(dy, axis + 1, dy->rank));
  rlx_gl_int(p, ATTR_I(c->node, NARROW_GRAD, FULL));
  rlx_gl_int(p, ATTR_I(c->node, NARROW_GRAD, START));
  rlx_gl_int(p, dy->dims[axis]);
  return RLX_OK;
}

/* ids[...], dy[..., D] -> out[V, D]; iattr = {V} */
rlx_status rlx_gl_lower_scatter_add(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_shape *dy = &c->in_node[1]->shape;
  int32_t d = dy->dims[dy->rank - 1];
  rlx_gl_pass *p = rlx_gl_add(out, "scatter_add");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  rlx_gl_int(p, d);
  rlx_gl_int(p, (int32_t)(rlx_shape_numel(dy) / (size_t)d));
  rlx_gl_int(p, ATTR_I(c->node, SCATTER_ADD, ROWS));
  return RLX_OK;
}
