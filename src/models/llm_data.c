/* llm_data.c - fine-tuning data (rlx_llm_data in include/rlx_llm_train.h):
 * a text or JSONL source (a file, or bytes) tokenized with the model's
 * tokenizer into one token stream with a scored flag per token, the
 * windows over it (a start and a length of at most seq + 1 tokens), the
 * training and validation splits as lists of windows (seeded order, held
 * out or from a second source), and the windows handed out as ids,
 * targets and mask.  The header states the rules; refusals name the
 * source, and for JSONL the line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llm_train.h"

typedef struct {
  int64_t start; /* t[start .. start + len): ids t[start ..], targets t[start + 1 ..] */
  int32_t len;   /* 2 .. seq + 1 */
} data_window;

struct rlx_llm_data {
  int32_t seq, pad;
  int32_t *tok;      /* every source's tokens */
  uint8_t *scored;   /* 1: the token is scored as a target */
  size_t n_tok, cap_tok, cap_scored;
  data_window *win;
  size_t n_win, cap_win;
  int32_t *split[2]; /* window indices of each split, info.n_windows[k] each */
  rlx_llm_data_info info;
};

/* What a source is being read as, for the messages. */
typedef struct {
  rlx_llm_data *d;
  const rlx_llm *m;
  const char *role; /* "training data" or "validation data" */
  const char *name; /* the path, or "in memory" */
  int32_t bos, eos;
} source_ctx;

static rlx_status dfail(const source_ctx *c, rlx_status code, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rlx_error(code, "rlx_llm_data_new: the %s '%s': %s", c->role, c->name, msg);
}

rlx_llm_data_options rlx_llm_data_default_options(void) {
  rlx_llm_data_options o = {128, 1, 0, 0.1f};
  return o;
}

/* ---- growing arrays ------------------------------------------------------------ */
static int reserve_tokens(rlx_llm_data *d, size_t more) {
  const size_t need = d->n_tok + more;
  if (need > d->cap_tok) {
    size_t cap = d->cap_tok ? d->cap_tok : 1024;
    while (cap < need) cap *= 2;
    int32_t *tok = rlx_realloc(d->tok, d->cap_tok * sizeof *tok, cap * sizeof *tok);
    if (!tok) return 0;
    d->tok = tok, d->cap_tok = cap;
  }
  if (d->cap_tok > d->cap_scored) {
    uint8_t *scored = rlx_realloc(d->scored, d->cap_scored, d->cap_tok);
    if (!scored) return 0;
    d->scored = scored, d->cap_scored = d->cap_tok;
  }
  return 1;
}

static int add_window(rlx_llm_data *d, int64_t start, int32_t len) {
  if (d->n_win == d->cap_win) {
    size_t cap = d->cap_win ? 2 * d->cap_win : 64;
    data_window *w = rlx_realloc(d->win, d->cap_win * sizeof *w, cap * sizeof *w);
    if (!w) return 0;
    d->win = w, d->cap_win = cap;
  }
  d->win[d->n_win++] = (data_window){start, len};
  return 1;
}

/* Appends the tokens of text[0, len) (BOS as the file asks, specials
 * parsed); *n: how many. */
static rlx_status tokenize_into(const source_ctx *c, const char *text, size_t len, size_t *n) {
  rlx_llm_data *d = c->d;
  const size_t room = d->cap_scored - d->n_tok; /* cap_scored <= cap_tok */
  rlx_status st = rlx_llm_tokenize(c->m, text, len, -1, 1, room ? d->tok + d->n_tok : NULL, room, n);
  if (st == RLX_OK || *n <= room) return st;
  if (!reserve_tokens(d, *n)) return dfail(c, RLX_ERR_NO_MEMORY, "out of memory for %zu tokens", *n);
  return rlx_llm_tokenize(c->m, text, len, -1, 1, d->tok + d->n_tok, *n, n);
}

