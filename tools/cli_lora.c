/* cli_lora.c - LoRA adapters in the rlx tool: the --lora FILE[:SCALE]
 * values generate, next-tokens and perplexity take, the --targets lists
 * of make-lora and finetune, and make-lora, which
 * writes a seeded random adapter for a model (rlx_llm_lora_write) for
 * tests and experiments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx_gguf.h"

int cli_loras_add(const char *cmd, const char *value, cli_loras *ls) {
  if (ls->n == CLI_MAX_LORA) return cli_usage_error(cmd, "at most %d --lora adapters", CLI_MAX_LORA), 0;
  const char *colon = strrchr(value, ':');
  double scale = 1.0;
  if (colon) {
    char *end;
    scale = strtod(colon + 1, &end);
    if (end == colon + 1 || *end || !isfinite(scale) || fabs(scale) > 1e6)
      return cli_usage_error(cmd, "--lora must be FILE or FILE:SCALE with SCALE a number (got '%s'; a FILE whose "
                             "name has ':' needs a SCALE after it)", value), 0;
  }
  const size_t len = colon ? (size_t)(colon - value) : strlen(value);
  if (len == 0) return cli_usage_error(cmd, "--lora needs a FILE (got '%s')", value), 0;
  char *path = malloc(len + 1);
  if (!path) return cli_usage_error(cmd, "out of memory"), 0;
  memcpy(path, value, len);
  path[len] = 0;
  ls->lora[ls->n++] = (rlx_llm_lora){path, NULL, 0, (float)scale};
  return 1;
}

void cli_loras_free(cli_loras *ls) {
  for (int32_t i = 0; i < ls->n; i++) free((char *)ls->lora[i].path);
  ls->n = 0;
}

/* ---- make-lora ---------------------------------------------------------- */
#define MAKE_LORA_TARGETS "attn_q,attn_v"
#define MAKE_LORA_RANK 8
#define MAKE_LORA_SEED 1
enum { L_MODEL, L_OUT, L_TARGETS, L_RANK, L_ALPHA, L_SEED, L_TYPE, L_ZERO_B, L_END };
static const cli_option make_lora_options[] = {
    [L_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "the language model the adapter is for"},
    [L_OUT] = {"--out", NULL, "FILE.gguf", CLI_REQUIRED, "the adapter file to write"},
    [L_TARGETS] = {"--targets", NULL, "T,U,..", CLI_OPTIONAL, "the weights of every layer it adapts (default "
                   MAKE_LORA_TARGETS "; see below)"},
    [L_RANK] = {"--rank", NULL, "R", CLI_OPTIONAL, "its rank (default " CLI_STR(MAKE_LORA_RANK) ")"},
    [L_ALPHA] = {"--alpha", NULL, "A", CLI_OPTIONAL, "adapter.lora.alpha: the products are scaled by A / R (default: "
                 "R)"},
    [L_SEED] = {"--seed", NULL, "S", CLI_OPTIONAL, "seeds the values (default " CLI_STR(MAKE_LORA_SEED) ")"},
    [L_TYPE] = {"--type", NULL, "T", CLI_OPTIONAL, "f32 or f16 (default f32)"},
    [L_ZERO_B] = {"--zero-b", NULL, NULL, CLI_OPTIONAL, "B all zeros, as PEFT starts training (the adapter then "
                  "changes nothing)"},
    [L_END] = {NULL},
};

size_t cli_lora_target_list(char *buf, size_t cap) {
  size_t at = 0;
  for (int32_t k = 0; rlx_llm_lora_target(k) && at < cap; k++)
    at += (size_t)snprintf(buf + at, cap - at, "%s%s", k ? " " : "", rlx_llm_lora_target(k));
  return at < cap ? at : cap;
}

static void make_lora_notes(char *buf, size_t cap) {
  size_t at = (size_t)snprintf(buf, cap, "Targets: ");
  if (at < cap) at += cli_lora_target_list(buf + at, cap - at);
  if (at < cap)
    snprintf(buf + at, cap - at, ". A and B hold uniform values in +-1/sqrt(n_in) and +-1/sqrt(R) (PEFT's "
             "initialization of A, applied to B too), a stream of the seed per tensor.");
}

static int cli_make_lora(int argc, char **argv);
const cli_command cli_make_lora_command = {
    "make-lora", cli_make_lora, "a seeded random LoRA adapter for a GGUF language model",
    "Writes a LoRA adapter file (as llama.cpp loads it) for the model's shapes with seeded random values, for "
    "generate --lora and next-tokens --lora.",
    make_lora_options, make_lora_notes};

/* Uniform in (-bound, bound) from 24 bits of splitmix64. */
static void fill(float *x, size_t n, float bound, uint64_t *state) {
  for (size_t i = 0; i < n; i++) x[i] = ((float)(cli_rand(state) >> 40) / 16777216.0f * 2.0f - 1.0f) * bound;
}

unsigned cli_lora_targets(const char *cmd, const char *list, int all_ok) {
  unsigned mask = 0;
  for (const char *p = list; *p;) {
    const size_t len = strcspn(p, ",");
    const int32_t found = rlx_llm_lora_target_find(p, len);
    if (all_ok && len == 3 && strncmp(p, "all", 3) == 0) {
      for (int32_t k = 0; rlx_llm_lora_target(k); k++) mask |= 1u << k;
    } else if (found < 0) {
      return cli_usage_error(cmd, "--targets: '%.*s' is not a target (rlx %s --help lists them)", (int)len, p, cmd),
             0;
    } else {
      mask |= 1u << found;
    }
    p += len + (p[len] == ',');
  }
  if (!mask) cli_usage_error(cmd, "--targets names no target");
  return mask;
}

