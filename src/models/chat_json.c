/* chat_json.c - an OpenAI-style messages array read from JSON text:
 * [{"role": "...", "content": "..."}, ...], other keys skipped (any JSON
 * value, nested at most 64 deep).  Strict JSON (RFC 8259): escapes
 * decoded to UTF-8, surrogate pairs joined; a lone surrogate, a control
 * character, \u0000 or a malformed value is refused naming the byte
 * offset.  Untrusted input: every read is bounded by len. */
#include <string.h>

#include "../core/core.h"
#include "rlx_llm_chat.h"

#define MAX_DEPTH 64

typedef struct {
  const char *s;
  size_t len, i;
} reader;

static rlx_status bad(const reader *r, const char *what) {
  return rlx_error(RLX_ERR_INVALID_ARG, "messages JSON: %s at byte %zu", what, r->i);
}

static void ws(reader *r) {
  while (r->i < r->len && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r'))
    r->i++;
}

static int eat(reader *r, char c) {
  ws(r);
  if (r->i < r->len && r->s[r->i] == c) {
    r->i++;
    return 1;
  }
  return 0;
}

static int hex4(reader *r, uint32_t *v) {
  if (r->len - r->i < 4) return 0;
  *v = 0;
  for (int k = 0; k < 4; k++) {
    char c = r->s[r->i++];
    uint32_t d = c >= '0' && c <= '9' ? (uint32_t)(c - '0')
                 : c >= 'a' && c <= 'f' ? (uint32_t)(c - 'a' + 10)
                 : c >= 'A' && c <= 'F' ? (uint32_t)(c - 'A' + 10) : 16u;
    if (d == 16) return 0;
    *v = *v * 16 + d;
  }
  return 1;
}

static size_t utf8(uint32_t cp, char *o) {
  if (cp < 0x80) return o[0] = (char)cp, 1;
  if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), 2;
  if (cp < 0x10000)
    return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 63)), o[2] = (char)(0x80 | (cp & 63)), 3;
  o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 63));
  o[2] = (char)(0x80 | (cp >> 6 & 63)), o[3] = (char)(0x80 | (cp & 63));
  return 4;
}

/* A string at r (after whitespace): decoded into *out (rlx_malloc'd,
 * strlen + 1 bytes) unless out is NULL (skipped). */
static rlx_status string(reader *r, char **out) {
  ws(r);
  if (r->i >= r->len || r->s[r->i] != '"') return bad(r, "a string expected");
  r->i++;
  const size_t start = r->i;
  /* Decoded text is never longer than its JSON form. */
  size_t end = start;
  while (end < r->len && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
  if (end >= r->len) return bad(r, "an unterminated string");
  char *buf = out ? rlx_malloc(end - start + 1) : NULL;
  if (out && !buf) return rlx_error(RLX_ERR_NO_MEMORY, "messages JSON: out of memory");
  char tmp[4];
  size_t n = 0;
  rlx_status st = RLX_OK;
  while (st == RLX_OK && r->s[r->i] != '"') {
    unsigned char c = (unsigned char)r->s[r->i];
    if (c < 0x20) {
      st = bad(r, "a control character in a string");
      break;
    }
    if (c != '\\') {
      if (buf) buf[n] = (char)c;
      n++, r->i++;
      continue;
    }
    r->i++;
    const char e = r->s[r->i++];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
      static const char map[] = "\"\\/\b\f\n\r\t";
      if (buf) buf[n] = map[simple - "\"\\/bfnrt"];
      n++;
      continue;
    }
    uint32_t cp, lo;
    if (e != 'u' || !hex4(r, &cp)) {
      st = bad(r, "a malformed escape");
    } else if (cp >= 0xD800 && cp < 0xDC00) {
      if (r->len - r->i >= 6 && r->s[r->i] == '\\' && r->s[r->i + 1] == 'u' && (r->i += 2, hex4(r, &lo)) &&
          lo >= 0xDC00 && lo < 0xE000)
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      else
        st = bad(r, "a lone surrogate escape");
    } else if (cp >= 0xDC00 && cp < 0xE000) {
      st = bad(r, "a lone surrogate escape");
    } else if (cp == 0) {
      st = bad(r, "\\u0000 (a NUL character) in a string");
    }
    if (st == RLX_OK) {
      size_t k = utf8(cp, tmp);
      if (buf) memcpy(buf + n, tmp, k);
      n += k;
    }
  }
  if (st != RLX_OK) {
    rlx_free(buf, buf ? end - start + 1 : 0);
    return st;
  }
  r->i++; /* the closing quote */
  if (!out) return RLX_OK;
  *out = rlx_malloc(n + 1); /* sized to its text, as the free expects */
  if (*out) memcpy(*out, buf, n), (*out)[n] = 0;
  rlx_free(buf, end - start + 1);
  return *out ? RLX_OK : rlx_error(RLX_ERR_NO_MEMORY, "messages JSON: out of memory");
}