/* ---- text ---------------------------------------------------------------------------- */
static rlx_status add_text(source_ctx *c, const char *text, size_t len, int split) {
  rlx_llm_data *d = c->d;
  const int32_t seq = d->seq;
  size_t n;
  rlx_status st = tokenize_into(c, text, len, &n);
  if (st != RLX_OK) return st;
  if (n < (size_t)seq + 1)
    return dfail(c, RLX_ERR_INVALID_ARG, "the text has %zu tokens%s; a window needs seq + 1 = %d (more text, or a "
                 "smaller seq)", n, c->bos >= 0 && n && d->tok[d->n_tok] == c->bos ? " (BOS included)" : "",
                 (int)seq + 1);
  const int64_t base = (int64_t)d->n_tok;
  memset(d->scored + base, 1, n);
  d->scored[base] = 0;
  d->n_tok += n;
  const size_t k = (n - 1) / (size_t)seq;
  for (size_t w = 0; w < k; w++)
    if (!add_window(d, base + (int64_t)(w * (size_t)seq), seq + 1))
      return dfail(c, RLX_ERR_NO_MEMORY, "out of memory for %zu windows", k);
  d->info.n_tokens[split] = (int64_t)n;
  d->info.n_dropped[split] = (int64_t)(n - 1 - k * (size_t)seq);
  return RLX_OK;
}

/* ---- JSONL ------------------------------------------------------------------------------ */
/* The windows of the example t[base, base + n): cut as a text's, the last
 * one shorter; those without a scored target left out.  Returns how many,
 * or -1 out of memory. */
static long example_windows(rlx_llm_data *d, int64_t base, int64_t n) {
  long added = 0;
  for (int64_t s = 0; s < n - 1; s += d->seq) {
    const int32_t len = (int32_t)(n - s < d->seq + 1 ? n - s : d->seq + 1);
    int any = 0;
    for (int32_t j = 1; j < len && !any; j++) any = d->scored[base + s + j];
    if (!any) continue;
    if (!add_window(d, base + s, len)) return -1;
    added++;
  }
  return added;
}

/* One example: prompt + completion (contiguous in text) and EOS. */
static rlx_status add_example(source_ctx *c, const char *text, size_t prompt_len, size_t completion_len, long line,
                              int32_t **scratch, size_t *scratch_cap) {
  rlx_llm_data *d = c->d;
  size_t n, np;
  rlx_status st = tokenize_into(c, text, prompt_len + completion_len, &n);
  if (st != RLX_OK) return st;
  /* the prompt alone, for the boundary */
  st = rlx_llm_tokenize(c->m, text, prompt_len, -1, 1, *scratch, *scratch_cap, &np);
  if (st != RLX_OK && np > *scratch_cap) {
    int32_t *grown = rlx_realloc(*scratch, *scratch_cap * sizeof **scratch, np * sizeof **scratch);
    if (!grown) return dfail(c, RLX_ERR_NO_MEMORY, "out of memory");
    *scratch = grown, *scratch_cap = np;
    st = rlx_llm_tokenize(c->m, text, prompt_len, -1, 1, *scratch, *scratch_cap, &np);
  }
  if (st != RLX_OK) return st;
  const int64_t base = (int64_t)d->n_tok;
  size_t common = 0;
  while (common < np && common < n && (*scratch)[common] == d->tok[base + (int64_t)common]) common++;
  if (c->eos >= 0) {
    if (!reserve_tokens(d, n + 1)) return dfail(c, RLX_ERR_NO_MEMORY, "out of memory for %zu tokens", n + 1);
    d->tok[base + (int64_t)n++] = c->eos;
  }
  for (size_t j = 0; j < n; j++) d->scored[base + (int64_t)j] = j > 0 && j >= common;
  d->n_tok += n;
  const long w = example_windows(d, base, (int64_t)n);
  if (w < 0) return dfail(c, RLX_ERR_NO_MEMORY, "out of memory for the windows of line %ld", line);
  if (w == 0) return dfail(c, RLX_ERR_INVALID_ARG, "line %ld: the completion gives no token to score", line);
  return RLX_OK;
}

static rlx_status add_jsonl(source_ctx *c, const char *text, size_t len, int split) {
  char *buf = NULL, err[200];
  size_t buf_cap = 0, scratch_cap = 0;
  int32_t *scratch = NULL;
  const size_t tok0 = c->d->n_tok;
  long line = 0, examples = 0;
  rlx_status st = RLX_OK;
  for (size_t at = 0; st == RLX_OK && at < len; line++) {
    const char *nl = memchr(text + at, '\n', len - at);
    const size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
    if (n > buf_cap) {
      char *grown = rlx_realloc(buf, buf_cap, n);
      if (!grown) {
        st = dfail(c, RLX_ERR_NO_MEMORY, "out of memory for line %ld", line + 1);
        break;
      }
      buf = grown, buf_cap = n;
    }
    size_t pl, cl;
    const int r = llm_jsonl_example(text + at, n, buf, &pl, &cl, err, sizeof err);
    if (r < 0) st = dfail(c, RLX_ERR_INVALID_ARG, "line %ld: %s", line + 1, err);
    else if (r > 0 && (st = add_example(c, buf, pl, cl, line + 1, &scratch, &scratch_cap)) == RLX_OK) examples++;
    at = end + 1;
  }
  rlx_free(buf, buf_cap);
  rlx_free(scratch, scratch_cap * sizeof *scratch);
  if (st == RLX_OK && !examples)
    st = dfail(c, RLX_ERR_INVALID_ARG, "no examples (want lines {\"prompt\": ..., \"completion\": ...})");
  c->d->info.n_examples[split] = (int32_t)examples;
  c->d->info.n_tokens[split] = (int64_t)(c->d->n_tok - tok0);
  return st;
}

