/* exports_ops.c - the op table's facts for JS beyond exports.c's
 * rlx_op_count / rlx_op_name / rlx_op_from_name: the arity of op i
 * (include/rlx_op_info.h; -1 when i is not an op).  WebGraph
 * (web/runtime/webgraph.js) builds its simple-op methods' arity checks from
 * them.  Thin wrappers, no logic. */
#include "rlx_op_info.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(rlx_op_min_inputs) int32_t w_op_min_inputs(int32_t op) { return rlx_op_min_inputs((rlx_op)op); }
EXPORT(rlx_op_max_inputs) int32_t w_op_max_inputs(int32_t op) { return rlx_op_max_inputs((rlx_op)op); }
