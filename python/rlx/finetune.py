"""finetune.py - LoRA fine-tuning of a GGUF language model from Python
(include/rlx_llm_train.h), on the CPU.

    import rlx
    with rlx.load_gguf("model.gguf") as lm:
        run = lm.finetune("train.txt", steps=200, seq=128, batch=4, lr=1e-3,
                          on_progress=lambda p: print(p.step, p.loss))
        run.save("style.gguf")                   # llama.cpp's LoRA GGUF (f32)
    with rlx.load_gguf("model.gguf", lora=[("style.gguf", 1.0)]) as lm:
        print(lm.generate("Once upon a time")[0])

LanguageModel.finetune (run() here) is the loop of `rlx finetune`
(tools/cli_finetune.c): its options, defaults, checks and messages (an
argument's name where the CLI names its flag), the same windows, steps and
validation loss, so the same options give the same losses and the same
adapter, bit for bit.  Ctrl-C (KeyboardInterrupt) or on_progress returning
False stops after the current step and keeps what was learned.

The pieces are public too: FineTuneData (the windows of a text or JSONL
source, rlx_llm_data) and FineTune (the adapters with step / eval / grad,
get_pair / set_pair, rlx_llm_finetune; the library's defaults: rank 8,
alpha 16, attn_q and attn_v, seq 128, AdamW at 2e-4, seed 0).
"""

import ctypes
import dataclasses
import json
import math
import numbers
import os
import signal
import tempfile
import threading
import time
import weakref

from . import _buffers, _native
from ._native import lib, check, fail
from ._constants import OPTIMIZER, DATA_FORMAT, DATA_SPLIT, FINETUNE_RUN
from .errors import RlxError, NOT_FOUND, NUMERIC

# rlx finetune's own defaults (RLX_LLM_FINETUNE_RUN_* of include/rlx_llm_train.h,
# through the generated constants).
BATCH = FINETUNE_RUN["batch"]
LR = FINETUNE_RUN["lr"]
SEED = FINETUNE_RUN["seed"]

_OPTIMIZERS = {k: OPTIMIZER[k] for k in ("adamw", "sgd")}  # the kinds fine-tuning offers
_FORMATS = DATA_FORMAT
_SPLITS = DATA_SPLIT
_U64 = 2 ** 64 - 1


# ---- argument checks, worded as rlx finetune's (tools/cli_args.c) ----------------
def _whole(value, what, lo, hi):
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and lo <= value <= hi
    if not ok:
        fail("%s must be a whole number from %d to %d (got %r)" % (what, lo, hi, value))
    return int(value)


def _number(value, what, lo, hi):
    """A number above lo and at most hi."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = math.isfinite(value) and lo < value <= hi
    if not ok:
        fail("%s must be a number above %g and at most %g (got %r)" % (what, lo, hi, value))
    return value


def target_names():
    """The projections LoRA may adapt, in the pairs' order within a layer."""
    L, names, k = lib(), [], 0
    while L.rlx_llm_lora_target(k):
        names.append(_native.decode(L.rlx_llm_lora_target(k)))
        k += 1
    return names


def _targets(value, what):
    """A comma-separated str or a sequence of names -> the str the library takes."""
    if isinstance(value, str):
        names = value.split(",")
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        names = list(value)
    else:
        fail("%s must be a str such as 'attn_q,attn_v' or a list of names (got %r)" % (what, value))
    known = target_names()
    for n in names:
        if n != "all" and n not in known:
            fail("%s: '%s' is not a target (known: %s, or all)" % (what, n, ", ".join(known)))
    if not names:
        fail("%s names no target" % what)
    return ",".join(names)


def _optimizer(value, what):
    if value not in _OPTIMIZERS:
        fail("%s: unknown optimizer %r (known: adamw, sgd)" % (what, value))
    return _OPTIMIZERS[value]


