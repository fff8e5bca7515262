/* grammar.c - parses llama.cpp's GBNF into the compiled form of grammar.h.
 *
 * Syntax: `name ::= alternatives` (names of letters, digits and '-'; a
 * rule ends at the end of its line, or continues on a line that starts with
 * '|', and inside parentheses lines may break anywhere); alternatives are
 * sequences separated by '|'; an element is a string literal "...", a
 * character class [...] or [^...] with ranges a-z, '.' (any code point), a
 * rule name or a group ( ... ), each optionally followed by *, +, ?, {m},
 * {m,} or {m,n} (at most RLX_GRAMMAR_MAX_REPEAT).  Escapes in literals and
 * classes: \n \r \t \\ \" \' \[ \] \- \xHH \uHHHH \UHHHHHHHH.  '#' starts a
 * comment to the end of the line.  Generation starts at the rule "root".
 *
 * Refused, with "grammar: line L, column C: ...": syntax errors, bad
 * escapes, invalid UTF-8, an undefined rule (at its first use), a rule
 * defined twice, a reversed range, an empty class; without a place: no
 * root rule, a root that admits no finite string, and left recursion (a
 * rule that can reach itself without consuming input, which includes a
 * repetition of something that can be empty).  Alternatives that can never
 * complete (they use such a rule) are dropped, so every live parse of the
 * matcher can still finish.  The rules made for groups and repetitions are
 * named after the rule they serve with a '~' and a number (root~3), which
 * no user rule name can be. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "../core/core.h"

#define MAX_CP 0x10FFFFu

typedef struct {
  char name[64];
  rlx_gel *el;   /* alternatives, each ending with G_END */
  size_t n, cap;
  size_t ref_at; /* where it was first used (when not defined yet) */
  int defined;
} prule;

typedef struct {
  const char *s, *end;
  prule *r;
  size_t n_rules, cap_rules;
  uint32_t (*rg)[2];
  size_t n_rg, cap_rg;
  rlx_status st;
} parser;

static int fail_at(parser *p, const char *at, const char *fmt, ...) {
  if (p->st != RLX_OK) return 0;
  int line = 1, col = 1;
  for (const char *c = p->s; c < at && c < p->end; c++) {
    if (*c == '\n') line++, col = 1;
    else col++;
  }
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->st = at ? rlx_error(RLX_ERR_INVALID_ARG, "grammar: line %d, column %d: %s", line, col, msg)
             : rlx_error(RLX_ERR_INVALID_ARG, "grammar: %s", msg);
  return 0;
}

static int oom(parser *p) {
  if (p->st == RLX_OK) p->st = rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  return 0;
}

static int grow(parser *p, void **v, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t c = *cap ? *cap * 2 : 16;
  while (c < need) c *= 2;
  void *q = rlx_realloc(*v, *cap * elem, c * elem);
  if (!q) return oom(p);
  *v = q;
  *cap = c;
  return 1;
}

static int emit(parser *p, uint32_t r, uint32_t type, uint32_t a, uint32_t b) {
  prule *x = &p->r[r];
  if (!grow(p, (void **)&x->el, &x->cap, x->n + 1, sizeof *x->el)) return 0;
  x->el[x->n++] = (rlx_gel){type, a, b};
  return 1;
}

/* A rule by name, made (undefined) when new; UINT32_MAX on failure. */
static uint32_t rule_id(parser *p, const char *name, size_t len, const char *at) {
  for (size_t i = 0; i < p->n_rules; i++)
    if (strlen(p->r[i].name) == len && memcmp(p->r[i].name, name, len) == 0) return (uint32_t)i;
  if (len >= sizeof p->r[0].name) return fail_at(p, at, "rule name longer than %d characters", 63), UINT32_MAX;
  if (!grow(p, (void **)&p->r, &p->cap_rules, p->n_rules + 1, sizeof *p->r)) return UINT32_MAX;
  prule *x = &p->r[p->n_rules];
  memset(x, 0, sizeof *x);
  memcpy(x->name, name, len);
  x->ref_at = (size_t)(at - p->s);
  return (uint32_t)p->n_rules++;
}

