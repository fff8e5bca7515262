/* plan_json.c - the plan document of a WebGL2 session
 * (rlx_session_webgl_plan), which web/runtime/webgl.js replays:
 *
 *   {"format": "rlx-webgl-plan", "version": 1, "max_width": W,
 *    "textures": [{"width", "height", "count", "role": "input" | "param" |
 *                  "constant" | "value" | "temp", "node",
 *                  "packed": texels per row (RGBA32F temps only, 4 floats
 *                  per texel, gl_plan.h rlx_gl_packed_layout),
 *                  "v4": 1 (RGBA32F, 4 consecutive floats per texel; the
 *                  passes writing it have the define RLX_V4, readers get
 *                  its width negated in u_in<k>_w),
 *                  "layers": n (a packed temp of n layers: a TEXTURE_2D_ARRAY,
 *                  its framebuffer drawing layer j into COLOR_ATTACHMENTj),
 *                  "data": [...] (constants only)}],
 *    "inputs":  [{"name", "texture", "count", "shape", "dtype": "f32" |
 *                 "i32", "needed"}],
 *    "params":  [{"name", "texture", "count", "shape"}],
 *    "outputs": [{"texture", "count", "shape"}],          (user outputs)
 *    "programs": [{"shader", "defines": [[name, value]], "source"}],
 *    "passes":  [{"program", "op", "node", "inputs": [texture...],
 *                 "output": texture, "ints": [...], "floats": [...]}],
 *    "assignments": [{"from", "to", "param"}]}
 *
 * Programs are the distinct (shader, defines) pairs; "source" is the full
 * fragment shader (rlx_gl_program_source).  Passes run in order; the last
 * ones are the training assignments' copies (op "assign", node -1), also
 * listed under "assignments".  A pass binds its inputs to u_in0.. in order
 * and sets u_in<k>_w to their widths, u_i / u_f to ints / floats, u_out_w /
 * u_out_n to the output texture's width and count.  Floats that JSON
 * cannot hold are the strings "NaN", "Infinity", "-Infinity".  i32 inputs
 * are uploaded as float values of the integers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gl_plan.h"

void rlx_gl_text_append(rlx_gl_text *t, const char *s, size_t n) {
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

void rlx_gl_text_printf(rlx_gl_text *t, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = 1;
  } else if ((size_t)n < sizeof small) {
    rlx_gl_text_append(t, small, (size_t)n);
  } else {
    char *big = rlx_malloc((size_t)n + 1);
    if (!big) {
      t->failed = 1;
      return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rlx_gl_text_append(t, big, (size_t)n);
    rlx_free(big, (size_t)n + 1);
  }
}

/* Appends src with every line `#include "name.ext"` replaced by the
 * embedded source `name` (one level deep is all the shaders use, but
 * nesting works up to `depth`). */
static int append_expanded(rlx_gl_text *t, const char *src, int depth) {
  while (*src) {
    const char *end = strchr(src, '\n');
    size_t n = end ? (size_t)(end - src) + 1 : strlen(src);
    const char *q1;
    if (strncmp(src, "#include \"", 10) == 0 && (q1 = memchr(src + 10, '"', n - 10)) != NULL) {
      char name[64];
      size_t len = (size_t)(q1 - (src + 10));
      const char *dot = memchr(src + 10, '.', len);
      if (dot) len = (size_t)(dot - (src + 10));
      if (len >= sizeof name || depth <= 0) return 0;
      memcpy(name, src + 10, len);
      name[len] = 0;
      const char *inc = rlx_glsl_source(name);
      if (!inc || !append_expanded(t, inc, depth - 1)) return 0;
      if (t->len && t->buf[t->len - 1] != '\n') rlx_gl_text_append(t, "\n", 1);
    } else {
      rlx_gl_text_append(t, src, n);
    }
    src += n;
  }
  return 1;
}

