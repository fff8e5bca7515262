/* llm_jsonl.c - one line of a fine-tuning JSONL file (llm_data.c) as an
 * example {"prompt": STRING, "completion": STRING}: the JSON object read
 * strictly (both keys once, no other key, strings only, nothing after the
 * object), its strings decoded to UTF-8 (escapes, \uXXXX with surrogate
 * pairs).  Every problem is described in words for the caller to put
 * after the line number. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llm_train.h"

static int problem(char *err, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  return -1;
}

static size_t skip_ws(const char *s, size_t len, size_t i) {
  while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) i++;
  return i;
}

static int hex4(const char *s, size_t len, size_t i, unsigned *out) {
  if (i + 4 > len) return 0;
  unsigned v = 0;
  for (size_t k = i; k < i + 4; k++) {
    const char c = s[k];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return 0;
    v = v * 16 + (unsigned)d;
  }
  *out = v;
  return 1;
}

static size_t put_utf8(unsigned cp, char *out) {
  if (cp < 0x80) return out[0] = (char)cp, 1;
  if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000)
    return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
           out[2] = (char)(0x80 | (cp & 0x3F)), 3;
  out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The string whose opening quote is s[*i]: decoded into out (when not
 * NULL; never longer than its JSON text) with its length in *n, *i past
 * the closing quote.  Returns 0, or -1 with the problem in err. */
static int string_at(const char *s, size_t len, size_t *i, char *out, size_t *n, char *err, size_t cap) {
  size_t k = *i + 1, w = 0;
  char tmp[4];
  while (k < len && s[k] != '"') {
    const unsigned char c = (unsigned char)s[k];
    if (c < 0x20) return problem(err, cap, "a control character (byte %u) inside a string at column %zu", c, k + 1);
    if (c != '\\') {
      if (out) out[w] = (char)c;
      w++, k++;
      continue;
    }
    if (k + 1 >= len) break;
    const char e = s[k + 1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      static const char value[] = "\"\\/\b\f\n\r\t";
      if (out) out[w] = value[simple - "\"\\/bfnrt"];
      w++, k += 2;
      continue;
    }
    unsigned cp, lo;
    if (e != 'u' || !hex4(s, len, k + 2, &cp))
      return problem(err, cap, "a bad escape '\\%.*s' at column %zu", e == 'u' ? 5 : 1, s + k + 1, k + 1);
    k += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return problem(err, cap, "a lone low surrogate \\u%04X at column %zu", cp, k - 5);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (k + 1 >= len || s[k] != '\\' || s[k + 1] != 'u' || !hex4(s, len, k + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
        return problem(err, cap, "a high surrogate \\u%04X at column %zu without its low half", cp, k - 5);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      k += 6;
    }
    const size_t m = put_utf8(cp, out ? out + w : tmp);
    w += m;
  }
  if (k >= len || s[k] != '"') return problem(err, cap, "a string that does not end (no closing '\"')");
  *i = k + 1;
  *n = w;
  return 0;
}

int llm_jsonl_example(const char *line, size_t len, char *out, size_t *prompt_len, size_t *completion_len, char *err,
                      size_t err_cap) {
  static const char *const KEYS[2] = {"prompt", "completion"};
  size_t i = skip_ws(line, len, 0), at[2] = {0, 0};
  int seen[2] = {0, 0};
  if (i == len) return 0;
  if (line[i] != '{')
    return problem(err, err_cap, "not a JSON object (it starts with '%c'; want {\"prompt\": ..., \"completion\": ...})",
                   line[i]);
  i = skip_ws(line, len, i + 1);
  for (int first = 1;; first = 0) {
    if (first && i < len && line[i] == '}') break;
    if (i >= len || line[i] != '"') return problem(err, err_cap, "expected a key string at column %zu", i + 1);
    char key[24];
    size_t key_len, start = i;
    if (string_at(line, len, &i, NULL, &key_len, err, err_cap) < 0) return -1;
    int k = -1;
    if (key_len < sizeof key) {
      size_t j = start;
      string_at(line, len, &j, key, &key_len, err, err_cap);
      for (int q = 0; q < 2; q++)
        if (strlen(KEYS[q]) == key_len && !memcmp(key, KEYS[q], key_len)) k = q;
    }
    if (k < 0)
      return problem(err, err_cap, "unknown key %.*s (an example has \"prompt\" and \"completion\" only)",
                     (int)(i - start < 40 ? i - start : 40), line + start);
    if (seen[k]) return problem(err, err_cap, "\"%s\" twice", KEYS[k]);
    i = skip_ws(line, len, i);
    if (i >= len || line[i] != ':') return problem(err, err_cap, "expected ':' after \"%s\"", KEYS[k]);
    i = skip_ws(line, len, i + 1);
    if (i >= len || line[i] != '"') return problem(err, err_cap, "the value of \"%s\" is not a string", KEYS[k]);
    at[k] = i;
    seen[k] = 1;
    size_t n;
    if (string_at(line, len, &i, NULL, &n, err, err_cap) < 0) return -1;
    i = skip_ws(line, len, i);
    if (i < len && line[i] == '}') break;
    if (i >= len || line[i] != ',') return problem(err, err_cap, "expected ',' or '}' at column %zu", i + 1);
    i = skip_ws(line, len, i + 1);
  }
  if (skip_ws(line, len, i + 1) != len) return problem(err, err_cap, "text after the object at column %zu", i + 2);
  for (int k = 0; k < 2; k++)
    if (!seen[k]) return problem(err, err_cap, "no \"%s\"", KEYS[k]);
  string_at(line, len, &at[0], out, prompt_len, err, err_cap);
  string_at(line, len, &at[1], out + *prompt_len, completion_len, err, err_cap);
  if (!*completion_len) return problem(err, err_cap, "an empty \"completion\" (nothing to learn)");
  return 1;
}
