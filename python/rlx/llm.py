"""llm.py - GGUF language models (include/rlx_llm.h): llama, qwen2 and qwen3
files in any weight type of include/rlx_gguf_types.def, tokenized,
evaluated and sampled on the CPU.

    import rlx
    with rlx.load_gguf("build/lm/qwen3-q8_0.gguf", n_ctx=256) as lm:
        print(lm.info.arch, lm.info.n_vocab)
        ids = lm.tokenize("The small river")
        text, new_ids, stats = lm.generate(ids, max_tokens=32,
                                           on_token=lambda id, piece: print(piece, end=""))

Arguments are checked here first; a bad one raises RlxInvalidArgument (a
ValueError) naming the method and the argument.  Errors of the library
carry its message (rlx_last_error()).
"""

import ctypes
import dataclasses
import json
import math
import os
import weakref

from . import _buffers, _native, chat, finetune
from ._native import lib, check, fail, decode
from .errors import RlxError

_INT32_MAX = 2 ** 31 - 1


def _decode(b):
    """The library's text (whole UTF-8: bytes that are not are U+FFFD already)."""
    return b.decode("utf-8")


# rlx_llm_stats.stopped_by
STOPPED_BY = {0: "max_tokens", 1: "end_of_generation", 2: "stop_string", 3: "callback", 4: "context_full"}


@dataclasses.dataclass(frozen=True)
class LlmInfo:
    """What rlx_llm_get_info says of an open model (see include/rlx_llm.h):
    arch ("llama", "qwen2", "qwen3"), name, tokenizer ("llama" SentencePiece
    or "gpt2" byte-level BPE), the hyperparameters, n_ctx_train (the model's
    context) and n_ctx (this instance's KV cache positions), bos / eos (-1
    when none), add_bos, n_params, weight_bytes, kv_bytes, weight_types
    ("q8_0 x 15, f32 x 5"), xq8 (as load_gguf opened it), n_lora (its
    LoRA adapters), n_lora_pairs (the adapted products), lora_bytes and
    threads (the CPU threads its steps run on)."""

    arch: str
    name: str
    tokenizer: str
    n_vocab: int
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    n_ctx_train: int
    n_ctx: int
    rope_theta: float
    rms_eps: float
    rope_neox: bool
    tied_output: bool
    bos: int
    eos: int
    add_bos: bool
    n_params: int
    weight_bytes: int
    kv_bytes: int
    weight_types: str
    xq8: bool
    n_lora: int
    n_lora_pairs: int
    lora_bytes: int
    threads: int

    def as_dict(self):
        return dataclasses.asdict(self)


def _info(c):
    values = {}
    for f in dataclasses.fields(LlmInfo):
        v = getattr(c, f.name)
        if f.type in ("str", str):
            v = decode(v)
        elif f.type in ("bool", bool):
            v = bool(v)
        elif f.type in ("float", float):
            v = float(v)
        else:
            v = int(v)
        values[f.name] = v
    return LlmInfo(**values)


def _int(value, what, lo=None, hi=None):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            iv = int(value)
            ok = iv == value and not isinstance(value, (bool, str, bytes))
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            fail("%s must be an integer (got %r)" % (what, value))
        value = iv
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        fail("%s must be in [%s, %s] (got %d)" % (what, lo if lo is not None else "-inf",
                                                   hi if hi is not None else "inf", value))
    return value


def _float(value, what):
    try:
        v = float(value)
    except (TypeError, ValueError):
        fail("%s must be a number (got %r)" % (what, value))
    if isinstance(value, (bool, str, bytes)):
        fail("%s must be a number (got %r)" % (what, value))
    if math.isnan(v) or math.isinf(v):
        fail("%s must be finite (got %r)" % (what, value))
    return v


def _text_bytes(text, what):
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    fail("%s must be a str or bytes (got %s)" % (what, type(text).__name__))


def _free(h, keep):
    lib().rlx_llm_free(h)
    del keep


