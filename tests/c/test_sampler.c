/* test_sampler.c - the token sampler (src/models/sampler.h): greedy with
 * the lowest id on ties, top_k = 1 and a vanishing temperature agreeing
 * with greedy, seeded draws repeating exactly, draw frequencies following
 * the softmax, top-p and min-p cutting where llama.cpp's rules say,
 * repetition penalty (divide positive logits, multiply negative ones, each
 * id of the window once), masked (-inf) tokens never drawn, bad parameters
 * and inputs refused with a message, allocation failures, a vanishing
 * temperature greedy and huge finite logits never NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_llm.h" /* RLX_LLM_MIN_TEMPERATURE */
#include "../../src/models/sampler.h"

static rlx_sampler_params plain(float temperature) {
  rlx_sampler_params p = {temperature, 0, 1.0f, 0.0f, 1.0f, 0, 1234};
  return p;
}

static rlx_sampler *make(rlx_sampler_params p) {
  rlx_sampler *s;
  rlx_status st = rlx_sampler_new(&p, &s);
  if (st != RLX_OK) fail_msg("%s", rlx_last_error());
  return s;
}

static int32_t draw(rlx_sampler *s, const float *logits, int32_t n, const int32_t *hist, size_t n_hist) {
  int32_t id;
  rlx_status st = rlx_sampler_sample(s, logits, n, hist, n_hist, &id);
  if (st != RLX_OK) fail_msg("%s", rlx_last_error());
  assert_true(id >= 0 && id < n);
  return id;
}

static uint64_t rng = 88172645463325252ull;
static float rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)(rng >> 40) / 16777216.0f * 8.0f - 4.0f;
}

static void greedy(void **state) {
  (void)state;
  rlx_sampler *s = make(plain(0.0f));
  const float l[] = {1, 3, 3, 2, -INFINITY};
  assert_int_equal(draw(s, l, 5, NULL, 0), 1); /* ties: the lowest id */
  const float neg[] = {-INFINITY, -5, -2, -2.5f};
  assert_int_equal(draw(s, neg, 4, NULL, 0), 2);
  rlx_sampler_free(s);
  rlx_sampler_params d = rlx_sampler_default_params();
  assert_true(d.temperature == 0.8f && d.top_k == 40 && d.top_p == 0.95f && d.min_p == 0.05f);
  assert_true(d.repeat_penalty == 1.0f && d.repeat_last_n == 64);
}

static void top_k_one_and_cold_temperature_are_greedy(void **state) {
  (void)state;
  rlx_sampler_params k1 = plain(1.0f), cold = plain(1e-3f);
  k1.top_k = 1;
  rlx_sampler *g = make(plain(0.0f)), *a = make(k1), *b = make(cold);
  float l[300];
  for (int trial = 0; trial < 200; trial++) {
    for (int i = 0; i < 300; i++) l[i] = rnd();
    int32_t want = draw(g, l, 300, NULL, 0);
    float second = -INFINITY; /* keep a margin for the cold sampler */
    for (int i = 0; i < 300; i++)
      if (i != want && l[i] > second) second = l[i];
    if (l[want] - second < 0.05f) l[want] = second + 0.05f;
    assert_int_equal(draw(a, l, 300, NULL, 0), want);
    assert_int_equal(draw(b, l, 300, NULL, 0), want);
  }
  rlx_sampler_free(g);
  rlx_sampler_free(a);
  rlx_sampler_free(b);
}

/* Below RLX_LLM_MIN_TEMPERATURE the draw is the argmax: logits / 1e-38
 * overflow floats, and the sampler once picked the last candidate then.
 * Huge finite logits, divided by a penalty under 1 or a temperature, do
 * not overflow into inf - inf either. */
static void vanishing_temperature_and_huge_logits(void **state) {
  (void)state;
  const float temps[] = {1e-38f, 1e-45f, 1e-30f, RLX_LLM_MIN_TEMPERATURE * 0.99f};
  const float l[] = {5, 40, 20, -10, 10, 2.5f};
  for (size_t k = 0; k < sizeof temps / sizeof temps[0]; k++)
    for (uint64_t seed = 0; seed < 20; seed++) {
      rlx_sampler_params p = plain(temps[k]);
      p.seed = seed;
      rlx_sampler *s = make(p);
      assert_int_equal(draw(s, l, 6, NULL, 0), 1);
      rlx_sampler_free(s);
    }
  const float huge[] = {-3e38f, 3e38f, 1e38f, 3.4e38f, 0};
  rlx_sampler_params p = plain(0.5f);
  p.top_p = 0.9f;
  p.repeat_penalty = 0.25f; /* divides the positive logits of the window: 3e38 / 0.25 */
  p.repeat_last_n = 1;
  const int32_t hist[] = {1};
  for (uint64_t seed = 0; seed < 20; seed++) {
    p.seed = seed;
    rlx_sampler *s = make(p);
    assert_int_equal(draw(s, huge, 5, hist, 1), 1);
    rlx_sampler_free(s);
  }
}

