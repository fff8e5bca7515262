/* cli_llm.c - the GGUF and language-model commands of the rlx tool, each
 * with its option table (the usage and help come from it): generate,
 * tokenize, next-tokens (a teacher-forced greedy trace), gguf-info and
 * export-gguf (the transformer of rlx_models.h as a llama GGUF file);
 * generate and next-tokens take LoRA adapters (cli_lora.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx_gguf.h"


/* "1,2,3" -> ids (malloc'd); 0 with a usage error printed on bad text. */
static int parse_ids(const char *cmd, const char *opt, const char *s, int32_t **ids, size_t *n) {
  size_t cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  *ids = malloc(cap * sizeof **ids);
  *n = 0;
  if (!*ids) return cli_usage_error(cmd, "out of memory"), 0;
  const char *p = s;
  while (*p) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
      free(*ids);
      *ids = NULL;
      cli_usage_error(cmd, "%s must be token ids separated by commas (got '%s')", opt, s);
      return 0;
    }
    (*ids)[(*n)++] = (int32_t)v;
    p = *end ? end + 1 : end;
  }
  if (*n == 0) {
    free(*ids);
    *ids = NULL;
    cli_usage_error(cmd, "%s needs at least one id", opt);
    return 0;
  }
  return 1;
}

static int open_model(const char *cmd, const char *path, long ctx, int xq8, const cli_loras *ls, rlx_llm **m) {
  rlx_llm_options opt = {.n_ctx = (int32_t)ctx, .xq8 = xq8};
  if (ls) opt.lora = ls->lora, opt.n_lora = ls->n;
  if (rlx_llm_open_file(path, &opt, m) != RLX_OK) return cli_lib_error(cmd, CLI_USAGE, "loading the model"), 0;
  return 1;
}

static int on_token(void *user, int32_t id, const char *text, size_t len) {
  (void)id;
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0;
}

/* The ids generated so far (for --ids). */
typedef struct {
  int32_t *ids;
  size_t n, cap;
} id_list;

static int on_token_ids(void *user, int32_t id, const char *text, size_t len) {
  id_list *l = user;
  on_token(NULL, id, text, len);
  if (id < 0) return 0;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    int32_t *grown = realloc(l->ids, cap * sizeof *grown);
    if (!grown) return 1;
    l->ids = grown, l->cap = cap;
  }
  l->ids[l->n++] = id;
  return 0;
}

static void print_json_ids(const int32_t *ids, size_t n) {
  printf("[");
  for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", (int)ids[i]);
  printf("]");
}


