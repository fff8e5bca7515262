/* rlx_llm_chat.h - chatting with a GGUF language model (included by
 * rlx_models.h): built-in chat templates detected from the file's
 * tokenizer.chat_template as llama.cpp detects them, and a chat session
 * that keeps its KV cache between turns.
 *
 * Templates: "chatml" (Qwen), "llama3", "llama2" (Meta's <<SYS>> format,
 * BOS before every user turn), "mistral" ([INST] without <<SYS>>: the
 * system prompt opens the first user message), "gemma" (likewise; the
 * assistant is "model"), "phi3", "zephyr".  Detection looks for each
 * family's marks in the Jinja text in llama.cpp's order: "<|im_start|>";
 * "[INST]" (with "<<SYS>>": llama2); "<|assistant|>" with "<|end|>";
 * "<|user|>" with "<|endoftext|>"; "<start_of_turn>"; "<|start_header_id|>"
 * with "<|end_header_id|>".  A template that is exactly a built-in name is
 * that template; a file without one gets chatml, as llama.cpp's default;
 * anything else is refused (RLX_ERR_UNSUPPORTED) with the names to choose
 * from.  Roles are "system" (first message only), "user" and "assistant".
 * The template's own text (its special tokens: "<|im_start|>", the BOS
 * text) is tokenized with specials parsed; message contents never are, so a
 * user typing "<|im_end|>" gets ordinary text tokens.  BOS: llama3, llama2,
 * mistral and gemma write the BOS token's text themselves (as their Jinja
 * templates do) and nothing is added; the others get the file's
 * add_bos_token rule. */
#ifndef RLX_LLM_CHAT_H
#define RLX_LLM_CHAT_H

#include "rlx_llm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char *role;    /* "system", "user" or "assistant" */
  const char *content; /* UTF-8, NUL-terminated */
} rlx_llm_chat_message;

/* The i-th built-in template's name, NULL past the last. */
const char *rlx_llm_chat_template_name(int32_t i);
/* The built-in template a Jinja chat template (or a built-in name) is
 * written in: *name is the name (a static string); unknown ->
 * RLX_ERR_UNSUPPORTED with the reason. */
rlx_status rlx_llm_chat_template_detect(const char *tmpl, size_t len, const char **name);
/* The template a model chats in: `name` when not NULL (refused when not
 * built in), else detected from its tokenizer.chat_template (chatml when
 * it has none).  why (may be NULL) gets a line saying how it was chosen. */
rlx_status rlx_llm_chat_template_for(const rlx_llm *m, const char *name, const char **chosen, char *why,
                                     size_t why_cap);
/* The prompt text of msgs[0, n) in template `name`, with the assistant's
 * opening after them when add_generation_prompt; bos / eos: the texts of
 * those tokens (NULL: ""). *len as rlx_llm_tokenize's *n, plus a NUL. */
rlx_status rlx_llm_chat_render(const char *name, const rlx_llm_chat_message *msgs, int32_t n,
                               int add_generation_prompt, const char *bos, const char *eos, char *out, size_t cap,
                               size_t *len);

/* An OpenAI-style messages array, [{"role": "user", "content": "..."},
 * ...], read from JSON text json[0, len) (other keys skipped; role and
 * content must be strings; strict JSON, \u0000 refused): *msgs holds *n >= 1
 * messages, for rlx_llm_chat_messages_free.  Roles are checked where the
 * messages are used. */
rlx_status rlx_llm_chat_parse_messages(const char *json, size_t len, rlx_llm_chat_message **msgs, int32_t *n);
void rlx_llm_chat_messages_free(rlx_llm_chat_message *msgs, int32_t n);

/* ---- chat sessions -------------------------------------------------------- */
/* A conversation with a model.  Each rlx_llm_chat_respond gets the whole
 * conversation so far (OpenAI style) and answers it: the prompt is the
 * messages in the template with the generation prompt, and only the tokens
 * after its longest common prefix with what the KV cache holds are
 * evaluated, so earlier turns are never recomputed; an edited or removed
 * turn (regenerate: the same messages again) rolls the cache back to where
 * the prompt first differs.  A reply the session generated, passed back
 * unchanged as an assistant message, keeps the tokens it was generated as.
 * The model's context belongs to the session while it lives (rlx_llm_eval,
 * rlx_llm_reset or another generator on the model invalidate what it
 * knows of the cache; it then recomputes, never reads stale state). */
typedef struct rlx_llm_chat rlx_llm_chat;

typedef enum {
  /* A prompt that leaves no room in the context is refused
   * (RLX_ERR_INVALID_ARG, saying how many tokens it needs); a reply that
   * fills the context stops there (stats.stopped_by 4). */
  RLX_LLM_CHAT_REFUSE = 0,
  /* The oldest turns after the system prompt are left out (whole turns: a
   * user message and the replies after it) until the prompt plus
   * max_tokens fits, or only the last user turn is left; a prompt that
   * still leaves no room is refused as above. */
  RLX_LLM_CHAT_DROP_OLDEST = 1
} rlx_llm_chat_overflow;

typedef struct {
  const char *template_name; /* NULL: rlx_llm_chat_template_for's choice */
  rlx_llm_chat_overflow overflow;
} rlx_llm_chat_options;

typedef struct {
  rlx_llm_stats gen;         /* gen.prompt_tokens: the tokens evaluated for the prompt */
  int32_t prompt_tokens;     /* the whole prompt */
  int32_t cached_tokens;     /* of those, reused from the cache */
  int32_t dropped_messages;  /* left out by RLX_LLM_CHAT_DROP_OLDEST */
} rlx_llm_chat_stats;

rlx_status rlx_llm_chat_new(rlx_llm *m, const rlx_llm_chat_options *opt, rlx_llm_chat **out);
void rlx_llm_chat_free(rlx_llm_chat *c);
/* The template in force and how it was chosen. */
const char *rlx_llm_chat_template(const rlx_llm_chat *c, const char **why);
/* The prompt text of msgs[0, n) in the session's template with the
 * model's BOS / EOS texts (rlx_llm_chat_render's conventions). */
rlx_status rlx_llm_chat_prompt(const rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n,
                               int add_generation_prompt, char *out, size_t cap, size_t *len);
/* Answers msgs[0, n) (the last one a user message): streams the reply
 * through on_token (may be NULL) as rlx_llm_generate does.  The whole reply
 * is then rlx_llm_chat_reply's. */
rlx_status rlx_llm_chat_respond(rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n,
                                const rlx_llm_sampling *s, rlx_llm_on_token on_token, void *user,
                                rlx_llm_chat_stats *stats);
/* The last reply's text (NUL-terminated, valid until the next respond or
 * free) and its generated token ids. */
const char *rlx_llm_chat_reply(const rlx_llm_chat *c, size_t *len);
const int32_t *rlx_llm_chat_reply_ids(const rlx_llm_chat *c, size_t *n);
/* The last prompt's token ids (what a recomputation from scratch would
 * evaluate). */
const int32_t *rlx_llm_chat_prompt_ids(const rlx_llm_chat *c, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