int rlx_gl_program_source(rlx_gl_text *t, const rlx_gl_pass *p) {
  const char *src = p->shader ? rlx_glsl_source(p->shader) : NULL;
  if (!src) return 0;
  /* The #version line stays first; the defines follow it. */
  const char *nl = strchr(src, '\n');
  if (strncmp(src, "#version", 8) != 0 || !nl) return 0;
  rlx_gl_text_append(t, src, (size_t)(nl - src) + 1);
  for (int32_t k = 0; k < p->n_defines; k++)
    rlx_gl_text_printf(t, "#define %s %d\n", p->define_names[k], (int)p->define_values[k]);
  return append_expanded(t, nl + 1, 4);
}

static void json_string(rlx_gl_text *t, const char *s) {
  rlx_gl_text_append(t, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      char esc[2] = {'\\', (char)c};
      rlx_gl_text_append(t, esc, 2);
    } else if (c == '\n') {
      rlx_gl_text_append(t, "\\n", 2);
    } else if (c < 0x20) {
      rlx_gl_text_printf(t, "\\u%04x", c);
    } else {
      rlx_gl_text_append(t, (const char *)&c, 1);
    }
  }
  rlx_gl_text_append(t, "\"", 1);
}

static void json_float(rlx_gl_text *t, float v) {
  if (isnan(v))
    rlx_gl_text_append(t, "\"NaN\"", 5);
  else if (isinf(v))
    rlx_gl_text_printf(t, "\"%sInfinity\"", v < 0 ? "-" : "");
  else
    rlx_gl_text_printf(t, "%.9g", (double)v);
}

static void json_shape(rlx_gl_text *t, const rlx_shape *s) {
  rlx_gl_text_append(t, "[", 1);
  for (int32_t d = 0; d < s->rank; d++) rlx_gl_text_printf(t, "%s%d", d ? "," : "", (int)s->dims[d]);
  rlx_gl_text_append(t, "]", 1);
}

static int same_program(const rlx_gl_pass *a, const rlx_gl_pass *b) {
  if (strcmp(a->shader, b->shader) != 0 || a->n_defines != b->n_defines) return 0;
  for (int32_t k = 0; k < a->n_defines; k++)
    if (strcmp(a->define_names[k], b->define_names[k]) != 0 || a->define_values[k] != b->define_values[k]) return 0;
  return 1;
}

static const char *role_name(rlx_gl_tex_role r) {
  static const char *names[] = {"input", "param", "constant", "value", "temp"};
  return names[r];
}

static void emit_textures(rlx_gl_text *t, const rlx_session *s) {
  const rlx_gl_state *w = s->webgl;
  rlx_gl_text_append(t, "\"textures\":[", 12);
  for (int32_t i = 0; i < w->n_tex; i++) {
    const rlx_gl_texture *x = &w->tex[i];
    rlx_gl_text_printf(t, "%s\n{\"width\":%d,\"height\":%d,\"count\":%zu,\"role\":\"%s\",\"node\":%d", i ? "," : "",
                       (int)x->width, (int)x->height, x->count, role_name(x->role), (int)x->node);
    if (x->row_texels > 0) rlx_gl_text_printf(t, ",\"packed\":%d", (int)x->row_texels);
    if (x->v4) rlx_gl_text_append(t, ",\"v4\":1", 7);
    if (x->layers > 1) rlx_gl_text_printf(t, ",\"layers\":%d", (int)x->layers);
    if (x->role == RLX_GLK_CONST) {
      const float *data = s->plan.graph.nodes[x->node].data;
      rlx_gl_text_append(t, ",\"data\":[", 9);
      for (size_t j = 0; j < x->count; j++) {
        if (j) rlx_gl_text_append(t, ",", 1);
        json_float(t, data[j]);
      }
      rlx_gl_text_append(t, "]", 1);
    }
    rlx_gl_text_append(t, "}", 1);
  }
  rlx_gl_text_append(t, "],\n", 3);
}

