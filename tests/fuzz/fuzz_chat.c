/* fuzz_chat.c - libFuzzer target: the chat pieces that read untrusted text
 * (src/models/chat_json.c, src/models/chat_template.c).  Byte 0 even: the
 * rest is a messages JSON array; once read, it is rendered in every
 * built-in template with and without the generation prompt (a refusal
 * must be a clear status, a rendering as long as it says and, sized by a
 * first call, the same again).  Byte 0 odd: the rest is a Jinja chat
 * template to detect a family in: a name from the list, or a refusal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "rlx_models.h"

static void render_all(const rlx_llm_chat_message *m, int32_t n) {
  for (int32_t t = 0; rlx_llm_chat_template_name(t); t++)
    for (int gen = 0; gen < 2; gen++) {
      const char *name = rlx_llm_chat_template_name(t);
      size_t len = 0;
      rlx_status st = rlx_llm_chat_render(name, m, n, gen, "<s>", "</s>", NULL, 0, &len);
      if (st != RLX_ERR_INVALID_ARG || len == 0) {
        CHECK(st == RLX_ERR_INVALID_ARG || st == RLX_ERR_NO_MEMORY);
        continue;
      }
      char *out = malloc(len + 1);
      size_t len2 = 0;
      CHECK(out && rlx_llm_chat_render(name, m, n, gen, "<s>", "</s>", out, len + 1, &len2) == RLX_OK);
      CHECK(len2 == len && strlen(out) <= len);
      free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *text = (const char *)data + 1;
  if (data[0] & 1) {
    const char *name = NULL;
    rlx_status st = rlx_llm_chat_template_detect(text, size - 1, &name);
    if (st == RLX_OK) {
      int known = 0;
      for (int32_t t = 0; rlx_llm_chat_template_name(t); t++) known |= strcmp(name, rlx_llm_chat_template_name(t)) == 0;
      CHECK(known);
    } else {
      CHECK(st == RLX_ERR_UNSUPPORTED && name == NULL);
    }
    return 0;
  }
  rlx_llm_chat_message *m = NULL;
  int32_t n = 0;
  rlx_status st = rlx_llm_chat_parse_messages(text, size - 1, &m, &n);
  if (st != RLX_OK) {
    CHECK((st == RLX_ERR_INVALID_ARG || st == RLX_ERR_NO_MEMORY) && m == NULL && n == 0);
    return 0;
  }
  CHECK(n >= 1 && m);
  for (int32_t i = 0; i < n; i++) CHECK(m[i].role && m[i].content);
  render_all(m, n);
  rlx_llm_chat_messages_free(m, n);
  return 0;
}