def _lora_list(lora):
    """load_gguf's lora= as (an rlx_llm_lora array, what keeps it alive, n):
    each entry a path, the adapter's bytes, (path or bytes, scale) or
    {"path": ..., "scale": ...} / {"data": bytes, "scale": ...}."""
    if lora is None:
        return None, [], 0
    if isinstance(lora, (str, bytes, bytearray, os.PathLike, dict, tuple)):
        lora = [lora]
    try:
        entries = list(lora)
    except TypeError:
        fail("rlx.load_gguf: lora must be a list of adapters (got %s)" % type(lora).__name__)
    arr = (_native.LlmLora * max(1, len(entries)))()
    keep = []
    for i, e in enumerate(entries):
        what = "rlx.load_gguf: lora[%d]" % i
        scale = 1.0
        if isinstance(e, dict):
            unknown = set(e) - {"path", "data", "scale"}
            if unknown or ("path" in e) == ("data" in e):
                fail("%s must hold 'path' or 'data', and 'scale' (got the keys %s)" % (what, sorted(e)))
            src, scale = e.get("path", e.get("data")), e.get("scale", 1.0)
            if "data" in e and not isinstance(src, (bytes, bytearray, memoryview)):
                fail("%s: data must be bytes (got %s)" % (what, type(src).__name__))
        elif isinstance(e, tuple):
            if len(e) != 2:
                fail("%s must be (path or bytes, scale) (got %d items)" % (what, len(e)))
            src, scale = e
        else:
            src = e
        scale = _float(scale, what + ": scale")
        if isinstance(src, (bytes, bytearray, memoryview)):
            data = bytes(src)
            if not data:
                fail("%s: the adapter's bytes are empty" % what)
            buf = ctypes.create_string_buffer(data, len(data))
            arr[i] = _native.LlmLora(None, ctypes.cast(buf, ctypes.c_void_p), len(data), scale)
            keep.append(buf)
        elif isinstance(src, (str, os.PathLike)):
            path = os.fsencode(src)
            if not path or b"\0" in path:
                fail("%s: the path must be non-empty, without NUL (got %r)" % (what, src))
            arr[i] = _native.LlmLora(path, None, 0, scale)
            keep.append(path)
        else:
            fail("%s must be a path, the adapter's bytes, (path, scale) or {'path': ..., 'scale': ...} (got %s)"
                 % (what, type(src).__name__))
    return arr, keep + [arr], len(entries)


def _sampling(what, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, seed, stop):
    """An rlx_llm_sampling from generate()'s arguments, each checked (the
    stop strings' array returned too: it must outlive the call)."""
    s = _native.LlmSampling()
    s.max_tokens = _int(max_tokens, "%s: max_tokens" % what, 0, _INT32_MAX)
    s.temperature = _float(temperature, "%s: temperature" % what)
    if s.temperature < 0:
        fail("%s: temperature must be >= 0 (got %r)" % (what, temperature))
    s.top_k = _int(top_k, "%s: top_k" % what, 0, _INT32_MAX)
    s.top_p = _float(top_p, "%s: top_p" % what)
    if not 0 <= s.top_p <= 1:
        fail("%s: top_p must be in [0, 1] (got %r)" % (what, top_p))
    s.min_p = _float(min_p, "%s: min_p" % what)
    if not 0 <= s.min_p <= 1:
        fail("%s: min_p must be in [0, 1] (got %r)" % (what, min_p))
    s.repeat_penalty = _float(repeat_penalty, "%s: repeat_penalty" % what)
    if not s.repeat_penalty > 0:
        fail("%s: repeat_penalty must be > 0 (got %r)" % (what, repeat_penalty))
    s.repeat_last_n = _int(repeat_last_n, "%s: repeat_last_n" % what, -1, _INT32_MAX)
    s.seed = _int(seed, "%s: seed" % what, 0, 2 ** 64 - 1)
    if isinstance(stop, (str, bytes)):
        stop = (stop,)
    try:
        stop = list(stop)
    except TypeError:
        fail("%s: stop must be a str or a sequence of str (got %s)" % (what, type(stop).__name__))
    stops = []
    for i, t in enumerate(stop):
        b = _text_bytes(t, "%s: stop[%d]" % (what, i))
        if not b or b"\0" in b:
            fail("%s: stop[%d] must be a non-empty string without NUL (got %r)" % (what, i, t))
        stops.append(b)
    stop_arr = (ctypes.c_char_p * max(1, len(stops)))(*stops)
    s.stop = stop_arr
    s.n_stop = len(stops)
    return s, stop_arr


