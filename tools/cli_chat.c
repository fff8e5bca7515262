/* cli_chat.c - rlx chat: a conversation with a GGUF model in its chat
 * template (rlx_llm_chat_*), its KV cache kept between turns.  Reads user
 * turns from stdin line by line (/regen, /clear, /quit), or answers a
 * --messages JSON file once; --print-prompt prints the rendered prompt.
 * Replies stream to stdout, each turn's figures go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum { C_MODEL, C_SYSTEM, C_MESSAGES, C_TEMPLATE, C_PRINT_PROMPT, C_OVERFLOW, C_SAMPLING,
       C_CTX = C_SAMPLING + CLI_S_COUNT, C_XQ8, C_LORA, C_THREADS, C_END };
static const cli_option chat_options[] = {
    [C_MODEL] = {"--model", NULL, "FILE.gguf", CLI_REQUIRED, "a GGUF language model (llama, qwen2, qwen3)"},
    [C_SYSTEM] = {"--system", NULL, "TEXT", CLI_OPTIONAL, "the system prompt"},
    [C_MESSAGES] = {"--messages", NULL, "FILE.json", CLI_OPTIONAL, "an OpenAI-style array of {\"role\", "
                    "\"content\"} messages ending with a user message: answer it once and exit"},
    [C_TEMPLATE] = {"--template", NULL, "NAME", CLI_OPTIONAL, "the chat template: chatml, llama3, llama2, mistral, "
                    "gemma, phi3 or zephyr (default: detected from the file's tokenizer.chat_template)"},
    [C_PRINT_PROMPT] = {"--print-prompt", NULL, NULL, CLI_OPTIONAL, "print the prompt the messages render to, "
                        "with the assistant's opening, and exit"},
    [C_OVERFLOW] = {"--overflow", NULL, "refuse|drop", CLI_OPTIONAL, "when the conversation outgrows the context: "
                    "refuse the turn (default), or drop the oldest turns after the system prompt"},
    CLI_SAMPLING_OPTIONS(C_SAMPLING),
    [C_CTX] = {"--ctx", NULL, "N", CLI_OPTIONAL, "positions of the KV cache (default: the model's context length, at "
               "most " CLI_STR(RLX_LLM_DEFAULT_CTX) ")"},
    [C_XQ8] = {"--xq8", NULL, NULL, CLI_OPTIONAL, CLI_XQ8_HELP},
    [C_LORA] = {"--lora", NULL, "FILE[:SCALE]", CLI_OPTIONAL | CLI_REPEATED, CLI_LORA_HELP},
    [C_THREADS] = {"--threads", NULL, "N", CLI_OPTIONAL, CLI_THREADS_HELP},
    [C_END] = {NULL},
};

static int cli_chat(int argc, char **argv);
const cli_command cli_chat_command = {
    "chat", cli_chat, "chat with a GGUF language model in its chat template",
    "Reads a user turn per line from stdin and streams each reply to stdout, keeping the KV cache between turns "
    "(only the new tokens are evaluated); /regen answers the last turn again, /clear starts over, /quit ends. With "
    "--messages it answers the file's conversation once. Each turn's figures go to stderr.",
    chat_options, cli_sampling_notes};

/* The conversation: messages whose contents the tool owns (malloc'd). */
typedef struct {
  rlx_llm_chat_message *m;
  int32_t n, cap;
} convo;

static int convo_add(convo *c, const char *role, const char *content, size_t len) {
  if (c->n == c->cap) {
    int32_t cap = c->cap ? 2 * c->cap : 16;
    rlx_llm_chat_message *g = realloc(c->m, (size_t)cap * sizeof *g);
    if (!g) return 0;
    c->m = g, c->cap = cap;
  }
  char *s = malloc(len + 1);
  if (!s) return 0;
  memcpy(s, content, len);
  s[len] = 0;
  c->m[c->n++] = (rlx_llm_chat_message){role, s};
  return 1;
}

static void convo_pop(convo *c) {
  if (c->n > 0) free((char *)c->m[--c->n].content);
}

typedef struct {
  double t0, first; /* the turn's start; when its first text came (0: none yet) */
} turn_clock;

static int on_token(void *user, int32_t id, const char *text, size_t len) {
  (void)id;
  turn_clock *t = user;
  if (!t->first) t->first = cli_now();
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return 0;
}