enum { G_MODEL, G_PROMPT, G_PROMPT_IDS, G_SAMPLING, G_CTX = G_SAMPLING + CLI_S_COUNT, G_IDS, G_XQ8, G_LORA, G_THREADS, G_END };
static const cli_option generate_options[] = {
    [G_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "a GGUF language model (llama, qwen2, qwen3)"},
    [G_PROMPT] = {"--prompt", NULL, "TEXT", CLI_ONE_OF, "the prompt, tokenized as the file asks (BOS, special tokens)"},
    [G_PROMPT_IDS] = {"--prompt-ids", NULL, "I,J,..", CLI_ONE_OF, "the prompt as token ids"},
    CLI_SAMPLING_OPTIONS(G_SAMPLING),
    [G_CTX] = {"--ctx", NULL, "N", CLI_OPTIONAL, "positions of the KV cache (default: the model's context length, at "
               "most " CLI_STR(RLX_LLM_DEFAULT_CTX) ")"},
    [G_IDS] = {"--ids", NULL, NULL, CLI_OPTIONAL, "end with a JSON line {\"prompt_ids\": [...], \"ids\": [...]}"},
    [G_XQ8] = {"--xq8", NULL, NULL, CLI_OPTIONAL, CLI_XQ8_HELP},
    [G_LORA] = {"--lora", NULL, "FILE[:SCALE]", CLI_OPTIONAL | CLI_REPEATED, CLI_LORA_HELP},
    [G_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [G_END] = {NULL},
};

static int cli_generate(int argc, char **argv);
const cli_command cli_generate_command = {
    "generate", cli_generate, "generate text with a GGUF language model (llama, qwen2, qwen3)",
    "Streams the text a GGUF language model generates after the prompt to stdout, then the speed (prompt and "
    "generated tokens per second) and what stopped it to stderr.",
    generate_options, cli_sampling_notes};

static int generate_with(int argc, char **argv, rlx_llm_sampling *s) {
  const char *cmd = "generate", *model = NULL, *prompt = NULL, *ids_text = NULL, *stop[CLI_MAX_STOP];
  long ctx = 0;
  int print_ids = 0, xq8 = 0;
  cli_loras loras = {.n = 0};
  const char *v;
  cli_args a;
  cli_args_init(&a, &cli_generate_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case G_THREADS: ok = cli_opt_threads(&a); break;
    case G_LORA: ok = cli_opt_string(&a, &v) && cli_loras_add(cmd, v, &loras); break;
    case G_MODEL: ok = cli_opt_string(&a, &model); break;
    case G_PROMPT: ok = cli_opt_string(&a, &prompt); break;
    case G_PROMPT_IDS: ok = cli_opt_string(&a, &ids_text); break;
    case G_CTX: ok = cli_opt_long(&a, 1, 1 << 24, &ctx); break;
    case G_IDS: print_ids = 1; break;
    case G_XQ8: xq8 = 1; break;
    default: ok = cli_sampling_option(&a, a.opt - G_SAMPLING, s, stop); break;
    }
    if (!ok) return cli_loras_free(&loras), CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return cli_loras_free(&loras), end;
  int32_t *ids = NULL;
  size_t n_ids = 0;
  if (ids_text && !parse_ids(cmd, "--prompt-ids", ids_text, &ids, &n_ids)) return cli_loras_free(&loras), CLI_USAGE;
  rlx_llm *m;
  const int opened = open_model(cmd, model, ctx, xq8, &loras, &m);
  cli_loras_free(&loras);
  if (!opened) return free(ids), CLI_USAGE;
  if (!ids) { /* the prompt's ids as generate feeds them (BOS as the file says, specials parsed) */
    size_t len = strlen(prompt);
    rlx_llm_tokenize(m, prompt, len, -1, 1, NULL, 0, &n_ids);
    ids = malloc((n_ids ? n_ids : 1) * sizeof *ids);
    if (!ids || rlx_llm_tokenize(m, prompt, len, -1, 1, ids, n_ids, &n_ids) != RLX_OK) {
      free(ids);
      rlx_llm_free(m);
      return ids ? cli_lib_error(cmd, CLI_FAILED, "tokenizing the prompt") : cli_usage_error(cmd, "out of memory");
    }
  }
  rlx_llm_stats st;
  id_list out = {NULL, 0, 0};
  rlx_status r = rlx_llm_generate_ids(m, ids, n_ids, s, print_ids ? on_token_ids : on_token, &out, &st);
  printf("\n");
  if (print_ids && r == RLX_OK) {
    printf("{\"prompt_ids\": ");
    print_json_ids(ids, n_ids);
    printf(", \"ids\": ");
    print_json_ids(out.ids, out.n);
    printf("}\n");
  }
  free(ids);
  free(out.ids);
  fflush(stdout);
  int code = CLI_OK;
  if (r != RLX_OK) code = cli_lib_error(cmd, r == RLX_ERR_INVALID_ARG ? CLI_USAGE : CLI_FAILED, "generating");
  else
    fprintf(stderr, "prompt: %d tokens, %.1f tokens/s; generated: %d tokens, %.1f tokens/s; stopped by: %s\n",
            (int)st.prompt_tokens, st.prompt_seconds > 0 ? st.prompt_tokens / st.prompt_seconds : 0.0,
            (int)st.generated_tokens, st.generate_seconds > 0 ? st.generated_tokens / st.generate_seconds : 0.0,
            cli_stopped_by[st.stopped_by]);
  rlx_llm_free(m);
  return code;
}

static int cli_generate(int argc, char **argv) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  int code = generate_with(argc, argv, &s);
  cli_sampling_free(&s);
  return code;
}

