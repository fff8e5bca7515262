/* families.h - the op families of include/rlx_ops.def (each group of rows
 * sets RLX_OP_FAMILY) and which of them this build has (internal).  A build
 * leaves a family out by defining RLX_WITHOUT_<FAMILY>_OPS; the files that
 * hold a table of functions per op (the shape rules, CPU kernels, gradient
 * rules, WebGPU and WebGL2 lowerings) fill the rows of a left-out family
 * with NULL through RLX_IF_BUILT, so the linker drops those functions, and
 * rlx_op_built (the shape rule is NULL) refuses such an op by name. */
#ifndef RLX_FAMILIES_H
#define RLX_FAMILIES_H

#include <stddef.h>

typedef enum { RLX_FAMILY_CORE, RLX_FAMILY_LLM, RLX_FAMILY_VISION, RLX_FAMILY_TRAINING, RLX_FAMILY_COUNT } rlx_op_family;

#define RLX_BUILT_CORE 1
#ifdef RLX_WITHOUT_LLM_OPS
#define RLX_BUILT_LLM 0
#else
#define RLX_BUILT_LLM 1
#endif
#ifdef RLX_WITHOUT_VISION_OPS
#define RLX_BUILT_VISION 0
#else
#define RLX_BUILT_VISION 1
#endif
#ifdef RLX_WITHOUT_TRAINING_OPS
#define RLX_BUILT_TRAINING 0
#else
#define RLX_BUILT_TRAINING 1
#endif

/* Inside an RLX_OP expansion: fn when the row's family is built, else NULL
 * (decided by the preprocessor, so fn is not even referenced). */
#define RLX_IF_BUILT(fn) RLX_IF_BUILT_(RLX_OP_FAMILY, fn)
#define RLX_IF_BUILT_(fam, fn) RLX_IF_BUILT_FAM_(fam, fn)
#define RLX_IF_BUILT_FAM_(fam, fn) RLX_PICK_(RLX_BUILT_##fam, fn)
#define RLX_PICK_(built, fn) RLX_PICK_BIT_(built, fn)
#define RLX_PICK_BIT_(built, fn) RLX_PICK_##built(fn)
#define RLX_PICK_1(fn) fn
#define RLX_PICK_0(fn) NULL
/* Inside an RLX_OP expansion: the row's rlx_op_family. */
#define RLX_FAMILY_OF_ROW RLX_FAMILY_OF_(RLX_OP_FAMILY)
#define RLX_FAMILY_OF_(fam) RLX_FAMILY_OF_FAM_(fam)
#define RLX_FAMILY_OF_FAM_(fam) RLX_FAMILY_##fam

#endif
