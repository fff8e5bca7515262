/* generate.c - text from a GGUF language model with the RLX C API
 * (include/rlx_llm.h): load the file, print what it is, stream a greedy
 * continuation of a prompt, then sample one with a seed.  The same as
 * examples/python/generate.py and examples/js/generate.mjs.
 *
 * Checks (exit status 1 when one fails): tokens were generated, greedy
 * generation repeats itself, and the same seed gives the same sample.  Exit status 2 on a library error.
 *
 * Build and run: make build/examples/generate lm-fixtures &&
 *   build/examples/generate [FILE.gguf] [PROMPT]   (default: build/lm/llama-q8_0.gguf) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_models.h"

typedef struct {
  int32_t ids[256];
  int n;
  int print;
} run;

static int on_token(void *user, int32_t id, const char *text, size_t len) {
  run *r = user;
  if (r->print) fwrite(text, 1, len, stdout), fflush(stdout); /* whole UTF-8 characters only */
  if (id >= 0 && r->n < 256) r->ids[r->n++] = id;
  return 0; /* nonzero stops */
}

static int generate(rlx_llm *m, const char *prompt, const rlx_llm_sampling *s, run *r, int print) {
  memset(r, 0, sizeof *r);
  r->print = print;
  rlx_llm_stats st;
  if (rlx_llm_generate(m, prompt, s, on_token, r, &st) != RLX_OK) {
    fprintf(stderr, "generate: %s\n", rlx_last_error());
    return 0;
  }
  if (print)
    printf("\n  [%d prompt tokens at %.0f tokens/s, %d generated at %.0f tokens/s]\n", (int)st.prompt_tokens,
         st.prompt_seconds > 0 ? st.prompt_tokens / st.prompt_seconds : 0.0, (int)st.generated_tokens,
         st.generate_seconds > 0 ? st.generated_tokens / st.generate_seconds : 0.0);
  return 1;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "build/lm/llama-q8_0.gguf";
  const char *prompt = argc > 2 ? argv[2] : "The miller counted the sacks";
  rlx_llm *m;
  if (rlx_llm_open_file(path, NULL, &m) != RLX_OK) {
    fprintf(stderr, "%s (make lm-fixtures writes the test models)\n", rlx_last_error());
    return 2;
  }
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  printf("%s: %s, %d layers, %d wide, vocabulary %d, %s\n", path, in.arch, (int)in.n_layer, (int)in.n_embd,
         (int)in.n_vocab, in.weight_types);

  static run greedy, again, sampled, resampled;
  rlx_llm_sampling s = rlx_llm_sampling_default(); /* greedy */
  s.max_tokens = 32;
  printf("greedy: %s", prompt);
  int ok = generate(m, prompt, &s, &greedy, 1) && generate(m, prompt, &s, &again, 0);
  s.temperature = 0.8f, s.top_k = 40, s.top_p = 0.95f, s.seed = 42;
  printf("sampled (seed 42): %s", prompt);
  ok = ok && generate(m, prompt, &s, &sampled, 1) && generate(m, prompt, &s, &resampled, 0);
  if (!ok) return rlx_llm_free(m), 2;

  int failed = 0;
  if (greedy.n == 0) failed = 1, fprintf(stderr, "no tokens\n");
  if (greedy.n != again.n || memcmp(greedy.ids, again.ids, sizeof greedy.ids)) failed = 1, fprintf(stderr, "greedy changed\n");
  if (memcmp(sampled.ids, resampled.ids, sizeof sampled.ids)) failed = 1, fprintf(stderr, "seed 42 changed\n");
  rlx_llm_free(m);
  printf(failed ? "FAILED\n" : "ok: greedy and the seeded sample repeat\n");
  return failed;
}