static int cli_make_lora(int argc, char **argv) {
  const char *cmd = "make-lora", *model = NULL, *out = NULL, *targets = MAKE_LORA_TARGETS, *type_name = "f32";
  long rank = MAKE_LORA_RANK;
  double alpha = -1;
  uint64_t seed = MAKE_LORA_SEED;
  int zero_b = 0;
  cli_args a;
  cli_args_init(&a, &cli_make_lora_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case L_MODEL: ok = cli_opt_string(&a, &model); break;
    case L_OUT: ok = cli_opt_string(&a, &out); break;
    case L_TARGETS: ok = cli_opt_string(&a, &targets); break;
    case L_RANK: ok = cli_opt_long(&a, 1, 1 << 16, &rank); break;
    case L_ALPHA: ok = cli_opt_float(&a, 0, 1e6, &alpha); break;
    case L_SEED: ok = cli_opt_u64(&a, &seed); break;
    case L_TYPE: ok = cli_opt_string(&a, &type_name); break;
    case L_ZERO_B: zero_b = 1; break;
    }
    if (!ok) return CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  const unsigned mask = cli_lora_targets(cmd, targets, 0);
  if (!mask) return CLI_USAGE;
  const int32_t type = rlx_gguf_type_from_name(type_name);
  if (type != RLX_GGUF_TYPE_F32 && type != RLX_GGUF_TYPE_F16)
    return cli_usage_error(cmd, "--type must be f32 or f16 (got '%s')", type_name);
  if (alpha < 0) alpha = (double)rank;
  rlx_gguf *g;
  if (rlx_gguf_open_file(model, RLX_GGUF_NO_BUDGET, &g) != RLX_OK) return cli_lib_error(cmd, CLI_USAGE, "reading");
  const char *s;
  uint64_t len;
  char arch[48] = "", key[80];
  int64_t n_layer = 0;
  if (rlx_gguf_get_string(g, "general.architecture", &s, &len) == RLX_OK && len < sizeof arch)
    snprintf(arch, sizeof arch, "%.*s", (int)len, s);
  snprintf(key, sizeof key, "%s.block_count", arch);
  if (!arch[0] || rlx_gguf_get_int(g, key, &n_layer) != RLX_OK || n_layer < 1 || n_layer > 4096) {
    rlx_gguf_free(g);
    return cli_usage_error(cmd, "%s is not a language model (no general.architecture or block_count)", model);
  }
  int n_targets = 0;
  for (unsigned bits = mask; bits; bits &= bits - 1) n_targets++;
  rlx_llm_lora_tensor *t = calloc((size_t)n_layer * (size_t)n_targets, sizeof *t);
  char (*names)[64] = calloc((size_t)n_layer * (size_t)n_targets, sizeof *names);
  int32_t n = 0;
  int code = t && names ? CLI_OK : cli_usage_error(cmd, "out of memory");
  for (int32_t l = 0; code == CLI_OK && l < n_layer; l++)
    for (int32_t k = 0; code == CLI_OK && rlx_llm_lora_target(k); k++) {
      if (!(mask & (1u << k))) continue;
      snprintf(names[n], sizeof names[n], "blk.%d.%s.weight", (int)l, rlx_llm_lora_target(k));
      rlx_gguf_tensor_info ti;
      const int64_t at = rlx_gguf_find_tensor(g, names[n]);
      if (at < 0 || rlx_gguf_tensor(g, at, &ti) != RLX_OK || ti.n_dims != 2) {
        code = cli_usage_error(cmd, "%s has no matrix '%s'", model, names[n]);
        break;
      }
      rlx_llm_lora_tensor *x = &t[n];
      *x = (rlx_llm_lora_tensor){names[n], (int32_t)rank, (int32_t)ti.dims[0], (int32_t)ti.dims[1], NULL, NULL};
      float *av = malloc((size_t)rank * (size_t)x->n_in * sizeof *av);
      float *bv = calloc((size_t)x->n_out * (size_t)rank, sizeof *bv);
      x->a = av, x->b = bv;
      n++;
      if (!av || !bv) {
        code = cli_usage_error(cmd, "out of memory");
        break;
      }
      uint64_t state = seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(l * 64 + k + 1));
      fill(av, (size_t)rank * (size_t)x->n_in, 1.0f / sqrtf((float)x->n_in), &state);
      if (!zero_b) fill(bv, (size_t)x->n_out * (size_t)rank, 1.0f / sqrtf((float)rank), &state);
    }
  if (code == CLI_OK) {
    if (rlx_llm_lora_write(out, arch, (float)alpha, (rlx_gguf_type)type, t, n) != RLX_OK)
      code = cli_lib_error(cmd, CLI_FAILED, "writing");
    else
      printf("%s: %s, %d pairs of rank %ld on %s, alpha %g, seed %llu, %s%s\n", out, arch, (int)n, rank, targets, alpha,
             (unsigned long long)seed, type_name, zero_b ? ", B zero" : "");
  }
  for (int32_t i = 0; i < n; i++) free((void *)t[i].a), free((void *)t[i].b);
  free(t);
  free(names);
  rlx_gguf_free(g);
  return code;
}