static void emit_io(rlx_gl_text *t, const rlx_session *s) {
  const rlx_plan *p = &s->plan;
  const rlx_gl_state *w = s->webgl;
  rlx_gl_text_append(t, "\"inputs\":[", 10);
  for (int32_t i = 0; i < p->n_inputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->inputs[i]];
    rlx_gl_text_printf(t, "%s{\"name\":", i ? "," : "");
    json_string(t, n->name);
    rlx_gl_text_printf(t, ",\"texture\":%d,\"count\":%zu,\"dtype\":\"%s\",\"needed\":%s,\"shape\":",
                       (int)w->node_tex[p->inputs[i]], rlx_shape_numel(&n->shape), n->dtype == RLX_I32 ? "i32" : "f32",
                       p->input_needed[i] ? "true" : "false");
    json_shape(t, &n->shape);
    rlx_gl_text_append(t, "}", 1);
  }
  rlx_gl_text_append(t, "],\n\"params\":[", 13);
  for (int32_t i = 0; i < p->n_params; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->params[i]];
    rlx_gl_text_printf(t, "%s{\"name\":", i ? "," : "");
    json_string(t, n->name);
    rlx_gl_text_printf(t, ",\"texture\":%d,\"count\":%zu,\"shape\":", (int)w->node_tex[p->params[i]],
                       rlx_shape_numel(&n->shape));
    json_shape(t, &n->shape);
    rlx_gl_text_append(t, "}", 1);
  }
  rlx_gl_text_append(t, "],\n\"outputs\":[", 14);
  for (int32_t i = 0; i < p->n_user_outputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->outputs[i]];
    rlx_gl_text_printf(t, "%s{\"texture\":%d,\"count\":%zu,\"shape\":", i ? "," : "", (int)w->node_tex[p->outputs[i]],
                       rlx_shape_numel(&n->shape));
    json_shape(t, &n->shape);
    rlx_gl_text_append(t, "}", 1);
  }
  rlx_gl_text_append(t, "],\n", 3);
}

/* Programs and passes over all passes (steps then assignments). */
static rlx_status emit_passes(rlx_gl_text *t, const rlx_session *s, const rlx_gl_planned_pass *all, int32_t n) {
  int32_t *program = rlx_malloc(((size_t)n + 1) * sizeof(int32_t));
  int32_t *first = rlx_malloc(((size_t)n + 1) * sizeof(int32_t)); /* program -> first pass using it */
  int32_t n_programs = 0;
  if (!program || !first) {
    rlx_free(program, ((size_t)n + 1) * sizeof(int32_t));
    rlx_free(first, ((size_t)n + 1) * sizeof(int32_t));
    return rlx_error(RLX_ERR_NO_MEMORY, "webgl plan: out of memory");
  }
  for (int32_t i = 0; i < n; i++) {
    int32_t k = 0;
    while (k < n_programs && !same_program(&all[first[k]].pass, &all[i].pass)) k++;
    if (k == n_programs) first[n_programs++] = i;
    program[i] = k;
  }
  rlx_status st = RLX_OK;
  rlx_gl_text_append(t, "\"programs\":[", 12);
  for (int32_t k = 0; k < n_programs && st == RLX_OK; k++) {
    const rlx_gl_pass *p = &all[first[k]].pass;
    rlx_gl_text_printf(t, "%s\n{\"shader\":\"%s\",\"defines\":[", k ? "," : "", p->shader);
    for (int32_t d = 0; d < p->n_defines; d++)
      rlx_gl_text_printf(t, "%s[\"%s\",%d]", d ? "," : "", p->define_names[d], (int)p->define_values[d]);
    rlx_gl_text_append(t, "],\"source\":", 11);
    rlx_gl_text src = {NULL, 0, 0, 0};
    if (!rlx_gl_program_source(&src, p) || src.failed)
      st = rlx_error(src.failed ? RLX_ERR_NO_MEMORY : RLX_ERR_STATE, "webgl plan: cannot assemble shader '%s'", p->shader);
    else
      json_string(t, src.buf);
    rlx_free(src.buf, src.cap);
    rlx_gl_text_append(t, "}", 1);
  }
  rlx_gl_text_append(t, "],\n\"passes\":[", 13);
  for (int32_t i = 0; i < n && st == RLX_OK; i++) {
    const rlx_gl_planned_pass *pp = &all[i];
    rlx_gl_text_printf(t, "%s\n{\"program\":%d,\"op\":\"%s\",\"node\":%d,\"inputs\":[", i ? "," : "", (int)program[i],
                       pp->node >= 0 ? rlx_op_name(s->plan.graph.nodes[pp->node].op) : "assign", (int)pp->node);
    for (int32_t k = 0; k < pp->pass.n_inputs; k++) rlx_gl_text_printf(t, "%s%d", k ? "," : "", (int)pp->in_tex[k]);
    rlx_gl_text_printf(t, "],\"output\":%d,\"ints\":[", (int)pp->out_tex);
    for (int32_t k = 0; k < pp->pass.n_ints; k++) rlx_gl_text_printf(t, "%s%d", k ? "," : "", (int)pp->pass.ints[k]);
    rlx_gl_text_append(t, "],\"floats\":[", 12);
    for (int32_t k = 0; k < pp->pass.n_floats; k++) {
      if (k) rlx_gl_text_append(t, ",", 1);
      json_float(t, pp->pass.floats[k]);
    }
    rlx_gl_text_append(t, "]}", 2);
  }
  rlx_gl_text_append(t, "],\n", 3);
  rlx_free(program, ((size_t)n + 1) * sizeof(int32_t));
  rlx_free(first, ((size_t)n + 1) * sizeof(int32_t));
  return st;
}

