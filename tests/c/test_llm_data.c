/* test_llm_data.c - fine-tuning data (rlx_llm_data in
 * include/rlx_llm_train.h) on the build/lm fixtures (make lm-fixtures):
 * a text's windows hold its tokens seq apart with the targets shifted by
 * one; the seeded order is a permutation (the same for a seed, another for
 * another seed) and the held-out or separate validation windows are as
 * stated; JSONL masks weigh exactly the completion's tokens and the EOS,
 * escapes decode, files are read (.jsonl chosen by name); each refusal
 * names the source (and a JSONL line) and the problem; allocation
 * failures leak nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rlx_models.h"

#include "assert_text.h"
#include "check_alloc.h"

static const char *const MODELS[] = {"build/lm/llama-f32.gguf", "build/lm/qwen2-f32.gguf"}; /* BOS / none */
static const char *const CORPUS = "tests/llm/corpus.txt";
static const char *const SENTENCE = "The small river ran past the old mill, and the miller's daughter counted the "
                                    "sacks: 12, 24, 36, 48.";

static rlx_llm *open_or_fail(const char *path, rlx_llm_info *in) {
  rlx_llm_options opt = {.n_ctx = 16};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  if (in) rlx_llm_get_info(m, in);
  return m;
}

/* text's ids as generation tokenizes a prompt (malloc'd). */
static int32_t *tokens(const rlx_llm *m, const char *text, size_t len, size_t *n) {
  rlx_llm_tokenize(m, text, len, -1, 1, NULL, 0, n);
  int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
  assert_int_equal(rlx_llm_tokenize(m, text, len, -1, 1, ids, *n, n), RLX_OK);
  return ids;
}

static rlx_llm_data *data_or_fail(const rlx_llm *m, const rlx_llm_data_source *train, const rlx_llm_data_source *valid,
                                  int32_t seq, int shuffle, uint64_t seed, float fraction) {
  rlx_llm_data_options o = {seq, shuffle, seed, fraction};
  rlx_llm_data *d = NULL;
  if (rlx_llm_data_new(m, train, valid, &o, &d) != RLX_OK) fail_msg("rlx_llm_data_new: %s", rlx_last_error());
  return d;
}

/* Every window of a split: n * seq ids, targets, mask (malloc'd). */
typedef struct {
  int32_t n, seq, *ids, *tg;
  float *mask;
} windows;

static windows all_windows(const rlx_llm_data *d, int32_t split) {
  rlx_llm_data_info in;
  assert_int_equal(rlx_llm_data_get_info(d, &in), RLX_OK);
  windows w = {in.n_windows[split], in.seq, NULL, NULL, NULL};
  const size_t n = (size_t)(w.n ? w.n : 1) * (size_t)w.seq;
  w.ids = malloc(n * sizeof *w.ids), w.tg = malloc(n * sizeof *w.tg), w.mask = malloc(n * sizeof *w.mask);
  if (w.n) assert_int_equal(rlx_llm_data_windows(d, split, 0, w.n, w.ids, w.tg, w.mask), RLX_OK);
  return w;
}

static void free_windows(windows *w) { free(w->ids), free(w->tg), free(w->mask); }

/* Window k of a and window j of b hold the same ids, targets and mask. */
static int same_window(const windows *a, int32_t k, const windows *b, int32_t j) {
  const size_t s = (size_t)a->seq;
  return !memcmp(a->ids + k * s, b->ids + j * s, s * sizeof(int32_t)) &&
         !memcmp(a->tg + k * s, b->tg + j * s, s * sizeof(int32_t)) &&
         !memcmp(a->mask + k * s, b->mask + j * s, s * sizeof(float));
}