class _Grammar:
    """A grammar for one call (with: freed after it): GBNF text parsed, or
    a JSON Schema (a dict or bool, or its JSON text) converted and parsed;
    neither: no grammar.  A malformed one raises the library's message."""

    def __init__(self, what, text, schema=None):
        self.ptr = None
        if text is not None and schema is not None:
            fail("%s: give one of grammar, json_schema" % what)
        if text is None and schema is None:
            return
        g = ctypes.c_void_p()
        if text is not None:
            b = _text_bytes(text, "%s: grammar" % what)
            check(lib().rlx_llm_grammar_parse(b, len(b), ctypes.byref(g)))
        else:
            if isinstance(schema, (dict, bool)):
                try:
                    schema = json.dumps(schema, allow_nan=False)
                except (TypeError, ValueError) as e:
                    fail("%s: json_schema is not JSON: %s" % (what, e))
            elif not isinstance(schema, (str, bytes, bytearray, memoryview)):
                fail("%s: json_schema must be a dict, a bool or JSON text (got %s)" % (what, type(schema).__name__))
            b = _text_bytes(schema, "%s: json_schema" % what)
            check(lib().rlx_llm_grammar_from_json_schema(b, len(b), ctypes.byref(g)))
        self.ptr = g

    def __enter__(self):
        return self.ptr

    def __exit__(self, *exc):
        if self.ptr is not None:
            lib().rlx_llm_grammar_free(self.ptr)
            self.ptr = None
        return False


