/* test_webgl_plan.c - the WebGL2 planner and lowerings, natively: every op
 * case (tests/c/cases_*.c) compiled for RLX_DEVICE_WEBGL and run through
 * the C reference executor (the shaders' C twins, with poisoned pass
 * outputs), twice, against the CPU executor on the same inputs (1e-5
 * relative, or the case's larger tolerance).  Every op has a WebGL2
 * lowering: a case refused for a missing one runs, and fails.  Fused ops,
 * built by hand in cases_fused.c, are never lowered (WebGL plans compile
 * without fusion) and are only counted.
 * Planner tests: texture layout within max_width, textures reused once
 * their values are dead, views sharing textures, the plan document,
 * training steps with assignments, allocation failures, packed matmuls
 * writing 4-floats-per-texel outputs directly, add/sub of a product
 * fused into one pass.
 * Usage: test_webgl_plan [substring]  runs only op cases whose name has it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../../src/webgl/gl_plan.h"
#include "check_alloc.h"
#include "rlx_gguf.h"
#include "webgl_cases.h"

static int n_pending, n_fused;
static char pending_ops[2048];

static void note_skip(const webgl_case *w) {
  if (w->fused) {
    n_fused++;
    return;
  }
  n_pending++;
  const char *op = strstr(w->message, "webgl: op ");
  if (!op) return;
  char name[64];
  if (sscanf(op + 10, "%63s", name) != 1) return;
  char key[70];
  snprintf(key, sizeof key, " %s", name);
  if (!strstr(pending_ops, key) && strlen(pending_ops) + strlen(key) + 1 < sizeof pending_ops) strcat(pending_ops, key);
}

static void run_case(void **state) {
  const op_case *c = *state;
  webgl_case w;
  rlx_status st = webgl_case_prepare(&w, c);
  if (st != RLX_OK) {
    print_error("case %s: %s%s\n", c->name, w.message,
                w.pending ? " (and no src/webgl/lower_pending_*.c remains)" : "");
    webgl_case_free(&w);
    fail();
  }
  float *first = malloc((w.n_out ? w.n_out : 1) * sizeof(float));
  for (int run = 0; run < 2; run++) {
    if ((st = webgl_case_refeed(&w)) != RLX_OK || (st = rlx_session_run(w.gl)) != RLX_OK) {
      print_error("case %s: WebGL2 reference run %d: %s\n", c->name, run, rlx_last_error());
      free(first);
      webgl_case_free(&w);
      fail();
    }
    const float *got = rlx_session_output(w.gl, 0);
    size_t worst;
    double err = webgl_case_max_err(got, w.cpu_out, w.n_out, &worst);
    if (!(err <= webgl_case_tol(c))) {
      print_error("case %s run %d: max error %.3g > %.3g at %zu: webgl %.9g cpu %.9g\n", c->name, run, err, webgl_case_tol(c),
                  worst, (double)got[worst], (double)w.cpu_out[worst]);
      free(first);
      webgl_case_free(&w);
      fail();
    }
    if (run == 0) memcpy(first, got, w.n_out * sizeof(float));
    else assert_true(webgl_case_max_err(got, first, w.n_out, NULL) == 0); /* runs repeat exactly */
  }
  free(first);
  webgl_case_free(&w);
}

/* ---- planner tests ------------------------------------------------------ */

static rlx_session *compile_gl(rlx_graph *g, rlx_node *outs, int32_t n) {
  rlx_compile_options opt = {RLX_DEVICE_WEBGL, 0, 1, 0};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, outs, n, &opt, &s), RLX_OK);
  return s;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) x[i] = opcase_uniform(seed, i, -2.0f, 2.0f);
}

/* A 10000-element tensor with max_width 32: every texture at most 32
 * wide, near square below that; the 10000 values, which only flat-safe
 * shaders touch, 4 per texel: 32 x 79 texels (the last row partly
 * padding); and the results still right. */
