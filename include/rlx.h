/* rlx.h - the public C API of RLX: build tensor-op graphs, compile them for a
 * device, and run them in a session.  This header is the contract of the
 * library; everything not declared here is internal.
 *
 * Conventions
 *  - Handles are opaque.  rlx_*_free(NULL) is harmless.
 *  - Fallible calls return rlx_status (0 = ok, negative = error) and leave a
 *    readable message in rlx_last_error() (per thread).
 *  - Graph builders return a node id (>= 0).  On bad input they return
 *    RLX_NO_NODE and record the first error in the graph; builders given
 *    RLX_NO_NODE propagate it silently, and rlx_compile reports the first
 *    error with the node, its op and the shapes involved.
 *  - Nothing aborts, asserts or traps on user input.
 *  - Tensors are dense, row-major, float32 unless declared RLX_I32.
 */
#ifndef RLX_H
#define RLX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------ */
typedef enum {
  RLX_OK = 0,
  RLX_ERR_INVALID_ARG = -1,  /* a bad argument (null, wrong length, range)  */
  RLX_ERR_SHAPE = -2,        /* shapes or ranks do not fit the op           */
  RLX_ERR_GRAPH = -3,        /* ill-formed graph: unknown node, arity, ...  */
  RLX_ERR_NO_MEMORY = -4,    /* an allocation failed                        */
  RLX_ERR_NOT_FOUND = -5,    /* no input/param/output with that name/index  */
  RLX_ERR_UNSUPPORTED = -6,  /* the device or op variant is not available   */
  RLX_ERR_STATE = -7,        /* call out of order (e.g. run before inputs)  */
  RLX_ERR_NUMERIC = -8       /* a non-finite value where one is forbidden   */
} rlx_status;

/* Message of the last failing call on this thread ("" if none). */
const char *rlx_last_error(void);
/* Short fixed name of a status code ("ok", "invalid argument", ...). */
const char *rlx_status_name(rlx_status s);
const char *rlx_version(void);

/* Allocator hook, Lua style: realloc when nsize > 0, free when nsize == 0.
 * osize is the old block's size (0 for a new block).  NULL restores malloc.
 * Set it before creating any handle. */
typedef void *(*rlx_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);
void rlx_set_allocator(rlx_alloc_fn fn, void *ud);

/* ---- graphs ------------------------------------------------------------ */
typedef struct rlx_graph rlx_graph;
typedef int32_t rlx_node;
#define RLX_NO_NODE ((rlx_node)-1)
#define RLX_MAX_RANK 8
#define RLX_MAX_INPUTS 8
#define RLX_MAX_IATTR 16
#define RLX_MAX_FATTR 4

typedef enum { RLX_F32 = 0, RLX_I32 = 1 } rlx_dtype;

/* The op table (include/rlx_ops.def) generates RLX_OP_<NAME> for every op. */
typedef enum {
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) RLX_OP_##ID,
#include "rlx_ops.def"
#undef RLX_OP
  RLX_OP_COUNT
} rlx_op;

const char *rlx_op_name(rlx_op op);
/* RLX_OP_COUNT when the name is unknown. */
rlx_op rlx_op_from_name(const char *name);

rlx_graph *rlx_graph_new(void);
void rlx_graph_free(rlx_graph *g);
/* First builder error recorded in g (RLX_OK if none) and its message. */
rlx_status rlx_graph_status(const rlx_graph *g);
const char *rlx_graph_error(const rlx_graph *g);
int32_t rlx_graph_node_count(const rlx_graph *g);
/* Shape of a node: returns its rank and copies up to RLX_MAX_RANK dims; -1 if
 * the node does not exist. */
int32_t rlx_node_shape(const rlx_graph *g, rlx_node n, int32_t *dims);

/* The input or param called name, or RLX_NO_NODE. */
rlx_node rlx_graph_find(const rlx_graph *g, const char *name);

/* Leaves.  Names must be unique among inputs and params. */
rlx_node rlx_input(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims, rlx_dtype dt);
rlx_node rlx_param(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims);
/* A param of dtype dt (RLX_F32 or RLX_I32).  An i32 param holds raw bytes
 * (e.g. GGUF weights for matmul_q / gather_q, 4 bytes per element); give it
 * memory with rlx_session_bind_param. */
