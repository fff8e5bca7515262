/* llm_absent.h - the training module's one refusal of a language-model op
 * (llm_ops_absent.c), shared by its stand-in kernels, gradient rules and
 * WebGPU and WebGL2 lowerings (webgl_llm_absent.c). */
#ifndef RLX_WEB_LLM_ABSENT_H
#define RLX_WEB_LLM_ABSENT_H
#include "rlx.h"

/* RLX_ERR_UNSUPPORTED, with a message naming op and the module that has it. */
rlx_status rlx_llm_op_absent(rlx_op op);

#endif