def _data_options(what, seq, shuffle, seed, valid_fraction):
    """rlx_llm_data_options from the arguments (None: the library's default)."""
    d = lib().rlx_llm_data_default_options()
    if seq is not None:
        d.seq = _whole(seq, what + ": seq", 2, 1 << 20)
    if shuffle not in (True, False, 0, 1):
        fail("%s: shuffle must be a whole number from 0 to 1 (got %r)" % (what, shuffle))
    d.shuffle, d.seed = int(shuffle), _whole(seed, what + ": seed", 0, _U64)
    if valid_fraction is not None:
        ok = isinstance(valid_fraction, numbers.Real) and not isinstance(valid_fraction, bool)
        if not (ok and 0 <= valid_fraction < 1):
            fail("%s: valid_fraction must be a number from 0 to below 1 (got %r)" % (what, valid_fraction))
        d.valid_fraction = valid_fraction
    return d


def _finetune_options(model, what, rank, alpha, targets, seq, optimizer, lr, seed, weight_decay=0.0):
    """rlx_llm_finetune_options from the arguments (None: the library's
    default); .targets_bytes keeps the targets' string alive."""
    o = lib().rlx_llm_finetune_default_options()
    if rank is not None:
        o.rank = _whole(rank, what + ": rank", 1, 1 << 16)
    if alpha is not None:
        o.alpha = _number(alpha, what + ": alpha", 0, 1e6)
    o.targets_bytes = _targets(targets, what + ": targets").encode() if targets is not None else o.targets
    o.targets = o.targets_bytes
    if seq is not None:
        o.seq = _whole(seq, what + ": seq", 2, 1 << 20)
    if o.seq > model.info.n_ctx_train:
        fail("%s: seq %d is above the model's context (%d)" % (what, o.seq, model.info.n_ctx_train))
    o.optimizer.kind = _optimizer(optimizer, what + ": optimizer")
    if lr is not None:
        o.optimizer.lr = _number(lr, what + ": lr", 0, 10)
    if weight_decay:
        o.optimizer.weight_decay = _number(weight_decay, what + ": weight_decay", 0, 1)
    o.seed = _whole(seed, what + ": seed", 0, _U64)
    return o


def _reraise(e, prefix):
    """The library's error e with prefix (the argument it concerns) in front."""
    raise RlxError.from_status(e.status, "%s: %s" % (prefix, e.message)) from None


# ---- data ------------------------------------------------------------------------
def _source(data, fmt, what):
    """(rlx_llm_data_source, what keeps its bytes alive) for a path, bytes, or
    a list of {"prompt", "completion"} dicts (JSONL)."""
    if fmt not in _FORMATS:
        fail("%s: format must be one of %s (got %r)" % (what, ", ".join(_FORMATS), fmt))
    src = _native.DataSource()
    src.format = _FORMATS[fmt]
    if isinstance(data, (str, os.PathLike)):
        path = os.fsencode(data)
        if not path or b"\0" in path:
            fail("%s: a path must be non-empty, without NUL (got %r)" % (what, data))
        src.path = path
        return src, path
    if isinstance(data, list) and all(isinstance(d, dict) for d in data):
        data = "".join(json.dumps(d) + "\n" for d in data).encode("utf-8")
        src.format = _FORMATS["jsonl"]
    if isinstance(data, (bytes, bytearray, memoryview)):
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        src.text, src.len = ctypes.cast(buf, ctypes.c_void_p), len(data)
        return src, buf
    fail("%s must be a path, bytes of the file, or a list of {'prompt', 'completion'} dicts (got %s)"
         % (what, type(data).__name__))


