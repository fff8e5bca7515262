"""chat_ttft.py - time to first token on a conversation's third turn with the
KV cache kept (rlx_llm_chat: turns 1 and 2 found in the cache) against the
same turn recomputed from an empty cache, natively through the Python
binding.  Greedy; a longer system prompt so that the reused part counts;
medians of interleaved runs.

    make native lm-fixtures && python3 bench/chat_ttft.py build/lm/qwen2-f32.gguf [...]
"""

import os
import statistics
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
import rlx  # noqa: E402

RUNS = 7
SYSTEM = "You are a helpful assistant. " * 8
QUESTIONS = ("Tell me about rivers and the sea, please.", "And the mountains and their snow?", "What about deserts?")


def first_token_ms(lm, msgs):
    t0, first = time.perf_counter(), []
    _, st = lm.chat(msgs, max_tokens=4, on_token=lambda i, p: first.append(time.perf_counter()) and False)
    return (first[0] - t0) * 1e3, st


def bench(path):
    with rlx.load_gguf(path, n_ctx=512) as lm:
        kept, fresh = [], []
        for _ in range(RUNS):
            lm.reset()
            msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTIONS[0]}]
            for q in QUESTIONS[1:]:
                text, _ = lm.chat(msgs, max_tokens=16)
                msgs += [{"role": "assistant", "content": text}, {"role": "user", "content": q}]
            ms, st_kept = first_token_ms(lm, msgs)   # turn 3, turns 1-2 in the cache
            kept.append(ms)
            lm.reset()                                # the same turn from an empty cache
            ms, st_fresh = first_token_ms(lm, msgs)
            fresh.append(ms)
        print("%s: third turn, %d prompt tokens: cache kept (%d reused) %.1f ms to the first token, recomputed "
              "%.1f ms (medians of %d)" % (os.path.basename(path), st_kept["prompt_tokens"], st_kept["cached_tokens"],
                                            statistics.median(kept), statistics.median(fresh), RUNS))


if __name__ == "__main__":
    for p in sys.argv[1:] or [os.path.join(ROOT, "build", "lm", "qwen2-f32.gguf")]:
        bench(p)
