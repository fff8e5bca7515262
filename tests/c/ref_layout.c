/* ref_layout.c - naive double-precision references for reshape, permute,
 * narrow, concat, expand and gather, written from the definitions in
 * include/rlx.h: each output element is located in its input by explicit
 * index arithmetic.  Case parameters (p[]) are laid out as in
 * tests/c/cases_layout.c; input dims come from the filled inputs. */
#include <string.h>

#include "op_case.h"

void ref_layout_reshape(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_permute(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_narrow(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_concat(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_expand(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_gather(const op_case *c, const op_inputs *in, double *expect);

static int32_t norm_axis(int32_t axis, int32_t rank) { return axis < 0 ? axis + rank : axis; }

/* Row-major flat index of idx in a tensor of rank/dims. */
static size_t flat_index(const int32_t *idx, int32_t rank, const int32_t *dims) {
  size_t f = 0;
  for (int32_t i = 0; i < rank; i++) f = f * (size_t)dims[i] + (size_t)idx[i];
  return f;
}

/* Same elements, same order. */
void ref_layout_reshape(const op_case *c, const op_inputs *in, double *expect) {
  (void)c;
  size_t n = ref_numel(in->rank[0], in->dims[0]);
  for (size_t i = 0; i < n; i++) expect[i] = in->data[0][i];
}

/* p = {x shape (5), perm[4]}: y[i0..] = x[j] with j[perm[k]] = ik. */
void ref_layout_permute(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = in->rank[0], perm[RLX_MAX_RANK], dims[RLX_MAX_RANK];
  int32_t idx[RLX_MAX_RANK], src[RLX_MAX_RANK];
  for (int32_t k = 0; k < rank; k++) {
    perm[k] = norm_axis(c->p[5 + k], rank);
    dims[k] = in->dims[0][perm[k]];
  }
  size_t n = ref_numel(rank, dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    for (int32_t k = 0; k < rank; k++) src[perm[k]] = idx[k];
    expect[f] = in->data[0][flat_index(src, rank, in->dims[0])];
  }
}

/* p = {x shape (5), axis, start, length}. */
void ref_layout_narrow(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = in->rank[0], dims[RLX_MAX_RANK], idx[RLX_MAX_RANK];
  int32_t axis = norm_axis(c->p[5], rank), start = c->p[6];
  memcpy(dims, in->dims[0], sizeof dims);
  dims[axis] = c->p[7];
  size_t n = ref_numel(rank, dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    idx[axis] += start;
    expect[f] = in->data[0][flat_index(idx, rank, in->dims[0])];
  }
}

/* p = {n inputs, axis, ...}: inputs follow each other along axis. */
void ref_layout_concat(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = in->rank[0], dims[RLX_MAX_RANK], idx[RLX_MAX_RANK];
  int32_t axis = norm_axis(c->p[1], rank);
  memcpy(dims, in->dims[0], sizeof dims);
  dims[axis] = 0;
  for (int32_t k = 0; k < in->n; k++) dims[axis] += in->dims[k][axis];
  size_t n = ref_numel(rank, dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    int32_t k = 0;
    while (idx[axis] >= in->dims[k][axis]) idx[axis] -= in->dims[k++][axis];
    expect[f] = in->data[k][flat_index(idx, rank, in->dims[k])];
  }
}

/* p = {x shape (5), target shape (5)}: numpy broadcast of x. */
void ref_layout_expand(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = c->p[5], idx[RLX_MAX_RANK];
  const int32_t *dims = &c->p[6];
  size_t n = ref_numel(rank, dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    expect[f] = in->data[0][ref_broadcast_index(idx, rank, in->rank[0], in->dims[0])];
  }
}

/* p = {i32 ids, ...}: y[i, :] = table[ids[i], :] (all ids valid here). */
void ref_layout_gather(const op_case *c, const op_inputs *in, double *expect) {
  int32_t d = in->dims[0][1];
  size_t n_ids = ref_numel(in->rank[1], in->dims[1]);
  for (size_t i = 0; i < n_ids; i++) {
    int32_t id;
    if (c->p[0]) {
      memcpy(&id, &in->data[1][i], sizeof id); /* int32 bits */
    } else {
      id = (int32_t)in->data[1][i];
    }
    for (int32_t j = 0; j < d; j++) expect[i * (size_t)d + (size_t)j] = in->data[0][(size_t)id * (size_t)d + (size_t)j];
  }
}