class FineTuneData(_native.Handle):
    """The windows of a text or JSONL source for fine-tuning (an rlx_llm_data;
    the rules in include/rlx_llm_train.h and docs/language-models.md): data
    and valid are paths (.jsonl: JSONL), bytes of a file, or lists of
    {"prompt": ..., "completion": ...} dicts; without valid, the last
    valid_fraction of the training windows are held out.  info: a dict of
    seq, n_windows, n_scored, n_tokens, n_dropped, n_examples (each a
    {"train", "valid"} pair but seq)."""

    _what = "the fine-tuning data"

    def __init__(self, model, data, valid=None, seq=None, shuffle=True, seed=0, valid_fraction=None, format="auto", *,
                 _what="rlx.FineTuneData"):
        self._h = None
        self._finalizer = weakref.finalize(self, lambda: None)
        what = _what
        o = _data_options(what, seq, shuffle, seed, valid_fraction)
        train_src, keep1 = _source(data, format, what + ": data")
        valid_src, keep2 = _source(valid, format, what + ": valid") if valid is not None else (None, None)
        h = ctypes.c_void_p()
        try:
            check(lib().rlx_llm_data_new(model._handle(), ctypes.byref(train_src),
                                         ctypes.byref(valid_src) if valid_src is not None else None,
                                         ctypes.byref(o), ctypes.byref(h)))
        except RlxError as e:
            _reraise(e, what + (": valid" if "the validation data" in e.message else ": data"))
        del keep1, keep2  # the tokens are the object's own
        self._h = h.value
        self._finalizer = weakref.finalize(self, lib().rlx_llm_data_free, h.value)
        c = _native.DataInfo()
        check(lib().rlx_llm_data_get_info(self._h, ctypes.byref(c)))
        pair = lambda a: {"train": int(a[0]), "valid": int(a[1])}  # noqa: E731
        self.info = {"seq": int(c.seq), "n_windows": pair(c.n_windows), "n_scored": pair(c.n_scored),
                     "n_tokens": pair(c.n_tokens), "n_dropped": pair(c.n_dropped), "n_examples": pair(c.n_examples)}
        self.seq = int(c.seq)

    def windows(self, split="train", first=0, n=1):
        """Windows first .. first + n - 1 of a split ("train" or "valid",
        counted around it) as (ids, targets, mask): array('i') / array('f')
        of n * seq values, the arguments of FineTune.step / eval."""
        h = self._handle()
        if split not in _SPLITS:
            fail("FineTuneData.windows: split must be 'train' or 'valid' (got %r)" % (split,))
        first = _whole(first, "FineTuneData.windows: first", 0, 2 ** 63 - 1)
        n = _whole(n, "FineTuneData.windows: n", 1, 1 << 20)
        ids, ib = _buffers.new_i32(n * self.seq)
        tg, tb = _buffers.new_i32(n * self.seq)
        mask, mb = _buffers.new_f32(n * self.seq)
        check(lib().rlx_llm_data_windows(h, _SPLITS[split], first, n, ib.ptr, tb.ptr, mb.ptr))
        return ids, tg, mask


# ---- the adapters ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Pair:
    """One adapted projection: name (its base tensor, "blk.0.attn_q.weight"),
    layer, n_in, n_out, rank (A is [rank, n_in], B [n_out, rank]), alpha,
    scale (alpha / rank)."""

    name: str
    layer: int
    n_in: int
    n_out: int
    rank: int
    alpha: float
    scale: float


def write_adapter(path, arch, alpha, pairs, values, f16=False):
    """Writes a LoRA adapter GGUF (rlx_llm_lora_write: whole or absent):
    pairs (Pair) with values[name] = (A, B) as float32 buffers."""
    tensors = (_native.LlmLoraTensor * max(1, len(pairs)))()
    keep = []
    for i, p in enumerate(pairs):
        a, b = (_buffers.f32(v, "%s of %s" % (w, p.name)) for v, w in zip(values[p.name], "AB"))
        if a.n != p.rank * p.n_in or b.n != p.n_out * p.rank:
            fail("write_adapter: %s: A holds %d values and B %d; want %d and %d"
                 % (p.name, a.n, b.n, p.rank * p.n_in, p.n_out * p.rank))
        keep += [a, b]
        tensors[i] = _native.LlmLoraTensor(p.name.encode(), p.rank, p.n_in, p.n_out, a.ptr, b.ptr)
    check(lib().rlx_llm_lora_write(os.fsencode(path), arch.encode(), alpha, 1 if f16 else 0, tensors, len(pairs)))


