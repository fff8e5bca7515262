"""_native.py - loads librlx.so with ctypes and declares the C signatures of
include/rlx.h, include/rlx_models.h, include/rlx_llm.h, include/rlx_llm_chat.h
and include/rlx_llm_train.h that the package uses.

Where the library is looked for, in order, is _locate.py's: $RLX_LIBRARY,
the copy inside the package (a wheel built in the repository), the
repository's build/librlx.so (in-tree use), `pkg-config --variable=libdir
rlx` (`make install`), the loader's search path.  It is loaded on first use,
so `import rlx` works before the library is built.
"""

import ctypes
import os
import threading

from . import _locate
from .errors import RlxError, RlxLibraryError, INVALID_ARG, STATE

c_int32 = ctypes.c_int32
c_int = ctypes.c_int
c_float = ctypes.c_float
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
P_int32 = ctypes.POINTER(c_int32)
P_float = ctypes.POINTER(c_float)

MAX_RANK = 8
VISION_MAX_PARAMS = 16


class CompileOptions(ctypes.Structure):
    _fields_ = [("device", c_int), ("skip_fusion", c_int), ("debug_poison", c_int), ("threads", c_int32)]


class Optimizer(ctypes.Structure):
    _fields_ = [("kind", c_int), ("lr", c_float), ("momentum", c_float), ("beta1", c_float),
                ("beta2", c_float), ("eps", c_float), ("weight_decay", c_float)]


class Conv2dParams(ctypes.Structure):
    _fields_ = [(n, c_int32) for n in
                ("stride_h", "stride_w", "pad_h", "pad_w", "dilation_h", "dilation_w", "groups")]


class Pool2dParams(ctypes.Structure):
    _fields_ = [(n, c_int32) for n in
                ("kernel_h", "kernel_w", "stride_h", "stride_w", "pad_h", "pad_w")]


class VisionInfo(ctypes.Structure):
    _fields_ = [
        ("slug", c_char_p),
        ("title", c_char_p),
        ("input_rank", c_int32),
        ("input_dims", c_int32 * 3),
        ("num_classes", c_int32),
        ("n_params", c_int32),
        ("param_names", c_char_p * VISION_MAX_PARAMS),
        ("param_sizes", c_size_t * VISION_MAX_PARAMS),
        ("param_ranks", c_int32 * VISION_MAX_PARAMS),
        ("param_dims", (c_int32 * 4) * VISION_MAX_PARAMS),
        ("input_len", c_size_t),
        ("param_flat_len", c_size_t),
        ("train_cpu", c_int),
        ("train_webgpu", c_int),
        ("train_webgl", c_int),
    ]


class Mlp(ctypes.Structure):
    _fields_ = [("rows", c_int32), ("in_", c_int32), ("hid", c_int32), ("out", c_int32),
                ("w1", P_float), ("b1", P_float), ("w2", P_float), ("b2", P_float)]


class TransformerConfig(ctypes.Structure):
    _fields_ = [("vocab", c_int32), ("dim", c_int32), ("n_layers", c_int32), ("n_heads", c_int32),
                ("head_dim", c_int32), ("ffn", c_int32), ("seed", ctypes.c_uint64),
                ("window", c_int32), ("skip_fusion", c_int)]


class LlmOptions(ctypes.Structure):
    _fields_ = [("n_ctx", c_int32), ("budget", ctypes.c_uint64), ("xq8", c_int32), ("lora", c_void_p),
                ("n_lora", c_int32), ("threads", c_int32)]


class LlmLora(ctypes.Structure):
    _fields_ = [("path", c_char_p), ("data", c_void_p), ("size", c_size_t), ("scale", c_float)]


class LlmLoraTensor(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("rank", c_int32), ("n_in", c_int32), ("n_out", c_int32), ("a", P_float),
                ("b", P_float)]


class FinetuneOptions(ctypes.Structure):
    _fields_ = [("rank", c_int32), ("alpha", c_float), ("targets", c_char_p), ("seq", c_int32),
                ("optimizer", Optimizer), ("seed", ctypes.c_uint64)]


class FinetunePairInfo(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("layer", c_int32), ("n_in", c_int32), ("n_out", c_int32), ("rank", c_int32),
                ("alpha", c_float), ("scale", c_float)]


class DataSource(ctypes.Structure):
    _fields_ = [("path", c_char_p), ("text", c_void_p), ("len", c_size_t), ("format", c_int)]


class DataOptions(ctypes.Structure):
    _fields_ = [("seq", c_int32), ("shuffle", c_int32), ("seed", ctypes.c_uint64), ("valid_fraction", c_float)]