enum { T_MODEL, T_TEXT, T_NO_BOS, T_NO_SPECIAL, T_END };
static const cli_option tokenize_options[] = {
    [T_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "a GGUF language model"},
    [T_TEXT] = {"--text", NULL, "TEXT", CLI_REQUIRED | CLI_REPEATED, "a text to tokenize (any word, empty too)"},
    [T_NO_BOS] = {"--no-bos", NULL, NULL, CLI_OPTIONAL, "no BOS token in front (default: as the file asks)"},
    [T_NO_SPECIAL] = {"--no-special", NULL, NULL, CLI_OPTIONAL, "the text of special tokens stays plain text"},
    [T_END] = {NULL},
};
static int cli_tokenize(int argc, char **argv);
const cli_command cli_tokenize_command = {
    "tokenize", cli_tokenize, "the token ids of each text as a JSON array, one line each",
    "Prints the token ids of each --text as a JSON array, one line per text, in order: the ids generate feeds "
    "the model (BOS as the file asks, special tokens parsed).",
    tokenize_options, NULL};

static int cli_tokenize(int argc, char **argv) {
  const char *cmd = "tokenize", *model = NULL;
  int add_bos = -1, special = 1, n_text = 0;
  const char **texts = malloc((size_t)argc * sizeof *texts);
  if (!texts) return cli_usage_error(cmd, "out of memory");
  cli_args a;
  cli_args_init(&a, &cli_tokenize_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case T_MODEL: ok = cli_opt_string(&a, &model); break;
    case T_NO_BOS: add_bos = 0; break;
    case T_NO_SPECIAL: special = 0; break;
    case T_TEXT: /* an empty text, or one starting with "--", is a case too */
      if (!a.inline_value && a.i + 1 >= argc) ok = (cli_usage_error(cmd, "--text needs a value"), 0);
      else texts[n_text++] = a.inline_value ? a.inline_value : argv[++a.i];
      break;
    }
    if (!ok) return free(texts), CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return free(texts), end;
  rlx_llm *m;
  if (!open_model(cmd, model, 0, 0, NULL, &m)) return free(texts), CLI_USAGE;
  int code = CLI_OK;
  for (int t = 0; code == CLI_OK && t < n_text; t++) {
    size_t n = 0, len = strlen(texts[t]);
    rlx_llm_tokenize(m, texts[t], len, add_bos, special, NULL, 0, &n);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids || rlx_llm_tokenize(m, texts[t], len, add_bos, special, ids, n, &n) != RLX_OK) {
      code = ids ? cli_lib_error(cmd, CLI_FAILED, "tokenizing") : cli_usage_error(cmd, "out of memory");
    } else {
      print_json_ids(ids, n);
      printf("\n");
    }
    free(ids);
  }
  free(texts);
  rlx_llm_free(m);
  return code;
}

/* The best and second-best ids of logits and the margin between them. */
static void top2(const float *logits, int32_t n, int32_t *best, int32_t *second) {
  *best = 0;
  *second = n > 1 ? 1 : 0;
  if (n > 1 && logits[1] > logits[0]) *best = 1, *second = 0;
  for (int32_t i = 2; i < n; i++) {
    if (logits[i] > logits[*best]) *second = *best, *best = i;
    else if (logits[i] > logits[*second]) *second = i;
  }
}