def _adapter_bytes(save):
    with tempfile.TemporaryDirectory(prefix="rlx-lora-") as d:
        path = os.path.join(d, "adapter.gguf")
        save(path)
        with open(path, "rb") as f:
            return f.read()


class FineTune(_native.Handle):
    """LoRA pairs on a model's targeted projections and their optimizer (an
    rlx_llm_finetune): step(), eval() and grad() over windows (ids,
    targets and mask of n * seq values, as FineTuneData.windows gives),
    get_pair / set_pair / get_grad by the base tensor's name, save() the
    adapter.  Options default to the library's (None: its value).  The
    model must stay open: closing it closes this first."""

    _what = "the fine-tuning"

    def __init__(self, model, rank=None, alpha=None, targets=None, seq=None, optimizer="adamw", lr=None, seed=0,
                 weight_decay=0.0, *, _what="rlx.FineTune"):
        self._h = None
        self._finalizer = weakref.finalize(self, lambda: None)
        what = _what
        o = _finetune_options(model, what, rank, alpha, targets, seq, optimizer, lr, seed, weight_decay)
        h = ctypes.c_void_p()
        try:
            check(lib().rlx_llm_finetune_new(model._handle(), ctypes.byref(o), ctypes.byref(h)))
        except RlxError as e:
            _reraise(e, what + (": rank" if "rank" in e.message else ""))
        self._h = h.value
        self._finalizer = weakref.finalize(self, lib().rlx_llm_finetune_free, h.value)
        self.model = model
        model._dependents.add(self)
        self.seq, self.rank, self.alpha = int(o.seq), int(o.rank), float(o.alpha)
        self.targets = o.targets_bytes.decode()
        self.pairs = []
        for i in range(lib().rlx_llm_finetune_pair_count(self._h)):
            c = _native.FinetunePairInfo()
            check(lib().rlx_llm_finetune_pair(self._h, i, ctypes.byref(c)))
            self.pairs.append(Pair(_native.decode(c.name), c.layer, c.n_in, c.n_out, c.rank, c.alpha, c.scale))
        self._by_name = {p.name: p for p in self.pairs}

    # ---- steps ------------------------------------------------------------------
    def _windows(self, what, ids, targets, mask):
        i = _buffers.i32(ids, what + ": ids")
        t = _buffers.i32(targets, what + ": targets")
        n = i.n // self.seq
        if i.n == 0 or i.n % self.seq:
            fail("%s: ids hold %d values, not a whole number of windows of seq %d" % (what, i.n, self.seq))
        if t.n != i.n:
            fail("%s: targets hold %d values; ids %d" % (what, t.n, i.n))
        m = None
        if mask is not None:
            m = _buffers.f32(mask, what + ": mask")
            if m.n != i.n:
                fail("%s: mask holds %d values; ids %d" % (what, m.n, i.n))
        return i, t, m, n

    def _call(self, fn, what, ids, targets, mask):
        h = self._handle()
        i, t, m, n = self._windows(what, ids, targets, mask)
        loss = ctypes.c_float()
        check(fn(h, i.ptr, t.ptr, m.ptr if m else None, n, ctypes.byref(loss)))
        return loss.value

    def step(self, ids, targets, mask=None):
        """One optimizer step over the windows; the loss before the update."""
        return self._call(lib().rlx_llm_finetune_step, "FineTune.step", ids, targets, mask)

    def eval(self, ids, targets, mask=None, logits=False, as_numpy=False):
        """The loss without an update; with logits=True (loss, logits of
        every position: n * seq * n_vocab floats, numpy [n, seq, n_vocab]
        with as_numpy)."""
        h = self._handle()
        i, t, m, n = self._windows("FineTune.eval", ids, targets, mask)
        loss = ctypes.c_float()
        out = None
        if logits:
            v = self.model.info.n_vocab
            out, ob = _buffers.new_f32(n * self.seq * v)
        check(lib().rlx_llm_finetune_eval(h, i.ptr, t.ptr, m.ptr if m else None, n, ctypes.byref(loss),
                                          ob.ptr if logits else None))
        if not logits:
            return loss.value
        return loss.value, (_buffers.to_numpy(out, (n, self.seq, v)) if as_numpy else out)

    def grad(self, ids, targets, mask=None):
        """The loss and its gradients (read them with get_grad), no update."""
        return self._call(lib().rlx_llm_finetune_grad, "FineTune.grad", ids, targets, mask)

    def set_lr(self, lr):
        check(lib().rlx_llm_finetune_set_lr(self._handle(), _number(lr, "FineTune.set_lr: lr", 0, 10)))

    def load_lora(self, i):
        """Copies the model's adapter i (load_gguf(lora=)) into the pairs."""
        check(lib().rlx_llm_finetune_load_lora(self._handle(), _whole(i, "FineTune.load_lora: i", 0, 2 ** 31 - 1)))

    # ---- the pairs ----------------------------------------------------------------
    def _pair(self, name, what):
        self._handle()
        if name not in self._by_name:
            fail("%s: no pair named %r (the first: %r)" % (what, name, self.pairs[0].name), NOT_FOUND)
        return self._by_name[name]

    def _read(self, fn, name, what, as_numpy):
        p = self._pair(name, what)
        a, ab = _buffers.new_f32(p.rank * p.n_in)
        b, bb = _buffers.new_f32(p.n_out * p.rank)
        check(fn(self._h, p.name.encode(), ab.ptr, ab.n, bb.ptr, bb.n))
        if as_numpy:
            return _buffers.to_numpy(a, (p.rank, p.n_in)), _buffers.to_numpy(b, (p.n_out, p.rank))
        return a, b

    def get_pair(self, name, as_numpy=False):
        """(A, B) of the pair: array('f') of rank * n_in and n_out * rank
        values, row-major (numpy [rank, n_in] and [n_out, rank])."""
        return self._read(lib().rlx_llm_finetune_get_pair, name, "FineTune.get_pair", as_numpy)

    def get_grad(self, name, as_numpy=False):
        """(dA, dB) of the last grad(), shaped as get_pair's."""
        return self._read(lib().rlx_llm_finetune_get_grad, name, "FineTune.get_grad", as_numpy)

    def set_pair(self, name, a, b):
        """Sets A and B of the pair (the optimizer's state is kept)."""
        p = self._pair(name, "FineTune.set_pair")
        ab, bb = _buffers.f32(a, "FineTune.set_pair: a"), _buffers.f32(b, "FineTune.set_pair: b")
        if ab.n != p.rank * p.n_in or bb.n != p.n_out * p.rank:
            fail("FineTune.set_pair: %s: a holds %d values and b %d; want %d and %d"
                 % (name, ab.n, bb.n, p.rank * p.n_in, p.n_out * p.rank))
        check(lib().rlx_llm_finetune_set_pair(self._h, p.name.encode(), ab.ptr, ab.n, bb.ptr, bb.n))

    def save(self, path, f16=False):
        """Writes the adapter (llama.cpp's LoRA GGUF, f32 or f16)."""
        values = {p.name: self.get_pair(p.name) for p in self.pairs}
        write_adapter(path, self.model.info.arch, self.alpha, self.pairs, values, f16)

    def adapter_bytes(self, f16=False):
        """The adapter file's bytes (as save() writes it)."""
        return _adapter_bytes(lambda path: self.save(path, f16))


