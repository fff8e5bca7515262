/* harness.c - runs one op case: build the graph, compile (optionally with
 * arena poisoning), fill inputs from a seeded generator, run, and compare
 * with the case's naive double-precision reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_case.h"

typedef struct {
  const op_case *cases;
  const int *count;
} case_group;

/* Groups are weak so a partial tree still links (a missing group has no cases). */
#define GROUP(g) \
  extern const op_case rlx_cases_##g[] __attribute__((weak)); \
  extern const int rlx_n_cases_##g __attribute__((weak));
GROUP(elementwise) GROUP(layout) GROUP(reduce) GROUP(seq) GROUP(matmul) GROUP(vision)
GROUP(grad_pointwise) GROUP(grad_norm_attention) GROUP(grad_vision) GROUP(fused) GROUP(llm) GROUP(llm_cpu)
#undef GROUP
/* The binary ops' cases, generated from the op table on first use. */
extern const op_case *rlx_cases_binary(int *n) __attribute__((weak));

static case_group groups(int i) {
  static int n_binary;
  switch (i) {
    case 0: return rlx_cases_binary ? (case_group){rlx_cases_binary(&n_binary), &n_binary} : (case_group){NULL, NULL};
    case 1: return (case_group){rlx_cases_elementwise, &rlx_n_cases_elementwise};
    case 2: return (case_group){rlx_cases_layout, &rlx_n_cases_layout};
    case 3: return (case_group){rlx_cases_reduce, &rlx_n_cases_reduce};
    case 4: return (case_group){rlx_cases_seq, &rlx_n_cases_seq};
    case 5: return (case_group){rlx_cases_matmul, &rlx_n_cases_matmul};
    case 6: return (case_group){rlx_cases_vision, &rlx_n_cases_vision};
    case 7: return (case_group){rlx_cases_grad_pointwise, &rlx_n_cases_grad_pointwise};
    case 8: return (case_group){rlx_cases_grad_norm_attention, &rlx_n_cases_grad_norm_attention};
    case 9: return (case_group){rlx_cases_grad_vision, &rlx_n_cases_grad_vision};
    case 10: return (case_group){rlx_cases_fused, &rlx_n_cases_fused};
    case 11: return (case_group){rlx_cases_llm, &rlx_n_cases_llm};
    case 12: return (case_group){rlx_cases_llm_cpu, &rlx_n_cases_llm_cpu};
  }
  return (case_group){NULL, NULL};
}
#define N_GROUPS 13
#define N_GPU_GROUPS 12 /* the last group runs on the CPU only */

static int count_groups(int n_groups) {
  int n = 0;
  for (int i = 0; i < n_groups; i++)
    if (groups(i).count) n += *groups(i).count;
  return n;
}
int opcase_count(void) { return count_groups(N_GROUPS); }
int opcase_gpu_count(void) { return count_groups(N_GPU_GROUPS); }

const op_case *opcase_get(int i) {
  for (int gi = 0; gi < N_GROUPS && i >= 0; gi++) {
    case_group g = groups(gi);
    if (!g.count) continue;
    if (i < *g.count) return &g.cases[i];
    i -= *g.count;
  }
  return NULL;
}