enum { N_MODEL, N_IDS, N_FOLLOW, N_XQ8, N_LORA, N_THREADS, N_END };
static const cli_option next_tokens_options[] = {
    [N_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "a GGUF language model"},
    [N_IDS] = {"--ids", NULL, "I,J,..", CLI_REQUIRED, "the prompt's token ids"},
    [N_FOLLOW] = {"--follow", NULL, "K,L,..", CLI_OPTIONAL, "tokens forced after the prompt, one at a time"},
    [N_XQ8] = {"--xq8", NULL, NULL, CLI_OPTIONAL, CLI_XQ8_HELP},
    [N_LORA] = {"--lora", NULL, "FILE[:SCALE]", CLI_OPTIONAL | CLI_REPEATED, CLI_LORA_HELP},
    [N_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [N_END] = {NULL},
};
static int cli_next_tokens(int argc, char **argv);
const cli_command cli_next_tokens_command = {
    "next-tokens", cli_next_tokens,
    "the greedy next token, its runner-up and their logit margin after the prompt and after each forced token",
    "A teacher-forced greedy trace: after the prompt, and after each --follow token fed in turn, one line "
    "'BEST SECOND MARGIN': the likeliest next token, the runner-up and the difference of their logits.",
    next_tokens_options, NULL};

static int cli_next_tokens(int argc, char **argv) {
  const char *cmd = "next-tokens", *model = NULL, *prompt = NULL, *follow = NULL;
  int xq8 = 0;
  cli_loras loras = {.n = 0};
  const char *v;
  cli_args a;
  cli_args_init(&a, &cli_next_tokens_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case N_THREADS: ok = cli_opt_threads(&a); break;
    case N_MODEL: ok = cli_opt_string(&a, &model); break;
    case N_IDS: ok = cli_opt_string(&a, &prompt); break;
    case N_FOLLOW: ok = cli_opt_string(&a, &follow); break;
    case N_XQ8: xq8 = 1; break;
    case N_LORA: ok = cli_opt_string(&a, &v) && cli_loras_add(cmd, v, &loras); break;
    }
    if (!ok) return cli_loras_free(&loras), CLI_USAGE;
  }
  int end = cli_args_end(&a);
  int32_t *p = NULL, *f = NULL;
  size_t np = 0, nf = 0;
  if (end < 0 && !parse_ids(cmd, "--ids", prompt, &p, &np)) end = CLI_USAGE;
  if (end < 0 && follow && !parse_ids(cmd, "--follow", follow, &f, &nf)) end = CLI_USAGE;
  rlx_llm *m;
  if (end < 0 && !open_model(cmd, model, 0, xq8, &loras, &m)) end = CLI_USAGE;
  cli_loras_free(&loras);
  if (end >= 0) return free(p), free(f), end;
  rlx_llm_info info;
  rlx_llm_get_info(m, &info);
  float *logits = malloc((size_t)info.n_vocab * sizeof *logits);
  int code = logits ? CLI_OK : cli_usage_error(cmd, "out of memory");
  for (size_t step = 0; code == CLI_OK && step <= nf; step++) {
    rlx_status r = step == 0 ? rlx_llm_eval(m, p, np, logits) : rlx_llm_eval(m, &f[step - 1], 1, logits);
    if (r != RLX_OK) {
      code = cli_lib_error(cmd, r == RLX_ERR_INVALID_ARG ? CLI_USAGE : CLI_FAILED, "evaluating");
      break;
    }
    int32_t best, second;
    top2(logits, info.n_vocab, &best, &second);
    printf("%d %d %.4f\n", (int)best, (int)second, (double)(logits[best] - logits[second]));
  }
  free(logits);
  free(p);
  free(f);
  rlx_llm_free(m);
  return code;
}

static const cli_option gguf_info_options[] = {
    {"FILE.gguf", NULL, NULL, CLI_REQUIRED, "a GGUF file"},
    {NULL},
};
static int cli_gguf_info(int argc, char **argv);
const cli_command cli_gguf_info_command = {
    "gguf-info", cli_gguf_info, "the file's header; a language model's shape, weight types and memory",
    "Prints a GGUF file's header (version, metadata entries, tensors, bytes of tensor data) and, for a language "
    "model rlx runs, its architecture, shape, tokenizer, weight types and the memory it takes.",
    gguf_info_options, NULL};

