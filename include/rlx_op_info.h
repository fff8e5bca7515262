/* rlx_op_info.h - the facts of the op table (include/rlx_ops.def,
 * include/rlx_attrs.def) beside rlx_op_name / rlx_op_from_name of rlx.h.
 *
 * Arity: how many inputs op takes, as the builders check them (rlx_op_node
 * fails outside [min, max]).  Attributes: op's named attributes in order,
 * each with a type ("int", "bool" (0 or 1), "axes" (a bitmask of axes),
 * "enum" (a code), "ints" (a list of any length from slot 0) or "float")
 * and its slot: the index in rlx_op_node's iattr list, or its fattr list
 * for "float".  The functions return -1 (counts, slots) or NULL (names,
 * types) when op is not below RLX_OP_COUNT or k is out of range.  The
 * Python binding and the browser module (exports of the same names) build
 * their op methods' arity checks and attributes-by-name from these. */
#ifndef RLX_OP_INFO_H
#define RLX_OP_INFO_H
#include "rlx.h"

int32_t rlx_op_min_inputs(rlx_op op);
int32_t rlx_op_max_inputs(rlx_op op);
int32_t rlx_op_attr_count(rlx_op op);
const char *rlx_op_attr_name(rlx_op op, int32_t k);
const char *rlx_op_attr_type(rlx_op op, int32_t k);
int32_t rlx_op_attr_slot(rlx_op op, int32_t k);
/* 1 when op is elementwise (its output is its inputs' broadcast shape,
 * element for element: add, relu, where, ...), else 0; -1 when not an op.
 * The bindings give every such op a method of its own. */
int32_t rlx_op_is_elementwise(rlx_op op);

#endif