static rlx_status skip_value(reader *r, int depth) {
  ws(r);
  if (r->i >= r->len) return bad(r, "a value expected");
  if (depth > MAX_DEPTH) return bad(r, "values nested too deep");
  const char c = r->s[r->i];
  rlx_status st = RLX_OK;
  if (c == '"') return string(r, NULL);
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    r->i++;
    if (eat(r, close)) return RLX_OK;
    do {
      if (c == '{' && ((st = string(r, NULL)) != RLX_OK || (!eat(r, ':') && (st = bad(r, "':' expected")))))
        return st;
      if ((st = skip_value(r, depth + 1)) != RLX_OK) return st;
    } while (eat(r, ','));
    return eat(r, close) ? RLX_OK : bad(r, c == '{' ? "',' or '}' expected" : "',' or ']' expected");
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int k = 0; k < 3; k++) {
    size_t wl = strlen(words[k]);
    if (r->len - r->i >= wl && memcmp(r->s + r->i, words[k], wl) == 0) return r->i += wl, RLX_OK;
  }
  /* A number: -?digits[.digits][e[+-]digits] */
  const size_t start = r->i;
  if (r->s[r->i] == '-') r->i++;
  size_t digits = 0;
  while (r->i < r->len && ((r->s[r->i] >= '0' && r->s[r->i] <= '9') || r->s[r->i] == '.' || r->s[r->i] == 'e' ||
                           r->s[r->i] == 'E' || r->s[r->i] == '+' || r->s[r->i] == '-'))
    digits += r->s[r->i] >= '0' && r->s[r->i] <= '9', r->i++;
  if (!digits) return r->i = start, bad(r, "a value expected");
  return RLX_OK;
}

static void free_strings(rlx_llm_chat_message *msgs, int32_t n) {
  for (int32_t k = 0; k < n; k++) {
    if (msgs[k].role) rlx_free((char *)msgs[k].role, strlen(msgs[k].role) + 1);
    if (msgs[k].content) rlx_free((char *)msgs[k].content, strlen(msgs[k].content) + 1);
  }
}

void rlx_llm_chat_messages_free(rlx_llm_chat_message *msgs, int32_t n) {
  if (!msgs) return;
  free_strings(msgs, n);
  rlx_free(msgs, (size_t)(n > 0 ? n : 1) * sizeof *msgs);
}

/* One {"role": ..., "content": ...} object into *m. */
static rlx_status message(reader *r, rlx_llm_chat_message *m, int32_t k) {
  if (!eat(r, '{')) return bad(r, "a message object expected");
  rlx_status st = RLX_OK;
  if (eat(r, '}')) return rlx_error(RLX_ERR_INVALID_ARG, "messages JSON: message %d has no role", (int)k);
  do {
    char *key = NULL;
    if ((st = string(r, &key)) != RLX_OK) return st;
    const int is_role = strcmp(key, "role") == 0, is_content = strcmp(key, "content") == 0;
    rlx_free(key, strlen(key) + 1);
    if (!eat(r, ':')) return bad(r, "':' expected");
    char **slot = is_role ? (char **)&m->role : is_content ? (char **)&m->content : NULL;
    if (slot && *slot) return bad(r, is_role ? "a second \"role\"" : "a second \"content\"");
    ws(r);
    if (slot && (r->i >= r->len || r->s[r->i] != '"'))
      return rlx_error(RLX_ERR_INVALID_ARG, "messages JSON: message %d's %s must be a string (byte %zu)", (int)k,
                       is_role ? "role" : "content", r->i);
    if ((st = slot ? string(r, slot) : skip_value(r, 1)) != RLX_OK) return st;
  } while (eat(r, ','));
  if (!eat(r, '}')) return bad(r, "',' or '}' expected");
  if (!m->role || !m->content)
    return rlx_error(RLX_ERR_INVALID_ARG, "messages JSON: message %d has no %s", (int)k, m->role ? "content" : "role");
  return RLX_OK;
}

rlx_status rlx_llm_chat_parse_messages(const char *json, size_t len, rlx_llm_chat_message **msgs, int32_t *n) {
  if (!msgs || !n) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_parse_messages: %s is NULL", msgs ? "n" : "msgs");
  *msgs = NULL;
  *n = 0;
  if (!json && len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_parse_messages: json is NULL");
  reader r = {json, len, 0};
  if (!eat(&r, '[')) return bad(&r, "an array of messages expected");
  size_t cap = 8;
  rlx_llm_chat_message *m = rlx_calloc(cap, sizeof *m);
  int32_t k = 0;
  rlx_status st = m ? RLX_OK : rlx_error(RLX_ERR_NO_MEMORY, "messages JSON: out of memory");
  if (st == RLX_OK && !eat(&r, ']')) {
    do {
      if ((size_t)k == cap) {
        rlx_llm_chat_message *g = cap < (size_t)INT32_MAX / 2 ? rlx_realloc(m, cap * sizeof *m, 2 * cap * sizeof *m)
                                                               : NULL;
        if (!g) {
          st = rlx_error(RLX_ERR_NO_MEMORY, "messages JSON: out of memory");
          break;
        }
        memset(g + cap, 0, cap * sizeof *g);
        m = g, cap *= 2;
      }
      st = message(&r, &m[k], k);
      k++;
    } while (st == RLX_OK && eat(&r, ','));
    if (st == RLX_OK && !eat(&r, ']')) st = bad(&r, "',' or ']' expected");
  }
  if (st == RLX_OK) {
    ws(&r);
    if (r.i != r.len) st = bad(&r, "text after the array");
  }
  if (st != RLX_OK) {
    if (m) free_strings(m, k);
    rlx_free(m, m ? cap * sizeof *m : 0);
    return st;
  }
  if (k == 0) {
    rlx_free(m, cap * sizeof *m);
    return rlx_error(RLX_ERR_INVALID_ARG, "messages JSON: the array has no messages");
  }
  /* Sized to n, as rlx_llm_chat_messages_free expects. */
  rlx_llm_chat_message *exact = rlx_realloc(m, cap * sizeof *m, (size_t)k * sizeof *m);
  if (!exact) {
    free_strings(m, k);
    rlx_free(m, cap * sizeof *m);
    return rlx_error(RLX_ERR_NO_MEMORY, "messages JSON: out of memory");
  }
  *msgs = exact;
  *n = k;
  return RLX_OK;
}