static int cli_gguf_info(int argc, char **argv) {
  const char *cmd = "gguf-info", *path = NULL;
  cli_args a;
  cli_args_init(&a, &cli_gguf_info_command, argc, argv);
  while (cli_args_next(&a)) path = a.name;
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  rlx_gguf *g;
  if (rlx_gguf_open_file(path, RLX_GGUF_NO_BUDGET, &g) != RLX_OK) return cli_lib_error(cmd, CLI_USAGE, "reading");
  printf("%s: GGUF v%u, %lld metadata entries, %lld tensors, %.1f MiB of tensor data (alignment %u)\n", path,
         (unsigned)rlx_gguf_version(g), (long long)rlx_gguf_kv_count(g), (long long)rlx_gguf_tensor_count(g),
         (double)rlx_gguf_data_bytes(g) / 1048576.0, (unsigned)rlx_gguf_alignment(g));
  const char *type, *arch = "?";
  uint64_t len, arch_len = 1;
  double alpha = 0;
  if (rlx_gguf_get_string(g, "general.type", &type, &len) == RLX_OK && strcmp(type, "adapter") == 0) {
    rlx_gguf_get_string(g, "general.architecture", &arch, &arch_len);
    rlx_gguf_get_float(g, "adapter.lora.alpha", &alpha);
    printf("  an adapter for %.*s models (adapter.type '%s', alpha %g)\n", (int)arch_len,
           arch, rlx_gguf_get_string(g, "adapter.type", &type, &len) == RLX_OK ? type : "", alpha);
    rlx_gguf_free(g);
    return CLI_OK;
  }
  rlx_gguf_free(g);
  rlx_llm *m;
  if (rlx_llm_open_file(path, NULL, &m) != RLX_OK) {
    printf("  not a language model rlx runs: %s\n", rlx_last_error());
    return CLI_OK;
  }
  rlx_llm_info i;
  rlx_llm_get_info(m, &i);
  printf("%s%s%s\n", i.name, i.name[0] ? ": " : "", i.arch);
  printf("  %d layers, embedding %d, %d heads (%d KV) of %d, feed-forward %d, vocabulary %d (%s tokenizer)\n",
         (int)i.n_layer, (int)i.n_embd, (int)i.n_head, (int)i.n_head_kv, (int)i.head_dim, (int)i.n_ff,
         (int)i.n_vocab, i.tokenizer);
  printf("  context %d (trained %d), RoPE %s theta %g, RMS eps %g, output %s\n", (int)i.n_ctx, (int)i.n_ctx_train,
         i.rope_neox ? "NeoX halves" : "adjacent pairs", (double)i.rope_theta, (double)i.rms_eps,
         i.tied_output ? "tied to the embedding" : "separate");
  printf("  %llu weights: %s\n", (unsigned long long)i.n_params, i.weight_types);
  printf("  memory: %.1f MiB of weights, %.1f MiB of KV cache\n", (double)i.weight_bytes / 1048576.0,
         (double)i.kv_bytes / 1048576.0);
  printf("  BOS %d%s, EOS %d\n", (int)i.bos, i.add_bos ? " (added to prompts)" : "", (int)i.eos);
  rlx_llm_free(m);
  return CLI_OK;
}