# ---- the loop of rlx finetune --------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Progress:
    """What on_progress gets after each step: step (1 ..), steps, loss (the
    training loss before the step's update), valid (the validation loss
    when taken at this step, else None), tokens_per_s, eta_s."""

    step: int
    steps: int
    loss: float
    valid: object
    tokens_per_s: float
    eta_s: float


class FineTuneResult:
    """What LanguageModel.finetune learned: losses (the training loss of each
    step), valid_losses ({step: validation loss}), valid_loss (the last
    one, or None), steps (taken), stopped_by ("steps", "callback",
    "interrupt"), interrupted, pairs, rank, alpha, targets, arch, data_info;
    get_pair(name), save(path) and adapter_bytes().  It holds the adapters
    as arrays (no native object)."""

    def __init__(self, ft, data_info, losses, valid_losses, stopped_by):
        self.losses, self.valid_losses, self.stopped_by = losses, valid_losses, stopped_by
        self.steps = len(losses)
        self.interrupted = stopped_by == "interrupt"
        self.valid_loss = valid_losses[max(valid_losses)] if valid_losses else None
        self.pairs, self.rank, self.alpha, self.targets = ft.pairs, ft.rank, ft.alpha, ft.targets
        self.arch, self.data_info = ft.model.info.arch, data_info
        self._values = {p.name: ft.get_pair(p.name) for p in ft.pairs}

    def __repr__(self):
        return "<rlx.FineTuneResult %d steps, loss %s -> %s, %d pairs of rank %d on %s%s>" % (
            self.steps, "%.4f" % self.losses[0] if self.losses else "-",
            "%.4f" % self.losses[-1] if self.losses else "-", len(self.pairs), self.rank, self.targets,
            ", interrupted" if self.interrupted else "")

    def get_pair(self, name, as_numpy=False):
        """(A, B) of the pair called name, as FineTune.get_pair."""
        if name not in self._values:
            fail("FineTuneResult.get_pair: no pair named %r" % (name,))
        a, b = self._values[name]
        if as_numpy:
            p = next(p for p in self.pairs if p.name == name)
            return _buffers.to_numpy(a, (p.rank, p.n_in)), _buffers.to_numpy(b, (p.n_out, p.rank))
        return a, b

    def save(self, path, f16=False):
        """Writes the adapter (llama.cpp's LoRA GGUF; f32 as rlx finetune
        writes it, or f16), whole or not at all."""
        write_adapter(path, self.arch, self.alpha, self.pairs, self._values, f16)

    def adapter_bytes(self, f16=False):
        """The adapter file's bytes (as save() writes it)."""
        return _adapter_bytes(lambda path: self.save(path, f16))


