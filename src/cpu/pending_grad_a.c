/* pending_grad_a.c - placeholders for backward kernels being written; each returns
 * RLX_ERR_UNSUPPORTED.  Removed when the real kernels land. */
#include "kernels.h"
rlx_status rlx_cpu_gelu_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "gelu_grad: not implemented yet"); }
rlx_status rlx_cpu_silu_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "silu_grad: not implemented yet"); }
rlx_status rlx_cpu_narrow_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "narrow_grad: not implemented yet"); }
rlx_status rlx_cpu_scatter_add(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "scatter_add: not implemented yet"); }
rlx_status rlx_cpu_softmax_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "softmax_grad: not implemented yet"); }
rlx_status rlx_cpu_log_softmax_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "log_softmax_grad: not implemented yet"); }
rlx_status rlx_cpu_softmax_cross_entropy_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "softmax_cross_entropy_grad: not implemented yet"); }