/* ---- text ------------------------------------------------------------------------- */
static void text_windows_are_shifted_by_one(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof MODELS / sizeof MODELS[0]; k++) {
    rlx_llm_info mi;
    rlx_llm *m = open_or_fail(MODELS[k], &mi);
    size_t n;
    int32_t *t = tokens(m, SENTENCE, strlen(SENTENCE), &n);
    int32_t seq = 4;
    while ((n - 1) % (size_t)seq == 0) seq++; /* a tail to drop */
    const int32_t K = (int32_t)((n - 1) / (size_t)seq);
    assert_true(K >= 3);
    const rlx_llm_data_source src = {NULL, SENTENCE, strlen(SENTENCE), RLX_LLM_DATA_AUTO};
    rlx_llm_data *d = data_or_fail(m, &src, NULL, seq, 0, 0, 0.0f);
    rlx_llm_data_info in;
    assert_int_equal(rlx_llm_data_get_info(d, &in), RLX_OK);
    assert_int_equal(in.seq, seq);
    assert_int_equal(in.n_windows[RLX_LLM_DATA_TRAIN], K);
    assert_int_equal(in.n_windows[RLX_LLM_DATA_VALID], 0);
    assert_int_equal(in.n_tokens[RLX_LLM_DATA_TRAIN], (int64_t)n);
    assert_int_equal(in.n_scored[RLX_LLM_DATA_TRAIN], (int64_t)K * seq);
    assert_int_equal(in.n_dropped[RLX_LLM_DATA_TRAIN], (int64_t)(n - 1 - (size_t)K * seq));
    assert_int_equal(in.n_examples[RLX_LLM_DATA_TRAIN], 0);
    windows w = all_windows(d, RLX_LLM_DATA_TRAIN);
    if (mi.add_bos) assert_int_equal(w.ids[0], mi.bos); /* BOS once, at the start (llama) */
    for (int32_t i = 0; i < K; i++)
      for (int32_t j = 0; j < seq; j++) {
        assert_int_equal(w.ids[i * seq + j], t[i * seq + j]);
        assert_int_equal(w.tg[i * seq + j], t[i * seq + j + 1]);
        assert_true(w.mask[i * seq + j] == 1.0f);
      }
    /* counted around the split: window K is window 0 */
    int32_t ids[16], tg[16];
    float mask[16];
    assert_int_equal(rlx_llm_data_windows(d, RLX_LLM_DATA_TRAIN, K, 1, ids, tg, mask), RLX_OK);
    assert_memory_equal(ids, w.ids, (size_t)seq * sizeof *ids);
    assert_int_equal(rlx_llm_data_windows(d, RLX_LLM_DATA_VALID, 0, 1, ids, tg, mask), RLX_ERR_STATE);
    assert_contains(rlx_last_error(), "validation split has no windows");
    free_windows(&w);
    free(t);
    rlx_llm_data_free(d);
    rlx_llm_free(m);
  }
}

/* The windows of `got` are those of `ref`, each once (a permutation). */
static void assert_permutation(const windows *got, const windows *ref) {
  assert_int_equal(got->n, ref->n);
  char *used = calloc((size_t)ref->n + 1, 1);
  for (int32_t k = 0; k < got->n; k++) {
    int32_t j = 0;
    while (j < ref->n && (used[j] || !same_window(got, k, ref, j))) j++;
    if (j == ref->n) fail_msg("window %d is none of the file's windows (or one seen twice)", (int)k);
    used[j] = 1;
  }
  free(used);
}

