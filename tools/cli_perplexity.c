/* cli_perplexity.c - `rlx perplexity`: the mean negative log-likelihood
 * and the perplexity of a GGUF language model over a text's windows (the
 * windows fine-tuning trains on: rlx_llm_data), with or without LoRA
 * adapters, through the fine-tuning evaluation (the adapters folded into
 * its pairs by rlx_llm_finetune_from_lora); and cli_mean_nll, the
 * evaluation over a split that finetune's validation uses too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_mean_nll(const char *cmd, const char *what, rlx_llm_finetune *ft, const rlx_llm_data *d, int32_t split,
                 int32_t batch, double *nll, double *scored) {
  rlx_llm_data_info in;
  rlx_llm_data_get_info(d, &in);
  const int32_t n = in.n_windows[split];
  const size_t len = (size_t)batch * (size_t)in.seq;
  int32_t *ids = malloc(len * sizeof *ids), *tg = malloc(len * sizeof *tg);
  float *mask = malloc(len * sizeof *mask);
  int ok = ids && tg && mask;
  if (!ok) cli_usage_error(cmd, "out of memory for %d windows of %d tokens", (int)batch, (int)in.seq);
  double sum = 0, weight = 0;
  const double t0 = cli_now();
  for (int32_t first = 0; ok && first < n; first += batch) {
    const int32_t real = n - first < batch ? n - first : batch;
    float loss;
    ok = rlx_llm_data_windows(d, split, first, batch, ids, tg, mask) == RLX_OK;
    for (size_t j = (size_t)real * (size_t)in.seq; j < len; j++) mask[j] = 0.0f; /* past the split's end */
    ok = ok && rlx_llm_finetune_eval(ft, ids, tg, mask, batch, &loss, NULL) == RLX_OK;
    if (!ok) {
      cli_lib_error(cmd, CLI_FAILED, "evaluating");
      break;
    }
    double w = 0;
    for (size_t j = 0; j < len; j++) w += mask[j];
    sum += (double)loss * w, weight += w;
    if (cli_now() - t0 > 1.0 && cli_now() - cli_progress_get()->last > 1.0) /* a long one only */
      cli_progress(0, "%s: window %d/%d", what, (int)(first + real), (int)n);
  }
  free(ids), free(tg), free(mask);
  *nll = weight > 0 ? sum / weight : 0.0;
  *scored = weight;
  return ok;
}

