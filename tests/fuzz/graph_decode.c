/* graph_decode.c - fuzzer bytes to builder calls; see graph_decode.h. */
#include "graph_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_op_info.h"

uint8_t fz_byte(fz_bytes *b) {
  if (b->n == 0) return 0;
  b->n--;
  return *b->p++;
}

/* Mostly small values near the useful range, sometimes the extremes. */
static int32_t attr_int(fz_bytes *b) {
  uint8_t v = fz_byte(b);
  switch (v >> 5) {
    case 0: case 1: case 2: case 3: return (int32_t)(v & 7);        /* 0..7 */
    case 4: return -(int32_t)(v & 7) - 1;                            /* -1..-8 */
    case 5: return (int32_t)(v & 31);                                /* 0..31 */
    case 6: return (int32_t)(v & 15) << 8;                           /* big */
    default: {
      static const int32_t odd[] = {INT32_MIN, INT32_MAX, -65536, 65536, 1 << 30, -(1 << 30), 255, 9};
      return odd[v & 7];
    }
  }
}

static float attr_float(fz_bytes *b) {
  static const float table[] = {0.0f, 1e-5f, 0.5f, 1.0f, 2.0f, -1.0f, 10000.0f, 1e-30f,
                                -0.0f, 3.0f, 0.125f, 1e30f, -2.5f, 7.0f, 64.0f, 1e-3f};
  uint8_t v = fz_byte(b);
  if (v == 255) return __builtin_nanf("");
  if (v == 254) return __builtin_inff();
  return table[v & 15];
}

size_t fz_numel(const rlx_graph *g, rlx_node id, int32_t *rank_out) {
  int32_t dims[RLX_MAX_RANK];
  int32_t rank = rlx_node_shape(g, id, dims);
  size_t n = 1;
  for (int32_t i = 0; i < rank; i++) n *= (size_t)dims[i];
  if (rank_out) *rank_out = rank;
  return rank < 0 ? 0 : n;
}

static int32_t leaf_shape(fz_bytes *b, int32_t *dims) {
  int32_t rank = fz_byte(b) % 5;
  for (int32_t i = 0; i < rank; i++) dims[i] = 1 + fz_byte(b) % 4;
  return rank;
}

static rlx_node pick(fz_bytes *b, const fz_graph *f) {
  if (f->n == 0) return RLX_NO_NODE;
  uint8_t v = fz_byte(b);
  if (v & 0x80) return f->nodes[f->n - 1 - (v & 0x7f) % (f->n < 3 ? f->n : 3)]; /* recent nodes */
  return f->nodes[v % f->n];
}

