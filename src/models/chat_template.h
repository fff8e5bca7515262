/* chat_template.h - the built-in chat templates' internals: a rendered
 * prompt as text cut into parts, each the template's own text (specials
 * parsed when tokenized) or one message's content (never parsed), so that
 * llm_chat.c can tokenize it with rlx_tokenizer_encode_parts and put a
 * reply's generated tokens in place of its text. */
#ifndef RLX_CHAT_TEMPLATE_H
#define RLX_CHAT_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "rlx_llm_chat.h"

typedef struct {
  char *text;
  size_t len, cap;
  size_t *ends;           /* part i is text[ends[i-1], ends[i]) */
  unsigned char *special; /* 1: the template's text */
  int32_t *msg;           /* the message whose content the part is, -1 for the template's */
  size_t n, cap_parts;
} chat_text;

void chat_text_free(chat_text *t);

/* The index of the built-in template called name, or -1. */
int32_t chat_template_find(const char *name);
/* 1 when template i writes the BOS text itself (no BOS is added). */
int chat_template_writes_bos(int32_t i);
/* 1 when template i trims message contents (a reply is then kept as its
 * tokens only when it has no surrounding whitespace). */
int chat_template_trims(int32_t i);
/* Renders msgs[0, n) in template i into *out (emptied first). */
rlx_status chat_template_render(int32_t i, const rlx_llm_chat_message *msgs, int32_t n, int add_generation_prompt,
                                const char *bos, const char *eos, chat_text *out);

#endif
