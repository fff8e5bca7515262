/* wasm_opcases.c - exports the table-driven op cases (tests/c/op_case.h) from
 * build/wasm-tests/opcases.wasm so tests/node/opcases.test.mjs can run every
 * case in wasm (with debug_poison on) and compare with the native dump.
 *
 *   n = opcase_count(); name = opcase_name(i); tol = opcase_tol(i);
 *   r = opcase_run_case(i); ...result_status(r), result_message(r),
 *   result_max_err(r), result_n_out(r), result_out(r)...; result_free(r)
 */
#include <stdlib.h>
#include "op_case.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(opcase_count) int32_t w_opcase_count(void) { return opcase_count(); }

EXPORT(opcase_name) const char *w_opcase_name(int32_t i) {
  const op_case *c = (i >= 0 && i < opcase_count()) ? opcase_get(i) : NULL;
  return c ? c->name : "";
}

/* The case's tolerance on max_err (0 in the table means 1e-5). */
EXPORT(opcase_tol) double w_opcase_tol(int32_t i) {
  const op_case *c = (i >= 0 && i < opcase_count()) ? opcase_get(i) : NULL;
  return (c && c->tol > 0) ? c->tol : 1e-5;
}

/* Runs case i; NULL when i is out of range or out of memory. */
EXPORT(opcase_run_case) opcase_result *w_opcase_run(int32_t i) {
  if (i < 0 || i >= opcase_count()) return NULL;
  opcase_result *r = calloc(1, sizeof *r);
  if (r) opcase_run(opcase_get(i), 1, r);
  return r;
}

EXPORT(result_status) int32_t w_result_status(const opcase_result *r) { return r->status; }
EXPORT(result_message) const char *w_result_message(const opcase_result *r) { return r->message; }
EXPORT(result_max_err) double w_result_max_err(const opcase_result *r) { return r->max_err; }
EXPORT(result_worst_index) int32_t w_result_worst_index(const opcase_result *r) { return r->worst_index; }
EXPORT(result_n_out) size_t w_result_n_out(const opcase_result *r) { return r->out ? r->n_out : 0; }
EXPORT(result_out) const float *w_result_out(const opcase_result *r) { return r->out; }

EXPORT(result_free) void w_result_free(opcase_result *r) {
  if (!r) return;
  opcase_result_free(r);
  free(r);
}