class LanguageModel(_native.Handle):
    """A GGUF language model (an rlx_llm), made by rlx.load_gguf().

    The model keeps a context (the tokens evaluated so far, in its KV cache
    of info.n_ctx positions): eval() appends to it, reset() forgets it and
    generate() starts from an empty one.  Freed by close(), at the end of a
    `with` block, or on garbage collection; using a closed model raises
    RlxStateError.  Not for use from several threads at once."""

    _what = "the language model"

    def __init__(self, path, n_ctx=0, budget=0, xq8=False, lora=None, threads=0):
        self._h = None
        self._finalizer = weakref.finalize(self, lambda: None)
        self._dependents = weakref.WeakSet()  # FineTune objects on this model, closed before it
        if not isinstance(path, (str, bytes, os.PathLike)):
            fail("rlx.load_gguf: path must be a str, bytes or os.PathLike (got %s)" % type(path).__name__)
        n_ctx = _int(n_ctx, "rlx.load_gguf: n_ctx", 0, _INT32_MAX)
        budget = _int(budget, "rlx.load_gguf: budget", 0, 2 ** 64 - 1)
        threads = _int(threads, "rlx.load_gguf: threads", -2 ** 31, 2 ** 31 - 1)
        if not isinstance(xq8, bool):
            fail("rlx.load_gguf: xq8 must be True or False (got %s)" % type(xq8).__name__)
        adapters, keep, n_lora = _lora_list(lora)
        L = lib()
        opt = _native.LlmOptions(n_ctx, budget, int(xq8), ctypes.cast(adapters, ctypes.c_void_p) if n_lora else None,
                                 n_lora, threads)
        h = ctypes.c_void_p()
        try:
            check(L.rlx_llm_open_file(os.fsencode(path), ctypes.byref(opt), ctypes.byref(h)))
        except RlxError as e:
            if n_lora and "LoRA adapter" in e.message:
                raise RlxError.from_status(e.status, "rlx.load_gguf: lora: " + e.message) from None
            raise
        self._h = h.value
        # the adapters' bytes are used in place: kept until the model is freed
        self._finalizer = weakref.finalize(self, _free, h.value, keep)
        c = _native.LlmInfo()
        check(L.rlx_llm_get_info(self._h, ctypes.byref(c)))
        self.info = _info(c)
        self.path = os.fsdecode(path)

    def __repr__(self):
        if self._h is None:
            return "<rlx.LanguageModel (closed)>"
        i = self.info
        return "<rlx.LanguageModel %s %s: %d layers, %d embd, vocab %d, n_ctx %d, %s>" % (
            i.arch, i.name or os.path.basename(self.path), i.n_layer, i.n_embd, i.n_vocab, i.n_ctx, i.weight_types)

    def close(self):
        """Frees the model, and first the FineTune objects made on it."""
        for d in list(self._dependents):
            d.close()
        super().close()

    # ---- fine-tuning (finetune.py) ------------------------------------------------
    def finetune(self, data, valid=None, rank=None, alpha=None, targets=None, seq=None, batch=finetune.BATCH,
                 steps=None, lr=finetune.LR, optimizer="adamw", seed=finetune.SEED, shuffle=True, valid_fraction=None,
                 eval_every=None, adapter_in=None, on_progress=None, format="auto"):
        """Trains LoRA adapters on data as `rlx finetune` does (same
        defaults, checks and results) and returns a FineTuneResult (losses,
        valid_losses, save(path), adapter_bytes()).

        data, valid: a path (a .jsonl file: {"prompt", "completion"} lines,
        else UTF-8 text), the file's bytes, or a list of {"prompt": ...,
        "completion": ...} dicts; without valid, valid_fraction (default
        0.1) of the training windows are held out.  rank, alpha, targets
        ("attn_q,attn_v", a list of names, or "all") and seq default to
        the library's (8, 16, attn_q and attn_v, 128); batch windows per
        step (4); steps (default: one pass over the training windows); lr
        (1e-3); optimizer "adamw" or "sgd"; seed (1) draws A and the window
        order (shuffle=False: file order); the validation loss every
        eval_every steps (ten times a run) and after the last;
        adapter_in: an adapter to start from, with the same rank, alpha and
        targets: the index of one of this model's adapters (load_gguf's
        lora=), or a path or the file's bytes (the model file is then opened
        a second time while the adapter is copied in).  on_progress(p) after each step gets a
        Progress (step, steps, loss, valid, tokens_per_s, eta_s); returning
        False stops the run there.  Ctrl-C stops it after the current step.
        Either way what was learned is kept (result.stopped_by says why)."""
        return finetune.run(self, data, valid, rank, alpha, targets, seq, batch, steps, lr, optimizer, seed, shuffle,
                            valid_fraction, eval_every, adapter_in, on_progress, format)

    # ---- tokens ------------------------------------------------------------
    def tokenize(self, text, add_bos=None, special=True):
        """The token ids of text (str, or bytes of UTF-8) as a list.  add_bos:
        None as the file says (info.add_bos), True / False to force it;
        special: special-token text ("<|im_start|>") becomes those tokens."""
        h = self._handle()
        data = _text_bytes(text, "LanguageModel.tokenize: text")
        if add_bos is None:
            bos = -1
        elif isinstance(add_bos, (bool, int)) and add_bos in (0, 1):
            bos = int(add_bos)
        else:
            fail("LanguageModel.tokenize: add_bos must be None, True or False (got %r)" % (add_bos,))
        L = lib()
        n = ctypes.c_size_t()
        st = L.rlx_llm_tokenize(h, data, len(data), bos, 1 if special else 0, None, 0, ctypes.byref(n))
        if st < 0 and n.value == 0:
            check(st)
        if n.value == 0:
            return []
        ids = (ctypes.c_int32 * n.value)()
        check(L.rlx_llm_tokenize(h, data, len(data), bos, 1 if special else 0, ids, n.value, ctypes.byref(n)))
        return list(ids[:n.value])

    def _ids(self, ids, what, allow_empty=False):
        if isinstance(ids, (str, bytes)):
            fail("%s must be token ids, not %s (tokenize() the text)" % (what, type(ids).__name__))
        if isinstance(ids, int) and not isinstance(ids, bool):
            ids = [ids]
        try:
            buf = _buffers.i32(ids, what)
        except TypeError as e:
            fail(str(e))
        if buf.n == 0 and not allow_empty:
            fail("%s holds no token ids" % what)
        n_vocab = self.info.n_vocab
        values = ctypes.cast(buf.ptr, ctypes.POINTER(ctypes.c_int32))
        for i in range(buf.n):
            if not 0 <= values[i] < n_vocab:
                fail("%s[%d] = %d is outside the vocabulary (0 .. %d)" % (what, i, values[i], n_vocab - 1))
        return buf

    def detokenize(self, ids):
        """The text of token ids (control tokens such as BOS skipped); bytes
        that are not well-formed UTF-8 become U+FFFD as generate() streams
        them (one per byte; one for a character cut short at the end), so
        that detokenize(ids) equals the text generate() gave for ids."""
        h = self._handle()
        buf = self._ids(ids, "LanguageModel.detokenize: ids", allow_empty=True)
        if buf.n == 0:
            return ""
        L = lib()
        n = ctypes.c_size_t()
        st = L.rlx_llm_detokenize(h, buf.ptr, buf.n, None, 0, ctypes.byref(n))
        if st < 0 and n.value == 0:
            check(st)
        out = ctypes.create_string_buffer(n.value + 1)
        check(L.rlx_llm_detokenize(h, buf.ptr, buf.n, out, n.value + 1, ctypes.byref(n)))
        return _decode(out.raw[:n.value])

    # ---- the context ---------------------------------------------------------
    @property
    def position(self):
        """Tokens in the context (evaluated since the last reset)."""
        return int(lib().rlx_llm_position(self._handle()))

    def reset(self):
        """Forgets the context (position 0)."""
        lib().rlx_llm_reset(self._handle())

    def eval(self, ids, as_numpy=False):
        """Appends ids (one int or a sequence) to the context and returns the
        logits after the last one: array('f') of info.n_vocab values (a numpy
        array with as_numpy=True).  Past info.n_ctx is refused before
        anything runs, leaving the context as it was."""
        h = self._handle()
        buf = self._ids(ids, "LanguageModel.eval: ids")
        room = self.info.n_ctx - self.position
        if buf.n > room:
            fail("LanguageModel.eval: ids: %d tokens at position %d do not fit the context of %d tokens "
                 "(reset() or load with a larger n_ctx)" % (buf.n, self.position, self.info.n_ctx))
        logits, out = _buffers.new_f32(self.info.n_vocab)
        check(lib().rlx_llm_eval(h, buf.ptr, buf.n, out.ptr))
        return _buffers.to_numpy(logits, (self.info.n_vocab,)) if as_numpy else logits

    # ---- generation ------------------------------------------------------------
    def generate(self, prompt_or_ids, max_tokens=64, temperature=0, top_k=0, top_p=1, min_p=0, repeat_penalty=1,
                 repeat_last_n=64, seed=0, stop=(), on_token=None, grammar=None, json_schema=None):
        """Generates up to max_tokens tokens after the prompt (text, tokenized
        as tokenize() does with the file's BOS rule, or token ids), starting
        from an empty context.  Greedy when temperature is 0, or below 1e-6
        (RLX_LLM_MIN_TEMPERATURE: argmax, lowest id on ties); else
        llama.cpp's chain: repeat_penalty over the last
        repeat_last_n tokens (-1: all), top_k (0: off), top_p (1: off), min_p
        (0: off), temperature, a draw seeded by seed.  Stops at an
        end-of-generation token, a stop string (a str or a sequence of str;
        the text before it is kept), a full context, or when on_token returns
        a true value.  grammar: None, or GBNF text (llama.cpp's format) the
        output follows: only tokens that continue it are drawn, and it ends
        only where the text is complete under it (a malformed grammar raises
        the parser's message).  json_schema: None, or a JSON Schema (a dict,
        or its JSON text) the output follows, as the grammar
        rlx_llm_grammar_from_json_schema makes of it (the subset in
        docs/language-models.md; one outside it raises "json schema:
        <where>: <problem>"); give one of grammar and json_schema.

        on_token(id, text) is called for each generated token with the text
        it completes (whole UTF-8 characters, possibly '' while a character
        spans tokens or while the text could begin a stop string; the last
        call may have id -1 when it only hands out held text).

        Returns (text, ids, stats): the generated text (the streamed pieces
        joined), the generated ids, and a dict with prompt_tokens,
        generated_tokens, prompt_seconds, generate_seconds and stopped_by
        ("max_tokens", "end_of_generation", "stop_string", "callback",
        "context_full")."""
        h = self._handle()
        what = "LanguageModel.generate"
        if isinstance(prompt_or_ids, (str, bytes, bytearray)):
            ids = self.tokenize(prompt_or_ids)
            if not ids:
                fail("%s: prompt_or_ids: the prompt has no tokens" % what)
            prompt = self._ids(ids, "%s: prompt_or_ids" % what)
        else:
            prompt = self._ids(prompt_or_ids, "%s: prompt_or_ids" % what)
        if prompt.n > self.info.n_ctx:
            fail("%s: prompt_or_ids: %d prompt tokens do not fit the context of %d tokens"
                 % (what, prompt.n, self.info.n_ctx))
        s, keep_stops = _sampling(what, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                  seed, stop)
        if on_token is not None and not callable(on_token):
            fail("%s: on_token must be callable or None (got %s)" % (what, type(on_token).__name__))

        with _Grammar(what, grammar, json_schema) as g:
            s.grammar = g
            return self._generate(h, prompt, s, on_token)

    def _generate(self, h, prompt, s, on_token):
        L = lib()
        gen = ctypes.c_void_p()
        check(L.rlx_llm_generator_new(h, prompt.ptr, prompt.n, ctypes.byref(s), ctypes.byref(gen)))
        pieces, out_ids = [], []
        by_callback = False
        try:
            tok, text, n, done = ctypes.c_int32(), ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_int()
            while not done.value:
                check(L.rlx_llm_generator_next(gen, ctypes.byref(tok), ctypes.byref(text), ctypes.byref(n),
                                               ctypes.byref(done)))
                piece = _decode(ctypes.string_at(text.value, n.value)) if n.value else ""
                if tok.value >= 0:
                    out_ids.append(tok.value)
                if tok.value < 0 and not piece:
                    continue
                pieces.append(piece)
                if on_token is not None and on_token(tok.value, piece):
                    by_callback = True
                    break
            st = _native.LlmStats()
            L.rlx_llm_generator_stats(gen, ctypes.byref(st))
        finally:
            L.rlx_llm_generator_free(gen)
        stats = {"prompt_tokens": st.prompt_tokens, "generated_tokens": st.generated_tokens,
                 "prompt_seconds": st.prompt_seconds, "generate_seconds": st.generate_seconds,
                 "stopped_by": "callback" if by_callback else STOPPED_BY.get(st.stopped_by, str(st.stopped_by))}
        return "".join(pieces), out_ids, stats


    # ---- chat ------------------------------------------------------------------
    def _chat_session(self, template, overflow):
        s = getattr(self, "_chat", None)
        if s is not None and not s.closed and s.key == (template, overflow):
            return s
        if s is not None:
            s.close()
        self._handle()
        self._chat = chat.ChatSession(self, template, overflow)
        self._dependents.add(self._chat)
        return self._chat

    def chat_prompt(self, messages, template=None, add_generation_prompt=True):
        """The prompt text messages render to in the chat template (template:
        a name of rlx.chat_templates(), or None: detected from the file's
        tokenizer.chat_template, chatml when it has none)."""
        return self._chat_session(template, "refuse").prompt(messages, add_generation_prompt)

    def chat(self, messages, template=None, overflow="refuse", max_tokens=256, temperature=0, top_k=0, top_p=1,
             min_p=0, repeat_penalty=1, repeat_last_n=64, seed=0, stop=(), on_token=None, grammar=None,
             json_schema=None):
        """Answers a conversation: messages is a list of {"role": "system" |
        "user" | "assistant", "content": str} dicts ending with a user message
        (a system message only first).  It is rendered in the chat template
        (see chat_prompt; the template's special tokens parsed, the contents'
        text never), and only the tokens after what the model's KV cache
        already holds of it are evaluated: call again with the reply and the
        next user message appended and the earlier turns are not recomputed;
        an edited or removed turn rolls the cache back to where it differs.
        overflow: "refuse" a conversation that leaves no room in the context,
        or "drop" its oldest turns after the system prompt.  The sampling
        arguments, grammar, json_schema and on_token(id, text) are generate()'s.  eval(), reset()
        and generate() share the cache: a chat after them recomputes.

        Returns (text, stats): the reply, and a dict with prompt_tokens (the
        whole prompt), cached_tokens (of those, found in the cache),
        evaluated_tokens (run through the model by this call, reply tokens
        included), dropped_messages, generated_tokens, prompt_seconds,
        generate_seconds, stopped_by and template."""
        what = "LanguageModel.chat"
        s, keep_stops = _sampling(what, max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n,
                                  seed, stop)
        with _Grammar(what, grammar, json_schema) as g:
            s.grammar = g
            return self._chat_session(template, overflow).respond(messages, s, on_token, STOPPED_BY)


def load_gguf(path, n_ctx=0, budget=0, xq8=False, lora=None, threads=0):
    """Opens a GGUF language model (llama, qwen2, qwen3).  n_ctx: positions
    of the KV cache (0: the model's context length, at most 4096); budget:
    bytes of tensor data allowed (0: no limit); xq8: products with
    block-quantized weights round their input to 8 bits per 32 values first,
    as llama.cpp does; lora: LoRA adapters applied while it runs (llama.cpp's
    adapter GGUF files, e.g. written by finetune()), a list of paths,
    (path, scale) pairs or {"path": ..., "scale": ...} dicts ("data": the
    file's bytes instead of "path"); scale 1 is the adapter as trained;
    threads: CPU threads of its steps and of fine-tuning it (0: RLX_THREADS,
    else the physical cores; 1 .. 256), logits bitwise the same for any
    count.  Returns a LanguageModel."""
    return LanguageModel(path, n_ctx, budget, xq8, lora, threads)