class DataInfo(ctypes.Structure):
    _fields_ = [("seq", c_int32), ("n_windows", c_int32 * 2), ("n_scored", ctypes.c_int64 * 2),
                ("n_tokens", ctypes.c_int64 * 2), ("n_dropped", ctypes.c_int64 * 2), ("n_examples", c_int32 * 2)]


class LlmInfo(ctypes.Structure):
    _fields_ = [("arch", c_char_p), ("name", c_char_p), ("tokenizer", c_char_p)] + [
        (n, c_int32) for n in ("n_vocab", "n_embd", "n_layer", "n_head", "n_head_kv", "head_dim", "n_ff",
                               "n_ctx_train", "n_ctx")] + [
        ("rope_theta", c_float), ("rms_eps", c_float)] + [
        (n, c_int32) for n in ("rope_neox", "tied_output", "bos", "eos", "add_bos")] + [
        ("n_params", ctypes.c_uint64), ("weight_bytes", ctypes.c_uint64), ("kv_bytes", ctypes.c_uint64),
        ("weight_types", c_char_p), ("xq8", c_int32), ("n_lora", c_int32), ("n_lora_pairs", c_int32),
        ("lora_bytes", ctypes.c_uint64), ("threads", c_int32)]


class LlmSampling(ctypes.Structure):
    _fields_ = [("temperature", c_float), ("top_k", c_int32), ("top_p", c_float), ("min_p", c_float),
                ("repeat_penalty", c_float), ("repeat_last_n", c_int32), ("seed", ctypes.c_uint64),
                ("max_tokens", c_int32), ("stop", ctypes.POINTER(c_char_p)), ("n_stop", c_int32),
                ("grammar", c_void_p)]


class LlmStats(ctypes.Structure):
    _fields_ = [("prompt_tokens", c_int32), ("generated_tokens", c_int32), ("prompt_seconds", ctypes.c_double),
                ("generate_seconds", ctypes.c_double), ("stopped_by", c_int32)]


class LlmChatMessage(ctypes.Structure):
    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class LlmChatOptions(ctypes.Structure):
    _fields_ = [("template_name", c_char_p), ("overflow", c_int)]


class LlmChatStats(ctypes.Structure):
    _fields_ = [("gen", LlmStats), ("prompt_tokens", c_int32), ("cached_tokens", c_int32),
                ("dropped_messages", c_int32)]


# rlx_llm_on_token
ON_TOKEN = ctypes.CFUNCTYPE(c_int, c_void_p, c_int32, c_void_p, c_size_t)


class Dataset(ctypes.Structure):
    _fields_ = [("count", c_int32), ("rows", c_int32), ("cols", c_int32),
                ("images", P_float), ("labels", P_int32)]


G = c_void_p  # rlx_graph *
S = c_void_p  # rlx_session *
N = c_int32   # rlx_node