static void layout_respects_max_width(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  int32_t dims[2] = {100, 100};
  rlx_node x = rlx_input(g, "x", 2, dims, RLX_F32), b = rlx_param(g, "b", 1, &dims[1]);
  rlx_node y = rlx_tanh(g, rlx_add(g, rlx_permute(g, x, (int32_t[]){1, 0}), b));
  rlx_session *s = compile_gl(g, &y, 1);
  assert_int_equal(rlx_gl_prepare(s, 32), RLX_OK);
  const rlx_gl_state *w = rlx_gl_state_of(s);
  for (int32_t t = 0; t < w->n_tex; t++) {
    const size_t texels = w->tex[t].v4 ? (w->tex[t].count + 3) / 4 : w->tex[t].count;
    assert_true(w->tex[t].width <= 32);
    assert_true((size_t)w->tex[t].width * (size_t)w->tex[t].height >= texels);
    assert_true((size_t)w->tex[t].width * (size_t)(w->tex[t].height - 1) < texels);
    if (w->tex[t].count == 10000) {
      assert_int_equal(w->tex[t].v4, 1);
      assert_int_equal(w->tex[t].height, 79);
    }
    if (w->tex[t].count == 100) assert_int_equal(w->tex[t].width, 5); /* 25 texels: 5 x 5 */
  }
  float xs[10000], bs[100], want[10000];
  fill(xs, 10000, 1);
  fill(bs, 100, 2);
  for (int i = 0; i < 100; i++)
    for (int j = 0; j < 100; j++) want[i * 100 + j] = tanhf(xs[j * 100 + i] + bs[j]);
  assert_int_equal(rlx_session_set_input(s, "x", xs, 10000), RLX_OK);
  assert_int_equal(rlx_session_set_param(s, "b", bs, 100), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_true(webgl_case_max_err(rlx_session_output(s, 0), want, 10000, NULL) <= 1e-5);
  size_t len = 0;
  const char *json = rlx_session_webgl_plan(s, &len);
  assert_non_null(json);
  assert_int_equal(strlen(json), len);
  assert_non_null(strstr(json, "\"max_width\":32"));
  assert_non_null(strstr(json, "\"width\":32,\"height\":79,\"count\":10000"));
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* A chain of 12 same-sized ops needs only 2 value textures (dead values
 * hand theirs on), a pass never writes a texture it reads, and values of
 * another size never share. */
static void textures_are_reused_when_dead(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  int32_t n = 37, m = 5;
  rlx_node x = rlx_input(g, "x", 1, &n, RLX_F32), y = x;
  for (int i = 0; i < 12; i++) y = i % 2 ? rlx_neg(g, y) : rlx_sigmoid(g, y);
  rlx_node z = rlx_narrow(g, y, 0, 3, m);
  rlx_session *s = compile_gl(g, &z, 1);
  const rlx_gl_state *w = rlx_gl_state_of(s);
  int values = 0;
  for (int32_t t = 0; t < w->n_tex; t++) {
    if (w->tex[t].role == RLX_GLK_VALUE && w->tex[t].count == (size_t)n) values++;
  }
  assert_int_equal(values, 2);
  assert_int_equal(w->n_passes, 13);
  for (int32_t i = 0; i < w->n_passes; i++)
    for (int32_t k = 0; k < w->passes[i].pass.n_inputs; k++) assert_int_not_equal(w->passes[i].in_tex[k], w->passes[i].out_tex);
  assert_int_equal(w->tex[w->node_tex[s->plan.outputs[0]]].count, (size_t)m);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* Passes of node id with shader `shader`. */
static int count_passes(const rlx_gl_state *w, int32_t id, const char *shader) {
  int c = 0;
  for (int32_t i = 0; i < w->n_passes; i++) c += w->passes[i].node == id && strcmp(w->passes[i].pass.shader, shader) == 0;
  return c;
}

/* A packed matmul whose output holds 4 floats per texel and has N % 4 == 0
 * writes it directly (no unpack4 pass); with N % 4 != 0 the unpack stays.
 * The relus after them read 4 floats per texel at once (F4_0 = 2).  Both
 * products still match a plain triple loop. */
static void packed_matmul_writes_v4_outputs(void **state) {
  (void)state;
  enum { M = 6, K = 20, N1 = 8, N2 = 10 };
  rlx_graph *g = rlx_graph_new();
  int32_t da[2] = {M, K}, db[2] = {K, N1}, dc[2] = {K, N2};
  rlx_node a = rlx_input(g, "a", 2, da, RLX_F32), b = rlx_input(g, "b", 2, db, RLX_F32), c = rlx_input(g, "c", 2, dc, RLX_F32);
  rlx_node y1 = rlx_matmul(g, a, b), y2 = rlx_matmul(g, a, c);
  rlx_node outs[2] = {rlx_relu(g, y1), rlx_relu(g, y2)};
  rlx_session *s = compile_gl(g, outs, 2);
  const rlx_gl_state *w = rlx_gl_state_of(s);
  const rlx_graph *pg = &s->plan.graph;
  int32_t id1 = -1, id2 = -1, r1 = -1;
  for (int32_t id = 0; id < pg->n_nodes; id++) {
    if (pg->nodes[id].op == RLX_OP_MATMUL) {
      if (pg->nodes[id].shape.dims[1] == N1) id1 = id;
      else id2 = id;
    }
    if (pg->nodes[id].op == RLX_OP_RELU && pg->nodes[id].shape.dims[1] == N1) r1 = id;
  }
  assert_true(id1 >= 0 && id2 >= 0 && r1 >= 0);
  assert_true(w->tex[w->node_tex[id1]].v4);
  assert_int_equal(count_passes(w, id1, "matmul_packed"), 1);
  assert_int_equal(count_passes(w, id1, "unpack4"), 0);
  assert_int_equal(count_passes(w, id2, "unpack4"), 1);
  for (int32_t i = 0; i < w->n_passes; i++) {
    const rlx_gl_planned_pass *pp = &w->passes[i];
    if (pp->node == id1 && strcmp(pp->pass.shader, "matmul_packed") == 0) assert_int_equal(pp->out_tex, w->node_tex[id1]);
    if (pp->node == r1) assert_int_equal(rlx_gl_define_value(&pp->pass, "F4_0", 0), 2);
  }
  float xa[M * K], xb[K * N1], xc[K * N2], want1[M * N1], want2[M * N2];
  fill(xa, M * K, 11);
  fill(xb, K * N1, 12);
  fill(xc, K * N2, 13);
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N1; j++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += xa[i * K + k] * xb[k * N1 + j];
      want1[i * N1 + j] = acc < 0.0f ? 0.0f : acc;
    }
    for (int j = 0; j < N2; j++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += xa[i * K + k] * xc[k * N2 + j];
      want2[i * N2 + j] = acc < 0.0f ? 0.0f : acc;
    }
  }
  assert_int_equal(rlx_session_set_input(s, "a", xa, M * K), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "b", xb, K * N1), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "c", xc, K * N2), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_true(webgl_case_max_err(rlx_session_output(s, 0), want1, M * N1, NULL) <= 1e-5);
  assert_true(webgl_case_max_err(rlx_session_output(s, 1), want2, M * N2, NULL) <= 1e-5);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* Matmul operands that are 4-floats-per-texel op inputs, one matrix row per
 * texture line, are read as they lie, in a training step of relu(x . W)
 * (x [B, K], W [K, N], K and N multiples of 4).  B = 6: the forward
 * matmul_packed packs nothing (x along its lines, W with B_KN); the weight
 * gradient x^T . dh (K = 6) packs both.  B = 8: both products are
 * matmul_block4 (the gradient with A_KM: x^T read along x's lines) into a
 * 4-layer temp, then unblock4, and nothing is packed.  W and its update
 * keep one line width (N / 4), so the assignment can swap textures; W
 * follows the CPU session's every step. */
static void check_lined_training(int32_t B) {
  enum { K = 12, N = 8 };
  rlx_session *sess[2] = {NULL, NULL};
  rlx_graph *gs[2];
  float xv[8 * K], w0[K * N];
  fill(xv, (size_t)B * K, 21);
  fill(w0, K * N, 22);
  for (int dev = 0; dev < 2; dev++) {
    rlx_graph *g = gs[dev] = rlx_graph_new();
    int32_t dx[2] = {B, K}, dw[2] = {K, N};
    rlx_node x = rlx_input(g, "x", 2, dx, RLX_F32), w = rlx_param(g, "w", 2, dw);
    rlx_node h = rlx_relu(g, rlx_matmul(g, x, w));
    int32_t axes[2] = {0, 1};
    rlx_node loss = rlx_reduce_sum(g, rlx_mul(g, h, h), axes, 2, 0);
    rlx_optimizer opt = {RLX_OPT_SGD, 0.01f, 0, 0, 0, 0, 0};
    rlx_compile_options copt = {dev ? RLX_DEVICE_WEBGL : RLX_DEVICE_CPU, 0, 1, 0};
    assert_int_equal(rlx_compile_train(g, loss, &w, 1, &opt, &copt, &sess[dev]), RLX_OK);
    assert_int_equal(rlx_session_set_param(sess[dev], "w", w0, K * N), RLX_OK);
    assert_int_equal(rlx_session_set_input(sess[dev], "x", xv, (size_t)B * K), RLX_OK);
  }
  const rlx_gl_state *gw = rlx_gl_state_of(sess[1]);
  const rlx_plan *p = &sess[1]->plan;
  int32_t fwd = -1, grad = -1, wid = p->params[0];
  const char *mm = B == 8 ? "matmul_block4" : "matmul_packed";
  for (int32_t i = 0; i < gw->n_passes; i++) {
    const rlx_gl_planned_pass *pp = &gw->passes[i];
    if (pp->node < 0 || strcmp(pp->pass.shader, mm) != 0) continue;
    const rlx_node_t *mn = &p->graph.nodes[pp->node];
    if (mn->shape.dims[0] == B) {
      fwd = pp->node;
      assert_int_equal(rlx_gl_define_value(&pp->pass, B == 8 ? "A_KM" : "B_KN", 0), B == 8 ? 0 : 1);
    }
    if (mn->shape.dims[0] == K) {
      grad = pp->node;
      if (B == 8) assert_int_equal(rlx_gl_define_value(&pp->pass, "A_KM", 0), 1);
    }
    if (B == 8) assert_int_equal(gw->tex[pp->out_tex].layers, 4);
  }
  assert_true(fwd >= 0 && grad >= 0);
  assert_int_equal(count_passes(gw, fwd, "pack4"), 0);
  assert_int_equal(count_passes(gw, grad, "pack4"), B == 8 ? 0 : 2);
  assert_int_equal(count_passes(gw, fwd, "unblock4"), B == 8);
  assert_int_equal(count_passes(gw, grad, "unblock4"), B == 8);
  const rlx_gl_texture *tw = &gw->tex[gw->node_tex[wid]];
  assert_true(tw->v4);
  assert_int_equal(tw->line, N / 4);
  assert_int_equal(tw->width, N / 4);
  assert_int_equal(tw->height, K);
  for (int32_t i = 0; i < p->n_outputs; i++)
    if (p->assign_param[i] == 0) {
      const rlx_gl_texture *tf = &gw->tex[gw->node_tex[p->outputs[i]]];
      assert_int_equal(tf->width, tw->width);
      assert_int_equal(tf->height, tw->height);
    }
  const char *json = rlx_session_webgl_plan(sess[1], NULL);
  assert_non_null(json);
  assert_true((strstr(json, "\"layers\":4") != NULL) == (B == 8));
  for (int step = 0; step < 3; step++) {
    float loss[2], wv[2][K * N];
    for (int dev = 0; dev < 2; dev++) {
      assert_int_equal(rlx_session_run(sess[dev]), RLX_OK);
      assert_int_equal(rlx_session_read_output(sess[dev], 0, &loss[dev], 1), RLX_OK);
      assert_int_equal(rlx_session_get_param(sess[dev], "w", wv[dev], K * N), RLX_OK);
    }
    assert_true(webgl_case_max_err(&loss[1], &loss[0], 1, NULL) <= 1e-4);
    assert_true(webgl_case_max_err(wv[1], wv[0], K * N, NULL) <= 1e-5);
  }
  for (int dev = 0; dev < 2; dev++) {
    rlx_session_free(sess[dev]);
    rlx_graph_free(gs[dev]);
  }
}

static void matmul_reads_lined_operands(void **state) {
  (void)state;
  check_lined_training(6);
  check_lined_training(8);
}

/* sub(a, mul(b, s)) with the product read by nothing else is one pass
 * (binary.frag with MUL3, 3 inputs) and still right; when the product is
 * also an output it keeps its own pass and texture. */
static void sub_of_product_is_one_pass(void **state) {
  (void)state;
  enum { L = 30 };
  for (int keep = 0; keep < 2; keep++) {
    rlx_graph *g = rlx_graph_new();
    int32_t n = L;
    rlx_node a = rlx_input(g, "a", 1, &n, RLX_F32), b = rlx_input(g, "b", 1, &n, RLX_F32);
    rlx_node m = rlx_mul(g, rlx_scalar(g, 0.25f), b), y = rlx_sub(g, a, m);
    rlx_node outs[2] = {y, m};
    rlx_session *s = compile_gl(g, outs, keep ? 2 : 1);
    const rlx_gl_state *w = rlx_gl_state_of(s);
    assert_int_equal(w->n_passes, keep ? 2 : 1);
    if (!keep) {
      assert_int_equal(w->passes[0].pass.n_inputs, 3);
      assert_int_equal(rlx_gl_define_value(&w->passes[0].pass, "MUL3", 0), 1);
    }
    float xa[L], xb[L], want[L];
    fill(xa, L, 21);
    fill(xb, L, 22);
    for (int i = 0; i < L; i++) want[i] = xa[i] - 0.25f * xb[i];
    assert_int_equal(rlx_session_set_input(s, "a", xa, L), RLX_OK);
    assert_int_equal(rlx_session_set_input(s, "b", xb, L), RLX_OK);
    assert_int_equal(rlx_session_run(s), RLX_OK);
    assert_true(webgl_case_max_err(rlx_session_output(s, 0), want, L, NULL) <= 1e-6);
    rlx_session_free(s);
    rlx_graph_free(g);
  }
}

/* A reshape is a view: no pass, the same texture as its input. */
static void views_share_textures(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  int32_t dims[2] = {3, 4}, flat = 12;
  rlx_node x = rlx_input(g, "x", 2, dims, RLX_F32);
  rlx_node e = rlx_exp(g, x), r = rlx_reshape(g, e, 1, &flat), y = rlx_relu(g, r);
  rlx_node outs[2] = {y, r};
  rlx_session *s = compile_gl(g, outs, 2);
  const rlx_gl_state *w = rlx_gl_state_of(s);
  assert_int_equal(w->n_passes, 2);
  float xs[12], want[12];
  fill(xs, 12, 3);
  for (int i = 0; i < 12; i++) want[i] = expf(xs[i]);
  assert_int_equal(rlx_session_set_input(s, "x", xs, 12), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_true(webgl_case_max_err(rlx_session_output(s, 1), want, 12, NULL) <= 1e-6);
  assert_true(webgl_case_max_err(rlx_session_output(s, 0), want, 12, NULL) <= 1e-6);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* The plan document: programs deduplicated by shader and defines, passes,
 * constants with their data (NaN and infinities as strings). */
static void plan_document(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  int32_t n = 4;
  rlx_node x = rlx_input(g, "x", 1, &n, RLX_F32), ids = rlx_input(g, "ids", 1, &n, RLX_I32);
  rlx_node c = rlx_constant(g, 1, &n, (const float[]){1.5f, NAN, INFINITY, -INFINITY});
  rlx_node rows = rlx_gather(g, rlx_reshape(g, x, 2, (int32_t[]){4, 1}), ids);
  rlx_node y = rlx_add(g, rlx_add(g, x, c), rlx_reshape(g, rows, 1, &n));
  rlx_session *s = compile_gl(g, &y, 1);
  const char *json = rlx_session_webgl_plan(s, NULL);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"format\":\"rlx-webgl-plan\""));
  assert_non_null(strstr(json, "\"data\":[1.5,\"NaN\",\"Infinity\",\"-Infinity\"]"));
  assert_non_null(strstr(json, "\"dtype\":\"i32\""));
  const char *programs = strstr(json, "\"programs\":["), *passes = strstr(json, "\"passes\":[");
  assert_non_null(programs);
  int n_add = 0;
  for (const char *p = programs; (p = strstr(p, "{\"shader\":\"binary\",\"defines\":[[\"OP\",0]")) && p < passes; p++) n_add++;
  assert_int_equal(n_add, 1); /* two add passes, one program */
  assert_non_null(strstr(json, "#version 300 es\\n#define OP 0\\n"));
  assert_null(strstr(json, "#include")); /* common.glsl is inlined */
  rlx_graph *g2 = rlx_graph_new();
  rlx_node x2 = rlx_input(g2, "x", 1, &n, RLX_F32);
  rlx_session *cpu = NULL;
  assert_int_equal(rlx_compile(g2, &x2, 1, NULL, &cpu), RLX_OK);
  assert_null(rlx_session_webgl_plan(cpu, NULL));
  assert_non_null(strstr(rlx_last_error(), "RLX_DEVICE_WEBGL"));
  assert_null(rlx_session_webgl_plan(NULL, NULL));
  rlx_session_free(cpu);
  rlx_graph_free(g2);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* An op without a lowering is refused at compile with a message naming it;
 * nothing leaks. */
static void missing_lowering_is_refused(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  int32_t n = 4;
  rlx_node x = rlx_input(g, "x", 1, &n, RLX_F32);
  rlx_node y = rlx_op_node(g, RLX_OP_FUSED_MATMUL, (rlx_node[]){rlx_reshape(g, x, 2, (int32_t[]){2, 2}),
                                                               rlx_reshape(g, x, 2, (int32_t[]){2, 2})},
                           2, (int32_t[]){0, 0, 0, 0, 0}, 5, NULL, 0);
  rlx_compile_options opt = {RLX_DEVICE_WEBGL, 0, 0, 0};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_ERR_UNSUPPORTED);
  assert_null(s);
  assert_non_null(strstr(rlx_last_error(), "fused_matmul"));
  rlx_graph_free(g);

  /* matmul_q and swiglu_q with xq8 (x rounded to 8 bits) run on the CPU only, on both GPU backends */
  for (int op = 0; op < 2; op++)
    for (int device = 0; device < 2; device++) {
      g = rlx_graph_new();
      int32_t words = 17; /* 2 rows of 32 q8_0 values */
      rlx_node in[3] = {rlx_input(g, "x", 2, (int32_t[]){1, 32}, RLX_F32), rlx_param_dtype(g, "w", 1, &words, RLX_I32),
                        rlx_param_dtype(g, "u", 1, &words, RLX_I32)};
      y = op ? rlx_op_node(g, RLX_OP_SWIGLU_Q, in, 3, (int32_t[]){RLX_GGUF_TYPE_Q8_0, 2, 32, 1}, 4, NULL, 0)
             : rlx_op_node(g, RLX_OP_MATMUL_Q, in, 2, (int32_t[]){RLX_GGUF_TYPE_Q8_0, 2, 32, 0, 1}, 5, NULL, 0);
      opt.device = device ? RLX_DEVICE_WEBGPU : RLX_DEVICE_WEBGL;
      assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_ERR_UNSUPPORTED);
      assert_null(s);
      assert_non_null(strstr(rlx_last_error(), op ? "swiglu_q with xq8" : "matmul_q with xq8"));
      assert_non_null(strstr(rlx_last_error(), "runs on the CPU only"));
      rlx_graph_free(g);
    }
}

/* Training: loss = (w x - t)^2 elementwise on one value, SGD.  The WebGL2
 * session's params follow the CPU session's step by step (the assignment
 * copies), and the plan lists the assignment. */
static void training_assignments(void **state) {
  (void)state;
  rlx_session *sess[2] = {NULL, NULL};
  rlx_graph *gs[2];
  for (int dev = 0; dev < 2; dev++) {
    rlx_graph *g = gs[dev] = rlx_graph_new();
    int32_t one = 1;
    rlx_node x = rlx_input(g, "x", 1, &one, RLX_F32), t = rlx_input(g, "t", 1, &one, RLX_F32);
    rlx_node w = rlx_param(g, "w", 1, &one);
    rlx_node d = rlx_sub(g, rlx_mul(g, w, x), t), loss = rlx_mul(g, d, d);
    rlx_optimizer opt = {RLX_OPT_SGD, 0.1f, 0, 0, 0, 0, 0};
    rlx_compile_options copt = {dev ? RLX_DEVICE_WEBGL : RLX_DEVICE_CPU, 0, 1, 0};
    assert_int_equal(rlx_compile_train(g, loss, &w, 1, &opt, &copt, &sess[dev]), RLX_OK);
    float w0 = 0.5f, xv = 2.0f, tv = 3.0f;
    assert_int_equal(rlx_session_set_param(sess[dev], "w", &w0, 1), RLX_OK);
    assert_int_equal(rlx_session_set_input(sess[dev], "x", &xv, 1), RLX_OK);
    assert_int_equal(rlx_session_set_input(sess[dev], "t", &tv, 1), RLX_OK);
  }
  for (int step = 0; step < 4; step++) {
    float loss[2], w[2];
    for (int dev = 0; dev < 2; dev++) {
      assert_int_equal(rlx_session_run(sess[dev]), RLX_OK);
      assert_int_equal(rlx_session_read_output(sess[dev], 0, &loss[dev], 1), RLX_OK);
      assert_int_equal(rlx_session_get_param(sess[dev], "w", &w[dev], 1), RLX_OK);
    }
    assert_true(webgl_case_max_err(&loss[1], &loss[0], 1, NULL) <= 1e-6);
    assert_true(webgl_case_max_err(&w[1], &w[0], 1, NULL) <= 1e-6);
  }
  const char *json = rlx_session_webgl_plan(sess[1], NULL);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"param\":\"w\"}]"));
  assert_non_null(strstr(json, "\"op\":\"assign\""));
  for (int dev = 0; dev < 2; dev++) {
    rlx_session_free(sess[dev]);
    rlx_graph_free(gs[dev]);
  }
}