static rlx_status build_json(const rlx_session *s, rlx_gl_text *t) {
  const rlx_plan *p = &s->plan;
  const rlx_gl_state *w = s->webgl;
  size_t bytes = ((size_t)w->n_passes + (size_t)p->n_outputs + 1) * sizeof(rlx_gl_planned_pass);
  rlx_gl_planned_pass *all = rlx_malloc(bytes);
  if (!all) return rlx_error(RLX_ERR_NO_MEMORY, "webgl plan: out of memory");
  if (w->n_passes) memcpy(all, w->passes, (size_t)w->n_passes * sizeof *all);
  int32_t n_assign = rlx_gl_assignment_passes(s, all + w->n_passes);
  rlx_gl_text_printf(t, "{\"format\":\"rlx-webgl-plan\",\"version\":1,\"max_width\":%d,\n", (int)w->max_width);
  emit_textures(t, s);
  emit_io(t, s);
  rlx_status st = emit_passes(t, s, all, w->n_passes + n_assign);
  rlx_gl_text_append(t, "\"assignments\":[", 15);
  for (int32_t i = 0; i < n_assign; i++) {
    const rlx_gl_planned_pass *pp = &all[w->n_passes + i];
    int32_t param = w->tex[pp->out_tex].node;
    rlx_gl_text_printf(t, "%s{\"from\":%d,\"to\":%d,\"param\":", i ? "," : "", (int)pp->in_tex[0], (int)pp->out_tex);
    json_string(t, p->graph.nodes[param].name);
    rlx_gl_text_append(t, "}", 1);
  }
  rlx_gl_text_append(t, "]}\n", 3);
  rlx_free(all, bytes);
  if (st == RLX_OK && t->failed) st = rlx_error(RLX_ERR_NO_MEMORY, "webgl plan: out of memory");
  return st;
}

const char *rlx_session_webgl_plan(const rlx_session *cs, size_t *len) {
  if (len) *len = 0;
  if (!cs) {
    rlx_error(RLX_ERR_INVALID_ARG, "webgl_plan: session is NULL");
    return NULL;
  }
  if (!cs->webgl) {
    rlx_error(RLX_ERR_INVALID_ARG, "webgl_plan: the session was not compiled for RLX_DEVICE_WEBGL");
    return NULL;
  }
  /* The document is rebuilt on each call (training assignments are known
   * only after rlx_compile_train finished) and owned by the session. */
  rlx_session *s = (rlx_session *)cs;
  rlx_gl_text t = {NULL, 0, 0, 0};
  if (build_json(s, &t) != RLX_OK) {
    rlx_free(t.buf, t.cap);
    return NULL;
  }
  rlx_free(s->webgl->json, s->webgl->json_cap);
  s->webgl->json = t.buf;
  s->webgl->json_cap = t.cap;
  s->webgl->json_len = t.len;
  if (len) *len = t.len;
  return t.buf;
}