/* A new rule for a group or a repetition, named after the rule it serves
 * and a number, with a '~' that no user rule name can hold: it never
 * meets a user rule (so it is made without a search). */
static uint32_t new_rule(parser *p, uint32_t parent) {
  if (!grow(p, (void **)&p->r, &p->cap_rules, p->n_rules + 1, sizeof *p->r)) return UINT32_MAX;
  prule *x = &p->r[p->n_rules];
  memset(x, 0, sizeof *x);
  snprintf(x->name, sizeof x->name, "%.40s~%zu", p->r[parent].name, p->n_rules);
  x->defined = 1;
  return (uint32_t)p->n_rules++;
}

static int is_name(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'; }

static const char *skip(parser *p, const char *c, int newlines) {
  while (c < p->end) {
    if (*c == ' ' || *c == '\t' || *c == '\r' || (newlines && *c == '\n')) c++;
    else if (*c == '#')
      while (c < p->end && *c != '\n') c++;
    else break;
  }
  return c;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One code point of a literal or class at *c (escapes decoded); 0 on error. */
static int read_char(parser *p, const char **c, uint32_t *cp) {
  const unsigned char *u = (const unsigned char *)*c;
  const char *at = *c;
  if (*u == '\\') {
    if (*c + 1 >= p->end) return fail_at(p, at, "a '\\' at the end of the text");
    char e = (*c)[1];
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits) {
      uint32_t v = 0;
      for (int i = 0; i < digits; i++) {
        int h = *c + 2 + i < p->end ? hexval((*c)[2 + i]) : -1;
        if (h < 0) return fail_at(p, at, "'\\%c' needs %d hex digits", e, digits);
        v = v * 16 + (uint32_t)h;
      }
      if (v > MAX_CP) return fail_at(p, at, "'\\%c' escape 0x%X is past U+10FFFF", e, v);
      *cp = v;
      *c += 2 + digits;
      return 1;
    }
    const char *from = "nrt\\\"'[]-", *to = "\n\r\t\\\"'[]-";
    const char *k = e ? strchr(from, e) : NULL;
    if (!k) return fail_at(p, at, "unknown escape '\\%c'", e);
    *cp = (unsigned char)to[k - from];
    *c += 2;
    return 1;
  }
  int n = *u < 0x80 ? 1 : (*u & 0xE0) == 0xC0 ? 2 : (*u & 0xF0) == 0xE0 ? 3 : (*u & 0xF8) == 0xF0 ? 4 : 0;
  if (!n || (size_t)(p->end - *c) < (size_t)n) return fail_at(p, at, "invalid UTF-8");
  uint32_t v = n == 1 ? *u : *u & (0x7Fu >> n);
  for (int i = 1; i < n; i++) {
    if ((u[i] & 0xC0) != 0x80) return fail_at(p, at, "invalid UTF-8");
    v = v << 6 | (u[i] & 0x3F);
  }
  if (v > MAX_CP) return fail_at(p, at, "invalid UTF-8");
  *cp = v;
  *c += n;
  return 1;
}

static int add_range(parser *p, uint32_t lo, uint32_t hi) {
  if (!grow(p, (void **)&p->rg, &p->cap_rg, p->n_rg + 1, sizeof *p->rg)) return 0;
  p->rg[p->n_rg][0] = lo;
  p->rg[p->n_rg++][1] = hi;
  return 1;
}

static int cmp_range(const void *x, const void *y) {
  const uint32_t *a = x, *b = y;
  return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Sorts and merges rg[from ..), complemented when neg; emits the class. */
static int emit_class(parser *p, uint32_t r, size_t from, int neg, const char *at) {
  size_t n = p->n_rg - from, m = 0;
  uint32_t (*v)[2] = n ? p->rg + from : NULL;
  if (n > 1) qsort(v, n, sizeof *v, cmp_range);
  for (size_t i = 0; i < n; i++) {
    if (m && v[i][0] <= v[m - 1][1] + 1) {
      if (v[i][1] > v[m - 1][1]) v[m - 1][1] = v[i][1];
    } else {
      v[m][0] = v[i][0], v[m][1] = v[i][1], m++;
    }
  }
  p->n_rg = from + m;
  if (neg) { /* the complement within [0, U+10FFFF], appended then moved down */
    uint32_t next = 0;
    size_t base = p->n_rg;
    for (size_t i = 0; i < m; i++) {
      if (p->rg[from + i][0] > next && !add_range(p, next, p->rg[from + i][0] - 1)) return 0;
      next = p->rg[from + i][1] + 1;
    }
    if (next <= MAX_CP && !add_range(p, next, MAX_CP)) return 0;
    memmove(p->rg + from, p->rg + base, (p->n_rg - base) * sizeof *p->rg);
    p->n_rg = from + (p->n_rg - base);
  }
  if (p->n_rg == from) return fail_at(p, at, "a character class that matches nothing");
  return emit(p, r, G_CHARS, (uint32_t)from, (uint32_t)(p->n_rg - from));
}

static int parse_alternatives(parser *p, const char **c, uint32_t r, int nested);

/* Moves el[from ..) of rule r into a new rule, leaving a reference. */
static int wrap(parser *p, uint32_t r, size_t from) {
  if (p->r[r].n - from == 1 && p->r[r].el[from].type != G_END) return 1;
  uint32_t w = new_rule(p, r);
  if (w == UINT32_MAX) return 0;
  for (size_t i = from; i < p->r[r].n; i++)
    if (!emit(p, w, p->r[r].el[i].type, p->r[r].el[i].a, p->r[r].el[i].b)) return 0;
  if (!emit(p, w, G_END, 0, 0)) return 0;
  p->r[r].n = from;
  return emit(p, r, G_REF, w, 0);
}

/* x{min,max} (max UINT32_MAX: unbounded) for the single element at el[from]. */
static int repeat(parser *p, uint32_t r, size_t from, uint32_t min, uint32_t max) {
  if (!wrap(p, r, from)) return 0;
  rlx_gel x = p->r[r].el[from];
  p->r[r].n = from;
  for (uint32_t i = 0; i < min; i++)
    if (!emit(p, r, x.type, x.a, x.b)) return 0;
  if (max == min) return 1;
  uint32_t tail = UINT32_MAX; /* x tail | "" : unbounded when tail is itself */
  for (uint32_t k = 0; k < (max == UINT32_MAX ? 1 : max - min); k++) {
    uint32_t t = new_rule(p, r);
    if (t == UINT32_MAX || !emit(p, t, x.type, x.a, x.b)) return 0;
    uint32_t next = max == UINT32_MAX ? t : tail;
    if (next != UINT32_MAX && !emit(p, t, G_REF, next, 0)) return 0;
    if (!emit(p, t, G_END, 0, 0) || !emit(p, t, G_END, 0, 0)) return 0;
    tail = t;
  }
  return emit(p, r, G_REF, tail, 0);
}

static int read_count(parser *p, const char **c, uint32_t *v) {
  const char *at = *c;
  uint64_t x = 0;
  if (*c >= p->end || **c < '0' || **c > '9') return fail_at(p, at, "expected a number in '{...}'");
  while (*c < p->end && **c >= '0' && **c <= '9') {
    x = x * 10 + (uint64_t)(**c - '0');
    if (x > RLX_GRAMMAR_MAX_REPEAT) return fail_at(p, at, "a repetition count over %d", RLX_GRAMMAR_MAX_REPEAT);
    (*c)++;
  }
  *v = (uint32_t)x;
  return 1;
}

static int parse_repetition(parser *p, const char **c, uint32_t r, size_t from) {
  const char *at = *c;
  char op = **c;
  (*c)++;
  if (op == '*') return repeat(p, r, from, 0, UINT32_MAX);
  if (op == '+') return repeat(p, r, from, 1, UINT32_MAX);
  if (op == '?') return repeat(p, r, from, 0, 1);
  uint32_t min, max;
  *c = skip(p, *c, 1);
  if (!read_count(p, c, &min)) return 0;
  *c = skip(p, *c, 1);
  max = min;
  if (*c < p->end && **c == ',') {
    *c = skip(p, *c + 1, 1);
    max = UINT32_MAX;
    if (*c < p->end && **c != '}' && !read_count(p, c, &max)) return 0;
    *c = skip(p, *c, 1);
  }
  if (*c >= p->end || **c != '}') return fail_at(p, *c, "expected '}' to close the '{'");
  (*c)++;
  if (max < min) return fail_at(p, at, "{%u,%u}: the most is less than the least", min, max);
  return repeat(p, r, from, min, max);
}

/* One sequence into rule r; stops before '|', ')', a line end (top level)
 * or the end. */
static int parse_sequence(parser *p, const char **c, uint32_t r, int nested) {
  for (;;) {
    *c = skip(p, *c, nested);
    if (*c >= p->end || **c == '|' || **c == ')' || **c == '\n') return 1;
    const char *at = *c;
    size_t from = p->r[r].n;
    char ch = **c;
    if (ch == '"') {
      (*c)++;
      while (*c < p->end && **c != '"') {
        uint32_t cp;
        if (**c == '\n') break;
        if (!read_char(p, c, &cp) || !emit(p, r, G_CHARS, (uint32_t)p->n_rg, 1) || !add_range(p, cp, cp)) return 0;
      }
      if (*c >= p->end || **c != '"') return fail_at(p, at, "unterminated string literal");
      (*c)++;
      if (p->r[r].n == from && !wrap(p, r, from)) return 0; /* "" : an empty rule */
    } else if (ch == '[') {
      (*c)++;
      int neg = *c < p->end && **c == '^';
      if (neg) (*c)++;
      size_t rfrom = p->n_rg;
      while (*c < p->end && **c != ']' && **c != '\n') {
        uint32_t lo, hi;
        const char *rat = *c;
        if (!read_char(p, c, &lo)) return 0;
        hi = lo;
        if (*c + 1 < p->end && **c == '-' && (*c)[1] != ']') {
          (*c)++;
          if (!read_char(p, c, &hi)) return 0;
          if (hi < lo) return fail_at(p, rat, "a reversed range in a character class");
        }
        if (!add_range(p, lo, hi)) return 0;
      }
      if (*c >= p->end || **c != ']') return fail_at(p, at, "unterminated character class");
      (*c)++;
      if (p->n_rg == rfrom && !neg) return fail_at(p, at, "an empty character class");
      if (!emit_class(p, r, rfrom, neg, at)) return 0;
    } else if (ch == '.') {
      (*c)++;
      if (!add_range(p, 0, MAX_CP) || !emit(p, r, G_CHARS, (uint32_t)p->n_rg - 1, 1)) return 0;
    } else if (ch == '(') {
      uint32_t g = new_rule(p, r);
      if (g == UINT32_MAX) return 0;
      (*c)++;
      if (!parse_alternatives(p, c, g, 1)) return 0;
      if (*c >= p->end || **c != ')') return fail_at(p, at, "a '(' without its ')'");
      (*c)++;
      if (!emit(p, r, G_REF, g, 0)) return 0;
    } else if (is_name(ch)) {
      const char *n0 = *c;
      while (*c < p->end && is_name(**c)) (*c)++;
      uint32_t ref = rule_id(p, n0, (size_t)(*c - n0), n0);
      const char *after = skip(p, *c, 0);
      if (after + 2 < p->end && memcmp(after, "::=", 3) == 0)
        return fail_at(p, n0, "a new rule starts inside the rule before it (a missing line break?)");
      if (ref == UINT32_MAX || !emit(p, r, G_REF, ref, 0)) return 0;
    } else if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
      return fail_at(p, at, "'%c' with nothing before it to repeat", ch);
    } else {
      return fail_at(p, at, "unexpected '%c'", ch);
    }
    const char *q = skip(p, *c, nested);
    while (q < p->end && (*q == '*' || *q == '+' || *q == '?' || *q == '{')) {
      *c = q;
      if (!parse_repetition(p, c, r, from)) return 0;
      q = skip(p, *c, nested);
    }
  }
}

static int parse_alternatives(parser *p, const char **c, uint32_t r, int nested) {
  for (;;) {
    if (!parse_sequence(p, c, r, nested) || !emit(p, r, G_END, 0, 0)) return 0;
    const char *q = skip(p, *c, 1); /* a top-level rule goes on at a line starting with '|' */
    if (q < p->end && *q == '|') {
      *c = skip(p, q + 1, 1);
      continue;
    }
    if (nested) *c = q;
    return 1;
  }
}

static int parse_rules(parser *p) {
  const char *c = p->s;
  for (;;) {
    c = skip(p, c, 1);
    if (c >= p->end) return 1;
    const char *n0 = c;
    while (c < p->end && is_name(*c)) c++;
    if (c == n0) return fail_at(p, n0, *n0 == ')' ? "a ')' without its '('" : "expected a rule name");
    uint32_t r = rule_id(p, n0, (size_t)(c - n0), n0);
    if (r == UINT32_MAX) return 0;
    if (p->r[r].defined) return fail_at(p, n0, "rule '%s' is defined twice", p->r[r].name);
    p->r[r].defined = 1;
    c = skip(p, c, 0);
    if (p->end - c < 3 || memcmp(c, "::=", 3) != 0) return fail_at(p, c, "expected '::=' after the rule name");
    c = skip(p, c + 3, 1);
    if (!parse_alternatives(p, &c, r, 0)) return 0;
    if (c < p->end && *c == ')') return fail_at(p, c, "a ')' without its '('");
  }
}

/* Rule r's alternatives as [begin, end) element ranges, one at a time. */
static int next_alt(const prule *x, size_t *at, size_t *begin, size_t *end) {
  if (*at >= x->n) return 0;
  *begin = *at;
  while (x->el[*at].type != G_END) (*at)++;
  *end = (*at)++;
  return 1;
}

/* productive[r]: r admits a finite string; then alternatives that use an
 * unproductive rule are dropped. */
static void prune(parser *p, uint8_t *productive) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t r = 0; r < p->n_rules; r++) {
      size_t at = 0, b, e;
      while (!productive[r] && next_alt(&p->r[r], &at, &b, &e)) {
        size_t i = b;
        while (i < e && (p->r[r].el[i].type != G_REF || productive[p->r[r].el[i].a])) i++;
        if (i == e) productive[r] = 1, changed = 1;
      }
    }
  }
  for (size_t r = 0; r < p->n_rules; r++) {
    prule *x = &p->r[r];
    size_t at = 0, b, e, out = 0;
    while (next_alt(x, &at, &b, &e)) {
      size_t i = b;
      while (i < e && (x->el[i].type != G_REF || productive[x->el[i].a])) i++;
      if (i < e) continue;
      memmove(x->el + out, x->el + b, (e + 1 - b) * sizeof *x->el);
      out += e + 1 - b;
    }
    x->n = out;
  }
}