# name: (restype, argtypes)
_SIGNATURES = {
    "rlx_last_error": (c_char_p, []),
    "rlx_status_name": (c_char_p, [c_int]),
    "rlx_version": (c_char_p, []),
    "rlx_op_name": (c_char_p, [c_int]),
    "rlx_op_from_name": (c_int, [c_char_p]),
    "rlx_op_min_inputs": (c_int32, [c_int]),
    "rlx_op_max_inputs": (c_int32, [c_int]),
    "rlx_op_attr_count": (c_int32, [c_int]),
    "rlx_op_attr_name": (c_char_p, [c_int, c_int32]),
    "rlx_op_attr_type": (c_char_p, [c_int, c_int32]),
    "rlx_op_attr_slot": (c_int32, [c_int, c_int32]),
    "rlx_op_is_elementwise": (c_int32, [c_int]),
    "rlx_graph_new": (G, []),
    "rlx_graph_free": (None, [G]),
    "rlx_graph_status": (c_int, [G]),
    "rlx_graph_error": (c_char_p, [G]),
    "rlx_graph_node_count": (c_int32, [G]),
    "rlx_node_shape": (c_int32, [G, N, P_int32]),
    "rlx_graph_find": (N, [G, c_char_p]),
    "rlx_input": (N, [G, c_char_p, c_int32, P_int32, c_int]),
    "rlx_param": (N, [G, c_char_p, c_int32, P_int32]),
    "rlx_constant": (N, [G, c_int32, P_int32, P_float]),
    "rlx_scalar": (N, [G, c_float]),
    "rlx_op_node": (N, [G, c_int, P_int32, c_int32, P_int32, c_int32, P_float, c_int32]),
    "rlx_matmul_t": (N, [G, N, N, c_int, c_int]),
    "rlx_reshape": (N, [G, N, c_int32, P_int32]),
    "rlx_permute": (N, [G, N, P_int32]),
    "rlx_transpose": (N, [G, N, c_int32, c_int32]),
    "rlx_narrow": (N, [G, N, c_int32, c_int32, c_int32]),
    "rlx_concat": (N, [G, P_int32, c_int32, c_int32]),
    "rlx_expand": (N, [G, N, c_int32, P_int32]),
    "rlx_gather": (N, [G, N, N]),
    "rlx_reduce_sum": (N, [G, N, P_int32, c_int32, c_int]),
    "rlx_reduce_mean": (N, [G, N, P_int32, c_int32, c_int]),
    "rlx_reduce_max": (N, [G, N, P_int32, c_int32, c_int]),
    "rlx_softmax": (N, [G, N, c_int32]),
    "rlx_log_softmax": (N, [G, N, c_int32]),
    "rlx_softmax_cross_entropy": (N, [G, N, N]),
    "rlx_rms_norm": (N, [G, N, N, c_float]),
    "rlx_layer_norm": (N, [G, N, N, N, c_float]),
    "rlx_rope": (N, [G, N, c_float, c_int32]),
    "rlx_attention": (N, [G, N, N, N, c_int, c_int32, N, c_float]),
    "rlx_conv2d": (N, [G, N, N, ctypes.POINTER(Conv2dParams)]),
    "rlx_max_pool2d": (N, [G, N, ctypes.POINTER(Pool2dParams)]),
    "rlx_avg_pool2d": (N, [G, N, ctypes.POINTER(Pool2dParams)]),
    "rlx_global_avg_pool": (N, [G, N]),
    "rlx_grad_with_loss": (c_int, [G, N, P_int32, c_int32, P_int32]),
    "rlx_grad": (c_int, [G, N, P_int32, c_int32, P_int32]),
    "rlx_compile": (c_int, [G, P_int32, c_int32, ctypes.POINTER(CompileOptions), ctypes.POINTER(S)]),
    "rlx_session_free": (None, [S]),
    "rlx_session_set_param": (c_int, [S, c_char_p, P_float, c_size_t]),
    "rlx_session_get_param": (c_int, [S, c_char_p, P_float, c_size_t]),
    "rlx_session_set_input": (c_int, [S, c_char_p, P_float, c_size_t]),
    "rlx_session_set_input_i32": (c_int, [S, c_char_p, P_int32, c_size_t]),
    "rlx_session_run": (c_int, [S]),
    "rlx_session_output_count": (c_int32, [S]),
    "rlx_session_output_shape": (c_int32, [S, c_int32, P_int32]),
    "rlx_session_output_len": (c_size_t, [S, c_int32]),
    "rlx_session_read_output": (c_int, [S, c_int32, P_float, c_size_t]),
    "rlx_compile_train": (c_int, [G, N, P_int32, c_int32, ctypes.POINTER(Optimizer),
                                  ctypes.POINTER(CompileOptions), ctypes.POINTER(S)]),
    "rlx_session_set_lr": (c_int, [S, c_float]),
    "rlx_session_arena_bytes": (c_size_t, [S]),
    "rlx_session_step_count": (c_int32, [S]),
    "rlx_session_fused_count": (c_int32, [S]),
    "rlx_session_input_count": (c_int32, [S]),
    "rlx_session_param_count": (c_int32, [S]),
    "rlx_session_input_name": (c_char_p, [S, c_int32]),
    "rlx_session_input_shape": (c_int32, [S, c_int32, P_int32]),
    "rlx_session_input_dtype": (c_int, [S, c_int32]),
    "rlx_session_param_name": (c_char_p, [S, c_int32]),
    "rlx_session_param_len": (c_size_t, [S, c_int32]),
    # rlx_models.h
    "rlx_vision_count": (c_int32, []),
    "rlx_vision_slug": (c_char_p, [c_int32]),
    "rlx_vision_info_get": (c_int, [c_char_p, ctypes.POINTER(VisionInfo)]),
    "rlx_vision_build": (c_int, [G, c_char_p, c_int32, P_int32, P_int32]),
    "rlx_vision_init_params": (c_int, [c_char_p, ctypes.c_uint64, P_float, c_size_t]),
    "rlx_vision_synthetic_batch": (c_int, [c_char_p, ctypes.c_uint64, c_int32, P_float, c_size_t,
                                           P_int32, c_size_t]),
    "rlx_vision_forward": (c_int, [c_char_p, c_int32, P_float, P_float, P_float]),
    "rlx_vision_train_step": (c_int, [c_char_p, c_int32, P_float, P_int32, P_float, c_float, P_float]),
    "rlx_mlp_forward": (c_int, [ctypes.POINTER(Mlp), P_float, P_float]),
    "rlx_mlp_loss": (c_int, [ctypes.POINTER(Mlp), P_float, P_float, P_float]),
    "rlx_mlp_grads": (c_int, [ctypes.POINTER(Mlp), P_float, P_float, P_float]),
    "rlx_mlp_train_step": (c_int, [ctypes.POINTER(Mlp), P_float, P_float, c_float, P_float]),
    "rlx_transformer_next_logits": (c_int, [ctypes.POINTER(TransformerConfig), P_float, c_int32, P_float]),
    "rlx_transformer_logits": (c_int, [ctypes.POINTER(TransformerConfig), P_float, c_int32, P_float]),
    "rlx_dataset_load": (c_int, [c_char_p, c_char_p, ctypes.POINTER(Dataset)]),
    "rlx_dataset_free": (None, [ctypes.POINTER(Dataset)]),
    "rlx_models_clear_cache": (None, []),
    # rlx_llm.h
    "rlx_llm_open_file": (c_int, [c_char_p, ctypes.POINTER(LlmOptions), ctypes.POINTER(c_void_p)]),
    "rlx_llm_free": (None, [c_void_p]),
    "rlx_llm_get_info": (c_int, [c_void_p, ctypes.POINTER(LlmInfo)]),
    "rlx_llm_tokenize": (c_int, [c_void_p, c_char_p, c_size_t, c_int, c_int, P_int32, c_size_t,
                                 ctypes.POINTER(c_size_t)]),
    "rlx_llm_detokenize": (c_int, [c_void_p, P_int32, c_size_t, c_void_p, c_size_t, ctypes.POINTER(c_size_t)]),
    "rlx_llm_position": (c_int32, [c_void_p]),
    "rlx_llm_reset": (None, [c_void_p]),
    "rlx_llm_eval": (c_int, [c_void_p, P_int32, c_size_t, P_float]),
    "rlx_llm_generator_new": (c_int, [c_void_p, P_int32, c_size_t, ctypes.POINTER(LlmSampling),
                                      ctypes.POINTER(c_void_p)]),
    "rlx_llm_generator_next": (c_int, [c_void_p, P_int32, ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t),
                                       ctypes.POINTER(c_int)]),
    "rlx_llm_generator_stats": (None, [c_void_p, ctypes.POINTER(LlmStats)]),
    "rlx_llm_generator_free": (None, [c_void_p]),
    "rlx_llm_tokens_evaluated": (ctypes.c_uint64, [c_void_p]),
    # rlx_llm_chat.h
    "rlx_llm_grammar_parse": (c_int, [c_char_p, c_size_t, ctypes.POINTER(c_void_p)]),
    "rlx_llm_grammar_free": (None, [c_void_p]),
    "rlx_llm_grammar_from_json_schema": (c_int, [c_char_p, c_size_t, ctypes.POINTER(c_void_p)]),
    "rlx_llm_chat_template_name": (c_char_p, [c_int32]),
    "rlx_llm_chat_new": (c_int, [c_void_p, ctypes.POINTER(LlmChatOptions), ctypes.POINTER(c_void_p)]),
    "rlx_llm_chat_free": (None, [c_void_p]),
    "rlx_llm_chat_template": (c_char_p, [c_void_p, ctypes.POINTER(c_char_p)]),
    "rlx_llm_chat_prompt": (c_int, [c_void_p, ctypes.POINTER(LlmChatMessage), c_int32, c_int, c_void_p, c_size_t,
                                    ctypes.POINTER(c_size_t)]),
    "rlx_llm_chat_respond": (c_int, [c_void_p, ctypes.POINTER(LlmChatMessage), c_int32, ctypes.POINTER(LlmSampling),
                                     ON_TOKEN, c_void_p, ctypes.POINTER(LlmChatStats)]),
    "rlx_llm_chat_reply": (c_void_p, [c_void_p, ctypes.POINTER(c_size_t)]),
    "rlx_llm_lora_target": (c_char_p, [c_int32]),
    "rlx_llm_lora_write": (c_int, [c_char_p, c_char_p, c_float, c_int, ctypes.POINTER(LlmLoraTensor), c_int32]),
    # rlx_llm_train.h
    "rlx_llm_finetune_default_options": (FinetuneOptions, []),
    "rlx_llm_finetune_new": (c_int, [c_void_p, ctypes.POINTER(FinetuneOptions), ctypes.POINTER(c_void_p)]),
    "rlx_llm_finetune_free": (None, [c_void_p]),
    "rlx_llm_finetune_step": (c_int, [c_void_p, P_int32, P_int32, P_float, c_int32, P_float]),
    "rlx_llm_finetune_eval": (c_int, [c_void_p, P_int32, P_int32, P_float, c_int32, P_float, P_float]),
    "rlx_llm_finetune_grad": (c_int, [c_void_p, P_int32, P_int32, P_float, c_int32, P_float]),
    "rlx_llm_finetune_set_lr": (c_int, [c_void_p, c_float]),
    "rlx_llm_finetune_pair_count": (c_int32, [c_void_p]),
    "rlx_llm_finetune_pair": (c_int, [c_void_p, c_int32, ctypes.POINTER(FinetunePairInfo)]),
    "rlx_llm_finetune_get_pair": (c_int, [c_void_p, c_char_p, P_float, c_size_t, P_float, c_size_t]),
    "rlx_llm_finetune_set_pair": (c_int, [c_void_p, c_char_p, P_float, c_size_t, P_float, c_size_t]),
    "rlx_llm_finetune_get_grad": (c_int, [c_void_p, c_char_p, P_float, c_size_t, P_float, c_size_t]),
    "rlx_llm_finetune_load_lora": (c_int, [c_void_p, c_int32]),
    "rlx_llm_data_default_options": (DataOptions, []),
    "rlx_llm_data_new": (c_int, [c_void_p, ctypes.POINTER(DataSource), ctypes.POINTER(DataSource),
                                 ctypes.POINTER(DataOptions), ctypes.POINTER(c_void_p)]),
    "rlx_llm_data_free": (None, [c_void_p]),
    "rlx_llm_data_get_info": (c_int, [c_void_p, ctypes.POINTER(DataInfo)]),
    "rlx_llm_data_windows": (c_int, [c_void_p, c_int32, ctypes.c_int64, c_int32, P_int32, P_int32, P_float]),
}