/* The transformer export-gguf writes unless told otherwise. */
#define EXPORT_VOCAB 320
#define EXPORT_DIM 128
#define EXPORT_LAYERS 2
#define EXPORT_HEADS 4
#define EXPORT_FFN 256
#define EXPORT_SEED 1
enum { E_OUT, E_TYPE, E_VOCAB, E_DIM, E_LAYERS, E_HEADS, E_FFN, E_SEED, E_END };
static const cli_option export_options[] = {
    [E_OUT] = {"--out", NULL, "FILE.gguf", CLI_REQUIRED, "the file to write"},
    [E_TYPE] = {"--type", NULL, "T", CLI_OPTIONAL, "the weights' GGUF type: f32, f16, bf16, q8_0, q4_0, q4_K, ... "
                "(default f32)"},
    [E_VOCAB] = {"--vocab", NULL, "V", CLI_OPTIONAL, "vocabulary size (default " CLI_STR(EXPORT_VOCAB) ")"},
    [E_DIM] = {"--dim", NULL, "D", CLI_OPTIONAL, "model width, a multiple of --heads (default "
               CLI_STR(EXPORT_DIM) ")"},
    [E_LAYERS] = {"--layers", NULL, "L", CLI_OPTIONAL, "blocks (default " CLI_STR(EXPORT_LAYERS) ")"},
    [E_HEADS] = {"--heads", NULL, "H", CLI_OPTIONAL, "attention heads (default " CLI_STR(EXPORT_HEADS) ")"},
    [E_FFN] = {"--ffn", NULL, "F", CLI_OPTIONAL, "feed-forward width (default " CLI_STR(EXPORT_FFN) ")"},
    [E_SEED] = {"--seed", NULL, "S", CLI_OPTIONAL, "seeds the weights (default " CLI_STR(EXPORT_SEED) ")"},
    [E_END] = {NULL},
};
static int cli_export_gguf(int argc, char **argv);
const cli_command cli_export_gguf_command = {
    "export-gguf", cli_export_gguf, "the transformer (seeded weights) as a llama GGUF file",
    "Writes the transformer of rlx_models.h, with the weights its seed gives, as a llama GGUF file that "
    "generate, gguf-info and the web pages read.",
    export_options, NULL};

static int cli_export_gguf(int argc, char **argv) {
  const char *cmd = "export-gguf", *out = NULL, *type_name = "f32";
  rlx_transformer_config c = {EXPORT_VOCAB, EXPORT_DIM, EXPORT_LAYERS, EXPORT_HEADS, 0, EXPORT_FFN, EXPORT_SEED, 0, 0};
  long v;
  cli_args a;
  cli_args_init(&a, &cli_export_gguf_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case E_OUT: ok = cli_opt_string(&a, &out); break;
    case E_TYPE: ok = cli_opt_string(&a, &type_name); break;
    case E_VOCAB: ok = cli_opt_long(&a, 1, 1 << 20, &v) && (c.vocab = (int32_t)v, 1); break;
    case E_DIM: ok = cli_opt_long(&a, 2, 1 << 14, &v) && (c.dim = (int32_t)v, 1); break;
    case E_LAYERS: ok = cli_opt_long(&a, 0, 256, &v) && (c.n_layers = (int32_t)v, 1); break;
    case E_HEADS: ok = cli_opt_long(&a, 1, 1024, &v) && (c.n_heads = (int32_t)v, 1); break;
    case E_FFN: ok = cli_opt_long(&a, 1, 1 << 16, &v) && (c.ffn = (int32_t)v, 1); break;
    case E_SEED: ok = cli_opt_u64(&a, &c.seed); break;
    }
    if (!ok) return CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return end;
  int32_t type = rlx_gguf_type_from_name(type_name);
  if (type < 0) return cli_usage_error(cmd, "unknown --type '%s' (f32, f16, bf16, q8_0, q4_0, q4_K, ...)", type_name);
  if (c.dim % c.n_heads) return cli_usage_error(cmd, "--dim %d is not a multiple of --heads %d", (int)c.dim, (int)c.n_heads);
  c.head_dim = c.dim / c.n_heads;
  if (rlx_transformer_export_gguf(&c, (rlx_gguf_type)type, out) != RLX_OK)
    return cli_lib_error(cmd, CLI_USAGE, "exporting");
  printf("%s: llama, %s, vocab %d, dim %d, %d layers, %d heads, ffn %d, seed %llu\n", out, type_name, (int)c.vocab,
         (int)c.dim, (int)c.n_layers, (int)c.n_heads, (int)c.ffn, (unsigned long long)c.seed);
  return CLI_OK;
}
