/* cli_llm.c - the GGUF and language-model commands of the rlx tool:
 *   rlx generate --model FILE (--prompt TEXT | --prompt-ids I,J,..)
 *       [sampling] [--ids] : streams the generated text to stdout, the speed
 *       to stderr; --ids ends with a JSON line {"prompt_ids": [..], "ids": [..]};
 *   rlx tokenize --model FILE --text TEXT [--text TEXT ...] [--no-bos]
 *       [--no-special] : a JSON array of ids per text, one line each;
 *   rlx next-tokens --model FILE --ids PROMPT [--follow I,J,..] : the greedy
 *       next token (and the margin over the runner-up) after the prompt and
 *       after each forced token: a teacher-forced greedy trace;
 *   rlx gguf-info FILE : the file's header, and what the model is and takes
 *       in memory when it is a language model we run;
 *   rlx export-gguf --out FILE ... : the transformer as a llama GGUF file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx_gguf.h"

#define MAX_STOP 8

static const char *const STOPPED_BY[] = {"max tokens", "end-of-generation token", "stop string", "caller",
                                         "context full"};

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

/* A number in [min, max] (both inclusive, unlike cli_opt_float). */
static int opt_range(cli_args *a, double min, double max, float *out) {
  const char *v;
  if (!cli_opt_string(a, &v)) return 0;
  char *end;
  double x = strtod(v, &end);
  if (end == v || *end || !(x >= min && x <= max))
    return cli_usage_error(a->cmd, "%s must be a number from %g to %g (got '%s')", a->name, min, max, v), 0;
  *out = (float)x;
  return 1;
}

static int open_model(const char *cmd, const char *path, long ctx, int xq8, rlx_llm **m) {
  if (!path) return cli_usage_error(cmd, "--model FILE is required (a GGUF file)"), 0;
  rlx_llm_options opt = {(int32_t)ctx, 0, xq8};
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

int cli_generate(int argc, char **argv) {
  const char *cmd = "generate", *model = NULL, *prompt = NULL, *ids_text = NULL, *stop[MAX_STOP];
  rlx_llm_sampling s = rlx_llm_sampling_default();
  long ctx = 0, lv;
  int print_ids = 0, xq8 = 0;
  cli_args a;
  cli_args_init(&a, cmd, argc, argv, 2);
  while (cli_args_next(&a)) {
    const char *o = a.name;
    if (!strcmp(o, "--model")) { if (!cli_opt_string(&a, &model)) return CLI_USAGE; }
    else if (!strcmp(o, "--prompt")) { if (!cli_opt_string(&a, &prompt)) return CLI_USAGE; }
    else if (!strcmp(o, "--prompt-ids")) { if (!cli_opt_string(&a, &ids_text)) return CLI_USAGE; }
    else if (!strcmp(o, "--max-tokens")) { if (!cli_opt_long(&a, 0, 1 << 24, &lv)) return CLI_USAGE; s.max_tokens = (int32_t)lv; }
    else if (!strcmp(o, "--temperature")) { if (!opt_range(&a, 0, 100, &s.temperature)) return CLI_USAGE; }
    else if (!strcmp(o, "--top-k")) { if (!cli_opt_long(&a, 0, INT32_MAX, &lv)) return CLI_USAGE; s.top_k = (int32_t)lv; }
    else if (!strcmp(o, "--top-p")) { if (!opt_range(&a, 0, 1, &s.top_p)) return CLI_USAGE; }
    else if (!strcmp(o, "--min-p")) { if (!opt_range(&a, 0, 1, &s.min_p)) return CLI_USAGE; }
    else if (!strcmp(o, "--repeat-penalty")) { if (!opt_range(&a, 1e-3, 100, &s.repeat_penalty)) return CLI_USAGE; }
    else if (!strcmp(o, "--repeat-last-n")) { if (!cli_opt_long(&a, -1, INT32_MAX, &lv)) return CLI_USAGE; s.repeat_last_n = (int32_t)lv; }
    else if (!strcmp(o, "--seed")) { if (!cli_opt_u64(&a, &s.seed)) return CLI_USAGE; }
    else if (!strcmp(o, "--ctx")) { if (!cli_opt_long(&a, 1, 1 << 24, &ctx)) return CLI_USAGE; }
    else if (!strcmp(o, "--ids")) print_ids = 1;
    else if (!strcmp(o, "--xq8")) xq8 = 1;
    else if (!strcmp(o, "--stop")) {
      if (s.n_stop == MAX_STOP) return cli_usage_error(cmd, "at most %d --stop strings", MAX_STOP);
      if (!cli_opt_string(&a, &stop[s.n_stop])) return CLI_USAGE;
      s.n_stop++;
    } else return cli_usage_error(cmd, "unknown option '%s'", o);
  }
  s.stop = stop;
  if (!prompt == !ids_text) return cli_usage_error(cmd, "give one of --prompt TEXT or --prompt-ids I,J,..");
  int32_t *ids = NULL;
  size_t n_ids = 0;
  if (ids_text && !parse_ids(cmd, "--prompt-ids", ids_text, &ids, &n_ids)) return CLI_USAGE;
  rlx_llm *m;
  if (!open_model(cmd, model, ctx, xq8, &m)) return free(ids), CLI_USAGE;
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
  rlx_status r = rlx_llm_generate_ids(m, ids, n_ids, &s, print_ids ? on_token_ids : on_token, &out, &st);
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
            STOPPED_BY[st.stopped_by]);
  rlx_llm_free(m);
  return code;
}