def _mean_nll(ft, data, split, batch):
    """The mean loss over a split's windows, batch at a time, weighted by
    each batch's scored tokens (tools/cli_perplexity.c cli_mean_nll)."""
    n, seq = data.info["n_windows"][split], data.seq
    total = weight = 0.0
    for first in range(0, n, batch):
        real = min(batch, n - first)
        ids, tg, mask = data.windows(split, first, batch)
        for j in range(real * seq, batch * seq):
            mask[j] = 0.0  # past the split's end
        loss = ft.eval(ids, tg, mask)
        w = 0.0
        for x in mask:
            w += x
        total += loss * w
        weight += w
    return total / weight if weight > 0 else 0.0


def _open_adapter(model, adapter_in, what):
    """The model opened again with adapter_in as its adapter 0 (the library
    copies an adapter into a fine-tuning from a model opened with it)."""
    from .llm import LanguageModel
    try:
        return LanguageModel(model.path, n_ctx=1, lora=[(adapter_in, 1.0)])
    except RlxError as e:
        _reraise(e, what)


def run(model, data, valid=None, rank=None, alpha=None, targets=None, seq=None, batch=BATCH, steps=None, lr=LR,
        optimizer="adamw", seed=SEED, shuffle=True, valid_fraction=None, eval_every=None, adapter_in=None,
        on_progress=None, format="auto"):
    """LanguageModel.finetune: see its docstring."""
    what = "LanguageModel.finetune"
    model._handle()
    # every argument first, as rlx finetune parses its flags
    o = _finetune_options(model, what, rank, alpha, targets, seq, optimizer, lr, seed)
    _data_options(what, seq, shuffle, seed, valid_fraction)
    batch = _whole(batch, what + ": batch", 1, 4096)
    steps = None if steps is None else _whole(steps, what + ": steps", 1, 1000000000)
    eval_every = None if eval_every is None else _whole(eval_every, what + ": eval_every", 1, 1000000000)
    if on_progress is not None and not callable(on_progress):
        fail("%s: on_progress must be callable or None (got %s)" % (what, type(on_progress).__name__))
    if isinstance(adapter_in, numbers.Integral) and not isinstance(adapter_in, bool):
        if model.info.n_lora == 0:
            fail("%s: adapter_in %d: the model has no adapters (load_gguf(lora=)); give a path" % (what, adapter_in))
        _whole(adapter_in, what + ": adapter_in", 0, model.info.n_lora - 1)
    elif adapter_in is not None and not isinstance(adapter_in, (str, bytes, bytearray, os.PathLike)):
        fail("%s: adapter_in must be a path, the adapter's bytes or the index of one of the model's adapters "
             "(got %s)" % (what, type(adapter_in).__name__))

    # the data, the fine-tuning object, the adapter to start from
    seq = o.seq
    with FineTuneData(model, data, valid, seq, shuffle, seed, valid_fraction, format, _what=what) as d, \
            FineTune(model, rank, alpha, targets, seq, optimizer, lr, seed, _what=what) as ft:
        if isinstance(adapter_in, numbers.Integral):
            _load_lora(ft, adapter_in, what)
        elif adapter_in is not None:
            with _open_adapter(model, adapter_in, what + ": adapter_in") as m2, \
                    FineTune(m2, rank, alpha, targets, seq, optimizer, lr, seed, _what=what) as ft2:
                _load_lora(ft2, 0, what)
                for p in ft2.pairs:
                    ft.set_pair(p.name, *ft2.get_pair(p.name))
        return _train(ft, d, batch, steps, eval_every, on_progress, what)


