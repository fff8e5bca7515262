/* op_info.c - rlx_op_min_inputs / rlx_op_max_inputs (include/rlx_op_info.h):
 * the arity columns of the op table (rlx_op_table, from include/rlx_ops.def). */
#include "rlx_op_info.h"
#include "graph.h"

int32_t rlx_op_min_inputs(rlx_op op) {
  return ((int)op >= 0 && op < RLX_OP_COUNT) ? rlx_op_table[op].min_inputs : -1;
}

int32_t rlx_op_max_inputs(rlx_op op) {
  return ((int)op >= 0 && op < RLX_OP_COUNT) ? rlx_op_table[op].max_inputs : -1;
}
