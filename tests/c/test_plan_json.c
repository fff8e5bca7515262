/* test_plan_json.c - pins the plan documents (JSON) of the two GPU
 * backends: one small inference plan (matmul, a constant bias, relu, a
 * reshape view, softmax) and one SGD training step of it (assignments),
 * each compiled for RLX_DEVICE_WEBGPU and RLX_DEVICE_WEBGL, must give the
 * document in tests/c/golden/plan_<backend>_<plan>.json byte for byte,
 * except that strings longer than 160 characters (the WGSL / GLSL sources,
 * which change with the shaders) are compared as "<long string>".  The JS
 * executors (web/runtime/webgpu.js, webgl.js) parse these documents, so a
 * change here must be deliberate.
 * RLX_REGEN_GOLDEN=1 rewrites the golden files; RLX_PLAN_JSON_DUMP=dir
 * writes the full documents (sources included) into dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/webgl/gl_plan.h"
#include "../../src/webgpu/webgpu_plan.h"

#define LONG_STRING 160

/* doc with every JSON string longer than LONG_STRING characters (escapes
 * counted as written) replaced by "<long string>"; malloc'ed. */
static char *elide_long_strings(const char *doc) {
  size_t n = strlen(doc), o = 0;
  char *out = malloc(n + 1);
  assert_non_null(out);
  for (size_t i = 0; i < n;) {
    if (doc[i] != '"') {
      out[o++] = doc[i++];
      continue;
    }
    size_t j = i + 1;
    while (j < n && doc[j] != '"') j += doc[j] == '\\' ? 2 : 1;
    size_t len = j - i - 1;
    if (len > LONG_STRING) {
      memcpy(out + o, "\"<long string>\"", 15);
      o += 15;
    } else {
      memcpy(out + o, doc + i, len + 2);
      o += len + 2;
    }
    i = j + 1;
  }
  out[o] = 0;
  return out;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf) return NULL;
  buf[got] = 0;
  return buf;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fwrite(text, 1, strlen(text), f);
  fclose(f);
}

static void check_document(const char *name, const char *doc) {
  assert_non_null(doc);
  const char *dump = getenv("RLX_PLAN_JSON_DUMP");
  char path[512];
  if (dump && *dump) {
    snprintf(path, sizeof path, "%s/%s.json", dump, name);
    write_file(path, doc);
  }
  char *got = elide_long_strings(doc);
  snprintf(path, sizeof path, "tests/c/golden/%s.json", name);
  const char *regen = getenv("RLX_REGEN_GOLDEN");
  if (regen && *regen == '1') write_file(path, got);
  char *want = read_file(path);
  if (!want) {
    print_error("%s: cannot read %s (run from the repository root; RLX_REGEN_GOLDEN=1 writes it)\n", name, path);
    free(got);
    fail();
  }
  if (strcmp(got, want) != 0) {
    size_t at = 0;
    while (got[at] && got[at] == want[at]) at++;
    print_error("%s: the plan document differs from %s at byte %zu:\n got  ...%.80s\n want ...%.80s\n", name, path,
                at, got + (at > 20 ? at - 20 : 0), want + (at > 20 ? at - 20 : 0));
    free(got);
    free(want);
    fail();
  }
  free(got);
  free(want);
}

/* y = softmax(reshape(relu(x @ w + c), [3, 2])) with x [2, 4], w [4, 3]. */
static rlx_node small_model(rlx_graph *g, rlx_node *w) {
  int32_t xd[2] = {2, 4}, wd[2] = {4, 3}, cd[1] = {3}, rd[2] = {3, 2};
  const float c[3] = {0.5f, -1.0f, 2.0f};
  rlx_node x = rlx_input(g, "x", 2, xd, RLX_F32);
  *w = rlx_param(g, "w", 2, wd);
  rlx_node h = rlx_relu(g, rlx_add(g, rlx_matmul(g, x, *w), rlx_constant(g, 1, cd, c)));
  return rlx_softmax(g, rlx_reshape(g, h, 2, rd), 1);
}

static const char *document(rlx_session *s, rlx_device d) {
  return d == RLX_DEVICE_WEBGPU ? rlx_session_webgpu_plan(s, NULL) : rlx_session_webgl_plan(s, NULL);
}

static void pin(rlx_device d, const char *backend) {
  char name[64];
  rlx_compile_options opt = {d, 0, 0, 0};
  /* inference */
  rlx_graph *g = rlx_graph_new();
  rlx_node w, y = small_model(g, &w);
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_OK);
  snprintf(name, sizeof name, "plan_%s_infer", backend);
  check_document(name, document(s, d));
  rlx_session_free(s);
  rlx_graph_free(g);
  /* one SGD step on mean(y * y) */
  g = rlx_graph_new();
  y = small_model(g, &w);
  const int32_t axes[2] = {0, 1};
  rlx_node loss = rlx_reduce_mean(g, rlx_mul(g, y, y), axes, 2, 0);
  rlx_optimizer sgd = {RLX_OPT_SGD, 0.1f, 0, 0, 0, 0, 0};
  s = NULL;
  assert_int_equal(rlx_compile_train(g, loss, &w, 1, &sgd, &opt, &s), RLX_OK);
  snprintf(name, sizeof name, "plan_%s_train", backend);
  check_document(name, document(s, d));
  rlx_session_free(s);
  rlx_graph_free(g);
}

static void webgpu_documents(void **state) {
  (void)state;
  pin(RLX_DEVICE_WEBGPU, "webgpu");
}

static void webgl_documents(void **state) {
  (void)state;
  pin(RLX_DEVICE_WEBGL, "webgl");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(webgpu_documents),
      cmocka_unit_test(webgl_documents),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
