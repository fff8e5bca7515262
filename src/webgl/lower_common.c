/* lower_common.c - helpers the WebGL2 lowerings and their C twins share:
 * adding passes, defines, inputs/outputs, uniforms and temps (gl.h), the
 * iteration block that maps flat output indices to operand offsets
 * (gl_plan.h, glsl/common.glsl rlx_iter), strides and define lookup. */
#include <string.h>

#include "gl_plan.h"

rlx_gl_pass *rlx_gl_add(rlx_gl_lowering *l, const char *shader) {
  if (l->n >= RLX_GL_MAX_PASSES) return NULL;
  rlx_gl_pass *p = &l->p[l->n++];
  memset(p, 0, sizeof *p);
  p->shader = shader;
  p->output = (rlx_gl_tex){RLX_GLT_OUTPUT, 0};
  return p;
}

/* Every helper ignores a NULL pass (rlx_gl_add past RLX_GL_MAX_PASSES); the
 * planner then refuses the lowering, which has fewer passes than it meant. */
void rlx_gl_define(rlx_gl_pass *p, const char *name, int32_t value) {
  if (!p || p->n_defines >= RLX_GL_MAX_DEFINES) return;
  p->define_names[p->n_defines] = name;
  p->define_values[p->n_defines++] = value;
}

void rlx_gl_in(rlx_gl_pass *p, rlx_gl_tex_kind kind, int32_t index) {
  if (!p || p->n_inputs >= RLX_GL_MAX_INPUTS) return;
  p->inputs[p->n_inputs++] = (rlx_gl_tex){kind, index};
}

void rlx_gl_out(rlx_gl_pass *p, rlx_gl_tex_kind kind, int32_t index) {
  if (p) p->output = (rlx_gl_tex){kind, index};
}

void rlx_gl_int(rlx_gl_pass *p, int32_t v) {
  if (p && p->n_ints < RLX_GL_MAX_INTS) p->ints[p->n_ints++] = v;
}

void rlx_gl_float(rlx_gl_pass *p, float v) {
  if (p && p->n_floats < RLX_GL_MAX_FLOATS) p->floats[p->n_floats++] = v;
}

int32_t rlx_gl_temp(rlx_gl_lowering *l, size_t count) {
  if (l->n_temps >= RLX_GL_MAX_PASSES) return -1;
  l->temp_count[l->n_temps] = count;
  return l->n_temps++;
}

int32_t rlx_gl_temp_packed(rlx_gl_lowering *l, size_t rows, int32_t row_texels) {
  int32_t t = rlx_gl_temp(l, rows);
  if (t >= 0) l->temp_row_texels[t] = row_texels;
  return t;
}

rlx_status rlx_gl_missing(const rlx_gl_ctx *c) {
  return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: op %s has no WebGL2 lowering in this build", rlx_op_name(c->node->op));
}

int32_t rlx_gl_define_value(const rlx_gl_pass *p, const char *name, int32_t dflt) {
  for (int32_t k = 0; k < p->n_defines; k++)
    if (strcmp(p->define_names[k], name) == 0) return p->define_values[k];
  return dflt;
}

void rlx_gl_contiguous_strides(const rlx_shape *s, int32_t *strides) {
  int32_t stride = 1;
  for (int32_t d = s->rank - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= s->dims[d];
  }
}

void rlx_gl_broadcast_strides(const rlx_shape *in, const rlx_shape *out, int32_t *strides) {
  int32_t stride = 1;
  for (int32_t d = 0; d < out->rank; d++) strides[d] = 0;
  for (int32_t d = in->rank - 1; d >= 0; d--) {
    int32_t o = d + (out->rank - in->rank);
    strides[o] = in->dims[d] == 1 ? 0 : stride;
    stride *= in->dims[d];
  }
}

/* Layout (RLX_GL_ITER_INTS = 36): [0] rank r, [1..8] dims innermost first,
 * [9..16] [17..24] [25..32] strides of operands 0..2 innermost first,
 * [33..35] their base offsets.  Unused entries are 1 (dims) or 0. */
void rlx_gl_iter(rlx_gl_pass *p, const rlx_shape *out, int32_t n_ops, const int32_t (*strides)[RLX_MAX_RANK],
                 const int32_t *base) {
  int32_t dims[RLX_MAX_RANK], st[3][RLX_MAX_RANK], r = 0;
  /* Outermost first while merging: drop size-1 axes, and fold an axis
   * into the previous (outer) one when every operand steps through the
   * outer one by exactly the inner one's extent. */
  for (int32_t d = 0; d < out->rank; d++) {
    if (out->dims[d] == 1) continue;
    int merge = r > 0;
    for (int32_t k = 0; k < n_ops && merge; k++)
      if (st[k][r - 1] != strides[k][d] * out->dims[d]) merge = 0;
    if (merge) {
      dims[r - 1] *= out->dims[d];
      for (int32_t k = 0; k < n_ops; k++) st[k][r - 1] = strides[k][d];
      continue;
    }
    dims[r] = out->dims[d];
    for (int32_t k = 0; k < n_ops; k++) st[k][r] = strides[k][d];
    r++;
  }
  if (r == 0) { /* a single element */
    dims[0] = 1;
    for (int32_t k = 0; k < n_ops; k++) st[k][0] = 0;
    r = 1;
  }
  rlx_gl_int(p, r);
  for (int32_t d = 0; d < RLX_MAX_RANK; d++) rlx_gl_int(p, d < r ? dims[r - 1 - d] : 1);
  for (int32_t k = 0; k < 3; k++)
    for (int32_t d = 0; d < RLX_MAX_RANK; d++) rlx_gl_int(p, (k < n_ops && d < r) ? st[k][r - 1 - d] : 0);
  for (int32_t k = 0; k < 3; k++) rlx_gl_int(p, (k < n_ops && base) ? base[k] : 0);
}

void rlx_glref_iter(const int32_t *ints, int32_t i, int32_t *off) {
  off[0] = ints[33];
  off[1] = ints[34];
  off[2] = ints[35];
  int32_t rem = i;
  for (int32_t d = 0; d < 8 && d < ints[0]; d++) {
    int32_t dim = ints[1 + d], c = rem % dim;
    rem /= dim;
    off[0] += c * ints[9 + d];
    off[1] += c * ints[17 + d];
    off[2] += c * ints[25 + d];
  }
}
