/* pending_grad_c.c - placeholders for backward kernels being written; each returns
 * RLX_ERR_UNSUPPORTED.  Removed when the real kernels land. */
#include "kernels.h"
rlx_status rlx_cpu_conv2d_grad_input(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "conv2d_grad_input: not implemented yet"); }
rlx_status rlx_cpu_conv2d_grad_weight(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "conv2d_grad_weight: not implemented yet"); }
rlx_status rlx_cpu_max_pool2d_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "max_pool2d_grad: not implemented yet"); }
rlx_status rlx_cpu_avg_pool2d_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "avg_pool2d_grad: not implemented yet"); }
