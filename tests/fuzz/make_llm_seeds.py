#!/usr/bin/env python3
"""make_llm_seeds.py - writes the seed corpus of fuzz_llm (tests/fuzz/fuzz_llm.c)
into tests/fuzz/corpus/llm/: inputs that build models which open (llama with
SentencePiece, qwen2 with BPE and q8_0, qwen3 with K-quants on 256-value
rows, a tied unaligned trimmed llama, extra tensors, a tiny vocab with a
context of 1, raw weights) and then tokenize, evaluate and generate.
Usage: python3 tests/fuzz/make_llm_seeds.py  (as tests/fuzz/make_seeds.py does for the other fuzzers)."""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


# fuzz_llm (tests/fuzz/fuzz_llm.c) reads its input in this order, a byte 0
# being the sane choice wherever the input runs out: flags, dims, how each
# hyperparameter is written, the tokenizer, the tensors' types and
# mutations, the options, then what to do with the model that opened.
def llm_seed(arch=0, bpe=0, tied=0, raw=0, extra=0, align64=0, f1=0, d0=0, d1=0, d2=0, am=0, hp=(0,) * 6,
             key=0, rot=0, theta=0, eps=0, tok_flags=0, tok_extra=0, tok_mode=0, tok_ids=0, dv=0, seed=1,
             types=(), opt=0, text=b"", how=0, evals=((), ()), split=(), gen=None):
    out = [arch | bpe << 2 | tied << 3 | raw << 4 | extra << 5 | align64 << 6, f1, d0, d1, d2, am] + list(hp)
    embd = [32, 64, 16, 8, 256, 2, 4, 48][d0 & 7]
    n_head, n_layer = 1 + ((d0 >> 4) & 3), 1 + ((d0 >> 3) & 1 and embd != 256)
    head_dim = embd // n_head
    written = (d1 & 3) or (key & 0x20) or (arch == 2 and (d1 & 3) == 0 and d1 & 0x20)
    out += [key] + ([0] if written and key & 0x10 else []) + [rot, theta, eps, tok_flags, tok_extra]
    assert not (tok_flags >> 4) & 3  # no pieces from the input in these seeds
    out += [tok_mode, tok_ids, dv, seed & 255, seed >> 8]
    n_tensors = 2 + (1 - tied) + n_layer * (9 + 3 * (arch == 1 or extra) + 2 * (arch == 2 or extra))
    types = list(types) + [types[-1] if types else 0] * (n_tensors - len(types))
    out += types[:n_tensors] + ([0] if dv & 0x80 else []) + [opt, len(text)] + list(text) + [how]
    for ids in evals:
        out += [len(ids)] + [b for i in ids for b in struct.pack("<H", i)]
    if not raw and not how & 0x20:
        ids, pieces = split
        out += [len(ids) - 1] + [b for i in ids for b in struct.pack("<H", i)] + [k - 1 for k in pieces]
    if gen is not None and (how & 3) != 3:
        out += gen
    return bytes(out)


def llm_seeds():
    # generate: flags (n_stop << 4 | from text), temperature * 64, top_k + 8, top_p * 200, min_p * 400,
    # repeat_penalty * 64, repeat_last_n + 2, seed (u16), max_tokens, the stop strings, the text prompt.
    greedy = [0x11, 0, 8, 0, 0, 0, 66, 0, 0, 12, 1, ord("e") - 0x20, 5] + list(b"Hello")
    sampled = [0x21, 51, 48, 190, 20, 70, 66, 7, 0, 20, 2, ord("t") - 0x20, ord("h") - 0x20, 1, 0xF0, 3] + list(b"abc")
    yield "llama_spm_f32", llm_seed(text=b"Hello world", evals=((3, 100, 258), (1, 2)),
                                    split=((5, 6, 7, 8, 9, 10), (2, 4)), gen=greedy)
    q8 = [6] * 40  # q8_0 for every 2-D tensor (1-D ones fall back to f16)
    yield "qwen2_bpe_q8_0", llm_seed(arch=1, bpe=1, d0=1 | 1 << 4 | 1 << 6, d2=1 | 1 << 3, types=q8,
                                     text=b"<|im_start|>user the cat", how=0x05,
                                     evals=((1, 2, 3, 4, 5), (300, 261)), split=(tuple(range(20)), (16, 4)),
                                     gen=sampled)
    yield "qwen3_q4_k_256", llm_seed(arch=2, bpe=1, d0=4 | 1 << 4, d1=0x20, d2=4 | 2 << 3, types=[7, 0, 9] + [8] * 20,
                                     text=b"the", evals=((7,), ()), split=((1, 2, 3), (1, 1, 1)), gen=greedy)
    yield "llama_tied_unaligned_trim", llm_seed(tied=1, f1=0x03, d0=1 << 3 | 1 << 4, types=[2, 1, 3, 4, 5, 10, 6],
                                                text=b"caf\xc3\xa9 ab", how=0x02, evals=((10, 11), (12,)),
                                                split=((1, 2, 3, 4, 5), (5,)), gen=sampled)
    yield "llama_extra_align64_rope", llm_seed(extra=1, align64=1, d0=2 | 3 << 4 | 2 << 6, d1=1 | 3 << 2, dv=0x80,
                                               d2=3 << 3, text=b"a", evals=((), ()), split=((1,), (1,)), gen=greedy)
    yield "tiny_vocab_ctx1", llm_seed(tok_flags=0x80, tok_extra=7, d2=3 << 3, text=b"ab", evals=((1,), (2,)),
                                      split=((3,), (1,)), gen=greedy)
    yield "raw_weights", llm_seed(raw=1, arch=2, bpe=1, d1=0x20, types=[1, 10] * 20, text=b"x",
                                  evals=((5, 6), ()), gen=sampled)


def main():
    d = os.path.join(ROOT, "tests", "fuzz", "corpus", "llm")
    os.makedirs(d, exist_ok=True)
    for name, data in llm_seeds():
        assert len(data) <= 4096, (name, len(data))  # libFuzzer's -max_len (tests/fuzz/fuzz.mk)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
