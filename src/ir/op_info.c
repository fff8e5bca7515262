/* op_info.c - the op table's facts (include/rlx_op_info.h): arity and the
 * named attributes of each op, from include/rlx_ops.def and
 * include/rlx_attrs.def (src/ir/attrs.h); each op's family
 * (src/core/families.h) and the refusal of an op this build leaves out. */
#include "rlx_op_info.h"

#include <stdio.h>

#include "../core/families.h"
#include "attrs.h"
#include "graph.h"

static const rlx_attr_row attr_rows[] = {
#define RLX_ATTR_SET(SET, BASE)
#define RLX_ATTR(SET, NAME, name, TYPE, slot) {#name, RLX_ATTRS_##SET, RLX_ATTR_##TYPE, slot},
#include "rlx_attrs.def"
#undef RLX_ATTR_SET
#undef RLX_ATTR
};
#define N_ATTR_ROWS ((int32_t)(sizeof attr_rows / sizeof attr_rows[0]))

static const uint8_t attr_base[RLX_ATTRS_COUNT] = {
#define RLX_ATTR_SET(SET, BASE) [RLX_ATTRS_##SET] = RLX_ATTRS_##BASE,
#define RLX_ATTR(SET, NAME, name, TYPE, slot)
#include "rlx_attrs.def"
#undef RLX_ATTR_SET
#undef RLX_ATTR
};

static int32_t own_count(rlx_attr_set set) {
  int32_t n = 0;
  for (int32_t i = 0; i < N_ATTR_ROWS; i++) n += attr_rows[i].set == set;
  return n;
}

int32_t rlx_attr_set_count(rlx_attr_set set) {
  if ((int)set <= RLX_ATTRS_NONE || set >= RLX_ATTRS_COUNT) return 0;
  return rlx_attr_set_count(attr_base[set]) + own_count(set);
}

const rlx_attr_row *rlx_attr_set_row(rlx_attr_set set, int32_t k) {
  if ((int)set <= RLX_ATTRS_NONE || set >= RLX_ATTRS_COUNT || k < 0) return NULL;
  int32_t nb = rlx_attr_set_count(attr_base[set]);
  if (k < nb) return rlx_attr_set_row(attr_base[set], k);
  k -= nb;
  for (int32_t i = 0; i < N_ATTR_ROWS; i++)
    if (attr_rows[i].set == set && k-- == 0) return &attr_rows[i];
  return NULL;
}

void rlx_attr_set_sizes(rlx_attr_set set, int32_t *n_int, int32_t *n_float, int *has_list) {
  *n_int = *n_float = *has_list = 0;
  for (; (int)set > RLX_ATTRS_NONE && set < RLX_ATTRS_COUNT; set = attr_base[set]) /* the set's rows, its base's */
    for (int32_t i = 0; i < N_ATTR_ROWS; i++)
      if (attr_rows[i].set == set) {
        ++*(attr_rows[i].type == RLX_ATTR_FLOAT ? n_float : n_int);
        *has_list |= attr_rows[i].type == RLX_ATTR_INTS;
      }
}

static int is_op(rlx_op op) { return (int)op >= 0 && op < RLX_OP_COUNT; }

int32_t rlx_op_min_inputs(rlx_op op) { return is_op(op) ? rlx_op_table[op].min_inputs : -1; }
int32_t rlx_op_max_inputs(rlx_op op) { return is_op(op) ? rlx_op_table[op].max_inputs : -1; }
int32_t rlx_op_attr_count(rlx_op op) { return is_op(op) ? rlx_attr_set_count(rlx_op_table[op].attrs) : -1; }

static const rlx_attr_row *op_attr(rlx_op op, int32_t k) {
  return is_op(op) ? rlx_attr_set_row(rlx_op_table[op].attrs, k) : NULL;
}

const char *rlx_op_attr_name(rlx_op op, int32_t k) {
  const rlx_attr_row *r = op_attr(op, k);
  return r ? r->name : NULL;
}

const char *rlx_op_attr_type(rlx_op op, int32_t k) {
  static const char *const names[] = {"int", "bool", "axes", "enum", "ints", "float"};
  const rlx_attr_row *r = op_attr(op, k);
  return r ? names[r->type] : NULL;
}

int32_t rlx_op_attr_slot(rlx_op op, int32_t k) {
  const rlx_attr_row *r = op_attr(op, k);
  return r ? r->slot : -1;
}

static const uint8_t op_family[RLX_OP_COUNT] = {
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) [RLX_OP_##ID] = RLX_FAMILY_OF_ROW,
#include "rlx_ops.def"
#undef RLX_OP
};

/* Each family as a message names it, and the module that has it. */
static const struct {
  const char *name, *module;
} families[RLX_FAMILY_COUNT] = {
    [RLX_FAMILY_CORE] = {"core", "every module"},
    [RLX_FAMILY_LLM] = {"language-model", "rlx_llm.wasm"},
    [RLX_FAMILY_VISION] = {"vision", "rlx_web.wasm"},
    [RLX_FAMILY_TRAINING] = {"training (backward)", "rlx_web.wasm"},
};

int rlx_op_built(rlx_op op) { return is_op(op) && rlx_op_table[op].shape != NULL; }

/* "op conv2d is not in this module (a vision op: those are in rlx_web.wasm)". */
static void absent_message(rlx_op op, const char *where, char *msg, size_t cap) {
  int f = is_op(op) ? op_family[op] : RLX_FAMILY_CORE;
  snprintf(msg, cap, "op %s is not in %s (a %s op: those are in %s)", is_op(op) ? rlx_op_table[op].name : "(unknown)",
           where, families[f].name, families[f].module);
}

void rlx_op_absent_message(rlx_op op, char *msg, size_t cap) { absent_message(op, "this module", msg, cap); }

rlx_status rlx_op_absent(rlx_op op, const char *who, const char *where) {
  char msg[256];
  absent_message(op, where ? where : "this module", msg, sizeof msg);
  return rlx_error(RLX_ERR_UNSUPPORTED, "%s: %s", who, msg);
}