/* ---- sources and splits --------------------------------------------------------------- */
static int ends_with(const char *s, const char *suffix) {
  const size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static rlx_status add_source(source_ctx *c, const rlx_llm_data_source *src, int split) {
  c->name = src->path ? src->path : "in memory";
  const char *text = src->text;
  size_t len = src->len;
  char *owned = NULL;
  if (src->format < RLX_LLM_DATA_AUTO || src->format > RLX_LLM_DATA_JSONL)
    return dfail(c, RLX_ERR_INVALID_ARG, "unknown format %d", (int)src->format);
  if (src->path) {
#if defined(__wasm__) /* the web modules read no files */
    return dfail(c, RLX_ERR_UNSUPPORTED, "no files here: give the bytes (text, len)");
#else
    FILE *f = fopen(src->path, "rb");
    if (!f) return dfail(c, RLX_ERR_INVALID_ARG, "cannot open it");
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    len = size > 0 ? (size_t)size : 0;
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0 || (len && !(owned = rlx_malloc(len))) ||
        fread(owned, 1, len, f) != len) {
      fclose(f);
      rlx_free(owned, len);
      return size > 0 && !owned ? dfail(c, RLX_ERR_NO_MEMORY, "out of memory for its %ld bytes", size)
                                : dfail(c, RLX_ERR_INVALID_ARG, "cannot read it");
    }
    fclose(f);
    text = owned;
#endif
  } else if (!text && len) {
    return dfail(c, RLX_ERR_INVALID_ARG, "neither a path nor text");
  }
  const int jsonl = src->format == RLX_LLM_DATA_JSONL || (src->format == RLX_LLM_DATA_AUTO && src->path &&
                                                          ends_with(src->path, ".jsonl"));
  rlx_status st = jsonl ? add_jsonl(c, text ? text : "", len, split) : add_text(c, text ? text : "", len, split);
  rlx_free(owned, len);
  return st;
}

/* Windows [from, to) into the split's list. */
static int fill_split(rlx_llm_data *d, int split, const int32_t *order, size_t n) {
  if (!(d->split[split] = rlx_malloc((n ? n : 1) * sizeof(int32_t)))) return 0;
  if (n) memcpy(d->split[split], order, n * sizeof(int32_t));
  d->info.n_windows[split] = (int32_t)n;
  for (size_t k = 0; k < n; k++) {
    const data_window *w = &d->win[order[k]];
    for (int32_t j = 1; j < w->len; j++) d->info.n_scored[split] += d->scored[w->start + j];
  }
  return 1;
}

static rlx_status make_splits(rlx_llm_data *d, size_t n_train, int held_out, const rlx_llm_data_options *o) {
  int32_t *order = rlx_malloc((d->n_win ? d->n_win : 1) * sizeof *order);
  if (!order) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_data_new: out of memory");
  for (size_t k = 0; k < d->n_win; k++) order[k] = (int32_t)k;
  for (size_t k = n_train; o->shuffle && k > 1; k--) { /* Fisher-Yates over the training source's windows */
    const size_t j = (size_t)(rlx_hash64(o->seed, k) % k);
    const int32_t t = order[k - 1];
    order[k - 1] = order[j], order[j] = t;
  }
  size_t n_valid = d->n_win - n_train;
  if (held_out && n_train >= 2 && o->valid_fraction > 0) {
    n_valid = (size_t)((double)o->valid_fraction * (double)n_train + 0.5);
    n_valid = n_valid < 1 ? 1 : n_valid > n_train - 1 ? n_train - 1 : n_valid;
    n_train -= n_valid;
  }
  const int ok = fill_split(d, RLX_LLM_DATA_TRAIN, order, n_train) &&
                 fill_split(d, RLX_LLM_DATA_VALID, order + n_train, n_valid);
  rlx_free(order, (d->n_win ? d->n_win : 1) * sizeof *order);
  return ok ? RLX_OK : rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_data_new: out of memory");
}

