/* test_ops.c - every op case (tests/c/cases_*.c) against its naive
 * reference, once plainly and once with freed arena regions poisoned.
 * Usage: test_ops [substring]  runs only the cases whose name contains it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "op_case.h"

static void run_case(void **state) {
  const op_case *c = *state;
  for (int poison = 0; poison <= 1; poison++) {
    opcase_result r;
    opcase_run(c, poison, &r);
    if (r.status != RLX_OK || r.message[0]) {
      print_error("case %s%s: %s\n", c->name, poison ? " (poisoned arena)" : "", r.message);
      opcase_result_free(&r);
      fail();
    }
    opcase_result_free(&r);
  }
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
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