/* ---- perplexity ------------------------------------------------------------- */
#define PPL_BATCH 1
enum { P_MODEL, P_TEXT, P_SEQ, P_BATCH, P_LORA, P_THREADS, P_END };
static const cli_option perplexity_options[] = {
    [P_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "a GGUF language model (llama, qwen2, qwen3)"},
    [P_TEXT] = {"--text", NULL, "FILE", CLI_REQUIRED, "a UTF-8 text, or a .jsonl file of {\"prompt\", "
                "\"completion\"} lines (the completions scored)"},
    [P_SEQ] = {"--seq", NULL, "N", CLI_OPTIONAL, "tokens per window (default: fine-tuning's, see below)"},
    [P_BATCH] = {"--batch", NULL, "B", CLI_OPTIONAL, "windows evaluated at once (default " CLI_STR(PPL_BATCH) ")"},
    [P_LORA] = {"--lora", NULL, "FILE[:SCALE]", CLI_OPTIONAL | CLI_REPEATED, "apply a LoRA adapter, its terms "
                "scaled by SCALE (default 1) times its alpha / rank, as generate does; at most " CLI_STR(CLI_MAX_LORA)},
    [P_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [P_END] = {NULL},
};

static void perplexity_notes(char *buf, size_t cap) {
  snprintf(buf, cap, "The windows are those rlx finetune trains and validates on: seq + 1 tokens that start seq "
           "apart (BOS once, at the start of the text), so every token but the first is scored once, with the "
           "tokens before it in its window as context; a tail shorter than a window is left out. Default seq %d. "
           "llama.cpp's llama-perplexity differs: windows of n_ctx tokens that do not overlap, BOS in place of the "
           "first token of each, and only the second half of each window scored (its tokens have more context, so "
           "its numbers come out lower).", (int)rlx_llm_data_default_options().seq);
}

static int cli_perplexity(int argc, char **argv);
const cli_command cli_perplexity_command = {
    "perplexity", cli_perplexity, "mean negative log-likelihood and perplexity of a model over a text",
    "Prints the mean negative log-likelihood per scored token of the text under the model (with its adapters), "
    "and the perplexity exp(NLL), over consecutive windows of the text.",
    perplexity_options, perplexity_notes};

static int cli_perplexity(int argc, char **argv) {
  const char *cmd = "perplexity", *model = NULL, *text = NULL, *v;
  long seq = rlx_llm_data_default_options().seq, batch = PPL_BATCH;
  cli_loras loras = {.n = 0};
  cli_args a;
  cli_args_init(&a, &cli_perplexity_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case P_THREADS: ok = cli_opt_threads(&a); break;
    case P_MODEL: ok = cli_opt_string(&a, &model); break;
    case P_TEXT: ok = cli_opt_string(&a, &text); break;
    case P_SEQ: ok = cli_opt_long(&a, 2, 1 << 20, &seq); break;
    case P_BATCH: ok = cli_opt_long(&a, 1, 4096, &batch); break;
    case P_LORA: ok = cli_opt_string(&a, &v) && cli_loras_add(cmd, v, &loras); break;
    }
    if (!ok) return cli_loras_free(&loras), CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return cli_loras_free(&loras), end;
  rlx_llm_options mo = {.n_ctx = 1, .lora = loras.lora, .n_lora = loras.n};
  rlx_llm *m = NULL;
  const rlx_status opened = rlx_llm_open_file(model, &mo, &m);
  cli_loras_free(&loras);
  if (opened != RLX_OK)
    return cli_lib_error(cmd, CLI_USAGE, strstr(rlx_last_error(), "LoRA adapter ") ? "--lora" : "--model");
  rlx_llm_info info;
  rlx_llm_get_info(m, &info);
  rlx_llm_data *d = NULL;
  rlx_llm_finetune *ft = NULL;
  int code = CLI_OK;
  if (seq > info.n_ctx_train) {
    code = cli_usage_error(cmd, "--seq %ld is above the model's context (%d)", seq, (int)info.n_ctx_train);
  } else {
    const rlx_llm_data_source src = {text, NULL, 0, RLX_LLM_DATA_AUTO};
    const rlx_llm_data_options o = {(int32_t)seq, 0, 0, 0.0f};
    if (rlx_llm_data_new(m, &src, NULL, &o, &d) != RLX_OK) code = cli_lib_error(cmd, CLI_USAGE, "--text");
    else if (rlx_llm_finetune_from_lora(m, (int32_t)seq, &ft) != RLX_OK) code = cli_lib_error(cmd, CLI_USAGE, "--lora");
  }
  double nll, scored;
  if (code == CLI_OK && !cli_mean_nll(cmd, "evaluating", ft, d, RLX_LLM_DATA_TRAIN, (int32_t)batch, &nll, &scored))
    code = CLI_FAILED;
  if (code == CLI_OK) {
    rlx_llm_data_info di;
    rlx_llm_data_get_info(d, &di);
    cli_progress_clear();
    const int32_t nw = di.n_windows[RLX_LLM_DATA_TRAIN];
    printf("%s: %d window%s of %ld tokens, %.0f tokens scored, %d LoRA adapter%s\n", text, (int)nw,
           nw == 1 ? "" : "s", seq, scored, (int)info.n_lora, info.n_lora == 1 ? "" : "s");
    printf("mean NLL %.6f  perplexity %.4f\n", nll, exp(nll));
  }
  rlx_llm_finetune_free(ft);
  rlx_llm_data_free(d);
  rlx_llm_free(m);
  return code;
}
