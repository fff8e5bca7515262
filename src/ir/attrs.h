/* attrs.h - the attribute table (include/rlx_attrs.def) for C: the set of
 * each op (rlx_op_table[op].attrs), the slot constants
 * RLX_IATTR_<SET>_<NAME> / RLX_FATTR_<SET>_<NAME>, and ATTR_I / ATTR_F, the
 * way every reader names an attribute:
 *
 *   ATTR_I(node, CONV, STRIDE_H)   node->iattr[RLX_IATTR_CONV_STRIDE_H]
 *   ATTR_F(node, NORM, EPS)        node->fattr[RLX_FATTR_NORM_EPS]
 *
 * A FLOAT row has only the RLX_FATTR_ constant, every other type only the
 * RLX_IATTR_ one, so reading an attribute as the wrong kind does not compile. */
#ifndef RLX_ATTRS_H
#define RLX_ATTRS_H

#include <stdint.h>

typedef enum {
#define RLX_ATTR_SET(SET, BASE) RLX_ATTRS_##SET,
#define RLX_ATTR(SET, NAME, name, TYPE, slot)
#include "rlx_attrs.def"
#undef RLX_ATTR_SET
#undef RLX_ATTR
  RLX_ATTRS_COUNT
} rlx_attr_set;

typedef enum { RLX_ATTR_INT, RLX_ATTR_BOOL, RLX_ATTR_AXES, RLX_ATTR_ENUM, RLX_ATTR_INTS, RLX_ATTR_FLOAT } rlx_attr_type;

#define RLX_ATTR_SLOT_INT(S, N, slot) RLX_IATTR_##S##_##N = (slot),
#define RLX_ATTR_SLOT_BOOL RLX_ATTR_SLOT_INT
#define RLX_ATTR_SLOT_AXES RLX_ATTR_SLOT_INT
#define RLX_ATTR_SLOT_ENUM RLX_ATTR_SLOT_INT
#define RLX_ATTR_SLOT_INTS RLX_ATTR_SLOT_INT
#define RLX_ATTR_SLOT_FLOAT(S, N, slot) RLX_FATTR_##S##_##N = (slot),
enum {
#define RLX_ATTR_SET(SET, BASE)
#define RLX_ATTR(SET, NAME, name, TYPE, slot) RLX_ATTR_SLOT_##TYPE(SET, NAME, slot)
#include "rlx_attrs.def"
#undef RLX_ATTR_SET
#undef RLX_ATTR
  RLX_ATTR_SLOT_END_
};

#define ATTR_I(node, SET, NAME) ((node)->iattr[RLX_IATTR_##SET##_##NAME])
#define ATTR_F(node, SET, NAME) ((node)->fattr[RLX_FATTR_##SET##_##NAME])
/* Entries of an attribute array built with designated slots. */
#define RLX_LEN(a) ((int32_t)(sizeof(a) / sizeof((a)[0])))

/* One attribute of a set, base attributes first: k in [0, count). */
typedef struct {
  const char *name;
  uint8_t set;  /* rlx_attr_set */
  uint8_t type; /* rlx_attr_type */
  uint8_t slot;
} rlx_attr_row;

int32_t rlx_attr_set_count(rlx_attr_set set);
const rlx_attr_row *rlx_attr_set_row(rlx_attr_set set, int32_t k);
/* How many int and float attributes the set holds; *has_list when one is
 * an INTS list (any length). */
void rlx_attr_set_sizes(rlx_attr_set set, int32_t *n_int, int32_t *n_float, int *has_list);

#endif
