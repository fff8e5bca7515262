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
 *                  "words": 1 (RGBA32I: an i32 input or param that
 *                  matmul_q / gather_q read as GGUF-typed weights, its
 *                  words uploaded unchanged, 4 per texel, the last texels
 *                  padded; shaders read it through an isampler2D),
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
 * are uploaded as float values of the integers (words textures: as they
 * are).  A pass may write an input or param texture in place (attention_kv
 * appending to its caches): it draws over all of it and discards the
 * fragments it keeps, so textures are never cleared before a draw. */
#include <stdio.h>
#include <string.h>

#include "gl_plan.h"

/* Appends src with every line `#include "name.ext"` replaced by the
 * embedded source `name` (one level deep is all the shaders use, but
 * nesting works up to `depth`). */
static int append_expanded(rlx_text *t, const char *src, int depth) {
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
      if (t->len && t->buf[t->len - 1] != '\n') rlx_text_append(t, "\n", 1);
    } else {
      rlx_text_append(t, src, n);
    }
    src += n;
  }
  return 1;
}

int rlx_gl_program_source(rlx_text *t, const rlx_gl_pass *p) {
  const char *src = p->shader ? rlx_glsl_source(p->shader) : NULL;
  if (!src) return 0;
  /* The #version line stays first; the defines follow it. */
  const char *nl = strchr(src, '\n');
  if (strncmp(src, "#version", 8) != 0 || !nl) return 0;
  rlx_text_append(t, src, (size_t)(nl - src) + 1);
  for (int32_t k = 0; k < p->n_defines; k++)
    rlx_text_printf(t, "#define %s %d\n", p->define_names[k], (int)p->define_values[k]);
  return append_expanded(t, nl + 1, 4);
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

static void emit_textures(rlx_text *t, const rlx_session *s) {
  const rlx_gl_state *w = rlx_gl_state_of(s);
  rlx_text_append(t, "\"textures\":[", 12);
  for (int32_t i = 0; i < w->n_tex; i++) {
    const rlx_gl_texture *x = &w->tex[i];
    rlx_text_printf(t, "%s\n{\"width\":%d,\"height\":%d,\"count\":%zu,\"role\":\"%s\",\"node\":%d", i ? "," : "",
                       (int)x->width, (int)x->height, x->count, role_name(x->role), (int)x->node);
    if (x->row_texels > 0) rlx_text_printf(t, ",\"packed\":%d", (int)x->row_texels);
    if (x->v4) rlx_text_append(t, ",\"v4\":1", 7);
    if (x->layers > 1) rlx_text_printf(t, ",\"layers\":%d", (int)x->layers);
    if (x->words) rlx_text_append(t, ",\"words\":1", 10);
    if (x->role == RLX_GLK_CONST) {
      const float *data = s->plan.graph.nodes[x->node].data;
      rlx_text_append(t, ",\"data\":[", 9);
      for (size_t j = 0; j < x->count; j++) {
        if (j) rlx_text_append(t, ",", 1);
        rlx_json_float(t, data[j]);
      }
      rlx_text_append(t, "]", 1);
    }
    rlx_text_append(t, "}", 1);
  }
  rlx_text_append(t, "],\n", 3);
}

static void emit_io(rlx_text *t, const rlx_session *s) {
  const rlx_plan *p = &s->plan;
  const rlx_gl_state *w = rlx_gl_state_of(s);
  rlx_text_append(t, "\"inputs\":[", 10);
  for (int32_t i = 0; i < p->n_inputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->inputs[i]];
    rlx_text_printf(t, "%s{\"name\":", i ? "," : "");
    rlx_json_string(t, n->name);
    rlx_text_printf(t, ",\"texture\":%d,\"count\":%zu,\"dtype\":\"%s\",\"needed\":%s,\"shape\":",
                       (int)w->node_tex[p->inputs[i]], rlx_shape_numel(&n->shape), n->dtype == RLX_I32 ? "i32" : "f32",
                       p->input_needed[i] ? "true" : "false");
    rlx_json_ints(t, n->shape.dims, n->shape.rank);
    rlx_text_append(t, "}", 1);
  }
  rlx_text_append(t, "],\n\"params\":[", 13);
  for (int32_t i = 0; i < p->n_params; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->params[i]];
    rlx_text_printf(t, "%s{\"name\":", i ? "," : "");
    rlx_json_string(t, n->name);
    rlx_text_printf(t, ",\"texture\":%d,\"count\":%zu,\"shape\":", (int)w->node_tex[p->params[i]],
                       rlx_shape_numel(&n->shape));
    rlx_json_ints(t, n->shape.dims, n->shape.rank);
    rlx_text_append(t, "}", 1);
  }
  rlx_text_append(t, "],\n\"outputs\":[", 14);
  for (int32_t i = 0; i < p->n_user_outputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->outputs[i]];
    rlx_text_printf(t, "%s{\"texture\":%d,\"count\":%zu,\"shape\":", i ? "," : "", (int)w->node_tex[p->outputs[i]],
                       rlx_shape_numel(&n->shape));
    rlx_json_ints(t, n->shape.dims, n->shape.rank);
    rlx_text_append(t, "}", 1);
  }
  rlx_text_append(t, "],\n", 3);
}

