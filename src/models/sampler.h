/* sampler.h - picks the next token from a vocab's logits, in the order of
 * llama.cpp's common sampler chain: repetition penalty over the last
 * repeat_last_n tokens, top-k, top-p, min-p, temperature, then a draw from
 * the softmax with the library's counter-based PRNG (splitmix64 over seed
 * and a per-sampler draw count, so a seed gives the same tokens on every
 * platform; not llama.cpp's mt19937 stream).  A temperature below
 * RLX_LLM_MIN_TEMPERATURE (include/rlx_llm.h), 0 included, is greedy: the
 * highest penalized logit, the lowest id on ties. */
#ifndef RLX_SAMPLER_H
#define RLX_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include "rlx.h"

typedef struct {
  float temperature;     /* >= 0; below RLX_LLM_MIN_TEMPERATURE: greedy */
  int32_t top_k;         /* <= 0: off */
  float top_p;           /* in [0, 1]; 1: off */
  float min_p;           /* in [0, 1]; 0: off */
  float repeat_penalty;  /* > 0; 1: off (logit > 0 divided, else multiplied) */
  int32_t repeat_last_n; /* >= -1; 0: off, -1: the whole history */
  uint64_t seed;
} rlx_sampler_params;

typedef struct rlx_sampler rlx_sampler;

/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
 * repeat_penalty 1 (off), repeat_last_n 64, seed 0. */
rlx_sampler_params rlx_sampler_default_params(void);
/* Bad parameters (NaN, negative temperature, top_p outside [0, 1], ...) ->
 * RLX_ERR_INVALID_ARG with a message naming the field. */
rlx_status rlx_sampler_new(const rlx_sampler_params *p, rlx_sampler **out);
void rlx_sampler_free(rlx_sampler *s);
/* Starts the draw sequence again from seed. */
void rlx_sampler_reset(rlx_sampler *s, uint64_t seed);

/* logits: n_vocab values (-inf allowed, not NaN or +inf); history: the ids
 * so far (prompt and generated), each in [0, n_vocab). */
rlx_status rlx_sampler_sample(rlx_sampler *s, const float *logits, int32_t n_vocab, const int32_t *history,
                              size_t n_history, int32_t *id);

#endif