/* Left recursion: a path of rule references, each reached through
 * elements that can be empty, back to a rule on the path.  state: 0 new,
 * 1 on the path, 2 done.  Returns the rule found on a cycle, or -1. */
static long left_cycle(const parser *p, const uint8_t *nullable, uint8_t *state, size_t r) {
  state[r] = 1;
  size_t at = 0, b, e;
  while (next_alt(&p->r[r], &at, &b, &e)) {
    for (size_t i = b; i < e; i++) {
      const rlx_gel *x = &p->r[r].el[i];
      if (x->type != G_REF) break;
      if (state[x->a] == 1) return (long)x->a;
      if (state[x->a] == 0) {
        long c = left_cycle(p, nullable, state, x->a);
        if (c >= 0) return c;
      }
      if (!nullable[x->a]) break;
    }
  }
  state[r] = 2;
  return -1;
}

static rlx_status check_and_build(parser *p, rlx_llm_grammar *g) {
  size_t n = p->n_rules, root = n;
  for (size_t r = 0; r < n; r++) {
    if (!p->r[r].defined) return fail_at(p, p->s + p->r[r].ref_at, "undefined rule '%s'", p->r[r].name), p->st;
    if (strcmp(p->r[r].name, "root") == 0) root = r;
  }
  if (root == n) return fail_at(p, NULL, "no 'root' rule"), p->st;
  uint8_t *flags = rlx_calloc(n ? 3 * n : 1, 1);
  if (!flags) return oom(p), p->st;
  uint8_t *productive = flags, *nullable = flags + n, *state = flags + 2 * n;
  prune(p, productive);
  if (!productive[root]) {
    rlx_free(flags, 3 * n);
    return fail_at(p, NULL, "the grammar admits no string: 'root' never completes (every way through it recurses "
                   "forever or uses a rule that does)"), p->st;
  }
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t r = 0; r < n; r++) {
      size_t at = 0, b, e;
      while (!nullable[r] && next_alt(&p->r[r], &at, &b, &e)) {
        size_t i = b;
        while (i < e && p->r[r].el[i].type == G_REF && nullable[p->r[r].el[i].a]) i++;
        if (i == e) nullable[r] = 1, changed = 1;
      }
    }
  }
  long cyc = -1;
  for (size_t r = 0; r < n && cyc < 0; r++)
    if (!state[r]) cyc = left_cycle(p, nullable, state, r);
  rlx_free(flags, 3 * n);
  if (cyc >= 0)
    return fail_at(p, NULL, "rule '%s' can reach itself without consuming input (left recursion, or a repetition "
                   "of something that can be empty)", p->r[cyc].name), p->st;
  size_t n_el = 0, n_alt = 0;
  for (size_t r = 0; r < n; r++) {
    n_el += p->r[r].n;
    for (size_t i = 0; i < p->r[r].n; i++) n_alt += p->r[r].el[i].type == G_END;
  }
  g->el = rlx_malloc((n_el ? n_el : 1) * sizeof *g->el);
  g->alt = rlx_malloc((n_alt ? n_alt : 1) * sizeof *g->alt);
  g->rule_alt = rlx_malloc((n + 1) * sizeof *g->rule_alt);
  g->n_el = n_el ? n_el : 1;
  g->n_alt = (uint32_t)(n_alt ? n_alt : 1);
  g->n_rules = (uint32_t)n;
  if (!g->el || !g->alt || !g->rule_alt) return oom(p), p->st;
  size_t k = 0, a = 0;
  for (size_t r = 0; r < n; r++) {
    g->rule_alt[r] = (uint32_t)a;
    for (size_t i = 0; i < p->r[r].n; i++) {
      if (i == 0 || p->r[r].el[i - 1].type == G_END) g->alt[a++] = (uint32_t)k;
      g->el[k++] = p->r[r].el[i];
    }
  }
  g->rule_alt[n] = (uint32_t)a;
  g->root = (uint32_t)root;
  g->ranges = p->rg;
  g->n_ranges = p->cap_rg;
  p->rg = NULL;
  return RLX_OK;
}