_lib = None
_lock = threading.Lock()


def library_path():
    """What the library is loaded from: a path, or a bare name from
    ctypes.util.find_library that the loader resolves (see _locate.py for
    the order).  Raises RlxLibraryError, listing where it looked, when no
    library is found."""
    found, tried = _locate.find()
    if found is None:
        raise RlxLibraryError("the RLX library (librlx.so) was not found; looked at:\n  " + "\n  ".join(tried) +
                              "\nBuild it (run `make native` in the repository), install it (`make install`, "
                              "found through pkg-config), or set RLX_LIBRARY to the path of librlx.so.")
    if os.environ.get("RLX_LIBRARY") and not os.path.exists(found):
        raise RlxLibraryError("RLX_LIBRARY is %s, which does not exist: point it at librlx.so (run `make native` "
                              "in the repository to build one), or unset it" % found)
    return found


def lib():
    """The loaded library (loaded and declared on the first call)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            path = library_path()
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                raise RlxLibraryError("the RLX library at %s could not be loaded (%s): run `make native` "
                                      "to rebuild it, or set RLX_LIBRARY" % (path, e)) from None
            for name, (res, args) in _SIGNATURES.items():
                try:
                    fn = getattr(handle, name)
                except AttributeError:
                    raise RlxLibraryError("%s does not export %s: it is older than this package (run `make native`, "
                                          "or install the library of the same version)" % (path, name)) from None
                fn.restype = res
                fn.argtypes = args
            _lib = handle
    return _lib


def decode(b):
    """A C string from the library as str ('' for NULL)."""
    return b.decode("utf-8", "replace") if b else ""


def last_error():
    """The message of the last failing library call on this thread."""
    return decode(lib().rlx_last_error())


def check(status, context=None):
    """Raises the RlxError that fits a negative status, with the library's
    message; returns the status otherwise."""
    if status < 0:
        msg = last_error()
        if context and not msg:
            msg = context
        raise RlxError.from_status(status, msg)
    return status


def fail(message, status=INVALID_ARG):
    """Raises an RlxError found by the binding itself (before the call)."""
    raise RlxError.from_status(status, message)


def closed(what):
    raise RlxError.from_status(STATE, "%s is closed" % what)


class Handle:
    """Lifetime of an object owning a native handle: self._h, freed by
    self._finalizer (a weakref.finalize); _what names it in errors."""

    _what = "the object"

    def close(self):
        """Frees the native object (harmless when already closed)."""
        self._finalizer()
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def closed(self):
        return self._h is None

    def _handle(self):
        if self._h is None:
            closed(self._what)
        return self._h


def int32_array(values):
    """A ctypes int32 array of the ints in values (and its length)."""
    values = [int(v) for v in values]
    return (c_int32 * max(1, len(values)))(*values), len(values)
