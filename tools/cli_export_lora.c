/* cli_export_lora.c - `rlx export-lora`: LoRA adapters merged into a new
 * GGUF model (rlx_llm_lora_merge), as llama.cpp's llama-export-lora
 * merges them: --model, --lora FILE[:SCALE] (repeatable), --out, and
 * --type for the merged weights' type.  A bad option or an adapter the
 * base refuses is a usage error naming it; nothing is written then. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *const TYPE_NAMES[] = {"auto", "f32", "f16", "same"}; /* by rlx_llm_merge_type */

enum { X_MODEL, X_LORA, X_OUT, X_TYPE, X_END };
static const cli_option export_lora_options[] = {
    [X_MODEL] = {"--model", "-m", "FILE.gguf", CLI_REQUIRED, "the base model (llama, qwen2, qwen3)"},
    [X_LORA] = {"--lora", NULL, "FILE[:SCALE]", CLI_REQUIRED | CLI_REPEATED, "an adapter to merge, its terms scaled "
                "by SCALE (default 1) times its alpha / rank, as generate --lora applies it; at most "
                CLI_STR(CLI_MAX_LORA)},
    [X_OUT] = {"--out", "-o", "FILE.gguf", CLI_REQUIRED, "the merged model to write (whole or not at all)"},
    [X_TYPE] = {"--type", NULL, "T", CLI_OPTIONAL, "the merged weights' type: auto, f32, f16 or same (default auto, "
                "see below)"},
    [X_END] = {NULL},
};

static void export_lora_notes(char *buf, size_t cap) {
  snprintf(buf, cap, "Each adapted weight becomes W + sum SCALE * alpha / rank * B A, computed in f32 from the "
           "dequantized weight; every other tensor and every metadata entry is copied as it is. --type auto is "
           "llama-export-lora's rule: an f32 weight stays f32, any other type becomes f16 (general.file_type then "
           "says mostly f16); f32 and f16 store every merged weight so; same quantizes each merged weight again "
           "in its own type (round to nearest per block: for K-quants not llama-quantize's search).");
}

static int cli_export_lora(int argc, char **argv);
const cli_command cli_export_lora_command = {
    "export-lora", cli_export_lora, "a new GGUF model with LoRA adapters merged in (llama.cpp's llama-export-lora)",
    "Writes a copy of the model with the adapters' products added into the weights they adapt, so that it "
    "generates as the model with those adapters does, without them.",
    export_lora_options, export_lora_notes};

static int cli_export_lora(int argc, char **argv) {
  const char *cmd = "export-lora", *model = NULL, *out = NULL, *type_name = TYPE_NAMES[0], *v;
  cli_loras loras = {.n = 0};
  cli_args a;
  cli_args_init(&a, &cli_export_lora_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case X_MODEL: ok = cli_opt_string(&a, &model); break;
    case X_LORA: ok = cli_opt_string(&a, &v) && cli_loras_add(cmd, v, &loras); break;
    case X_OUT: ok = cli_opt_string(&a, &out); break;
    case X_TYPE: ok = cli_opt_string(&a, &type_name); break;
    }
    if (!ok) return cli_loras_free(&loras), CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return cli_loras_free(&loras), end;
  int type = -1;
  for (int k = 0; k < (int)(sizeof TYPE_NAMES / sizeof *TYPE_NAMES); k++)
    if (strcmp(type_name, TYPE_NAMES[k]) == 0) type = k;
  if (type < 0) return cli_loras_free(&loras), cli_usage_error(cmd, "--type must be auto, f32, f16 or same (got '%s')",
                                                               type_name);
  const rlx_status st = rlx_llm_lora_merge(model, loras.lora, loras.n, out, (rlx_llm_merge_type)type);
  const int32_t n = loras.n;
  cli_loras_free(&loras);
  if (st != RLX_OK) {
    const char *e = rlx_last_error();
    if (st == RLX_ERR_NO_MEMORY || st == RLX_ERR_NUMERIC || strstr(e, "rename") || strstr(e, "cannot create"))
      return cli_lib_error(cmd, CLI_FAILED, "merging");
    return cli_lib_error(cmd, CLI_USAGE, strstr(e, "LoRA adapter ") ? "--lora" : "--model");
  }
  printf("%s: %s with %d LoRA adapter%s merged (--type %s)\n", out, model, (int)n, n == 1 ? "" : "s", type_name);
  return CLI_OK;
}