void rlx_llm_grammar_free(rlx_llm_grammar *g) {
  if (!g) return;
  rlx_free(g->el, g->n_el * sizeof *g->el);
  rlx_free(g->alt, g->n_alt * sizeof *g->alt);
  rlx_free(g->rule_alt, g->rule_alt ? (g->n_rules + 1) * sizeof *g->rule_alt : 0);
  rlx_free(g->ranges, g->n_ranges * sizeof *g->ranges);
  rlx_free(g, sizeof *g);
}

rlx_status rlx_llm_grammar_parse(const char *text, size_t len, rlx_llm_grammar **out) {
  if (out) *out = NULL;
  if (!out || (!text && len)) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_grammar_parse: null argument");
  parser p = {text ? text : "", (text ? text : "") + len, NULL, 0, 0, NULL, 0, 0, RLX_OK};
  rlx_llm_grammar *g = rlx_calloc(1, sizeof *g);
  if (!g) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  if (parse_rules(&p)) check_and_build(&p, g);
  for (size_t r = 0; r < p.n_rules; r++) rlx_free(p.r[r].el, p.r[r].cap * sizeof *p.r[r].el);
  rlx_free(p.r, p.cap_rules * sizeof *p.r);
  rlx_free(p.rg, p.cap_rg * sizeof *p.rg);
  if (p.st != RLX_OK) {
    rlx_llm_grammar_free(g);
    return p.st;
  }
  *out = g;
  return RLX_OK;
}
