/* subops.h - the sub-op codes of include/rlx_subops.def as a C enum,
 * RLX_SUBOP_<NAME> (the OP override / define of a shared kernel, e.g.
 * RLX_SUBOP_RELU for unary.wgsl, unary.frag and their C twin).  The shaders
 * get the same codes as OP_<NAME> constants from tools/embed_sources.sh. */
#ifndef RLX_SUBOPS_H
#define RLX_SUBOPS_H

typedef enum {
#define RLX_SUBOP(family, NAME, name, code) RLX_SUBOP_##NAME = code,
#include "rlx_subops.def"
#undef RLX_SUBOP
} rlx_subop;

#endif
