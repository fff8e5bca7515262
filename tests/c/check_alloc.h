/* check_alloc.h - a checking allocator for the tests, after Lua's ltests:
 * a header before each block records its size, every realloc and free
 * checks the old size the library passes (the rlx_set_allocator contract),
 * live blocks and bytes are counted, and the n-th allocation can be made to
 * fail.  Linked into every test binary (tests/c/check_alloc.c): it installs
 * itself before main and, at exit, fails the process (status 1) on an osize
 * mismatch or on blocks still live once the model cache is cleared.
 * RLX_CHECK_ALLOC=0 in the environment leaves the plain allocator. */
#ifndef RLX_CHECK_ALLOC_H
#define RLX_CHECK_ALLOC_H

#include <stddef.h>

/* Is the checking allocator the library's allocator now? */
int check_alloc_active(void);

/* Allocation failures: with n >= 0, the n-th allocation from now (0: the
 * next one) fails, and so does every later one when sticky is set; n < 0
 * turns failures off.  Realloc counts as an allocation; free never fails. */
void check_alloc_fail_at(long n, int sticky);
/* Allocations made (and refused) since the last check_alloc_fail_at. */
long check_alloc_count(void);
long check_alloc_refused(void);

size_t check_alloc_live_blocks(void);
size_t check_alloc_live_bytes(void);
/* Highest live byte count since the last check_alloc_reset_peak. */
size_t check_alloc_peak_bytes(void);
void check_alloc_reset_peak(void);
/* Old sizes that did not match the block (reported on stderr as found). */
long check_alloc_mismatches(void);

/* The allocation-failure sweep: life(user) runs once as it is (it must
 * succeed), then again with its k-th allocation failing, for every k
 * below the count of that first run (every (count / max_runs + 1)-th k
 * when max_runs > 0); each of those runs must fail and leave as many
 * bytes live as before it.  Returns NULL, or what went wrong (a static
 * message for fail_msg). */
const char *check_alloc_sweep(int (*life)(void *user), void *user, long max_runs);

#endif