rlx_status rlx_llm_data_new(const rlx_llm *m, const rlx_llm_data_source *train, const rlx_llm_data_source *valid,
                            const rlx_llm_data_options *opt, rlx_llm_data **out) {
  const char *fn = "rlx_llm_data_new";
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!m || !train) return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn, m ? "train" : "model");
  const rlx_llm_data_options o = opt ? *opt : rlx_llm_data_default_options();
  if (o.seq < 2 || o.seq > (1 << 24)) return rlx_error(RLX_ERR_INVALID_ARG, "%s: seq must lie in 2 .. %d, got %d", fn,
                                                       1 << 24, (int)o.seq);
  if (!(o.valid_fraction >= 0.0f && o.valid_fraction < 1.0f))
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: valid_fraction must lie in [0, 1), got %g", fn,
                     (double)o.valid_fraction);
  if (o.shuffle != 0 && o.shuffle != 1) return rlx_error(RLX_ERR_INVALID_ARG, "%s: shuffle must be 0 or 1", fn);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  rlx_llm_data *d = rlx_calloc(1, sizeof *d);
  if (!d) return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
  d->seq = o.seq, d->pad = in.eos >= 0 ? in.eos : 0, d->info.seq = o.seq;
  source_ctx c = {d, m, "training data", NULL, in.bos, in.eos};
  rlx_status st = add_source(&c, train, RLX_LLM_DATA_TRAIN);
  const size_t n_train = d->n_win;
  c.role = "validation data";
  if (st == RLX_OK && valid) st = add_source(&c, valid, RLX_LLM_DATA_VALID);
  if (st == RLX_OK && d->n_win > INT32_MAX)
    st = rlx_error(RLX_ERR_UNSUPPORTED, "%s: %zu windows are too many", fn, d->n_win);
  if (st == RLX_OK) st = make_splits(d, n_train, !valid, &o);
  if (st != RLX_OK) {
    rlx_llm_data_free(d);
    return st;
  }
  *out = d;
  return RLX_OK;
}

void rlx_llm_data_free(rlx_llm_data *d) {
  if (!d) return;
  rlx_free(d->tok, d->cap_tok * sizeof *d->tok);
  rlx_free(d->scored, d->cap_scored);
  rlx_free(d->win, d->cap_win * sizeof *d->win);
  for (int k = 0; k < 2; k++)
    if (d->split[k]) rlx_free(d->split[k], (d->info.n_windows[k] ? (size_t)d->info.n_windows[k] : 1) * sizeof(int32_t));
  rlx_free(d, sizeof *d);
}

rlx_status rlx_llm_data_get_info(const rlx_llm_data *d, rlx_llm_data_info *info) {
  if (!d || !info) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_data_get_info: %s is NULL", d ? "info" : "data");
  *info = d->info;
  return RLX_OK;
}

rlx_status rlx_llm_data_windows(const rlx_llm_data *d, int32_t split, int64_t first, int32_t n, int32_t *ids,
                                int32_t *targets, float *mask) {
  const char *fn = "rlx_llm_data_windows";
  if (!d || !ids || !targets || !mask)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                     !d ? "data" : !ids ? "ids" : !targets ? "targets" : "mask");
  if (split != RLX_LLM_DATA_TRAIN && split != RLX_LLM_DATA_VALID)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: split %d (RLX_LLM_DATA_TRAIN or RLX_LLM_DATA_VALID)", fn, (int)split);
  if (n < 1 || first < 0) return rlx_error(RLX_ERR_INVALID_ARG, "%s: first %lld, n %d", fn, (long long)first, (int)n);
  const int32_t count = d->info.n_windows[split];
  if (!count)
    return rlx_error(RLX_ERR_STATE, "%s: the %s split has no windows", fn, split ? "validation" : "training");
  const size_t seq = (size_t)d->seq;
  for (int32_t k = 0; k < n; k++) {
    const data_window *w = &d->win[d->split[split][(first + k) % count]];
    int32_t *wi = ids + k * seq, *wt = targets + k * seq;
    float *wm = mask + k * seq;
    for (size_t j = 0; j < seq; j++) {
      const int in = j + 1 < (size_t)w->len;
      wi[j] = in ? d->tok[w->start + (int64_t)j] : d->pad;
      wt[j] = in ? d->tok[w->start + (int64_t)j + 1] : d->pad;
      wm[j] = in ? (float)d->scored[w->start + (int64_t)j + 1] : 0.0f;
    }
  }
  return RLX_OK;
}
