/* grad_case.h - gradient checks: every differentiable op's rule against
 * central finite differences.  A case builds y from inputs; the harness
 * forms loss = sum(y * r) with a fixed random r, asks autodiff for the
 * gradient of every differentiable input, and compares each (sampled)
 * element with (L(x + e) - L(x - e)) / 2e where L is summed in double from
 * a forward-only session.  Shared by the native, sanitizer and wasm tests. */
#ifndef RLX_GRAD_CASE_H
#define RLX_GRAD_CASE_H

#include "rlx.h"

enum {
  FILL_UNIFORM = 0, /* uniform in [lo, hi) (default [-1, 1)) */
  FILL_DISTINCT,    /* distinct values at least 0.02 apart (for max-like ops) */
  FILL_POSITIVE,    /* uniform in [0.5, 2) */
  FILL_LABELS,      /* integers in [0, classes) as f32, classes = last p != 0 ... see grad_in */
  FILL_BINARY,      /* 0 or 1 (masks, conditions), never all zero per row */
  FILL_AWAY,        /* uniform magnitude in [0.1, 1) with a random sign (away from kinks at 0) */
  FILL_INDEX,       /* an i32 input of integers in [0, classes) (offsets, positions); no gradient */
  FILL_GGUF         /* an i32 input of GGUF weight bytes: uniform values quantized to the type
                       `classes` (a GGUF type code), whole blocks, the rest zero; no gradient */
};

typedef struct grad_builder grad_builder;
typedef struct grad_case grad_case;

struct grad_case {
  const char *name;
  rlx_node (*build)(grad_builder *b, const grad_case *c);
  int32_t p[8];
  double tol; /* 0: 1e-2, measured as |fd - an| / max(|an|, 0.05 max|an|, 1e-3) */
};

/* Declares an input; differentiable unless kind is FILL_LABELS or
 * FILL_BINARY or no_grad is set.  `classes` bounds FILL_LABELS values. */
rlx_node grad_in(grad_builder *b, int32_t rank, const int32_t *dims, int kind, int no_grad, int32_t classes);
rlx_graph *grad_graph(grad_builder *b);

int gradcase_count(void);
const grad_case *gradcase_get(int i);

typedef struct {
  rlx_status status;
  char message[512];
  double max_err;  /* worst normalized error over checked elements */
  int32_t checked; /* elements compared */
} gradcase_result;

/* Runs case c; scale_analytic multiplies the analytic gradient (1 for the
 * real check; the checker's self-test uses 1.05 and expects a failure). */
void gradcase_run(const grad_case *c, double scale_analytic, gradcase_result *r);

#endif
