/* bench_grammar_native.c - what sampling under a grammar costs per token:
 * generation from random-weight models (one CPU thread) unconstrained and
 * under a JSON Schema's grammar (rlx_llm_grammar_from_json_schema), greedy
 * and at temperature 0.8, timed in the process's CPU time (robust to other
 * work on the machine).  Per model it prints the milliseconds per token of
 * each and the grammar's extra time, in microseconds and as a share of the
 * unconstrained token.  The schema's strings let most of the vocabulary
 * through (every such token is matched), and its structure refuses most.
 *
 *   bench_grammar_native [--rounds=N] MODEL.gguf...
 * N (default 6) seeded generations of up to 64 tokens per mode, the modes
 * interleaved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx_llm.h"

static const char schema[] =
  "{\"type\": \"object\", \"required\": [\"name\", \"age\", \"tags\"], \"properties\": {"
  "\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\"}, \"ok\": {\"type\": \"boolean\"}, "
  "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}}";

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int die(const char *what) {
  fprintf(stderr, "bench_grammar: %s: %s\n", what, rlx_last_error());
  return 1;
}

int main(int argc, char **argv) {
  int rounds = 6;
  rlx_llm_grammar *g = NULL;
  if (rlx_llm_grammar_from_json_schema(schema, strlen(schema), &g) != RLX_OK) return die("schema");
  for (int a = 1; a < argc; a++) {
    if (!strncmp(argv[a], "--rounds=", 9)) {
      rounds = atoi(argv[a] + 9);
      continue;
    }
    rlx_llm_options opt = {.n_ctx = 128, .threads = 1};
    rlx_llm *m = NULL;
    if (rlx_llm_open_file(argv[a], &opt, &m) != RLX_OK) return die(argv[a]);
    rlx_llm_info info;
    rlx_llm_get_info(m, &info);
    /* modes: 0 free greedy, 1 grammar greedy, 2 free at 0.8, 3 grammar at 0.8 */
    double ms[4] = {0};
    long tokens[4] = {0};
    for (int r = 0; r <= rounds; r++) {
      for (int mode = 0; mode < 4; mode++) {
        rlx_llm_sampling s = rlx_llm_sampling_default();
        s.max_tokens = 64;
        s.seed = (uint64_t)r + 1;
        s.temperature = mode >= 2 ? 0.8f : 0.0f;
        s.grammar = mode & 1 ? g : NULL;
        rlx_llm_stats st;
        const double t0 = cpu_ms();
        if (rlx_llm_generate(m, "JSON:", &s, NULL, NULL, &st) != RLX_OK) return die("generate");
        if (r == 0) continue; /* a warm-up round */
        ms[mode] += cpu_ms() - t0;
        tokens[mode] += st.generated_tokens + st.prompt_tokens;
      }
    }
    double per[4];
    for (int k = 0; k < 4; k++) per[k] = tokens[k] ? ms[k] / (double)tokens[k] : 0;
    printf("grammar cost, vocab %d (%s): unconstrained %.3f ms/token greedy, %.3f at temperature 0.8; "
           "under the schema %.3f greedy (+%.0f us, +%.1f%%), %.3f at 0.8 (+%.0f us, +%.1f%%)\n",
           (int)info.n_vocab, argv[a], per[0], per[2], per[1], 1e3 * (per[1] - per[0]), 100 * (per[1] / per[0] - 1),
           per[3], 1e3 * (per[3] - per[2]), 100 * (per[3] / per[2] - 1));
    fflush(stdout);
    rlx_llm_free(m);
  }
  rlx_llm_grammar_free(g);
  return 0;
}
