/* graph_decode.h - turns fuzzer bytes into graph builder calls (shared by
 * fuzz_graph.c and fuzz_plan_json.c).  The decoding is deterministic, so
 * the same bytes rebuild the same graph (compile_train needs a fresh one).
 *
 * Byte stream: a header byte of flags, then commands until the bytes run
 * out, a command byte >= 0xf0 or FZ_MAX_NODES nodes.  A command byte's low
 * 3 bits pick:
 * 0 f32 input, 1 i32 input, 2 param, 3 constant, 4 scalar, 5-7 an op of the
 * op table (next byte mod RLX_OP_COUNT) with its inputs (picked among the
 * earlier nodes), int attributes and float attributes from later bytes. */
#ifndef RLX_FUZZ_GRAPH_DECODE_H
#define RLX_FUZZ_GRAPH_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "rlx.h"

#define FZ_MAX_NODES 24
#define FZ_MAX_NUMEL 2048 /* bigger nodes are never picked as inputs or outputs */

typedef struct {
  const uint8_t *p;
  size_t n;
} fz_bytes;

uint8_t fz_byte(fz_bytes *b); /* 0 once the bytes run out */

enum { FZ_OP, FZ_INPUT_F32, FZ_INPUT_I32, FZ_PARAM };

typedef struct {
  rlx_graph *g;
  uint8_t flags;                 /* the header byte */
  int32_t n;                     /* usable nodes */
  rlx_node nodes[FZ_MAX_NODES];  /* in creation order */
  uint8_t kind[FZ_MAX_NODES];    /* FZ_OP, FZ_INPUT_F32, FZ_INPUT_I32, FZ_PARAM */
  int32_t n_params;
  rlx_node params[FZ_MAX_NODES];
  fz_bytes rest;                 /* bytes left after the graph */
} fz_graph;

/* Builds g from the bytes; g is NULL only when rlx_graph_new fails. */
void fz_build(const uint8_t *data, size_t size, fz_graph *out);

/* Elements of node id (0 if unknown); its rank in *rank when non-NULL. */
size_t fz_numel(const rlx_graph *g, rlx_node id, int32_t *rank);

/* Fills every input and param of s from seed (values in [-2, 2), ids mostly
 * in range); returns the first failing status. */
rlx_status fz_fill_session(rlx_session *s, uint32_t seed);

/* Aborts when a failing call left no message (rlx.h promises one). */
void fz_check_status(rlx_status st, const char *what);

#endif