int cli_tokenize(int argc, char **argv) {
  const char *cmd = "tokenize", *model = NULL;
  int add_bos = -1, special = 1, n_text = 0;
  cli_args a;
  cli_args_init(&a, cmd, argc, argv, 2);
  while (cli_args_next(&a)) {
    const char *o = a.name, *v;
    if (!strcmp(o, "--model")) { if (!cli_opt_string(&a, &model)) return CLI_USAGE; }
    else if (!strcmp(o, "--no-bos")) add_bos = 0;
    else if (!strcmp(o, "--no-special")) special = 0;
    else if (!strcmp(o, "--text")) { /* an empty text is a case too */
      if (!a.inline_value && a.i + 1 >= argc) return cli_usage_error(cmd, "--text needs a value");
      v = a.inline_value ? a.inline_value : argv[++a.i];
      (void)v;
      n_text++;
    } else return cli_usage_error(cmd, "unknown option '%s'", o);
  }
  if (!n_text) return cli_usage_error(cmd, "give at least one --text TEXT");
  rlx_llm *m;
  if (!open_model(cmd, model, 0, 0, &m)) return CLI_USAGE;
  /* Second pass: the texts in order. */
  cli_args_init(&a, cmd, argc, argv, 2);
  int code = CLI_OK;
  while (code == CLI_OK && cli_args_next(&a)) {
    if (strcmp(a.name, "--text") != 0) continue;
    const char *text = a.inline_value ? a.inline_value : argv[++a.i];
    size_t n = 0, len = strlen(text);
    rlx_llm_tokenize(m, text, len, add_bos, special, NULL, 0, &n);
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids || rlx_llm_tokenize(m, text, len, add_bos, special, ids, n, &n) != RLX_OK) {
      code = ids ? cli_lib_error(cmd, CLI_FAILED, "tokenizing") : cli_usage_error(cmd, "out of memory");
    } else {
      print_json_ids(ids, n);
      printf("\n");
    }
    free(ids);
  }
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