/* Answers the conversation, streaming; on success adds the reply to it. */
static int answer(const char *cmd, rlx_llm_chat *chat, convo *c, const rlx_llm_sampling *s) {
  turn_clock t = {cli_now(), 0};
  rlx_llm_chat_stats st;
  rlx_status r = rlx_llm_chat_respond(chat, c->m, c->n, s, on_token, &t, &st);
  printf("\n");
  fflush(stdout);
  if (r != RLX_OK) return cli_lib_error(cmd, r == RLX_ERR_INVALID_ARG ? CLI_USAGE : CLI_FAILED, "answering");
  size_t len;
  const char *reply = rlx_llm_chat_reply(chat, &len);
  if (!convo_add(c, "assistant", reply, len)) return cli_usage_error(cmd, "out of memory");
  const double ttft = (t.first ? t.first : cli_now()) - t.t0;
  fprintf(stderr, "[prompt: %d tokens, %d from the cache%s; first token after %.1f ms; generated: %d tokens, %.1f "
          "tokens/s; stopped by: %s]\n", (int)st.prompt_tokens, (int)st.cached_tokens,
          st.dropped_messages ? ", oldest turns dropped" : "", ttft * 1e3, (int)st.gen.generated_tokens,
          st.gen.generate_seconds > 0 ? st.gen.generated_tokens / st.gen.generate_seconds : 0.0,
          cli_stopped_by[st.gen.stopped_by]);
  return CLI_OK;
}

/* Turns from stdin, one per line, until end of input or /quit. */
static int interact(const char *cmd, rlx_llm_chat *chat, convo *c, int32_t n_fixed, const rlx_llm_sampling *s) {
  const int tty = isatty(0);
  char *line = NULL;
  size_t cap = 0;
  int code = CLI_OK;
  for (;;) {
    if (tty) fputs("> ", stderr);
    ssize_t got = getline(&line, &cap, stdin);
    if (got < 0) break;
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
    if (got == 0) continue;
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0) break;
    if (strcmp(line, "/clear") == 0) {
      while (c->n > n_fixed) convo_pop(c);
      continue;
    }
    if (strcmp(line, "/regen") == 0) {
      if (c->n == n_fixed || strcmp(c->m[c->n - 1].role, "assistant") != 0) {
        fprintf(stderr, "rlx chat: nothing to answer again yet\n");
        continue;
      }
      convo_pop(c);
    } else if (!convo_add(c, "user", line, (size_t)got)) {
      code = cli_usage_error(cmd, "out of memory");
      break;
    }
    if (answer(cmd, chat, c, s) != CLI_OK) convo_pop(c); /* the turn is not kept; the chat goes on */
  }
  free(line);
  return code;
}

/* The --messages file's messages appended to c; 0 with the error printed. */
static int load_messages(const char *cmd, const char *path, convo *c) {
  size_t len = 0;
  char *json = cli_read_file(path, &len);
  if (!json) return cli_usage_error(cmd, "--messages %s: cannot read the file", path), 0;
  rlx_llm_chat_message *m = NULL;
  int32_t n = 0;
  rlx_status st = rlx_llm_chat_parse_messages(json, len, &m, &n);
  free(json);
  if (st != RLX_OK) return cli_usage_error(cmd, "--messages %s: %s", path, rlx_last_error()), 0;
  int ok = 1;
  for (int32_t i = 0; ok && i < n; i++) {
    const char *role = strcmp(m[i].role, "system") == 0      ? "system"
                       : strcmp(m[i].role, "user") == 0      ? "user"
                       : strcmp(m[i].role, "assistant") == 0 ? "assistant" : NULL;
    if (!role) ok = (cli_usage_error(cmd, "--messages %s: message %d has role '%s' (system, user or assistant)", path,
                                     (int)i, m[i].role), 0);
    else if (i == 0 && role[0] == 's' && c->n > 0)
      ok = (cli_usage_error(cmd, "--messages %s opens with a system message and --system gives another: give one",
                            path), 0);
    else if (!convo_add(c, role, m[i].content, strlen(m[i].content)))
      ok = (cli_usage_error(cmd, "out of memory"), 0);
  }
  rlx_llm_chat_messages_free(m, n);
  return ok;
}

static int print_prompt(const char *cmd, rlx_llm_chat *chat, const convo *c) {
  size_t len = 0;
  rlx_llm_chat_prompt(chat, c->m, c->n, 1, NULL, 0, &len);
  char *out = malloc(len + 1);
  if (!out) return cli_usage_error(cmd, "out of memory");
  rlx_status st = rlx_llm_chat_prompt(chat, c->m, c->n, 1, out, len + 1, &len);
  if (st == RLX_OK) fwrite(out, 1, len, stdout);
  free(out);
  return st == RLX_OK ? CLI_OK : cli_lib_error(cmd, CLI_USAGE, "rendering the prompt");
}

