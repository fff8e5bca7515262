/* text.c - the growing text buffer and JSON writer of text.h. */
#include "text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void rlx_text_append(rlx_text *t, const char *s, size_t n) {
  if (t->failed) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while (t->len + n + 1 > cap) cap *= 2;
    char *b = rlx_realloc(t->buf, t->cap, cap);
    if (!b) {
      t->failed = 1;
      return;
    }
    t->buf = b;
    t->cap = cap;
  }
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = 0;
}

void rlx_text_puts(rlx_text *t, const char *s) { rlx_text_append(t, s, strlen(s)); }

void rlx_text_printf(rlx_text *t, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = 1;
  } else if ((size_t)n < sizeof small) {
    rlx_text_append(t, small, (size_t)n);
  } else {
    char *big = rlx_malloc((size_t)n + 1);
    if (!big) {
      t->failed = 1;
      return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rlx_text_append(t, big, (size_t)n);
    rlx_free(big, (size_t)n + 1);
  }
}

void rlx_text_free(rlx_text *t) {
  rlx_free(t->buf, t->cap);
  t->buf = NULL;
  t->len = t->cap = 0;
  t->failed = 0;
}

static int plain_char(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }

void rlx_json_string(rlx_text *t, const char *s) {
  rlx_text_append(t, "\"", 1);
  while (*s) {
    size_t run = 0;
    while (s[run] && plain_char((unsigned char)s[run])) run++;
    rlx_text_append(t, s, run);
    s += run;
    if (!*s) break;
    unsigned char c = (unsigned char)*s++;
    if (c == '\n') rlx_text_append(t, "\\n", 2);
    else if (c == '"') rlx_text_append(t, "\\\"", 2);
    else if (c == '\\') rlx_text_append(t, "\\\\", 2);
    else rlx_text_printf(t, "\\u%04x", c);
  }
  rlx_text_append(t, "\"", 1);
}

void rlx_json_float(rlx_text *t, float v) {
  if (isnan(v)) rlx_text_append(t, "\"NaN\"", 5);
  else if (isinf(v)) rlx_text_printf(t, "\"%sInfinity\"", v < 0 ? "-" : "");
  else rlx_text_printf(t, "%.9g", (double)v);
}

void rlx_json_ints(rlx_text *t, const int32_t *v, int32_t n) {
  rlx_text_append(t, "[", 1);
  for (int32_t i = 0; i < n; i++) rlx_text_printf(t, "%s%d", i ? "," : "", (int)v[i]);
  rlx_text_append(t, "]", 1);
}