/* Programs and passes over all passes (steps then assignments). */
static rlx_status emit_passes(rlx_text *t, const rlx_session *s, const rlx_gl_planned_pass *all, int32_t n) {
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
  rlx_text_append(t, "\"programs\":[", 12);
  for (int32_t k = 0; k < n_programs && st == RLX_OK; k++) {
    const rlx_gl_pass *p = &all[first[k]].pass;
    rlx_text_printf(t, "%s\n{\"shader\":\"%s\",\"defines\":[", k ? "," : "", p->shader);
    for (int32_t d = 0; d < p->n_defines; d++)
      rlx_text_printf(t, "%s[\"%s\",%d]", d ? "," : "", p->define_names[d], (int)p->define_values[d]);
    rlx_text_append(t, "],\"source\":", 11);
    rlx_text src = {NULL, 0, 0, 0};
    if (!rlx_gl_program_source(&src, p) || src.failed)
      st = rlx_error(src.failed ? RLX_ERR_NO_MEMORY : RLX_ERR_STATE, "webgl plan: cannot assemble shader '%s'", p->shader);
    else
      rlx_json_string(t, src.buf);
    rlx_free(src.buf, src.cap);
    rlx_text_append(t, "}", 1);
  }
  rlx_text_append(t, "],\n\"passes\":[", 13);
  for (int32_t i = 0; i < n && st == RLX_OK; i++) {
    const rlx_gl_planned_pass *pp = &all[i];
    rlx_text_printf(t, "%s\n{\"program\":%d,\"op\":\"%s\",\"node\":%d,\"inputs\":[", i ? "," : "", (int)program[i],
                       pp->node >= 0 ? rlx_op_name(s->plan.graph.nodes[pp->node].op) : "assign", (int)pp->node);
    for (int32_t k = 0; k < pp->pass.n_inputs; k++) rlx_text_printf(t, "%s%d", k ? "," : "", (int)pp->in_tex[k]);
    rlx_text_printf(t, "],\"output\":%d,\"ints\":[", (int)pp->out_tex);
    for (int32_t k = 0; k < pp->pass.n_ints; k++) rlx_text_printf(t, "%s%d", k ? "," : "", (int)pp->pass.ints[k]);
    rlx_text_append(t, "],\"floats\":[", 12);
    for (int32_t k = 0; k < pp->pass.n_floats; k++) {
      if (k) rlx_text_append(t, ",", 1);
      rlx_json_float(t, pp->pass.floats[k]);
    }
    rlx_text_append(t, "]}", 2);
  }
  rlx_text_append(t, "],\n", 3);
  rlx_free(program, ((size_t)n + 1) * sizeof(int32_t));
  rlx_free(first, ((size_t)n + 1) * sizeof(int32_t));
  return st;
}

static rlx_status build_json(const rlx_session *s, rlx_text *t) {
  const rlx_plan *p = &s->plan;
  const rlx_gl_state *w = rlx_gl_state_of(s);
  size_t bytes = ((size_t)w->n_passes + (size_t)p->n_outputs + 1) * sizeof(rlx_gl_planned_pass);
  rlx_gl_planned_pass *all = rlx_malloc(bytes);
  if (!all) return rlx_error(RLX_ERR_NO_MEMORY, "webgl plan: out of memory");
  if (w->n_passes) memcpy(all, w->passes, (size_t)w->n_passes * sizeof *all);
  int32_t n_assign = rlx_gl_assignment_passes(s, all + w->n_passes);
  rlx_text_printf(t, "{\"format\":\"rlx-webgl-plan\",\"version\":1,\"max_width\":%d,\n", (int)w->max_width);
  emit_textures(t, s);
  emit_io(t, s);
  rlx_status st = emit_passes(t, s, all, w->n_passes + n_assign);
  rlx_text_append(t, "\"assignments\":[", 15);
  for (int32_t i = 0; i < n_assign; i++) {
    const rlx_gl_planned_pass *pp = &all[w->n_passes + i];
    int32_t param = w->tex[pp->out_tex].node;
    rlx_text_printf(t, "%s{\"from\":%d,\"to\":%d,\"param\":", i ? "," : "", (int)pp->in_tex[0], (int)pp->out_tex);
    rlx_json_string(t, p->graph.nodes[param].name);
    rlx_text_append(t, "}", 1);
  }
  rlx_text_append(t, "]}\n", 3);
  rlx_free(all, bytes);
  if (st == RLX_OK && t->failed) st = rlx_error(RLX_ERR_NO_MEMORY, "webgl plan: out of memory");
  return st;
}

const char *rlx_gl_plan_json(rlx_session *s, size_t *len) {
  /* Rebuilt on each call: training assignments are known only after
   * rlx_compile_train finished. */
  rlx_gl_state *w = rlx_gl_state_of(s);
  rlx_text t = {NULL, 0, 0, 0};
  if (build_json(s, &t) != RLX_OK) {
    rlx_text_free(&t);
    return NULL;
  }
  rlx_text_free(&w->json);
  w->json = t;
  if (len) *len = t.len;
  return t.buf;
}
