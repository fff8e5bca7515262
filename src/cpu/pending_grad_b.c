/* pending_grad_b.c - placeholders for backward kernels being written; each returns
 * RLX_ERR_UNSUPPORTED.  Removed when the real kernels land. */
#include "kernels.h"
rlx_status rlx_cpu_rms_norm_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "rms_norm_grad: not implemented yet"); }
rlx_status rlx_cpu_rms_norm_grad_weight(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "rms_norm_grad_weight: not implemented yet"); }
rlx_status rlx_cpu_layer_norm_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "layer_norm_grad: not implemented yet"); }
rlx_status rlx_cpu_layer_norm_grad_weight(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "layer_norm_grad_weight: not implemented yet"); }
rlx_status rlx_cpu_attention_grad(const rlx_kargs *a) { (void)a; return rlx_error(RLX_ERR_UNSUPPORTED, "attention_grad: not implemented yet"); }