static int chat_with(int argc, char **argv, rlx_llm_sampling *s) {
  const char *cmd = "chat", *model = NULL, *system = NULL, *messages = NULL, *tmpl = NULL, *overflow = NULL;
  const char *stop[CLI_MAX_STOP];
  long ctx = 0;
  int show_prompt = 0, xq8 = 0;
  cli_loras loras = {.n = 0};
  const char *v;
  cli_args a;
  cli_args_init(&a, &cli_chat_command, argc, argv);
  while (cli_args_next(&a)) {
    int ok = 1;
    switch (a.opt) {
    case C_MODEL: ok = cli_opt_string(&a, &model); break;
    case C_SYSTEM: ok = cli_opt_string(&a, &system); break;
    case C_MESSAGES: ok = cli_opt_string(&a, &messages); break;
    case C_TEMPLATE: ok = cli_opt_string(&a, &tmpl); break;
    case C_PRINT_PROMPT: show_prompt = 1; break;
    case C_OVERFLOW: ok = cli_opt_string(&a, &overflow); break;
    case C_CTX: ok = cli_opt_long(&a, 1, 1 << 24, &ctx); break;
    case C_THREADS: ok = cli_opt_threads(&a); break;
    case C_XQ8: xq8 = 1; break;
    case C_LORA: ok = cli_opt_string(&a, &v) && cli_loras_add(cmd, v, &loras); break;
    default: ok = cli_sampling_option(&a, a.opt - C_SAMPLING, s, stop); break;
    }
    if (!ok) return cli_loras_free(&loras), CLI_USAGE;
  }
  int end = cli_args_end(&a);
  if (end >= 0) return cli_loras_free(&loras), end;
  rlx_llm_chat_options copt = {tmpl, RLX_LLM_CHAT_REFUSE};
  if (overflow && strcmp(overflow, "drop") == 0) copt.overflow = RLX_LLM_CHAT_DROP_OLDEST;
  else if (overflow && strcmp(overflow, "refuse") != 0)
    return cli_loras_free(&loras), cli_usage_error(cmd, "--overflow must be refuse or drop (got '%s')", overflow);
  if (tmpl) { /* refused before the model is read */
    int known = 0;
    for (int32_t i = 0; rlx_llm_chat_template_name(i); i++) known |= strcmp(tmpl, rlx_llm_chat_template_name(i)) == 0;
    if (!known)
      return cli_loras_free(&loras), cli_usage_error(cmd, "--template %s is not built in (chatml, llama3, llama2, "
                                                     "mistral, gemma, phi3, zephyr)", tmpl);
  }
  convo c = {NULL, 0, 0};
  int code = CLI_OK;
  if (system && !convo_add(&c, "system", system, strlen(system))) code = cli_usage_error(cmd, "out of memory");
  if (code == CLI_OK && messages && !load_messages(cmd, messages, &c)) code = CLI_USAGE;
  rlx_llm *m = NULL;
  rlx_llm_chat *chat = NULL;
  rlx_llm_options mopt = {.n_ctx = (int32_t)ctx, .xq8 = xq8, .lora = loras.lora, .n_lora = loras.n};
  if (code == CLI_OK && rlx_llm_open_file(model, &mopt, &m) != RLX_OK)
    code = cli_lib_error(cmd, CLI_USAGE, "loading the model");
  cli_loras_free(&loras); /* the adapters are read at open */
  if (code == CLI_OK && rlx_llm_chat_new(m, &copt, &chat) != RLX_OK)
    code = cli_lib_error(cmd, CLI_USAGE, "choosing the chat template");
  if (code == CLI_OK) {
    const char *why;
    rlx_llm_chat_template(chat, &why);
    if (!show_prompt) fprintf(stderr, "[template: %s]\n", why);
    if (show_prompt) code = print_prompt(cmd, chat, &c);
    else if (messages) code = answer(cmd, chat, &c, s);
    else code = interact(cmd, chat, &c, c.n, s);
  }
  rlx_llm_chat_free(chat);
  rlx_llm_free(m);
  while (c.n) convo_pop(&c);
  free(c.m);
  return code;
}

static int cli_chat(int argc, char **argv) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  int code = chat_with(argc, argv, &s);
  cli_sampling_free(&s);
  return code;
}
