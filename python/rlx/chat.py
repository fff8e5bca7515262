"""chat.py - conversations with a GGUF language model (include/rlx_llm_chat.h):
the messages rendered in the model's chat template (chatml, llama3, llama2,
mistral, gemma, phi3, zephyr; detected from the file or named), the KV cache
kept between calls, so a conversation that grows by a turn evaluates only
the new tokens.  LanguageModel.chat() and chat_prompt() are the way in:

    with rlx.load_gguf("build/lm/qwen2-q8_0.gguf", n_ctx=512) as lm:
        messages = [{"role": "user", "content": "Hello"}]
        text, stats = lm.chat(messages, max_tokens=32)
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "More"}]
        text, stats = lm.chat(messages, max_tokens=32)   # turn 1 comes from the cache
"""

import ctypes
import weakref

from . import _native
from ._native import lib, check, fail

OVERFLOW = {"refuse": 0, "drop": 1}
ROLES = ("system", "user", "assistant")


def template_names():
    """The built-in chat templates' names."""
    L, out, i = lib(), [], 0
    while True:
        name = L.rlx_llm_chat_template_name(i)
        if not name:
            return out
        out.append(name.decode())
        i += 1


def messages_array(messages, what):
    """An rlx_llm_chat_message array of messages (a list of {"role",
    "content"} dicts, each checked), with the bytes it points to."""
    if isinstance(messages, (str, bytes, dict)) or not hasattr(messages, "__len__"):
        fail("%s: messages must be a list of {'role': ..., 'content': ...} dicts (got %s)"
             % (what, type(messages).__name__))
    keep = []
    arr = (_native.LlmChatMessage * max(1, len(messages)))()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            fail("%s: messages[%d] must be a dict with 'role' and 'content' (got %r)" % (what, i, m))
        role, content = m["role"], m["content"]
        if role not in ROLES:
            fail("%s: messages[%d]['role'] must be one of %s (got %r)" % (what, i, ", ".join(ROLES), role))
        if not isinstance(content, str) or "\0" in content:
            fail("%s: messages[%d]['content'] must be a str without NUL (got %s)" % (what, i, type(content).__name__))
        r, c = role.encode(), content.encode("utf-8", "surrogatepass")
        keep += [r, c]
        arr[i] = _native.LlmChatMessage(r, c)
    return arr, len(messages), keep


class ChatSession(_native.Handle):
    """One conversation's hold on a model's KV cache (an rlx_llm_chat):
    made and kept by LanguageModel.chat(); closed with its model."""

    _what = "the chat session"

    def __init__(self, model, template=None, overflow="refuse"):
        what = "LanguageModel.chat"
        self._h = None
        self._finalizer = weakref.finalize(self, lambda: None)
        if template is not None and not isinstance(template, str):
            fail("%s: template must be None or a name (%s)" % (what, ", ".join(template_names())))
        if overflow not in OVERFLOW:
            fail("%s: overflow must be 'refuse' or 'drop' (got %r)" % (what, overflow))
        L = lib()
        opt = _native.LlmChatOptions(template.encode() if template else None, OVERFLOW[overflow])
        h = ctypes.c_void_p()
        check(L.rlx_llm_chat_new(model._handle(), ctypes.byref(opt), ctypes.byref(h)))
        self._h = h.value
        self._finalizer = weakref.finalize(self, L.rlx_llm_chat_free, h.value)
        self._model_handle = model._handle()
        self.key = (template, overflow)
        why = ctypes.c_char_p()
        self.template = L.rlx_llm_chat_template(self._h, ctypes.byref(why)).decode()
        self.why = why.value.decode()

    def prompt(self, messages, add_generation_prompt=True):
        arr, n, _keep = messages_array(messages, "LanguageModel.chat_prompt")
        L, size = lib(), ctypes.c_size_t()
        L.rlx_llm_chat_prompt(self._handle(), arr, n, int(bool(add_generation_prompt)), None, 0, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        check(L.rlx_llm_chat_prompt(self._handle(), arr, n, int(bool(add_generation_prompt)), buf, size.value + 1,
                                    ctypes.byref(size)))
        return buf.raw[:size.value].decode("utf-8", "replace")

    def respond(self, messages, sampling, on_token, stopped_by):
        what = "LanguageModel.chat"
        arr, n, _keep = messages_array(messages, what)
        if n == 0 or messages[-1]["role"] != "user":
            fail("%s: messages must end with a user message" % what)
        if on_token is not None and not callable(on_token):
            fail("%s: on_token must be callable or None (got %s)" % (what, type(on_token).__name__))
        state = {"stopped": False, "error": None}

        def call(user, tok, text, n_text):
            try:
                piece = ctypes.string_at(text, n_text).decode("utf-8") if n_text else ""
                if on_token(tok, piece):
                    state["stopped"] = True
                    return 1
            except BaseException as e:  # raised again after the call
                state["error"] = e
                return 1
            return 0

        cb = _native.ON_TOKEN(call) if on_token is not None else _native.ON_TOKEN()
        st = _native.LlmChatStats()
        L = lib()
        evaluated = L.rlx_llm_tokens_evaluated(self._model_handle)
        check(L.rlx_llm_chat_respond(self._handle(), arr, n, ctypes.byref(sampling), cb, None, ctypes.byref(st)))
        if state["error"] is not None:
            raise state["error"]
        size = ctypes.c_size_t()
        p = L.rlx_llm_chat_reply(self._handle(), ctypes.byref(size))
        text = ctypes.string_at(p, size.value).decode("utf-8") if size.value else ""
        g = st.gen
        stats = {"prompt_tokens": st.prompt_tokens, "cached_tokens": st.cached_tokens,
                 "evaluated_tokens": L.rlx_llm_tokens_evaluated(self._model_handle) - evaluated,
                 "dropped_messages": st.dropped_messages, "generated_tokens": g.generated_tokens,
                 "prompt_seconds": g.prompt_seconds, "generate_seconds": g.generate_seconds,
                 "stopped_by": "callback" if state["stopped"] else stopped_by.get(g.stopped_by, str(g.stopped_by)),
                 "template": self.template}
        return text, stats
