/* chat.c - the language-model module's exports for chat
 * (web/runtime/llm_chat_template.js, llm_chat.js): the file's
 * tokenizer.chat_template, the built-in template chosen or detected with
 * the reason, a built-in rendering cut into template / content parts, and
 * tokenization of such parts (the template's specials parsed, the
 * messages' text never).  The Jinja rendering itself is JS's; this file
 * only hands over what include/rlx_llm_chat.h and the tokenizer already
 * do.  Pointers are byte offsets into the module's memory. */
#include <stddef.h>
#include <string.h>

#include "rlx_gguf.h"
#include "rlx_llm_chat.h"
#include "../core/core.h"
#include "../models/chat_template.h"
#include "../models/llm.h"
#include "../models/tokenizer.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* The file's tokenizer.chat_template (not NUL-terminated), *len bytes; NULL
 * when it has none. */
EXPORT(rlx_llm_chat_template_text) const char *w_chat_template_text(const rlx_llm *m, size_t *len) {
  const char *t = NULL;
  uint64_t n = 0;
  *len = 0;
  if (!m || rlx_gguf_get_string(m->gguf, "tokenizer.chat_template", &t, &n) != RLX_OK) return NULL;
  *len = (size_t)n;
  return t;
}

/* The i-th built-in template's name, NULL past the last. */
EXPORT(rlx_llm_chat_template_name) const char *w_chat_template_name(int32_t i) { return rlx_llm_chat_template_name(i); }

/* The built-in template for the model: `name` when not NULL, else detected
 * from its tokenizer.chat_template (chatml without one); *index gets it and
 * why[0, cap) the reason (rlx_llm_chat_template_for). */
EXPORT(rlx_llm_chat_template_choose)
int32_t w_chat_template_choose(const rlx_llm *m, const char *name, char *why, size_t cap, int32_t *index) {
  const char *chosen = NULL;
  rlx_status st = rlx_llm_chat_template_for(m, name, &chosen, why, cap);
  *index = st == RLX_OK ? chat_template_find(chosen) : -1;
  return st;
}

/* The last rendering, kept until the next one (or n < 0, which frees it). */
static chat_text rendered;

/* Renders msgs (roles[i], contents[i]: NUL-terminated) in built-in template
 * `index`; out[6] = {text, len, ends (size_t[n]), special (uint8_t[n]),
 * msg (int32_t[n]: the message a part holds, -1 for the template's text),
 * n parts}, *writes_bos 1 when the template writes the BOS text itself. */
EXPORT(rlx_llm_chat_render_parts)
int32_t w_chat_render_parts(int32_t index, const char *const *roles, const char *const *contents, int32_t n,
                            int32_t add_generation_prompt, const char *bos, const char *eos, uint32_t *out,
                            int32_t *writes_bos) {
  if (n < 0) {
    chat_text_free(&rendered);
    memset(&rendered, 0, sizeof rendered);
    return RLX_OK;
  }
  if (chat_template_find(rlx_llm_chat_template_name(index)) < 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "chat: no built-in template %d", (int)index);
  rlx_llm_chat_message *msgs = rlx_malloc((size_t)(n ? n : 1) * sizeof *msgs);
  if (!msgs) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
  for (int32_t i = 0; i < n; i++) msgs[i] = (rlx_llm_chat_message){roles[i], contents[i]};
  rlx_status st = chat_template_render(index, msgs, n, add_generation_prompt, bos, eos, &rendered);
  rlx_free(msgs, (size_t)(n ? n : 1) * sizeof *msgs);
  if (st != RLX_OK) return st;
  out[0] = (uint32_t)(uintptr_t)rendered.text, out[1] = (uint32_t)rendered.len;
  out[2] = (uint32_t)(uintptr_t)rendered.ends, out[3] = (uint32_t)(uintptr_t)rendered.special;
  out[4] = (uint32_t)(uintptr_t)rendered.msg, out[5] = (uint32_t)rendered.n;
  *writes_bos = chat_template_writes_bos(index);
  return RLX_OK;
}

/* text[0, len) cut into parts at ends[0, n_parts) (the last = len), control
 * tokens parsed only in the parts whose special[i] is 1, as
 * rlx_tokenizer_encode_parts (no BOS or EOS added; continued: the text
 * follows ids already made).  *n: the count needed, as rlx_llm_tokenize. */
EXPORT(rlx_llm_tokenize_parts)
int32_t w_tokenize_parts(const rlx_llm *m, const char *text, size_t len, const size_t *ends,
                         const unsigned char *special, size_t n_parts, int32_t continued, int32_t *ids, size_t cap,
                         size_t *n) {
  *n = 0;
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_tokenize_parts: model is NULL");
  return rlx_tokenizer_encode_parts(m->tok, text, len, ends, special, n_parts, 0, continued, ids, cap, n);
}

/* The text of token id as stored in the vocab (not NUL-terminated): the
 * BOS and EOS texts a template writes.  NULL for no such token. */
EXPORT(rlx_llm_token_text) const char *w_token_text(const rlx_llm *m, int32_t id, size_t *len) {
  const char *t = NULL;
  *len = 0;
  if (!m || id < 0 || rlx_tokenizer_token_text(m->tok, id, &t, len) != RLX_OK) return NULL;
  return t;
}

/* Changes whenever the context does (eval, truncate, reset, a
 * generation): a kept conversation checks that the cache is still its
 * own (a double: exact below 2^53). */
EXPORT(rlx_llm_context_epoch) double w_context_epoch(const rlx_llm *m) { return m ? (double)m->ctx_epoch : 0; }
