#!/usr/bin/env python3
"""generate.py - text from a GGUF language model with the RLX Python
bindings (rlx.load_gguf over include/rlx_llm.h): load the file, print what
it is, stream a greedy continuation of a prompt, then sample one with a
seed.  The same as examples/c/generate.c and examples/js/generate.mjs.

Checks (exit status 1 when one fails): the streamed pieces join to the
returned text, which equals detokenize(ids) (SentencePiece's detokenize
drops a leading space); greedy generation and the seeded sample repeat.

Uses the installed rlx package (pip install ./python), else the one of this
repository (python/rlx, with build/librlx.so).
Run: make build/librlx.so lm-fixtures &&
     python3 examples/python/generate.py [FILE.gguf] [PROMPT]
     (default: build/lm/qwen3-q8_0.gguf)
"""
import os
import sys

try:
    import rlx
except ModuleNotFoundError as e:  # not installed: the package of this repository
    if e.name != "rlx":
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import rlx


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "build/lm/qwen3-q8_0.gguf"
    prompt = sys.argv[2] if len(sys.argv) > 2 else "The miller counted the sacks"
    with rlx.load_gguf(path) as lm:
        info = lm.info
        print(f"{path}: {info.arch}, {info.n_layer} layers, {info.n_embd} wide, vocabulary {info.n_vocab}, "
              f"{info.weight_types}")
        pieces = []

        def show(token_id, piece):
            pieces.append(piece)
            print(piece, end="", flush=True)
            return False  # True stops

        print(f"greedy: {prompt}", end="")
        text, ids, stats = lm.generate(prompt, max_tokens=32, on_token=show)
        print(f"\n  [{stats['prompt_tokens']} prompt tokens, {stats['generated_tokens']} generated, "
              f"stopped by {stats['stopped_by']}]")
        again, _, _ = lm.generate(prompt, max_tokens=32)
        sample = dict(max_tokens=32, temperature=0.8, top_k=40, top_p=0.95, seed=42)
        sampled, sampled_ids, _ = lm.generate(prompt, **sample)
        print(f"sampled (seed 42): {prompt}{sampled}")
        _, resampled_ids, _ = lm.generate(prompt, **sample)

        failed = []
        detok = lm.detokenize(ids)
        if "".join(pieces) != text:
            failed.append("the streamed pieces are not the text")
        if text != detok and not (text.startswith(" ") and text[1:] == detok):
            failed.append("the text is not detokenize(ids)")
        if again != text:
            failed.append("greedy changed")
        if resampled_ids != sampled_ids:
            failed.append("seed 42 changed")
    for f in failed:
        print(f, file=sys.stderr)
    print("FAILED" if failed else "ok: the stream is the ids' text; greedy and the seeded sample repeat")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