static void shuffle_is_a_seeded_permutation(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail(MODELS[0], NULL);
  const rlx_llm_data_source corpus = {CORPUS, NULL, 0, RLX_LLM_DATA_AUTO};
  const int32_t seq = 8;
  rlx_llm_data *d0 = data_or_fail(m, &corpus, NULL, seq, 0, 0, 0.0f);
  rlx_llm_data *d7 = data_or_fail(m, &corpus, NULL, seq, 1, 7, 0.0f);
  rlx_llm_data *d7b = data_or_fail(m, &corpus, NULL, seq, 1, 7, 0.0f);
  rlx_llm_data *d8 = data_or_fail(m, &corpus, NULL, seq, 1, 8, 0.0f);
  windows w0 = all_windows(d0, RLX_LLM_DATA_TRAIN), w7 = all_windows(d7, RLX_LLM_DATA_TRAIN);
  windows w7b = all_windows(d7b, RLX_LLM_DATA_TRAIN), w8 = all_windows(d8, RLX_LLM_DATA_TRAIN);
  const int32_t W = w0.n;
  assert_true(W > 50);
  assert_permutation(&w7, &w0);
  assert_permutation(&w8, &w0);
  int moved = 0, differ = 0;
  for (int32_t k = 0; k < W; k++) moved += !same_window(&w7, k, &w0, k), differ += !same_window(&w7, k, &w8, k);
  assert_true(moved > W / 2 && differ > W / 2);
  assert_memory_equal(w7.ids, w7b.ids, (size_t)W * seq * sizeof(int32_t)); /* the seed decides */
  /* held out: the last round(0.25 W) windows of the same order */
  rlx_llm_data *h7 = data_or_fail(m, &corpus, NULL, seq, 1, 7, 0.25f);
  rlx_llm_data *h0 = data_or_fail(m, &corpus, NULL, seq, 0, 0, 0.25f);
  const int32_t nv = (int32_t)floor(0.25 * W + 0.5);
  for (int s = 0; s < 2; s++) {
    const windows *order = s ? &w7 : &w0;
    windows t = all_windows(s ? h7 : h0, RLX_LLM_DATA_TRAIN), v = all_windows(s ? h7 : h0, RLX_LLM_DATA_VALID);
    assert_int_equal(t.n, W - nv);
    assert_int_equal(v.n, nv);
    for (int32_t k = 0; k < t.n; k++) assert_true(same_window(&t, k, order, k));
    for (int32_t k = 0; k < v.n; k++) assert_true(same_window(&v, k, order, W - nv + k));
    free_windows(&t), free_windows(&v);
  }
  rlx_llm_data_info in;
  rlx_llm_data_get_info(h7, &in);
  assert_int_equal(in.n_scored[RLX_LLM_DATA_TRAIN] + in.n_scored[RLX_LLM_DATA_VALID], (int64_t)W * seq);
  /* two windows: one of each, whatever the fraction */
  const rlx_llm_data_source two = {NULL, SENTENCE, strlen(SENTENCE), RLX_LLM_DATA_TEXT};
  rlx_llm_data *d2 = data_or_fail(m, &two, NULL, 12, 1, 3, 0.01f);
  rlx_llm_data_get_info(d2, &in);
  assert_true(in.n_windows[RLX_LLM_DATA_TRAIN] == 1 && in.n_windows[RLX_LLM_DATA_VALID] == 1);
  /* a validation source: all of its windows, in order; the fraction unused */
  rlx_llm_data *dv = data_or_fail(m, &corpus, &two, 4, 1, 7, 0.5f);
  rlx_llm_data *ref = data_or_fail(m, &two, NULL, 4, 0, 0, 0.0f);
  windows v = all_windows(dv, RLX_LLM_DATA_VALID), r = all_windows(ref, RLX_LLM_DATA_TRAIN);
  rlx_llm_data_get_info(dv, &in);
  assert_int_equal(in.n_windows[RLX_LLM_DATA_TRAIN], (W * seq) / 4);
  assert_int_equal(v.n, r.n);
  for (int32_t k = 0; k < v.n; k++) assert_true(same_window(&v, k, &r, k));
  free_windows(&v), free_windows(&r);
  free_windows(&w0), free_windows(&w7), free_windows(&w7b), free_windows(&w8);
  rlx_llm_data *all[] = {d0, d7, d7b, d8, h7, h0, d2, dv, ref};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) rlx_llm_data_free(all[k]);
  rlx_llm_free(m);
}

/* ---- JSONL ------------------------------------------------------------------------- */
typedef struct {
  const char *prompt, *completion; /* as decoded */
} example;

