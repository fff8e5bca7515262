/* exports_ops.c - the op table's facts for JS beyond exports.c's
 * rlx_op_count / rlx_op_name / rlx_op_from_name (include/rlx_op_info.h):
 * the arity of op i, whether it is elementwise, and its named attributes (name, type, slot; NULL / -1
 * when out of range).  WebGraph (web/runtime/webgraph.js) builds its op
 * methods' arity checks and attributes-by-name from them.  Thin wrappers,
 * no logic. */
#include "rlx_op_info.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(rlx_op_min_inputs) int32_t w_op_min_inputs(int32_t op) { return rlx_op_min_inputs((rlx_op)op); }
EXPORT(rlx_op_max_inputs) int32_t w_op_max_inputs(int32_t op) { return rlx_op_max_inputs((rlx_op)op); }
EXPORT(rlx_op_attr_count) int32_t w_op_attr_count(int32_t op) { return rlx_op_attr_count((rlx_op)op); }
EXPORT(rlx_op_attr_name) const char *w_op_attr_name(int32_t op, int32_t k) { return rlx_op_attr_name((rlx_op)op, k); }
EXPORT(rlx_op_attr_type) const char *w_op_attr_type(int32_t op, int32_t k) { return rlx_op_attr_type((rlx_op)op, k); }
EXPORT(rlx_op_is_elementwise) int32_t w_op_is_elementwise(int32_t op) { return rlx_op_is_elementwise((rlx_op)op); }
EXPORT(rlx_op_attr_slot) int32_t w_op_attr_slot(int32_t op, int32_t k) { return rlx_op_attr_slot((rlx_op)op, k); }
