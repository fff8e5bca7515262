/* cli_sampling.c - the sampling options that generate and chat share
 * (their table rows are CLI_SAMPLING_OPTIONS in cli.h): parsing one into
 * an rlx_llm_sampling (--grammar FILE or --json-schema FILE parsed into
 * its grammar), the
 * defaults paragraph of --help, and the names of what stopped a
 * generation. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

const char *const cli_stopped_by[5] = {"max tokens", "end-of-generation token", "stop string", "caller",
                                       "context full"};

int cli_opt_range(cli_args *a, double min, double max, float *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  double x = strtod(v, &end);
  if (end == v || *end || !(x >= min && x <= max))
    return cli_usage_error(a->cmd, "%s must be a number from %g to %g (got '%s')", a->name, min, max, v), 0;
  *out = (float)x;
  return 1;
}

char *cli_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *g = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
    if (!g) free(buf);
    buf = g, cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (err) return free(buf), NULL;
  *len = n;
  return buf;
}

/* --grammar FILE: the file's GBNF, parsed; --json-schema FILE: the
 * file's JSON Schema, converted and parsed (refused with the parser's or
 * the converter's message). */
static int grammar_option(cli_args *a, rlx_llm_sampling *s, int schema) {
  const char *path;
  if (!cli_opt_string(a, &path)) return 0;
  if (s->grammar) return cli_usage_error(a->cmd, "give one of --grammar, --json-schema"), 0;
  size_t len = 0;
  char *text = cli_read_file(path, &len);
  if (!text) return cli_usage_error(a->cmd, "%s %s: cannot read the file", a->name, path), 0;
  rlx_llm_grammar *g = NULL;
  rlx_status st = schema ? rlx_llm_grammar_from_json_schema(text, len, &g) : rlx_llm_grammar_parse(text, len, &g);
  free(text);
  if (st != RLX_OK) return cli_usage_error(a->cmd, "%s %s: %s", a->name, path, rlx_last_error()), 0;
  s->grammar = g;
  return 1;
}

void cli_sampling_free(rlx_llm_sampling *s) {
  rlx_llm_grammar_free((rlx_llm_grammar *)s->grammar);
  s->grammar = NULL;
}

int cli_sampling_option(cli_args *a, int k, rlx_llm_sampling *s, const char **stop) {
  long lv;
  switch (k) {
  case CLI_S_MAX_TOKENS: return cli_opt_long(a, 0, 1 << 24, &lv) && (s->max_tokens = (int32_t)lv, 1);
  case CLI_S_TEMPERATURE: return cli_opt_range(a, 0, 100, &s->temperature);
  case CLI_S_TOP_K: return cli_opt_long(a, 0, INT32_MAX, &lv) && (s->top_k = (int32_t)lv, 1);
  case CLI_S_TOP_P: return cli_opt_range(a, 0, 1, &s->top_p);
  case CLI_S_MIN_P: return cli_opt_range(a, 0, 1, &s->min_p);
  case CLI_S_REPEAT_PENALTY: return cli_opt_range(a, 1e-3, 100, &s->repeat_penalty);
  case CLI_S_REPEAT_LAST_N: return cli_opt_long(a, -1, INT32_MAX, &lv) && (s->repeat_last_n = (int32_t)lv, 1);
  case CLI_S_SEED: return cli_opt_u64(a, &s->seed);
  case CLI_S_GRAMMAR: return grammar_option(a, s, 0);
  case CLI_S_JSON_SCHEMA: return grammar_option(a, s, 1);
  case CLI_S_STOP:
    if (s->n_stop == CLI_MAX_STOP) return cli_usage_error(a->cmd, "at most %d --stop strings", CLI_MAX_STOP), 0;
    if (!cli_opt_string(a, &stop[s->n_stop])) return 0;
    s->n_stop++;
    s->stop = stop;
    return 1;
  }
  return 1;
}

void cli_sampling_notes(char *buf, size_t cap) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  snprintf(buf, cap, "Defaults (rlx_llm_sampling_default): %d tokens, temperature %g, top-k %d, top-p %g, min-p %g, "
           "repeat penalty %g over the last %d tokens, seed %llu. A temperature below %g is greedy (the likeliest "
           "token, the lowest id on ties).", (int)s.max_tokens, (double)s.temperature, (int)s.top_k, (double)s.top_p,
           (double)s.min_p, (double)s.repeat_penalty, (int)s.repeat_last_n, (unsigned long long)s.seed,
           (double)RLX_LLM_MIN_TEMPERATURE);
}