/* Lines of the file: key order swapped, a blank line, an empty prompt,
 * escapes (\u00e9, a surrogate pair, \t, \\, \", \/), one example longer
 * than a window. */
static const char JSONL[] =
    "{\"prompt\": \"Q: What does the miller's daughter count?\\nA:\", \"completion\": \" The sacks.\"}\n"
    "\n"
    "  {\"completion\": \" 12, 24, 36, 48.\" , \"prompt\":\"Numbers: \"}  \r\n"
    "{\"prompt\": \"\", \"completion\": \"The caf\\u00e9 on the corner serves cr\\u00e8me br\\u00fbl\\u00e9e.\"}\n"
    "{\"prompt\":\"Smile \\ud83d\\ude00\\t\",\"completion\":\"back\\\\slash \\\"quoted\\\" \\/\"}\n";
static const example EXAMPLES[] = {
    {"Q: What does the miller's daughter count?\nA:", " The sacks."},
    {"Numbers: ", " 12, 24, 36, 48."},
    {"", "The caf\xc3\xa9 on the corner serves cr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e."},
    {"Smile \xf0\x9f\x98\x80\t", "back\\slash \"quoted\" /"},
};
#define N_EXAMPLES (sizeof EXAMPLES / sizeof EXAMPLES[0])

/* The windows the rules give for EXAMPLES (appended to w). */
static void expected_windows(const rlx_llm *m, int32_t seq, windows *w, int64_t *scored) {
  rlx_llm_info mi;
  rlx_llm_get_info(m, &mi);
  const int32_t pad = mi.eos >= 0 ? mi.eos : 0;
  w->n = 0, w->seq = seq, *scored = 0;
  for (size_t e = 0; e < N_EXAMPLES; e++) {
    char joint[256];
    snprintf(joint, sizeof joint, "%s%s", EXAMPLES[e].prompt, EXAMPLES[e].completion);
    size_t n, np, common = 0;
    int32_t *t = tokens(m, joint, strlen(joint), &n), *p = tokens(m, EXAMPLES[e].prompt, strlen(EXAMPLES[e].prompt), &np);
    while (common < np && common < n && p[common] == t[common]) common++;
    if (e == 0) assert_int_equal(common, np); /* this prompt ends where a token does (not "Numbers: " in SPM) */
    t = realloc(t, (n + 1) * sizeof *t);
    if (mi.eos >= 0) t[n++] = mi.eos;
    for (size_t s = 0; s + 1 < n; s += (size_t)seq) {
      if (s + (size_t)seq < common) continue; /* no scored target: left out */
      const size_t at = (size_t)w->n * (size_t)seq;
      w->n++;
      w->ids = realloc(w->ids, (size_t)w->n * seq * sizeof(int32_t));
      w->tg = realloc(w->tg, (size_t)w->n * seq * sizeof(int32_t));
      w->mask = realloc(w->mask, (size_t)w->n * seq * sizeof(float));
      for (size_t j = 0; j < (size_t)seq; j++) {
        const int in = s + j + 1 < n;
        w->ids[at + j] = in ? t[s + j] : pad;
        w->tg[at + j] = in ? t[s + j + 1] : pad;
        w->mask[at + j] = in && s + j + 1 >= common && s + j + 1 > 0 ? 1.0f : 0.0f;
        *scored += w->mask[at + j] != 0.0f;
      }
    }
    free(t), free(p);
  }
}