static void seeded_draws_repeat(void **state) {
  (void)state;
  rlx_sampler_params p = rlx_sampler_default_params();
  p.seed = 42;
  rlx_sampler *a = make(p), *b = make(p);
  p.seed = 43;
  rlx_sampler *c = make(p);
  float l[64];
  for (int i = 0; i < 64; i++) l[i] = rnd() * 0.25f;
  int32_t first[100], differ = 0;
  for (int i = 0; i < 100; i++) {
    first[i] = draw(a, l, 64, NULL, 0);
    assert_int_equal(draw(b, l, 64, NULL, 0), first[i]);
    differ += draw(c, l, 64, NULL, 0) != first[i];
  }
  assert_true(differ > 0);
  rlx_sampler_reset(a, 42);
  for (int i = 0; i < 100; i++) assert_int_equal(draw(a, l, 64, NULL, 0), first[i]);
  rlx_sampler_free(a);
  rlx_sampler_free(b);
  rlx_sampler_free(c);
}

/* Probabilities 0.5, 0.3, 0.15, 0.05 (and a masked token). */
static const float PROBS[] = {0.5f, 0.3f, 0.15f, 0.05f};
static void counts(rlx_sampler_params p, int draws, int out[5]) {
  float l[5];
  for (int i = 0; i < 4; i++) l[i] = logf(PROBS[i]) + 1.0f;
  l[4] = -INFINITY;
  rlx_sampler *s = make(p);
  memset(out, 0, 5 * sizeof *out);
  for (int i = 0; i < draws; i++) out[draw(s, l, 5, NULL, 0)]++;
  rlx_sampler_free(s);
}

static void frequencies_top_p_min_p(void **state) {
  (void)state;
  int c[5];
  counts(plain(1.0f), 20000, c);
  for (int i = 0; i < 4; i++) assert_true(fabs(c[i] / 20000.0 - PROBS[i]) < 0.015);
  assert_int_equal(c[4], 0);
  rlx_sampler_params p = plain(1.0f);
  p.top_p = 0.7f; /* 0.5 < 0.7 <= 0.8: ids 0 and 1 */
  counts(p, 5000, c);
  assert_true(c[0] > 0 && c[1] > 0 && c[2] == 0 && c[3] == 0);
  assert_true(fabs(c[0] / 5000.0 - 0.625) < 0.03); /* renormalised */
  p.top_p = 0.45f;
  counts(p, 1000, c);
  assert_int_equal(c[0], 1000);
  p.top_p = 0.0f; /* keeps one */
  counts(p, 100, c);
  assert_int_equal(c[0], 100);
  p = plain(1.0f);
  p.min_p = 0.35f; /* p >= 0.35 * 0.5 = 0.175: ids 0 and 1 */
  counts(p, 5000, c);
  assert_true(c[0] > 0 && c[1] > 0 && c[2] == 0 && c[3] == 0);
  p.min_p = 0.2f; /* 0.1: ids 0, 1, 2 */
  counts(p, 5000, c);
  assert_true(c[2] > 0 && c[3] == 0);
  p = plain(1.0f);
  p.top_k = 3;
  counts(p, 5000, c);
  assert_true(c[2] > 0 && c[3] == 0);
  p = plain(0.5f); /* sharper: p0 = 0.25 / (0.25 + 0.09 + 0.0225 + 0.0025) */
  counts(p, 20000, c);
  assert_true(fabs(c[0] / 20000.0 - 0.25 / 0.365) < 0.015);
}

static void repetition_penalty(void **state) {
  (void)state;
  rlx_sampler_params p = plain(0.0f);
  p.repeat_penalty = 1.5f;
  p.repeat_last_n = 64;
  rlx_sampler *s = make(p);
  const float pos[] = {2.0f, 1.9f, -1.0f};
  assert_int_equal(draw(s, pos, 3, NULL, 0), 0);
  assert_int_equal(draw(s, pos, 3, (int32_t[]){0}, 1), 1); /* 2 / 1.5 < 1.9 */
  const float neg[] = {-1.0f, -1.2f};
  assert_int_equal(draw(s, neg, 2, (int32_t[]){0}, 1), 1); /* -1 * 1.5 < -1.2 */
  const float two[] = {2.0f, 1.0f};
  assert_int_equal(draw(s, two, 2, (int32_t[]){0, 0, 0}, 3), 0); /* once per id: 1.33 > 1 */
  rlx_sampler_free(s);
  p.repeat_last_n = 2; /* the window: only the last two ids */
  s = make(p);
  assert_int_equal(draw(s, pos, 3, (int32_t[]){0, 2, 2}, 3), 0);
  assert_int_equal(draw(s, pos, 3, (int32_t[]){2, 0, 2}, 3), 1);
  rlx_sampler_free(s);
  p.repeat_last_n = -1; /* the whole history */
  s = make(p);
  assert_int_equal(draw(s, pos, 3, (int32_t[]){0, 2, 2, 2, 2}, 5), 1);
  rlx_sampler_free(s);
  p.repeat_last_n = 0; /* off */
  s = make(p);
  assert_int_equal(draw(s, pos, 3, (int32_t[]){0}, 1), 0);
  rlx_sampler_free(s);
}