float opcase_uniform(unsigned seed, size_t i, float lo, float hi) {
  uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0xBF58476D1CE4E5B9ull + 1;
  z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
  z ^= z >> 29;
  float u = (float)(z >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

size_t ref_numel(int32_t rank, const int32_t *dims) {
  size_t n = 1;
  for (int32_t i = 0; i < rank; i++) n *= (size_t)dims[i];
  return n;
}

void ref_unravel(size_t flat, int32_t rank, const int32_t *dims, int32_t *idx) {
  for (int32_t i = rank - 1; i >= 0; i--) {
    idx[i] = (int32_t)(flat % (size_t)dims[i]);
    flat /= (size_t)dims[i];
  }
}

size_t ref_broadcast_index(const int32_t *out_idx, int32_t out_rank, int32_t rank, const int32_t *dims) {
  size_t flat = 0;
  for (int32_t i = 0; i < rank; i++) {
    int32_t o = out_idx[out_rank - rank + i];
    flat = flat * (size_t)dims[i] + (size_t)(dims[i] == 1 ? 0 : o);
  }
  return flat;
}

static unsigned case_seed(const op_case *c, int32_t k) {
  unsigned h = 2166136261u;
  for (const char *p = c->name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h + 7919u * (unsigned)k;
}

void opcase_result_free(opcase_result *r) {
  free(r->out);
  r->out = NULL;
}

static void fail(opcase_result *r, rlx_status st, const char *what) {
  r->status = st;
  snprintf(r->message, sizeof r->message, "%s: %s", what, rlx_last_error());
}

void opcase_run(const op_case *c, int debug_poison, opcase_result *r) { opcase_run_threads(c, debug_poison, 0, r); }

void opcase_run_threads(const op_case *c, int debug_poison, int32_t threads, opcase_result *r) {
  memset(r, 0, sizeof *r);
  r->worst_index = -1;
  rlx_graph *g = rlx_graph_new();
  rlx_session *s = NULL;
  float *inputs[RLX_MAX_INPUTS] = {0};
  double *expect = NULL;
  op_inputs in;
  memset(&in, 0, sizeof in);
  if (!g) {
    fail(r, RLX_ERR_NO_MEMORY, "graph");
    return;
  }
  rlx_node out = c->build(g, c);
  rlx_compile_options opt = {RLX_DEVICE_CPU, 0, debug_poison, threads};
  rlx_status st = rlx_compile(g, &out, 1, &opt, &s);
  if (st != RLX_OK) {
    fail(r, st, "compile");
    goto done;
  }
  in.n = rlx_session_input_count(s);
  if (in.n > RLX_MAX_INPUTS) {
    fail(r, RLX_ERR_STATE, "harness: too many inputs");
    goto done;
  }
  for (int32_t k = 0; k < in.n; k++) {
    const char *name = rlx_session_input_name(s, k);
    size_t n;
    in.rank[k] = rlx_session_input_shape(s, k, in.dims[k]);
    n = ref_numel(in.rank[k], in.dims[k]);
    inputs[k] = malloc((n ? n : 1) * sizeof(float));
    if (c->fill) {
      c->fill(c, k, inputs[k], n, case_seed(c, k));
    } else {
      float lo = c->lo == c->hi ? -1.0f : c->lo, hi = c->lo == c->hi ? 1.0f : c->hi;
      for (size_t i = 0; i < n; i++) inputs[k][i] = opcase_uniform(case_seed(c, k), i, lo, hi);
    }
    in.data[k] = inputs[k];
    /* i32 inputs carry int32 bits in the float buffer (see op_case.h). */
    st = rlx_session_input_dtype(s, k) == RLX_I32 ? rlx_session_set_input_i32(s, name, (const int32_t *)inputs[k], n)
                                                   : rlx_session_set_input(s, name, inputs[k], n);
    if (st != RLX_OK) {
      fail(r, st, "set_input");
      goto done;
    }
  }
  if ((st = rlx_session_run(s)) != RLX_OK) {
    fail(r, st, "run");
    goto done;
  }
  r->n_out = rlx_session_output_len(s, 0);
  r->out = malloc(r->n_out * sizeof(float));
  expect = calloc(r->n_out, sizeof(double));
  rlx_session_read_output(s, 0, r->out, r->n_out);
  c->ref(c, &in, expect);
  double tol = c->tol > 0 ? c->tol : 1e-5;
  for (size_t i = 0; i < r->n_out; i++) {
    double got = r->out[i], want = expect[i];
    double err = (isnan(got) || isnan(want)) ? (isnan(got) && isnan(want) ? 0 : INFINITY)
                 : (isinf(want) && got == want) ? 0 : fabs(got - want) / (1.0 + fabs(want));
    if (!(err <= r->max_err)) {
      r->max_err = err;
      r->worst_index = (int32_t)i;
    }
  }
  r->status = RLX_OK;
  if (!(r->max_err <= tol))
    snprintf(r->message, sizeof r->message, "max error %.3g > %.3g at %d: got %.9g want %.9g", r->max_err, tol,
             (int)r->worst_index, (double)r->out[r->worst_index], expect[r->worst_index]);
done:
  for (int32_t k = 0; k < RLX_MAX_INPUTS; k++) free(inputs[k]);
  free(expect);
  rlx_session_free(s);
  rlx_graph_free(g);
}