int cli_next_tokens(int argc, char **argv) {
  const char *cmd = "next-tokens", *model = NULL, *prompt = NULL, *follow = NULL;
  int xq8 = 0;
  cli_args a;
  cli_args_init(&a, cmd, argc, argv, 2);
  while (cli_args_next(&a)) {
    const char *o = a.name;
    if (!strcmp(o, "--model")) { if (!cli_opt_string(&a, &model)) return CLI_USAGE; }
    else if (!strcmp(o, "--ids")) { if (!cli_opt_string(&a, &prompt)) return CLI_USAGE; }
    else if (!strcmp(o, "--follow")) { if (!cli_opt_string(&a, &follow)) return CLI_USAGE; }
    else if (!strcmp(o, "--xq8")) xq8 = 1;
    else return cli_usage_error(cmd, "unknown option '%s'", o);
  }
  if (!prompt) return cli_usage_error(cmd, "--ids I,J,.. (the prompt's token ids) is required");
  int32_t *p = NULL, *f = NULL;
  size_t np = 0, nf = 0;
  if (!parse_ids(cmd, "--ids", prompt, &p, &np) || (follow && !parse_ids(cmd, "--follow", follow, &f, &nf)))
    return free(p), CLI_USAGE;
  rlx_llm *m;
  if (!open_model(cmd, model, 0, xq8, &m)) return free(p), free(f), CLI_USAGE;
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

int cli_gguf_info(int argc, char **argv) {
  const char *cmd = "gguf-info";
  if (argc != 3 || argv[2][0] == '-') return cli_usage_error(cmd, "usage: rlx gguf-info FILE.gguf");
  rlx_gguf *g;
  if (rlx_gguf_open_file(argv[2], RLX_GGUF_NO_BUDGET, &g) != RLX_OK) return cli_lib_error(cmd, CLI_USAGE, "reading");
  printf("%s: GGUF v%u, %lld metadata entries, %lld tensors, %.1f MiB of tensor data (alignment %u)\n", argv[2],
         (unsigned)rlx_gguf_version(g), (long long)rlx_gguf_kv_count(g), (long long)rlx_gguf_tensor_count(g),
         (double)rlx_gguf_data_bytes(g) / 1048576.0, (unsigned)rlx_gguf_alignment(g));
  rlx_gguf_free(g);
  rlx_llm *m;
  if (rlx_llm_open_file(argv[2], NULL, &m) != RLX_OK) {
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

/* rlx export-gguf --out FILE [--type T] [--vocab V --dim D --layers L
 * --heads H --ffn F --seed S]: the transformer of rlx_models.h (its
 * synthesized weights) as a llama GGUF file. */
int cli_export_gguf(int argc, char **argv) {
  const char *cmd = "export-gguf", *out = NULL, *type_name = "f32";
  rlx_transformer_config c = {320, 128, 2, 4, 32, 256, 1, 0, 0};
  long v;
  cli_args a;
  cli_args_init(&a, cmd, argc, argv, 2);
  while (cli_args_next(&a)) {
    const char *o = a.name;
    if (!strcmp(o, "--out")) { if (!cli_opt_string(&a, &out)) return CLI_USAGE; }
    else if (!strcmp(o, "--type")) { if (!cli_opt_string(&a, &type_name)) return CLI_USAGE; }
    else if (!strcmp(o, "--vocab")) { if (!cli_opt_long(&a, 1, 1 << 20, &v)) return CLI_USAGE; c.vocab = (int32_t)v; }
    else if (!strcmp(o, "--dim")) { if (!cli_opt_long(&a, 2, 1 << 14, &v)) return CLI_USAGE; c.dim = (int32_t)v; }
    else if (!strcmp(o, "--layers")) { if (!cli_opt_long(&a, 0, 256, &v)) return CLI_USAGE; c.n_layers = (int32_t)v; }
    else if (!strcmp(o, "--heads")) { if (!cli_opt_long(&a, 1, 1024, &v)) return CLI_USAGE; c.n_heads = (int32_t)v; }
    else if (!strcmp(o, "--ffn")) { if (!cli_opt_long(&a, 1, 1 << 16, &v)) return CLI_USAGE; c.ffn = (int32_t)v; }
    else if (!strcmp(o, "--seed")) { if (!cli_opt_u64(&a, &c.seed)) return CLI_USAGE; }
    else return cli_usage_error(cmd, "unknown option '%s'", o);
  }
  if (!out) return cli_usage_error(cmd, "--out FILE is required");
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
