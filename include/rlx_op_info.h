/* rlx_op_info.h - the arity facts of the op table (include/rlx_ops.def)
 * beside rlx_op_name / rlx_op_from_name of rlx.h: how many inputs op takes,
 * as the builders check them (rlx_op_node fails outside [min, max]).  Both
 * return -1 when op is not below RLX_OP_COUNT.  The Python binding and the
 * browser module (rlx_op_min_inputs / rlx_op_max_inputs exports) build
 * their op methods' arity checks from these. */
#ifndef RLX_OP_INFO_H
#define RLX_OP_INFO_H
#include "rlx.h"

int32_t rlx_op_min_inputs(rlx_op op);
int32_t rlx_op_max_inputs(rlx_op op);

#endif