static void jsonl_masks_cover_the_completion(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof MODELS / sizeof MODELS[0]; k++) {
    rlx_llm_info mi;
    rlx_llm *m = open_or_fail(MODELS[k], &mi);
    assert_true(mi.eos >= 0);
    const int32_t seq = 8;
    const rlx_llm_data_source src = {NULL, JSONL, strlen(JSONL), RLX_LLM_DATA_JSONL};
    rlx_llm_data *d = data_or_fail(m, &src, NULL, seq, 0, 0, 0.0f);
    windows want = {0, seq, NULL, NULL, NULL}, got = all_windows(d, RLX_LLM_DATA_TRAIN);
    int64_t scored;
    expected_windows(m, seq, &want, &scored);
    assert_int_equal(got.n, want.n);
    assert_true(want.n > (int32_t)N_EXAMPLES); /* an example spans windows */
    for (int32_t w = 0; w < want.n; w++)
      if (!same_window(&got, w, &want, w)) fail_msg("%s: window %d is not as the rules give", MODELS[k], (int)w);
    rlx_llm_data_info in;
    rlx_llm_data_get_info(d, &in);
    assert_int_equal(in.n_examples[RLX_LLM_DATA_TRAIN], (int32_t)N_EXAMPLES);
    assert_int_equal(in.n_scored[RLX_LLM_DATA_TRAIN], scored);
    /* the first example: the completion's tokens and the EOS, nothing else */
    size_t np, nc;
    free(tokens(m, EXAMPLES[0].prompt, strlen(EXAMPLES[0].prompt), &np));
    char joint[128];
    snprintf(joint, sizeof joint, "%s%s", EXAMPLES[0].prompt, EXAMPLES[0].completion);
    free(tokens(m, joint, strlen(joint), &nc));
    float sum = 0;
    for (int32_t j = 0; j < 2 * seq; j++) sum += got.mask[j];
    assert_int_equal((size_t)sum, nc - np + 1);
    free_windows(&got), free_windows(&want);
    rlx_llm_data_free(d);
    rlx_llm_free(m);
  }
}

