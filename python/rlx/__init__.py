"""rlx - Python bindings of RLX, a small ML runtime: describe models in code
as graphs of tensor ops, differentiate them, compile and run them on the CPU.

A thin ctypes layer over the native library librlx.so (standard library
only; numpy arrays are accepted and returned when numpy is installed).
`pip install ./python` in the repository builds the library and ships it in
the package; the library is looked for through $RLX_LIBRARY, then that copy,
then the repository's build/ (in-tree use, `make native`), then an
installed one (`make install`; pkg-config, the loader's path): _locate.py.

    import rlx
    g = rlx.Graph()
    x = g.input("x", (4, 784))
    labels = g.input("labels", (4,), dtype="i32")
    w = g.param("w", (784, 10))
    b = g.param("b", (10,))
    loss = g.reduce_mean(g.softmax_cross_entropy(x @ w + b, labels))
    with g.compile_train(loss, optimizer="adam", lr=1e-3) as step:
        for _ in range(10):
            print(step.run({"x": images, "labels": ids}))

Contents:
  Graph, Node            graph builders (graph.py)
  Session, TrainSession  compiled graphs (session.py)
  RlxError and subclasses, carrying .status and the library's message
  vision_models, VisionModel, mlp_*, transformer_*, Dataset (models.py)
  load_gguf, LanguageModel, LlmInfo  GGUF language models (llm.py)
  chat_templates         the built-in chat templates of LanguageModel.chat (chat.py)
  FineTune, FineTuneData, FineTuneResult  LoRA fine-tuning (finetune.py)
"""

from ._native import library_path
from .errors import (RlxError, RlxInvalidArgument, RlxShapeError, RlxGraphError, RlxMemoryError, RlxNotFound,
                     RlxUnsupported, RlxStateError, RlxNumericError, RlxLibraryError)
from .graph import Graph, Node, op_names, op_attrs
from .session import Session, TrainSession
from .models import (VisionInfo, VisionModel, vision_models, mlp_forward, mlp_loss, mlp_grads, mlp_train_step,
                     transformer_next_logits, transformer_logits, Dataset, load_dataset, clear_cache)
from .llm import LanguageModel, LlmInfo, load_gguf
from .chat import template_names as chat_templates
from .finetune import FineTune, FineTuneData, FineTuneResult
from . import errors


def version():
    """The library's version string."""
    from ._native import lib, decode
    return decode(lib().rlx_version())


__all__ = [
    "Graph", "Node", "Session", "TrainSession", "op_names", "op_attrs", "version", "library_path",
    "RlxError", "RlxInvalidArgument", "RlxShapeError", "RlxGraphError", "RlxMemoryError", "RlxNotFound",
    "RlxUnsupported", "RlxStateError", "RlxNumericError", "RlxLibraryError", "errors",
    "VisionInfo", "VisionModel", "vision_models", "mlp_forward", "mlp_loss", "mlp_grads", "mlp_train_step",
    "transformer_next_logits", "transformer_logits", "Dataset", "load_dataset", "clear_cache",
    "LanguageModel", "LlmInfo", "load_gguf", "chat_templates", "FineTune", "FineTuneData", "FineTuneResult",
]
