/* chat_template.c - the built-in chat templates: one table row per family
 * (the texts around each role's content, where the system prompt goes, BOS
 * and EOS, trimming), detection from a Jinja template by each family's
 * marks in llama.cpp's order, and rendering into template / content parts.
 * It reads no Jinja: a template is only searched for marks. */
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "chat_template.h"
#include "llm.h"

typedef struct {
  const char *name;
  int bos_first;    /* the BOS text opens the prompt */
  int bos_per_user; /* the BOS text opens every user turn (llama2) */
  int trim;         /* contents are trimmed of surrounding whitespace */
  int sys_in_user;  /* the system prompt opens the first user message */
  const char *sys_pre, *sys_post; /* around the system prompt (a turn of its own, or inside the first user turn) */
  const char *user_pre, *user_post, *asst_pre, *asst_post;
  int asst_eos;     /* the EOS text closes every assistant turn */
  const char *gen;  /* the generation prompt */
} family;

static const family families[] = {
    {"chatml", 0, 0, 0, 0, "<|im_start|>system\n", "<|im_end|>\n", "<|im_start|>user\n", "<|im_end|>\n",
     "<|im_start|>assistant\n", "<|im_end|>\n", 0, "<|im_start|>assistant\n"},
    {"llama3", 1, 0, 1, 0, "<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>",
     "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>", "<|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|eot_id|>", 0, "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"llama2", 0, 1, 1, 1, "<<SYS>>\n", "\n<</SYS>>\n\n", "[INST] ", " [/INST]", " ", " ", 1, ""},
    {"mistral", 1, 0, 0, 1, "", "\n\n", "[INST] ", " [/INST]", "", "", 1, ""},
    {"gemma", 1, 0, 1, 1, "", "\n\n", "<start_of_turn>user\n", "<end_of_turn>\n", "<start_of_turn>model\n",
     "<end_of_turn>\n", 0, "<start_of_turn>model\n"},
    {"phi3", 0, 0, 0, 0, "<|system|>\n", "<|end|>\n", "<|user|>\n", "<|end|>\n", "<|assistant|>\n", "<|end|>\n", 0,
     "<|assistant|>\n"},
    {"zephyr", 0, 0, 0, 0, "<|system|>\n", "<|endoftext|>\n", "<|user|>\n", "<|endoftext|>\n", "<|assistant|>\n",
     "<|endoftext|>\n", 0, "<|assistant|>\n"},
};
enum { N_FAMILIES = (int)(sizeof families / sizeof families[0]) };
#define NAMES "chatml, llama3, llama2, mistral, gemma, phi3, zephyr"

const char *rlx_llm_chat_template_name(int32_t i) { return i >= 0 && i < N_FAMILIES ? families[i].name : NULL; }

int32_t chat_template_find(const char *name) {
  for (int32_t i = 0; name && i < N_FAMILIES; i++)
    if (strcmp(name, families[i].name) == 0) return i;
  return -1;
}

int chat_template_writes_bos(int32_t i) { return families[i].bos_first || families[i].bos_per_user; }
int chat_template_trims(int32_t i) { return families[i].trim; }

/* ---- detection ---------------------------------------------------------------- */
static int has(const char *t, size_t len, const char *mark) {
  const size_t n = strlen(mark);
  for (size_t i = 0; n <= len && i <= len - n; i++)
    if (t[i] == mark[0] && memcmp(t + i, mark, n) == 0) return 1;
  return 0;
}

rlx_status rlx_llm_chat_template_detect(const char *tmpl, size_t len, const char **name) {
  if (!name) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_template_detect: name is NULL");
  *name = NULL;
  if (!tmpl && len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_template_detect: tmpl is NULL");
  for (int32_t i = 0; i < N_FAMILIES; i++)
    if (len == strlen(families[i].name) && memcmp(tmpl, families[i].name, len) == 0) {
      *name = families[i].name;
      return RLX_OK;
    }
  const char *found = NULL;
  if (has(tmpl, len, "<|im_start|>")) found = "chatml";
  else if (has(tmpl, len, "[SYSTEM_PROMPT]"))
    return rlx_error(RLX_ERR_UNSUPPORTED, "the chat template is Mistral's [SYSTEM_PROMPT] format (v7), which is not "
                     "built in (built in: " NAMES "): name one to use instead (rlx chat --template NAME)");
  else if ((len >= 7 && memcmp(tmpl, "mistral", 7) == 0) || has(tmpl, len, "[INST]"))
    found = has(tmpl, len, "<<SYS>>") ? "llama2" : "mistral";
  else if (has(tmpl, len, "<|assistant|>") && has(tmpl, len, "<|end|>")) found = "phi3";
  else if (has(tmpl, len, "<|user|>") && has(tmpl, len, "<|endoftext|>")) found = "zephyr";
  else if (has(tmpl, len, "<start_of_turn>")) found = "gemma";
  else if (has(tmpl, len, "<|start_header_id|>") && has(tmpl, len, "<|end_header_id|>")) found = "llama3";
  if (!found)
    return rlx_error(RLX_ERR_UNSUPPORTED, "the chat template is none of the built-in formats (" NAMES ", recognised by "
                     "their special tokens): name the one the model was trained with (rlx chat --template NAME, "
                     "rlx_llm_chat_options.template_name)");
  *name = found;
  return RLX_OK;
}

rlx_status rlx_llm_chat_template_for(const rlx_llm *m, const char *name, const char **chosen, char *why,
                                     size_t why_cap) {
  if (!m || !chosen)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_template_for: %s is NULL", m ? "chosen" : "model");
  *chosen = NULL;
  if (why && why_cap) why[0] = 0;
  if (name) {
    int32_t i = chat_template_find(name);
    if (i < 0)
      return rlx_error(RLX_ERR_UNSUPPORTED, "chat template '%s' is not built in (built in: " NAMES ")", name);
    *chosen = families[i].name;
    if (why && why_cap) snprintf(why, why_cap, "%s, as named", *chosen);
    return RLX_OK;
  }
  const char *t = NULL;
  uint64_t len = 0;
  if (rlx_gguf_get_string(m->gguf, "tokenizer.chat_template", &t, &len) != RLX_OK) {
    *chosen = "chatml";
    if (why && why_cap) snprintf(why, why_cap, "chatml: the file has no tokenizer.chat_template (llama.cpp's default)");
    return RLX_OK;
  }
  rlx_status st = rlx_llm_chat_template_detect(t, (size_t)len, chosen);
  if (st == RLX_OK && why && why_cap)
    snprintf(why, why_cap, "%s, detected from the file's tokenizer.chat_template", *chosen);
  return st;
}

/* ---- rendering ---------------------------------------------------------------- */
void chat_text_free(chat_text *t) {
  if (!t) return;
  rlx_free(t->text, t->cap);
  rlx_free(t->ends, t->cap_parts * sizeof *t->ends);
  rlx_free(t->special, t->cap_parts);
  rlx_free(t->msg, t->cap_parts * sizeof *t->msg);
  memset(t, 0, sizeof *t);
}

static int reserve(chat_text *t, size_t bytes) {
  if (t->len + bytes + 1 > t->cap) {
    size_t c = t->cap ? t->cap : 256;
    while (c < t->len + bytes + 1) {
      if (c > SIZE_MAX / 4) return 0;
      c *= 2;
    }
    char *p = rlx_realloc(t->text, t->cap, c);
    if (!p) return 0;
    t->text = p;
    t->cap = c;
  }
  if (t->n + 1 > t->cap_parts) { /* the three arrays grow together or not at all */
    size_t c = t->cap_parts ? t->cap_parts * 2 : 16;
    size_t *e = rlx_malloc(c * sizeof *e);
    unsigned char *s = rlx_malloc(c);
    int32_t *m = rlx_malloc(c * sizeof *m);
    if (!e || !s || !m) {
      rlx_free(e, e ? c * sizeof *e : 0);
      rlx_free(s, s ? c : 0);
      rlx_free(m, m ? c * sizeof *m : 0);
      return 0;
    }
    if (t->n) {
      memcpy(e, t->ends, t->n * sizeof *e);
      memcpy(s, t->special, t->n);
      memcpy(m, t->msg, t->n * sizeof *m);
    }
    rlx_free(t->ends, t->cap_parts * sizeof *e);
    rlx_free(t->special, t->cap_parts);
    rlx_free(t->msg, t->cap_parts * sizeof *m);
    t->ends = e, t->special = s, t->msg = m, t->cap_parts = c;
  }
  return 1;
}

/* Appends s[0, n) as template text (msg -1) or message msg's content; a
 * template part joins the template part before it. */
static int put(chat_text *t, const char *s, size_t n, int32_t msg) {
  if (!reserve(t, n)) return 0;
  memcpy(t->text + t->len, s, n);
  t->len += n;
  t->text[t->len] = 0;
  if (msg < 0 && t->n > 0 && t->msg[t->n - 1] < 0) {
    t->ends[t->n - 1] = t->len;
  } else {
    t->ends[t->n] = t->len;
    t->special[t->n] = msg < 0;
    t->msg[t->n] = msg;
    t->n++;
  }
  return 1;
}

static int lit(chat_text *t, const char *s) { return put(t, s, strlen(s), -1); }

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static int content(chat_text *t, const family *f, const rlx_llm_chat_message *m, int32_t i) {
  const char *s = m->content;
  size_t n = strlen(s);
  if (f->trim) {
    while (n && is_space(*s)) s++, n--;
    while (n && is_space(s[n - 1])) n--;
  }
  return n == 0 || put(t, s, n, i); /* an empty content is no part */
}

static rlx_status check_messages(const family *f, const rlx_llm_chat_message *msgs, int32_t n) {
  if (n < 0 || (n > 0 && !msgs)) return rlx_error(RLX_ERR_INVALID_ARG, "chat: %d messages at %p", (int)n, (void *)msgs);
  for (int32_t i = 0; i < n; i++) {
    const char *r = msgs[i].role;
    if (!r || !msgs[i].content)
      return rlx_error(RLX_ERR_INVALID_ARG, "chat: message %d has no %s", (int)i, r ? "content" : "role");
    if (strcmp(r, "system") == 0) {
      if (i > 0)
        return rlx_error(RLX_ERR_INVALID_ARG, "chat: message %d is a system message; only the first may be", (int)i);
      if (f->sys_in_user && (n < 2 || strcmp(msgs[1].role ? msgs[1].role : "", "user") != 0))
        return rlx_error(RLX_ERR_INVALID_ARG, "chat: template %s puts the system prompt into the first user message: "
                         "a user message must follow it", f->name);
    } else if (strcmp(r, "user") != 0 && strcmp(r, "assistant") != 0) {
      return rlx_error(RLX_ERR_INVALID_ARG, "chat: message %d has role '%s' (system, user or assistant)", (int)i, r);
    }
  }
  return RLX_OK;
}

rlx_status chat_template_render(int32_t k, const rlx_llm_chat_message *msgs, int32_t n, int add_generation_prompt,
                                const char *bos, const char *eos, chat_text *out) {
  if (k < 0 || k >= N_FAMILIES) return rlx_error(RLX_ERR_INVALID_ARG, "chat: template %d does not exist", (int)k);
  const family *f = &families[k];
  rlx_status st = check_messages(f, msgs, n);
  if (st != RLX_OK) return st;
  out->len = out->n = 0;
  bos = bos ? bos : "";
  eos = eos ? eos : "";
  int ok = !f->bos_first || lit(out, bos);
  const int has_sys = n > 0 && strcmp(msgs[0].role, "system") == 0;
  for (int32_t i = 0; ok && i < n; i++) {
    const rlx_llm_chat_message *m = &msgs[i];
    if (m->role[0] == 's') {
      if (!f->sys_in_user) ok = lit(out, f->sys_pre) && content(out, f, m, i) && lit(out, f->sys_post);
    } else if (m->role[0] == 'u') {
      ok = (!f->bos_per_user || lit(out, bos)) && lit(out, f->user_pre);
      if (ok && f->sys_in_user && has_sys && i == 1)
        ok = lit(out, f->sys_pre) && content(out, f, &msgs[0], 0) && lit(out, f->sys_post);
      ok = ok && content(out, f, m, i) && lit(out, f->user_post);
    } else {
      ok = lit(out, f->asst_pre) && content(out, f, m, i) && lit(out, f->asst_post) && (!f->asst_eos || lit(out, eos));
    }
  }
  if (ok && add_generation_prompt) ok = lit(out, f->gen);
  if (ok && !reserve(out, 0)) ok = 0;
  if (!ok) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory rendering the prompt");
  out->text[out->len] = 0;
  return RLX_OK;
}

rlx_status rlx_llm_chat_render(const char *name, const rlx_llm_chat_message *msgs, int32_t n,
                               int add_generation_prompt, const char *bos, const char *eos, char *out, size_t cap,
                               size_t *len) {
  if (!len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_render: len is NULL");
  *len = 0;
  int32_t k = chat_template_find(name);
  if (k < 0)
    return rlx_error(RLX_ERR_UNSUPPORTED, "chat template '%s' is not built in (built in: " NAMES ")",
                     name ? name : "(null)");
  if (!out && cap) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_render: out is NULL");
  chat_text t = {0};
  rlx_status st = chat_template_render(k, msgs, n, add_generation_prompt, bos, eos, &t);
  if (st == RLX_OK) {
    *len = t.len;
    if (t.len + 1 > cap) st = rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_render: %zu bytes do not fit in %zu",
                                        t.len + 1, cap);
    else memcpy(out, t.text, t.len + 1);
  }
  chat_text_free(&t);
  return st;
}