static rlx_status compile_run_and_plan(void) {
  rlx_graph *g = rlx_graph_new();
  if (!g) return RLX_ERR_NO_MEMORY;
  int32_t dims[2] = {3, 4}, n = 8;
  rlx_node x = rlx_input(g, "x", 2, dims, RLX_F32), w = rlx_param(g, "w", 1, &dims[1]);
  rlx_node parts[3] = {rlx_gelu(g, x), rlx_mul(g, x, w), rlx_exp(g, x)};
  for (int i = 0; i < 3; i++) parts[i] = rlx_reshape(g, parts[i], 1, (int32_t[]){12});
  rlx_node y = rlx_concat(g, parts, 3, 0), z = rlx_narrow(g, y, 0, 4, n);
  rlx_compile_options opt = {RLX_DEVICE_WEBGL, 0, 1, 0};
  rlx_session *s = NULL;
  rlx_status st = rlx_compile(g, &z, 1, &opt, &s);
  rlx_graph_free(g);
  if (st != RLX_OK) return st;
  float xs[12] = {0};
  st = rlx_session_set_input(s, "x", xs, 12);
  if (st == RLX_OK) st = rlx_session_run(s);
  if (st == RLX_OK && !rlx_session_webgl_plan(s, NULL)) st = RLX_ERR_NO_MEMORY;
  rlx_session_free(s);
  return st;
}