/* Files: ".jsonl" read as JSONL, anything else as text. */
static void files_by_name(void **state) {
  (void)state;
  char dir[] = "/tmp/rlx-data-XXXXXX", path[64], txt[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/train.jsonl", dir);
  snprintf(txt, sizeof txt, "%s/train.txt", dir);
  for (int k = 0; k < 2; k++) {
    FILE *f = fopen(k ? txt : path, "wb");
    fputs(JSONL, f);
    fclose(f);
  }
  rlx_llm *m = open_or_fail(MODELS[1], NULL);
  const rlx_llm_data_source a = {path, NULL, 0, RLX_LLM_DATA_AUTO}, b = {NULL, JSONL, strlen(JSONL), RLX_LLM_DATA_JSONL};
  const rlx_llm_data_source c = {txt, NULL, 0, RLX_LLM_DATA_AUTO};
  rlx_llm_data *da = data_or_fail(m, &a, NULL, 8, 0, 0, 0.0f), *db = data_or_fail(m, &b, NULL, 8, 0, 0, 0.0f);
  rlx_llm_data *dc = data_or_fail(m, &c, NULL, 8, 0, 0, 0.0f);
  windows wa = all_windows(da, RLX_LLM_DATA_TRAIN), wb = all_windows(db, RLX_LLM_DATA_TRAIN);
  assert_int_equal(wa.n, wb.n);
  for (int32_t w = 0; w < wa.n; w++) assert_true(same_window(&wa, w, &wb, w));
  rlx_llm_data_info in;
  rlx_llm_data_get_info(dc, &in);
  assert_int_equal(in.n_examples[RLX_LLM_DATA_TRAIN], 0); /* a text */
  free_windows(&wa), free_windows(&wb);
  rlx_llm_data_free(da), rlx_llm_data_free(db), rlx_llm_data_free(dc);
  rlx_llm_free(m);
  remove(path), remove(txt), rmdir(dir);
}

/* ---- refusals ------------------------------------------------------------------------ */
static void refuse(const rlx_llm *m, const rlx_llm_data_source *t, const rlx_llm_data_source *v,
                   const rlx_llm_data_options *o, rlx_status want, const char *phrase) {
  rlx_llm_data *d = (rlx_llm_data *)1;
  assert_int_equal(rlx_llm_data_new(m, t, v, o, &d), want);
  assert_null(d);
  if (!strstr(rlx_last_error(), phrase)) fail_msg("'%s' lacks '%s'", rlx_last_error(), phrase);
}

/* A JSONL file whose third line is `line`: refused naming line 3. */
static void refuse_line(const rlx_llm *m, const char *line, const char *phrase) {
  char text[512], want[160];
  snprintf(text, sizeof text, "{\"prompt\": \"a\", \"completion\": \"b\"}\n\n%s\n{\"prompt\": \"c\", \"completion\": \"d\"}\n",
           line);
  const rlx_llm_data_source s = {NULL, text, strlen(text), RLX_LLM_DATA_JSONL};
  snprintf(want, sizeof want, "'in memory': line 3: %s", phrase);
  refuse(m, &s, NULL, NULL, RLX_ERR_INVALID_ARG, want);
}

static void refusals(void **state) {
  (void)state;
  rlx_llm_info mi;
  rlx_llm *m = open_or_fail(MODELS[0], &mi);
  const rlx_llm_data_source ok = {NULL, SENTENCE, strlen(SENTENCE), RLX_LLM_DATA_TEXT};
  rlx_llm_data_options o = rlx_llm_data_default_options();
  assert_true(o.seq == 128 && o.shuffle == 1 && o.seed == 0 && o.valid_fraction == 0.1f);
  /* a text shorter than a window: its count and the window's */
  size_t n;
  free(tokens(m, SENTENCE, strlen(SENTENCE), &n));
  char want[128];
  snprintf(want, sizeof want, "the text has %zu tokens (BOS included); a window needs seq + 1 = 129", n);
  refuse(m, &ok, NULL, &o, RLX_ERR_INVALID_ARG, want);
  const rlx_llm_data_source empty = {NULL, "", 0, RLX_LLM_DATA_TEXT};
  o.seq = 4;
  refuse(m, &empty, NULL, &o, RLX_ERR_INVALID_ARG, "the training data 'in memory': the text has 1 tokens");
  refuse(m, &ok, &empty, &o, RLX_ERR_INVALID_ARG, "the validation data 'in memory': the text has 1 tokens");
  const rlx_llm_data_source missing = {"/nonexistent/train.txt", NULL, 0, RLX_LLM_DATA_AUTO};
  refuse(m, &missing, NULL, &o, RLX_ERR_INVALID_ARG, "'/nonexistent/train.txt': cannot open it");
  const rlx_llm_data_source blank = {NULL, "\n  \n", 4, RLX_LLM_DATA_JSONL};
  refuse(m, &blank, NULL, &o, RLX_ERR_INVALID_ARG, "no examples");
  const rlx_llm_data_source bad_format = {NULL, SENTENCE, strlen(SENTENCE), (rlx_llm_data_format)7};
  refuse(m, &bad_format, NULL, &o, RLX_ERR_INVALID_ARG, "unknown format 7");
  /* options and arguments */
  o.seq = 1;
  refuse(m, &ok, NULL, &o, RLX_ERR_INVALID_ARG, "seq must lie in 2 ..");
  o.seq = 4, o.valid_fraction = 1.0f;
  refuse(m, &ok, NULL, &o, RLX_ERR_INVALID_ARG, "valid_fraction must lie in [0, 1)");
  o.valid_fraction = NAN;
  refuse(m, &ok, NULL, &o, RLX_ERR_INVALID_ARG, "valid_fraction");
  o.valid_fraction = 0.1f, o.shuffle = 2;
  refuse(m, &ok, NULL, &o, RLX_ERR_INVALID_ARG, "shuffle must be 0 or 1");
  o.shuffle = 0;
  refuse(NULL, &ok, NULL, &o, RLX_ERR_INVALID_ARG, "model is NULL");
  refuse(m, NULL, NULL, &o, RLX_ERR_INVALID_ARG, "train is NULL");
  assert_int_equal(rlx_llm_data_new(m, &ok, NULL, &o, NULL), RLX_ERR_INVALID_ARG);
  /* JSONL: the line and the problem */
  refuse_line(m, "[\"prompt\", \"completion\"]", "not a JSON object");
  refuse_line(m, "{\"prompt\": \"a\", \"text\": \"b\"}", "unknown key \"text\"");
  refuse_line(m, "{\"prompt\": \"a\"}", "no \"completion\"");
  refuse_line(m, "{\"completion\": \"a\"}", "no \"prompt\"");
  refuse_line(m, "{\"prompt\": \"a\", \"prompt\": \"b\", \"completion\": \"c\"}", "\"prompt\" twice");
  refuse_line(m, "{\"prompt\": 1, \"completion\": \"c\"}", "the value of \"prompt\" is not a string");
  refuse_line(m, "{\"prompt\" \"a\", \"completion\": \"c\"}", "expected ':' after \"prompt\"");
  refuse_line(m, "{\"prompt\": \"a\" \"completion\": \"c\"}", "expected ',' or '}'");
  refuse_line(m, "{\"prompt\": \"a\", \"completion\": \"c\",}", "expected a key string");
  refuse_line(m, "{\"prompt\": \"a\", \"completion\": \"c\"} x", "text after the object");
  refuse_line(m, "{\"prompt\": \"a\\q\", \"completion\": \"c\"}", "a bad escape '\\q'");
  refuse_line(m, "{\"prompt\": \"\\u12G4\", \"completion\": \"c\"}", "a bad escape '\\u12G4'");
  refuse_line(m, "{\"prompt\": \"\\udc00\", \"completion\": \"c\"}", "a lone low surrogate");
  refuse_line(m, "{\"prompt\": \"\\ud800x\", \"completion\": \"c\"}", "a high surrogate \\uD800 at column 13 without");
  refuse_line(m, "{\"prompt\": \"a\tb\", \"completion\": \"c\"}", "a control character (byte 9)");
  refuse_line(m, "{\"prompt\": \"a\", \"completion\": \"c", "a string that does not end");
  refuse_line(m, "{\"prompt\": \"a\", \"completion\": \"\"}", "an empty \"completion\"");
  rlx_llm_data_free(NULL);
  rlx_llm_free(m);
}

/* ---- allocation failures --------------------------------------------------------------- */
static int life(void *model) {
  const rlx_llm *m = model;
  const rlx_llm_data_source j = {NULL, JSONL, strlen(JSONL), RLX_LLM_DATA_JSONL};
  const rlx_llm_data_source t = {NULL, SENTENCE, strlen(SENTENCE), RLX_LLM_DATA_TEXT};
  rlx_llm_data_options o = {6, 1, 5, 0.2f};
  rlx_llm_data *d = NULL;
  int32_t ids[12], tg[12];
  float mask[12];
  rlx_status st = rlx_llm_data_new(m, &j, &t, &o, &d);
  if (st == RLX_OK) st = rlx_llm_data_windows(d, RLX_LLM_DATA_VALID, 1, 2, ids, tg, mask);
  rlx_llm_data_free(d);
  d = NULL;
  if (st == RLX_OK) st = rlx_llm_data_new(m, &t, NULL, &o, &d);
  if (st == RLX_OK) st = rlx_llm_data_windows(d, RLX_LLM_DATA_TRAIN, 0, 2, ids, tg, mask);
  rlx_llm_data_free(d);
  return st;
}

static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  rlx_llm *m = open_or_fail(MODELS[0], NULL);
  const char *why = check_alloc_sweep(life, m, 0);
  if (why) fail_msg("%s", why);
  rlx_llm_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(text_windows_are_shifted_by_one),
      cmocka_unit_test(shuffle_is_a_seeded_permutation),
      cmocka_unit_test(jsonl_masks_cover_the_completion),
      cmocka_unit_test(files_by_name),
      cmocka_unit_test(refusals),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