def _load_lora(ft, i, what):
    try:
        ft.load_lora(i)
    except RlxError as e:
        _reraise(e, what + ": adapter_in (give the rank, alpha and targets it was trained with)")


class _Interrupt:
    """Ctrl-C during training: a flag (the run stops after its current step);
    a second Ctrl-C raises KeyboardInterrupt as usual.  Only in the main
    thread, where Python handles signals; elsewhere nothing changes."""

    def __init__(self):
        self.hit = False
        self.old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            old = signal.getsignal(signal.SIGINT)
            self.old = signal.SIG_DFL if old is None else old  # None: a handler not set from Python
            signal.signal(signal.SIGINT, self._on)
        return self

    def _on(self, sig, frame):
        self.hit = True
        signal.signal(signal.SIGINT, self.old)

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        return False


def _train(ft, d, batch, steps, eval_every, on_progress, what):
    n_train = d.info["n_windows"]["train"]
    has_valid = d.info["n_windows"]["valid"] > 0
    steps = steps or (n_train + batch - 1) // batch
    every = eval_every or (steps // 10 if steps >= 10 else 1)
    losses, valid_losses, stopped_by = [], {}, "steps"
    t0 = time.monotonic()
    with _Interrupt() as intr:
        try:
            while len(losses) < steps and not intr.hit:
                ids, tg, mask = d.windows("train", len(losses) * batch, batch)
                loss = ft.step(ids, tg, mask)
                losses.append(loss)
                step = len(losses)
                if not math.isfinite(loss):
                    fail("%s: the training loss is %g at step %d (try a lower lr)" % (what, loss, step), NUMERIC)
                valid = None
                if has_valid and (step % every == 0 or step == steps or intr.hit):
                    valid = valid_losses[step] = _mean_nll(ft, d, "valid", batch)
                if on_progress is not None:
                    spent = max(time.monotonic() - t0, 1e-9)
                    p = Progress(step, steps, loss, valid, step * batch * ft.seq / spent, spent / step * (steps - step))
                    if on_progress(p) is False:
                        stopped_by = "callback"
                        break
        except KeyboardInterrupt:  # a second Ctrl-C, or one raised elsewhere: the steps so far are kept
            intr.hit = True
    if intr.hit and stopped_by == "steps":
        stopped_by = "interrupt"
    return FineTuneResult(ft, d.info, losses, valid_losses, stopped_by)