/* Every allocation in compile, run and the plan document may fail: a clear
 * status, no crash, no leak (under ASan). */
static void allocation_failures_are_reported(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  int succeeded = 0;
  size_t live = check_alloc_live_blocks();
  for (long budget = 0; budget < 400 && !succeeded; budget++) {
    check_alloc_fail_at(budget, 1); /* budget allocations succeed, then none */
    rlx_status st = compile_run_and_plan();
    assert_int_equal(check_alloc_live_blocks(), live); /* nothing leaked */
    if (st == RLX_OK) succeeded = 1;
    else assert_true(st == RLX_ERR_NO_MEMORY || st == RLX_ERR_SHAPE || st == RLX_ERR_GRAPH || st == RLX_ERR_INVALID_ARG);
  }
  check_alloc_fail_at(-1, 0);
  assert_true(succeeded);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  const struct CMUnitTest planner[] = {
      cmocka_unit_test(layout_respects_max_width),   cmocka_unit_test(textures_are_reused_when_dead),
      cmocka_unit_test(views_share_textures),        cmocka_unit_test(plan_document),
      cmocka_unit_test(missing_lowering_is_refused), cmocka_unit_test(training_assignments),
      cmocka_unit_test(allocation_failures_are_reported), cmocka_unit_test(packed_matmul_writes_v4_outputs),
      cmocka_unit_test(matmul_reads_lined_operands),
      cmocka_unit_test(sub_of_product_is_one_pass),
  };
  int failed = filter ? 0 : cmocka_run_group_tests_name("webgl planner", planner, NULL, NULL);
  int n = opcase_gpu_count(), m = 0;
  struct CMUnitTest *tests = calloc((size_t)n + 1, sizeof *tests);
  for (int i = 0; i < n; i++) {
    const op_case *c = opcase_get(i);
    if (filter && !strstr(c->name, filter)) continue;
    /* Fused cases are counted, not run; any other refused case runs and fails. */
    webgl_case w;
    webgl_case_prepare(&w, c);
    int refused = w.pending && w.fused;
    if (refused) note_skip(&w);
    webgl_case_free(&w);
    if (refused) continue;
    tests[m].name = c->name;
    tests[m].test_func = run_case;
    tests[m].initial_state = (void *)c;
    m++;
  }
  clock_t t0 = clock();
  if (m > 0) failed += _cmocka_run_group_tests("webgl op cases (reference executor vs CPU)", tests, (size_t)m, NULL, NULL);
  double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
  printf("webgl: %d op cases ran in %.3f s; not run: %d with a fused or CPU-only op, or a CPU and WebGPU variant (never lowered)%s%s\n", m, secs, n_fused,
         n_pending ? "; refused for a missing lowering: " : "", n_pending ? pending_ops + 1 : "");
  free(tests);
  return failed;
}