rlx_node rlx_param_dtype(rlx_graph *g, const char *name, int32_t rank, const int32_t *dims, rlx_dtype dt);
rlx_node rlx_constant(rlx_graph *g, int32_t rank, const int32_t *dims, const float *data);
rlx_node rlx_scalar(rlx_graph *g, float value); /* a rank-0 constant */

/* Generic builder used by the bindings: any op by table entry, with its
 * integer and float attributes at the slots of its attribute set
 * (include/rlx_attrs.def; rlx_op_attr_* of rlx_op_info.h list them). */
rlx_node rlx_op_node(rlx_graph *g, rlx_op op, const rlx_node *inputs, int32_t n_inputs,
                     const int32_t *iattr, int32_t n_iattr, const float *fattr, int32_t n_fattr);

/* Elementwise with numpy-style broadcasting. */
rlx_node rlx_add(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_sub(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_mul(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_div(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_max(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_min(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_pow(rlx_graph *g, rlx_node a, rlx_node b);
/* Comparisons give 1.0 where true, 0.0 where false. */
rlx_node rlx_eq(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_ne(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_lt(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_le(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_gt(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_ge(rlx_graph *g, rlx_node a, rlx_node b);
/* where(cond, a, b): a where cond != 0, else b; all three broadcast. */
rlx_node rlx_where(rlx_graph *g, rlx_node cond, rlx_node a, rlx_node b);

rlx_node rlx_neg(rlx_graph *g, rlx_node x);
rlx_node rlx_abs(rlx_graph *g, rlx_node x);
rlx_node rlx_exp(rlx_graph *g, rlx_node x);
rlx_node rlx_log(rlx_graph *g, rlx_node x);
rlx_node rlx_sqrt(rlx_graph *g, rlx_node x);
rlx_node rlx_rsqrt(rlx_graph *g, rlx_node x);
rlx_node rlx_tanh(rlx_graph *g, rlx_node x);
rlx_node rlx_sigmoid(rlx_graph *g, rlx_node x);
rlx_node rlx_relu(rlx_graph *g, rlx_node x);
rlx_node rlx_gelu(rlx_graph *g, rlx_node x); /* tanh approximation */
rlx_node rlx_silu(rlx_graph *g, rlx_node x);

/* a[..., M, K] x b[..., K, N] -> [..., M, N]; batch dims broadcast.  With
 * trans_a, a is [..., K, M]; with trans_b, b is [..., N, K].  A rank-1 b is
 * not promoted: use reshape. */
rlx_node rlx_matmul(rlx_graph *g, rlx_node a, rlx_node b);
rlx_node rlx_matmul_t(rlx_graph *g, rlx_node a, rlx_node b, int trans_a, int trans_b);

/* Layout.  reshape accepts one -1 dim to infer. */
rlx_node rlx_reshape(rlx_graph *g, rlx_node x, int32_t rank, const int32_t *dims);
rlx_node rlx_permute(rlx_graph *g, rlx_node x, const int32_t *perm); /* perm has rank(x) entries */
rlx_node rlx_transpose(rlx_graph *g, rlx_node x, int32_t axis0, int32_t axis1);
rlx_node rlx_narrow(rlx_graph *g, rlx_node x, int32_t axis, int32_t start, int32_t length);
rlx_node rlx_concat(rlx_graph *g, const rlx_node *xs, int32_t n, int32_t axis);
rlx_node rlx_expand(rlx_graph *g, rlx_node x, int32_t rank, const int32_t *dims);
/* table[V, D], ids[...] (f32 or i32 ids) -> [..., D]. Ids outside [0, V)
 * give a zero row and set the session's error flag for the run. */
rlx_node rlx_gather(rlx_graph *g, rlx_node table, rlx_node ids);

/* Reductions over a set of axes (negative axes count from the end). */
rlx_node rlx_reduce_sum(rlx_graph *g, rlx_node x, const int32_t *axes, int32_t n_axes, int keepdim);
rlx_node rlx_reduce_mean(rlx_graph *g, rlx_node x, const int32_t *axes, int32_t n_axes, int keepdim);
rlx_node rlx_reduce_max(rlx_graph *g, rlx_node x, const int32_t *axes, int32_t n_axes, int keepdim);

rlx_node rlx_softmax(rlx_graph *g, rlx_node x, int32_t axis);
rlx_node rlx_log_softmax(rlx_graph *g, rlx_node x, int32_t axis);
/* logits[..., C], labels[...] (class ids, f32 or i32) -> per-sample loss [...].
 * Reduce with rlx_reduce_mean for a batch loss. */
rlx_node rlx_softmax_cross_entropy(rlx_graph *g, rlx_node logits, rlx_node labels);

/* Normalization over the last axis: x[..., D], weight[D] (bias[D]). */
rlx_node rlx_rms_norm(rlx_graph *g, rlx_node x, rlx_node weight, float eps);
rlx_node rlx_layer_norm(rlx_graph *g, rlx_node x, rlx_node weight, rlx_node bias, float eps);

/* Rotary embedding, NeoX layout (rotate halves): x[..., S, D], D even,
 * position of row s = pos_offset + s, frequency theta^(-2i/D). */
rlx_node rlx_rope(rlx_graph *g, rlx_node x, float theta, int32_t pos_offset);

/* Attention: q[B, H, Sq, D], k[B, H, Sk, D], v[B, H, Sk, Dv] -> [B, H, Sq, Dv].
 * softmax(scale * q.k^T + mask) . v; scale <= 0 means 1/sqrt(D).
 * Causal and sliding masks align the last query with the last key: query i
 * sees key j when j <= i + (Sk - Sq) (and, for sliding, j > that - window).
 * PADDING takes mask[B, Sk] (nonzero = keep); BIAS takes an additive tensor
 * broadcastable to [B, H, Sq, Sk]. */
/* rlx_rope with an optional offset node (RLX_NO_NODE: none; else an i32
 * tensor of one element added to every position: row s is at pos_offset +
 * offset[0] + s) and a mode: 0 NeoX (rotate halves), 1 adjacent pairs
 * (x[2i], x[2i+1], as GGUF llama models' "normal" RoPE). */
rlx_node rlx_rope_ext(rlx_graph *g, rlx_node x, rlx_node offset, float theta, int32_t pos_offset, int32_t mode);

typedef enum {
  RLX_MASK_NONE = 0,
  RLX_MASK_CAUSAL = 1,
  RLX_MASK_SLIDING = 2,
  RLX_MASK_PADDING = 3,
  RLX_MASK_BIAS = 4
} rlx_mask_kind;
rlx_node rlx_attention(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, rlx_mask_kind kind,
                       int32_t window, rlx_node mask, float scale);

/* ---- quantized language models (CPU backend only) -----------------------
 * A quantized weight is an i32 node (usually an rlx_param_dtype bound with
 * rlx_session_bind_param) holding `rows` rows of `cols` values of GGUF type
 * qtype (rlx_gguf_type), row after row with no padding: the layout of a
 * GGUF tensor of dims [cols, rows].  cols is a multiple of the type's block.
 *
 * matmul_q: trans 0: x[..., cols] -> [..., rows], y[m, n] = sum_k W[n, k]
 * x[m, k]; trans 1: x[..., rows] -> [..., cols], y[m, k] = sum_n x[m, n]
 * W[n, k].  Differentiable in x only. */
rlx_node rlx_matmul_q(rlx_graph *g, rlx_node x, rlx_node w, int32_t qtype, int32_t rows, int32_t cols, int trans);
/* table (as matmul_q's w), ids[...] (i32 or f32) -> [..., cols]: the
 * dequantized rows.  Bad ids give a zero row and fail the run as gather. */
rlx_node rlx_gather_q(rlx_graph *g, rlx_node table, rlx_node ids, int32_t qtype, int32_t rows, int32_t cols);
/* A feed-forward block's gate and up halves: x[..., cols] -> [..., rows] =
 * silu(x Wg^T) * (x Wu^T), w_gate and w_up two tables of qtype, rows and
 * cols as matmul_q's w (trans 0).  Differentiable in x only. */
rlx_node rlx_swiglu_q(rlx_graph *g, rlx_node x, rlx_node w_gate, rlx_node w_up, int32_t qtype, int32_t rows,
                      int32_t cols);
/* Causal attention over a KV cache: q[Hq, S, D], k[Hkv, S, D], v[Hkv, S,
 * Dv], k_cache[Hkv, C, D], v_cache[Hkv, C, Dv] (inputs or params, usually
 * bound), pos (i32, one element) -> out[S, Hq, Dv] (token-major: reshape
 * to [S, Hq Dv] is free).  Each run first writes k[:, s] and v[:, s] into
 * the caches at position pos + s, then query s attends to cache positions
 * 0 .. pos + s; q head h uses kv head h / (Hq / Hkv).  Positions >= C are
 * not written and give zero rows; pos < 0 fails the run.  scale <= 0 means
 * 1/sqrt(D).  Forward only. */
rlx_node rlx_attention_kv(rlx_graph *g, rlx_node q, rlx_node k, rlx_node v, rlx_node k_cache, rlx_node v_cache,
                          rlx_node pos, float scale);

/* x[N, C, H, W], w[O, C/groups, KH, KW] -> [N, O, OH, OW]. */
typedef struct {
  int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
} rlx_conv2d_params;
rlx_node rlx_conv2d(rlx_graph *g, rlx_node x, rlx_node w, const rlx_conv2d_params *p);
/* x[N, C, H, W] -> [N, C, OH, OW]; average pooling divides by the full
 * window (padding counts as zeros). */
typedef struct { int32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w; } rlx_pool2d_params;
rlx_node rlx_max_pool2d(rlx_graph *g, rlx_node x, const rlx_pool2d_params *p);
rlx_node rlx_avg_pool2d(rlx_graph *g, rlx_node x, const rlx_pool2d_params *p);
rlx_node rlx_global_avg_pool(rlx_graph *g, rlx_node x); /* [N, C, H, W] -> [N, C] */

/* ---- autodiff ---------------------------------------------------------- */
/* Appends the backward pass of `loss` to g.  On success outputs[0] = loss and
 * outputs[1 + i] = d loss / d wrt[i] (shaped like wrt[i]), for n_wrt + 1
 * entries.  The gradient is seeded by an input named "d_output" shaped like
 * the loss (added, or reused if present): feed [1.0] for a scalar loss.
 * Contributions from several consumers are summed, broadcasts are undone by
 * summing.  Comparisons, labels, ids and where conditions pass no gradient;
 * a wrt node that no gradient reaches is an error (RLX_ERR_GRAPH). */
rlx_status rlx_grad_with_loss(rlx_graph *g, rlx_node loss, const rlx_node *wrt, int32_t n_wrt, rlx_node *outputs);
/* The same without the loss: grads[i] = d loss / d wrt[i]. */
rlx_status rlx_grad(rlx_graph *g, rlx_node loss, const rlx_node *wrt, int32_t n_wrt, rlx_node *grads);

/* ---- compile and run --------------------------------------------------- */
typedef enum { RLX_DEVICE_CPU = 0, RLX_DEVICE_WEBGPU = 1, RLX_DEVICE_WEBGL = 2 } rlx_device;

typedef struct {
  rlx_device device;
  int skip_fusion;     /* keep every op as written (no fusion passes)        */
  int debug_poison;    /* fill freed arena regions with NaN after each step  */
  int32_t threads;     /* CPU threads of a CPU session: 0 the default (env
                          RLX_THREADS, else the physical cores; an
                          RLX_THREADS that is no count of 1 .. 256 is
                          refused), 1 only the
                          calling thread, at most 256; results are bitwise
                          the same for any count.  wasm builds: 1, the
                          option ignored */
} rlx_compile_options;

typedef struct rlx_session rlx_session;

/* Verify, simplify, plan memory and build the executable plan for outputs.
 * The session keeps its own copy of what it needs; g may be freed after. */
rlx_status rlx_compile(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs,
                       const rlx_compile_options *opt, rlx_session **out);
void rlx_session_free(rlx_session *s);

/* Params persist across runs (zero at compile); inputs must be set before
 * the first run and keep their values until set again.  len is in elements
 * and must equal the tensor's element count. */
rlx_status rlx_session_set_param(rlx_session *s, const char *name, const float *data, size_t len);
rlx_status rlx_session_get_param(const rlx_session *s, const char *name, float *data, size_t len);
/* The session reads and writes param `name` in the caller's memory from now
 * on (no copy; CPU, WebGL2 and WebGPU sessions): data must stay valid,
 * 4-byte aligned, and hold at least the param's bytes (numel * 4); the
 * session never frees it.  Several sessions may bind the same memory
 * (weights, a KV cache).  set_param/get_param refuse i32 params: bind them.
 * A WebGL2 session's C reference executor reads bound memory at every run
 * and writes back what its plan writes in place (attention_kv's caches);
 * web/runtime/webgl.js uploads it once, when its session is created, as
 * web/runtime/webgpu.js does for a WebGPU session (whose GPU buffers then
 * hold the param: what the plan writes stays on the GPU). */
rlx_status rlx_session_bind_param(rlx_session *s, const char *name, void *data, size_t bytes);
rlx_status rlx_session_set_input(rlx_session *s, const char *name, const float *data, size_t len);
rlx_status rlx_session_set_input_i32(rlx_session *s, const char *name, const int32_t *data, size_t len);
rlx_status rlx_session_run(rlx_session *s);

int32_t rlx_session_output_count(const rlx_session *s);
/* Rank of output i (dims copied when non-NULL), -1 if i is out of range. */
int32_t rlx_session_output_shape(const rlx_session *s, int32_t i, int32_t *dims);
size_t rlx_session_output_len(const rlx_session *s, int32_t i);
/* Borrowed pointer to output i, valid until the next run or free. */
const float *rlx_session_output(const rlx_session *s, int32_t i);
rlx_status rlx_session_read_output(const rlx_session *s, int32_t i, float *dst, size_t len);

/* ---- training steps ----------------------------------------------------- */
typedef enum { RLX_OPT_SGD = 0, RLX_OPT_MOMENTUM = 1, RLX_OPT_ADAM = 2, RLX_OPT_ADAMW = 3 } rlx_optimizer_kind;
typedef struct {
  rlx_optimizer_kind kind;
  float lr;           /* learning rate; change it later with rlx_session_set_lr */
  float momentum;     /* MOMENTUM: v = momentum v + g; p -= lr v               */
  float beta1, beta2; /* ADAM(W): moment decay rates (0.9, 0.999 if both 0)     */
  float eps;          /* ADAM(W): denominator guard (1e-8 if 0)                 */
  float weight_decay; /* ADAMW: decoupled decay, p -= lr wd p                   */
} rlx_optimizer;

/* Compiles one training step: forward, backward (as rlx_grad_with_loss)
 * and the optimizer update, in one plan.  Each run reads the inputs,
 * updates the params and the optimizer state in the session, and leaves the
 * loss (before the update) as output 0.  The graph gains the gradient nodes,
 * the state params "<param>.m" / "<param>.v" (zero at start), "rlx.step"
 * and the inputs "d_output" and "rlx.lr", which the session presets. */
rlx_status rlx_compile_train(rlx_graph *g, rlx_node loss, const rlx_node *params, int32_t n_params,
                             const rlx_optimizer *opt, const rlx_compile_options *copt, rlx_session **out);
rlx_status rlx_session_set_lr(rlx_session *s, float lr);

/* Introspection of the compiled plan. */
size_t rlx_session_arena_bytes(const rlx_session *s);   /* intermediate arena */
int32_t rlx_session_step_count(const rlx_session *s);   /* kernels per run    */
int32_t rlx_session_fused_count(const rlx_session *s);  /* nodes made by fusion */
int32_t rlx_session_input_count(const rlx_session *s);
int32_t rlx_session_param_count(const rlx_session *s);
const char *rlx_session_input_name(const rlx_session *s, int32_t i);
/* Rank of input i (dims copied when non-NULL), -1 if out of range. */
int32_t rlx_session_input_shape(const rlx_session *s, int32_t i, int32_t *dims);
rlx_dtype rlx_session_input_dtype(const rlx_session *s, int32_t i); /* RLX_F32 if out of range */
const char *rlx_session_param_name(const rlx_session *s, int32_t i);
size_t rlx_session_param_len(const rlx_session *s, int32_t i);

/* ---- GPU sessions ------------------------------------------------------- */
/* A session compiled for RLX_DEVICE_WEBGPU is a plan for the GPU:
 * rlx_session_run refuses it (RLX_ERR_UNSUPPORTED) and web/runtime/webgpu.js
 * runs it.  One compiled for RLX_DEVICE_WEBGL is a list of render passes over
 * float textures that web/runtime/webgl.js draws; rlx_session_run runs the
 * same passes on the CPU (the reference executor: same formulas, for
 * testing; the browser module web/pkg/rlx_web.wasm leaves it out and
 * returns RLX_ERR_UNSUPPORTED).  Params, inputs and outputs are read and
 * written as for CPU sessions.  The JS executors get their plan documents
 * through the wasm exports (src/web/exports_webgpu.c, exports_webgl.c). */

#ifdef __cplusplus
}
#endif
#endif /* RLX_H */