static void expect_bad(rlx_sampler_params p, const char *field) {
  rlx_sampler *s = (rlx_sampler *)&s;
  assert_int_equal(rlx_sampler_new(&p, &s), RLX_ERR_INVALID_ARG);
  assert_null(s);
  if (!strstr(rlx_last_error(), field)) fail_msg("'%s' lacks '%s'", rlx_last_error(), field);
}

static void bad_parameters_and_inputs(void **state) {
  (void)state;
  rlx_sampler_params p = plain(1.0f);
  p.top_p = -0.1f;
  expect_bad(p, "top_p");
  p.top_p = 1.5f;
  expect_bad(p, "top_p");
  p.top_p = NAN;
  expect_bad(p, "top_p");
  p = plain(NAN);
  expect_bad(p, "temperature");
  p = plain(-1.0f);
  expect_bad(p, "temperature");
  p = plain(INFINITY);
  expect_bad(p, "temperature");
  p = plain(1.0f);
  p.min_p = NAN;
  expect_bad(p, "min_p");
  p = plain(1.0f);
  p.repeat_penalty = 0.0f;
  expect_bad(p, "repeat_penalty");
  p = plain(1.0f);
  p.repeat_last_n = -2;
  expect_bad(p, "repeat_last_n");
  rlx_sampler *s;
  assert_int_equal(rlx_sampler_new(NULL, &s), RLX_ERR_INVALID_ARG);
  s = make(plain(1.0f));
  int32_t id;
  const float ok[] = {0, 1};
  const float nan[] = {0, NAN}, inf[] = {INFINITY, 0}, masked[] = {-INFINITY, -INFINITY};
  assert_int_equal(rlx_sampler_sample(s, nan, 2, NULL, 0, &id), RLX_ERR_NUMERIC);
  assert_int_equal(rlx_sampler_sample(s, inf, 2, NULL, 0, &id), RLX_ERR_NUMERIC);
  assert_int_equal(rlx_sampler_sample(s, masked, 2, NULL, 0, &id), RLX_ERR_NUMERIC);
  assert_int_equal(rlx_sampler_sample(s, ok, 0, NULL, 0, &id), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_sampler_sample(s, ok, 2, (int32_t[]){2}, 1, &id), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_sampler_sample(s, ok, 2, NULL, 1, &id), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_sampler_sample(s, NULL, 2, NULL, 0, &id), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_sampler_sample(NULL, ok, 2, NULL, 0, &id), RLX_ERR_INVALID_ARG);
  rlx_sampler_free(s);
  rlx_sampler_free(NULL);
}

static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  rlx_sampler_params p = rlx_sampler_default_params();
  float l[100];
  for (int i = 0; i < 100; i++) l[i] = rnd();
  size_t live = check_alloc_live_bytes();
  for (long k = 0;; k++) {
    check_alloc_fail_at(k, 0);
    rlx_sampler *s = NULL;
    int32_t id = -1;
    rlx_status st = rlx_sampler_new(&p, &s);
    if (st == RLX_OK) st = rlx_sampler_sample(s, l, 100, NULL, 0, &id);
    long refused = check_alloc_refused();
    check_alloc_fail_at(-1, 0);
    if (s) assert_int_equal(rlx_sampler_sample(s, l, 100, NULL, 0, &id), RLX_OK); /* still usable */
    rlx_sampler_free(s);
    assert_int_equal(check_alloc_live_bytes(), live);
    if (!refused) {
      assert_int_equal(st, RLX_OK);
      break;
    }
    assert_int_equal(st, RLX_ERR_NO_MEMORY);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(greedy),
      cmocka_unit_test(top_k_one_and_cold_temperature_are_greedy),
      cmocka_unit_test(vanishing_temperature_and_huge_logits),
      cmocka_unit_test(seeded_draws_repeat),
      cmocka_unit_test(frequencies_top_p_min_p),
      cmocka_unit_test(repetition_penalty),
      cmocka_unit_test(bad_parameters_and_inputs),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
