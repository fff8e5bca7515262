/* test_ops.c - every op case (tests/c/cases_*.c) against its naive
 * reference, once plainly on one thread, once with freed arena regions
 * poisoned on three, once on two; the three outputs bitwise equal (every
 * parallel loop splits, however small: rlx_parallel_set_min_work).
 * Usage: test_ops [substring]  runs only the cases whose name contains it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/core/pool.h"
#include "op_case.h"

static void run_case(void **state) {
  const op_case *c = *state;
  static const int32_t threads[3] = {1, 3, 2};
  opcase_result r[3];
  memset(r, 0, sizeof r);
  int bad = 0;
  for (int k = 0; k < 3 && !bad; k++) {
    const int poison = k == 1;
    opcase_run_threads(c, poison, threads[k], &r[k]);
    if (r[k].status != RLX_OK || r[k].message[0]) {
      print_error("case %s%s, %d threads: %s\n", c->name, poison ? " (poisoned arena)" : "", (int)threads[k],
                  r[k].message);
      bad = 1;
    } else if (k > 0 && (r[k].n_out != r[0].n_out || memcmp(r[k].out, r[0].out, r[0].n_out * sizeof(float)))) {
      print_error("case %s: %d threads differ from 1\n", c->name, (int)threads[k]);
      bad = 1;
    }
  }
  for (int k = 0; k < 3; k++) opcase_result_free(&r[k]);
  if (bad) fail();
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  rlx_parallel_set_min_work(1);
  int n = opcase_count(), m = 0;
  struct CMUnitTest *tests = calloc((size_t)n + 1, sizeof *tests);
  for (int i = 0; i < n; i++) {
    const op_case *c = opcase_get(i);
    if (filter && !strstr(c->name, filter)) continue;
    tests[m].name = c->name;
    tests[m].test_func = run_case;
    tests[m].initial_state = (void *)c;
    m++;
  }
  if (m == 0) {
    printf("no op cases%s%s\n", filter ? " match " : "", filter ? filter : "");
    free(tests);
    return filter ? 1 : 0;
  }
  int failed = _cmocka_run_group_tests("op cases", tests, (size_t)m, NULL, NULL);
  free(tests);
  return failed;
}
