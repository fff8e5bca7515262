/* op_case.h - table-driven op tests shared by the native (cmocka), the
 * sanitizer and the wasm test builds.  A case builds a small graph through
 * the public API, the harness fills every input with seeded random values,
 * compiles, runs, and compares the output with a naive double-precision
 * reference written independently of the kernels (tests/c/ref_*.c). */
#ifndef RLX_OP_CASE_H
#define RLX_OP_CASE_H

#include <stddef.h>
#include "rlx.h"

typedef struct op_case op_case;

/* The graph's inputs (in declaration order), as the harness filled them. */
typedef struct {
  int32_t n;
  const float *data[RLX_MAX_INPUTS];
  int32_t rank[RLX_MAX_INPUTS];
  int32_t dims[RLX_MAX_INPUTS][RLX_MAX_RANK];
} op_inputs;

struct op_case {
  const char *name;
  /* Declares inputs with rlx_input (names free) and returns the output. */
  rlx_node (*build)(rlx_graph *g, const op_case *c);
  /* Writes the expected output (numel of the output shape) in double. */
  void (*ref)(const op_case *c, const op_inputs *in, double *expect);
  /* Optional: fills input k (n values); default uniform in [lo, hi).  For an
   * RLX_I32 input, write int32 values (memcpy their bits into data). */
  void (*fill)(const op_case *c, int32_t k, float *data, size_t n, unsigned seed);
  int32_t p[16]; /* case parameters (dims, attrs) read by build/ref/fill */
  float lo, hi;  /* default fill range; lo == hi means [-1, 1) */
  double tol;    /* allowed |got - want| / (1 + |want|); 0 means 1e-5 */
};

/* Case tables, one per group (tests/c/cases_*.c); the binary ops' cases
 * are generated from the op table on first call (n: their count). */
const op_case *rlx_cases_binary(int *n);
extern const op_case rlx_cases_elementwise[]; /* pow's extras, where, unary */
extern const int rlx_n_cases_elementwise;
extern const op_case rlx_cases_layout[];      /* reshape ... gather */
extern const int rlx_n_cases_layout;
extern const op_case rlx_cases_reduce[];      /* reduce, softmax, CE, norms */
extern const int rlx_n_cases_reduce;
extern const op_case rlx_cases_seq[];         /* rope, attention */
extern const int rlx_n_cases_seq;
extern const op_case rlx_cases_matmul[];
extern const int rlx_n_cases_matmul;
extern const op_case rlx_cases_vision[];      /* conv2d, pools */
extern const int rlx_n_cases_vision;
extern const op_case rlx_cases_grad_pointwise[];       /* pointwise, layout, softmax backward ops */
extern const int rlx_n_cases_grad_pointwise;
extern const op_case rlx_cases_grad_norm_attention[];  /* norm and attention backward ops */
extern const int rlx_n_cases_grad_norm_attention;
extern const op_case rlx_cases_grad_vision[];          /* conv and pool backward ops */
extern const int rlx_n_cases_grad_vision;
extern const op_case rlx_cases_llm[];                  /* matmul_q, gather_q, rope offset/mode, attention_kv */
extern const int rlx_n_cases_llm;

extern const op_case rlx_cases_llm_cpu[];              /* matmul_q, swiglu_q with xq8: the CPU only */
extern const int rlx_n_cases_llm_cpu;
/* All cases in one list (harness.c); the GPU backends' are the first
 * opcase_gpu_count() of them (all but rlx_cases_llm_cpu). */
int opcase_count(void);
int opcase_gpu_count(void);
const op_case *opcase_get(int i);

/* GGUF-typed tables for the language-model cases (cases_llm.c): the i32
 * words holding rows x cols values of qtype, and such a table of uniform
 * values in [-1, 1) quantized (n words, the rest zero). */
int32_t opcase_table_words(int32_t qtype, int32_t rows, int32_t cols);
void opcase_fill_table(int32_t qtype, int32_t rows, int32_t cols, float *data, size_t n, unsigned seed);
/* Uniform value in [lo, hi) from (seed, i); deterministic everywhere. */
float opcase_uniform(unsigned seed, size_t i, float lo, float hi);

/* Result of running one case. */
typedef struct {
  rlx_status status;
  char message[512];   /* why it failed, or "" */
  float *out;          /* output values (owned; opcase_result_free) */
  size_t n_out;
  double max_err;      /* max |got - want| / (1 + |want|) vs the reference */
  int32_t worst_index; /* where max_err occurred */
} opcase_result;

/* Builds, compiles (with the given poison mode), fills, runs and compares. */
void opcase_run(const op_case *c, int debug_poison, opcase_result *r);
/* The same on `threads` CPU threads (0: the default). */
void opcase_run_threads(const op_case *c, int debug_poison, int32_t threads, opcase_result *r);
void opcase_result_free(opcase_result *r);

/* Shared helpers for references: element count, and the flat index into a
 * tensor of `rank`/`dims` broadcast against an output index vector. */
size_t ref_numel(int32_t rank, const int32_t *dims);
void ref_unravel(size_t flat, int32_t rank, const int32_t *dims, int32_t *idx);
size_t ref_broadcast_index(const int32_t *out_idx, int32_t out_rank, int32_t rank, const int32_t *dims);

#endif