void fz_build(const uint8_t *data, size_t size, fz_graph *f) {
  memset(f, 0, sizeof *f);
  fz_bytes b = {data, size};
  f->g = rlx_graph_new();
  if (!f->g) return;
  f->flags = fz_byte(&b);
  int32_t leaves = 0;
  while (b.n > 0 && rlx_graph_node_count(f->g) < FZ_MAX_NODES && f->n < FZ_MAX_NODES) {
    uint8_t cmd = fz_byte(&b);
    if (cmd >= 0xf0) break; /* end of the graph: the rest picks outputs */
    int32_t dims[RLX_MAX_RANK], rank;
    char name[16];
    rlx_node id = RLX_NO_NODE;
    uint8_t kind = FZ_OP;
    switch (cmd & 7) {
      case 0: case 1: case 2:
        rank = leaf_shape(&b, dims);
        snprintf(name, sizeof name, "%c%d", (cmd & 7) == 2 ? 'p' : 'x', (int)leaves++);
        if ((cmd & 7) == 2) id = rlx_param(f->g, name, rank, dims);
        else id = rlx_input(f->g, name, rank, dims, (cmd & 7) == 1 ? RLX_I32 : RLX_F32);
        if (id != RLX_NO_NODE && (cmd & 7) == 2) f->params[f->n_params++] = id;
        kind = (cmd & 7) == 2 ? FZ_PARAM : (cmd & 7) == 1 ? FZ_INPUT_I32 : FZ_INPUT_F32;
        break;
      case 3: {
        float vals[256];
        rank = leaf_shape(&b, dims);
        size_t n = 1;
        for (int32_t i = 0; i < rank; i++) n *= (size_t)dims[i];
        for (size_t i = 0; i < n; i++) vals[i] = (float)((int)fz_byte(&b) - 128) / 32.0f;
        id = rlx_constant(f->g, rank, dims, vals);
        break;
      }
      case 4: id = rlx_scalar(f->g, attr_float(&b)); break;
      default: {
        rlx_op op = (rlx_op)(fz_byte(&b) % RLX_OP_COUNT);
        int32_t lo = rlx_op_min_inputs(op), hi = rlx_op_max_inputs(op);
        if (lo <= 0 && hi <= 0) break; /* leaves have their own commands */
        int32_t n_in = lo + (hi > lo ? fz_byte(&b) % (hi - lo + 1) : 0);
        rlx_node in[RLX_MAX_INPUTS];
        int32_t iattr[RLX_MAX_IATTR];
        float fattr[RLX_MAX_FATTR];
        for (int32_t k = 0; k < n_in; k++) in[k] = pick(&b, f);
        int32_t n_i = fz_byte(&b) % 9, n_f = fz_byte(&b) % (RLX_MAX_FATTR + 1);
        if (n_i == 8) n_i = RLX_MAX_IATTR;
        for (int32_t k = 0; k < n_i; k++) iattr[k] = attr_int(&b);
        for (int32_t k = 0; k < n_f; k++) fattr[k] = attr_float(&b);
        if (f->n == 0) break;
        id = rlx_op_node(f->g, op, in, n_in, iattr, n_i, fattr, n_f);
        break;
      }
    }
    if (id != RLX_NO_NODE && fz_numel(f->g, id, NULL) <= FZ_MAX_NUMEL) {
      f->kind[f->n] = kind;
      f->nodes[f->n++] = id;
    }
    if (rlx_graph_status(f->g) != RLX_OK) {
      fz_check_status(rlx_graph_status(f->g), "builder");
      break; /* later builders would only propagate the error */
    }
  }
  f->rest = b;
}

static float value(uint32_t seed, size_t i) {
  uint32_t z = seed * 2654435761u + (uint32_t)i * 40503u + 12345u;
  z ^= z >> 15;
  z *= 2246822519u;
  z ^= z >> 13;
  return (float)(z % 4000u) / 1000.0f - 2.0f;
}

rlx_status fz_fill_session(rlx_session *s, uint32_t seed) {
  float buf[FZ_MAX_NUMEL];
  int32_t ids[FZ_MAX_NUMEL];
  rlx_status st = RLX_OK;
  for (int32_t i = 0; st == RLX_OK && i < rlx_session_input_count(s); i++) {
    int32_t dims[RLX_MAX_RANK], rank = rlx_session_input_shape(s, i, dims);
    size_t n = 1;
    for (int32_t k = 0; k < rank; k++) n *= (size_t)dims[k];
    if (n > FZ_MAX_NUMEL) return RLX_ERR_INVALID_ARG; /* the session keeps no big leaves: cannot happen */
    const char *name = rlx_session_input_name(s, i);
    if (rlx_session_input_dtype(s, i) == RLX_I32) {
      for (size_t k = 0; k < n; k++) ids[k] = (int32_t)((seed + k * 7) % 5) - (k % 11 == 10);
      st = rlx_session_set_input_i32(s, name, ids, n);
    } else {
      for (size_t k = 0; k < n; k++) buf[k] = value(seed, k + 1000 * (size_t)i);
      if (strcmp(name, "d_output") == 0)
        for (size_t k = 0; k < n; k++) buf[k] = 1.0f;
      if (strcmp(name, "rlx.lr") == 0) continue; /* preset by compile_train */
      st = rlx_session_set_input(s, name, buf, n);
    }
  }
  for (int32_t i = 0; st == RLX_OK && i < rlx_session_param_count(s); i++) {
    size_t n = rlx_session_param_len(s, i);
    if (n > FZ_MAX_NUMEL) continue;
    for (size_t k = 0; k < n; k++) buf[k] = value(seed + 77, k + 1000 * (size_t)i) * 0.5f;
    st = rlx_session_set_param(s, rlx_session_param_name(s, i), buf, n);
  }
  return st;
}

void fz_check_status(rlx_status st, const char *what) {
  if (st == RLX_OK) return;
  const char *msg = rlx_last_error();
  if (!msg || !msg[0]) {
    fprintf(stderr, "%s failed with status %d and no message\n", what, (int)st);
    abort();
  }
}
