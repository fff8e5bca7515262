/* fuzz_plan_json.c - libFuzzer target: bytes -> graph (graph_decode.c),
 * optionally with its backward pass, compiled for WebGPU and WebGL2; each
 * plan document must be one valid JSON value (RFC 8259: no NaN or
 * Infinity, control characters escaped, valid UTF-8 escapes) of exactly the
 * reported length, and asking twice must give the same text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_decode.h"
#include "../../src/webgl/gl_plan.h"
#include "../../src/webgpu/webgpu_plan.h"

typedef struct {
  const char *p, *end;
  int depth;
} json;

static int value(json *j);

static void ws(json *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int lit(json *j, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0) return 0;
  j->p += n;
  return 1;
}

static int hex4(json *j) {
  for (int i = 0; i < 4; i++, j->p++)
    if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p) return 0;
  return 1;
}

static int string(json *j) {
  if (j->p >= j->end || *j->p != '"') return 0;
  for (j->p++; j->p < j->end; j->p++) {
    unsigned char c = (unsigned char)*j->p;
    if (c == '"') {
      j->p++;
      return 1;
    }
    if (c < 0x20) return 0;
    if (c == '\\') {
      if (++j->p >= j->end) return 0;
      if (*j->p == 'u') {
        j->p++;
        if (!hex4(j)) return 0;
        j->p--;
      } else if (!strchr("\"\\/bfnrt", *j->p) || !*j->p) {
        return 0;
      }
    }
  }
  return 0;
}

static int digits(json *j) {
  const char *s = j->p;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  return j->p > s;
}

static int number(json *j) {
  if (j->p < j->end && *j->p == '-') j->p++;
  if (j->p < j->end && *j->p == '0') j->p++;
  else if (!digits(j)) return 0;
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (!digits(j)) return 0;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (!digits(j)) return 0;
  }
  return 1;
}

static int members(json *j, char close, int keyed) {
  j->p++;
  if (++j->depth > 64) return 0;
  ws(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
    j->depth--;
    return 1;
  }
  for (;;) {
    ws(j);
    if (keyed) {
      if (!string(j)) return 0;
      ws(j);
      if (j->p >= j->end || *j->p != ':') return 0;
      j->p++;
    }
    if (!value(j)) return 0;
    ws(j);
    if (j->p >= j->end) return 0;
    if (*j->p == ',') {
      j->p++;
      continue;
    }
    if (*j->p != close) return 0;
    j->p++;
    j->depth--;
    return 1;
  }
}

static int value(json *j) {
  ws(j);
  if (j->p >= j->end) return 0;
  switch (*j->p) {
    case '{': return members(j, '}', 1);
    case '[': return members(j, ']', 0);
    case '"': return string(j);
    case 't': return lit(j, "true");
    case 'f': return lit(j, "false");
    case 'n': return lit(j, "null");
    default: return number(j);
  }
}

static void check_document(const char *doc, size_t len, const char *what) {
  if (!doc) {
    fz_check_status(RLX_ERR_STATE, what);
    return;
  }
  if (strlen(doc) != len) {
    fprintf(stderr, "%s: reported length %zu, text length %zu\n", what, len, strlen(doc));
    abort();
  }
  json j = {doc, doc + len, 0};
  int ok = value(&j);
  ws(&j);
  if (!ok || j.p != j.end) {
    size_t at = (size_t)(j.p - doc);
    fprintf(stderr, "%s: invalid JSON at byte %zu of %zu: ...%.60s\n", what, at, len, doc + (at > 30 ? at - 30 : 0));
    abort();
  }
}

static void plans(const rlx_graph *g, const rlx_node *outs, int32_t n_out, uint8_t flags) {
  for (int dev = RLX_DEVICE_WEBGPU; dev <= RLX_DEVICE_WEBGL; dev++) {
    rlx_compile_options o = {(rlx_device)dev, 1, (flags >> 1) & 1};
    rlx_session *s = NULL;
    rlx_status st = rlx_compile(g, outs, n_out, &o, &s);
    fz_check_status(st, "compile");
    if (st != RLX_OK) continue;
    size_t len = 0, len2 = 0;
    const char *doc;
    if (dev == RLX_DEVICE_WEBGPU) {
      doc = rlx_session_webgpu_plan(s, &len);
      check_document(doc, len, "webgpu plan");
      if (doc && (rlx_session_webgpu_plan(s, &len2) != doc || len2 != len)) abort(); /* made once, kept */
    } else {
      doc = rlx_session_webgl_plan(s, &len);
      check_document(doc, len, "webgl plan");
      char *copy = doc ? strdup(doc) : NULL;
      const char *again = rlx_session_webgl_plan(s, &len2);
      check_document(again, len2, "webgl plan (again)");
      if (copy && again && strcmp(copy, again) != 0) abort(); /* rebuilt, the same */
      free(copy);
    }
    rlx_session_free(s);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_graph f;
  fz_build(data, size, &f);
  if (!f.g) return 0;
  if (rlx_graph_status(f.g) == RLX_OK && f.n > 0) {
    fz_bytes b = f.rest;
    rlx_node outs[FZ_MAX_NODES + 1];
    int32_t n_out = 1 + fz_byte(&b) % 3;
    for (int32_t i = 0; i < n_out; i++) outs[i] = f.nodes[f.n - 1 - fz_byte(&b) % f.n];
    plans(f.g, outs, n_out, f.flags);
    /* The backward pass of the first output's mean, if it is f32. */
    int32_t rank, at = -1;
    for (int32_t k = 0; k < f.n; k++)
      if (f.nodes[k] == outs[0] && f.kind[k] != FZ_INPUT_I32) at = k;
    if (at >= 0 && (f.flags & 4) && f.n_params > 0 && f.params[0] < outs[0]) {
      size_t n = fz_numel(f.g, outs[0], &rank);
      int32_t axes[RLX_MAX_RANK];
      for (int32_t i = 0; i < rank; i++) axes[i] = i;
      rlx_node loss = n == 1 && rank == 0 ? outs[0] : rlx_reduce_mean(f.g, outs[0], axes, rank, 0);
      if (loss != RLX_NO_NODE) {
        int32_t n_wrt = 0;
        rlx_node wrt[FZ_MAX_NODES];
        for (int32_t i = 0; i < f.n_params; i++)
          if (f.params[i] < outs[0]) wrt[n_wrt++] = f.params[i];
        rlx_status st = rlx_grad_with_loss(f.g, loss, wrt, n_wrt, outs);
        fz_check_status(st, "grad");
        if (st == RLX_OK) plans(f.g, outs, n_wrt + 1, f.flags);
      }
    }
  }
  rlx_graph_free(f.g);
  return 0;
}
