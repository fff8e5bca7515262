"""test_llm.py - GGUF language models from Python (rlx.load_gguf, python/rlx/llm.py)
on the build/lm fixtures (make lm-fixtures).

The info is the file's; tokenize gives llama.cpp's ids
(tests/llama_ref/expected/<name>.json); greedy generate gives the ids of
`build/rlx generate --prompt-ids ... --ids`; the streamed pieces join to the
returned text, which is detokenize(ids); eval in pieces equals one eval; the
context limit, stop strings, the callback, seeded sampling; bad arguments
raise RlxInvalidArgument naming the method and the argument; a closed model
raises RlxStateError.

Run: make test-python   (PYTHONPATH=python python3 -m unittest tests/python/test_llm.py)
"""

import gc
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import rlx  # noqa: E402

LM = os.path.join(ROOT, "build", "lm")
EXPECTED = os.path.join(ROOT, "tests", "llama_ref", "expected")
CLI = os.path.join(ROOT, "build", "rlx")
SPM = "llama-q4_k"   # SentencePiece, BOS, separate output
BPE = "qwen3-q8_0"   # byte-level BPE, per-head norms
FIXTURES = [os.path.join(LM, n + ".gguf") for n in (SPM, BPE, "qwen2-f16", "llama-tied-q8_0")]


# Texts of tests/llama_ref/expected/*.json whose ids tokenize must give.
WANTED_TEXTS = ("Hello world", "", " leading space",
                "caf\u00e9 cr\u00e8me br\u00fbl\u00e9e na\u00efve fa\u00e7ade Zo\u00eb \u00c5ngstr\u00f6m",
                "\u6771\u4eac\u306f\u5927\u304d\u306a\u90fd\u5e02\u3067\u3059\u3002", "<|im_start|>user",
                "Hello world\n\nThe small river ran past the old mill.\n\nend\n")


def fixture(name):
    return os.path.join(LM, name + ".gguf")


@unittest.skipUnless(all(os.path.exists(f) for f in FIXTURES), "the build/lm fixtures are missing (make lm-fixtures)")
class LanguageModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spm = rlx.load_gguf(fixture(SPM), n_ctx=128)
        cls.bpe = rlx.load_gguf(fixture(BPE), n_ctx=128)

    @classmethod
    def tearDownClass(cls):
        cls.spm.close()
        cls.bpe.close()

    def assertRlx(self, cls, fn, *fragments):
        with self.assertRaises(cls) as cm:
            fn()
        for f in fragments:
            self.assertIn(f, str(cm.exception))
        return cm.exception

    def test_info(self):
        i = self.spm.info
        self.assertIsInstance(i, rlx.LlmInfo)
        self.assertEqual((i.arch, i.tokenizer, i.rope_neox, i.tied_output), ("llama", "llama", False, False))
        self.assertEqual((i.n_ctx, i.n_vocab, i.bos), (128, 560, 1))
        self.assertTrue(i.add_bos and i.n_params > 0 and i.kv_bytes > 0)
        self.assertIn("q4_K", i.weight_types)
        self.assertEqual(i.kv_bytes, 2 * 4 * i.n_layer * i.n_head_kv * i.n_ctx * i.head_dim)
        j = self.bpe.info
        self.assertEqual((j.arch, j.tokenizer, j.rope_neox, j.add_bos), ("qwen3", "gpt2", True, False))
        self.assertEqual(j.head_dim, 128)  # qwen3: from the metadata, not n_embd / n_head
        d = j.as_dict()
        self.assertEqual(d["n_vocab"], j.n_vocab)
        self.assertEqual(json.loads(json.dumps(d)), d)
        with rlx.load_gguf(fixture("llama-tied-q8_0")) as tied:
            self.assertTrue(tied.info.tied_output)
            self.assertEqual(tied.info.n_ctx, tied.info.n_ctx_train)  # 0: the model's context (512 <= 4096)
        self.assertIn("qwen3", repr(self.bpe))

    def test_tokenize_equals_llama_cpp(self):
        for name in (SPM, BPE, "qwen2-f16"):
            with open(os.path.join(EXPECTED, name + ".json"), encoding="utf-8") as f:
                ref = json.load(f)
            lm = {SPM: self.spm, BPE: self.bpe}.get(name)
            own = lm is None
            if own:
                lm = rlx.load_gguf(fixture(name), n_ctx=16)
            try:
                texts = [t for t in ref["tokenize"] if t["text"] in WANTED_TEXTS]
                self.assertGreaterEqual(len(texts), 6, name)
                for t in texts:
                    self.assertEqual(lm.tokenize(t["text"]), t["ids"], "%s: %r" % (name, t["text"]))
                    self.assertEqual(lm.tokenize(t["text"].encode("utf-8")), t["ids"])
            finally:
                if own:
                    lm.close()

    def test_tokenize_options_and_round_trip(self):
        text = "The small river ran past the old mill."
        ids = self.spm.tokenize(text)
        self.assertEqual(ids[0], self.spm.info.bos)
        self.assertEqual(self.spm.tokenize(text, add_bos=False), ids[1:])
        self.assertEqual(self.spm.detokenize(ids[1:]), text)
        self.assertEqual(self.spm.detokenize([]), "")
        b = self.bpe.tokenize("<|im_start|>user")
        self.assertEqual(self.bpe.tokenize("<|im_start|>"), b[:1])
        self.assertGreater(len(self.bpe.tokenize("<|im_start|>user", special=False)), len(b))
        self.assertEqual(self.bpe.tokenize("x", add_bos=True)[0], self.bpe.info.bos)
        self.assertEqual(self.bpe.detokenize(self.bpe.tokenize("na\u00efve \u6771\u4eac", special=False)),
                         "na\u00efve \u6771\u4eac")

    def test_eval_pieces_equal_one_eval(self):
        lm = self.bpe
        ids = [(i * 37 + 11) % lm.info.n_vocab for i in range(23)]
        lm.reset()
        whole = lm.eval(ids)
        self.assertEqual((len(whole), lm.position), (lm.info.n_vocab, 23))
        lm.reset()
        self.assertEqual(lm.position, 0)
        for piece in (ids[:5], ids[5:6], ids[6:22], ids[22]):
            split = lm.eval(piece)
        self.assertEqual(lm.position, 23)
        for v in range(lm.info.n_vocab):
            self.assertAlmostEqual(split[v], whole[v], delta=1e-3 * (1 + abs(whole[v])))
        # The context limit: refused before anything runs, the position kept.
        lm.reset()
        lm.eval([1] * 120)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.eval([1] * 9), "LanguageModel.eval", "ids",
                       "context of 128")
        self.assertEqual(lm.position, 120)
        lm.eval([1] * 8)
        self.assertEqual(lm.position, 128)
        lm.reset()

    def test_threads(self):
        # logits bitwise the same on 1 and 3 threads; info says the count;
        # a bad count is refused naming it
        ids = [(i * 29 + 5) % self.bpe.info.n_vocab for i in range(21)]
        out = []
        for t in (1, 3):
            with rlx.load_gguf(fixture(BPE), n_ctx=64, threads=t) as lm:
                self.assertEqual(lm.info.threads, t)
                out.append([lm.eval(ids[:17]), lm.eval(ids[17:18]), lm.eval(ids[18:21])])
        self.assertEqual(out[0], out[1])
        self.assertGreaterEqual(self.bpe.info.threads, 1)
        for bad in (-1, 100000):
            self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(fixture(BPE), threads=bad), "threads")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(fixture(BPE), threads="two"), "threads")

    def test_greedy_generate_equals_cli(self):
        if not os.path.exists(CLI):
            self.skipTest("build/rlx is not built (make build/rlx)")
        for name, lm in ((SPM, self.spm), (BPE, self.bpe)):
            prompt = lm.tokenize("The miller counted the sacks")
            out = subprocess.run([CLI, "generate", "--model", fixture(name), "--prompt-ids",
                                  ",".join(map(str, prompt)), "--max-tokens", "24", "--ctx", "128", "--ids"],
                                 capture_output=True, timeout=120, check=True)
            last = json.loads(out.stdout.decode("utf-8").strip().splitlines()[-1])
            self.assertEqual(last["prompt_ids"], prompt)
            text, ids, stats = lm.generate(prompt, max_tokens=24)
            self.assertEqual(ids, last["ids"], name)
            self.assertEqual((stats["prompt_tokens"], stats["generated_tokens"]), (len(prompt), len(ids)))
            self.assertIn(stats["stopped_by"], ("max_tokens", "end_of_generation"))
            # From text: the same prompt ids (the file's BOS rule, specials parsed).
            self.assertEqual(lm.generate("The miller counted the sacks", max_tokens=24)[1], ids)

    def test_xq8_generate_equals_cli(self):
        if not os.path.exists(CLI):
            self.skipTest("build/rlx is not built (make build/rlx)")
        with rlx.load_gguf(fixture(BPE), n_ctx=128, xq8=True) as lm:
            self.assertTrue(lm.info.xq8)
            self.assertFalse(self.bpe.info.xq8)
            prompt = lm.tokenize("The miller counted the sacks")
            out = subprocess.run([CLI, "generate", "--model", fixture(BPE), "--prompt-ids",
                                  ",".join(map(str, prompt)), "--max-tokens", "12", "--ctx", "128", "--ids", "--xq8"],
                                 capture_output=True, timeout=120, check=True)
            self.assertEqual(lm.generate(prompt, max_tokens=12)[1],
                             json.loads(out.stdout.decode("utf-8").strip().splitlines()[-1])["ids"])
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(fixture(BPE), xq8=1), "rlx.load_gguf", "xq8")

    def test_streamed_text_equals_detokenized_ids(self):
        lm = self.bpe
        pieces = []

        def on_token(tok, piece):
            self.assertIsInstance(piece, str)
            pieces.append((tok, piece))

        text, ids, stats = lm.generate("Hello world", max_tokens=40, on_token=on_token)
        self.assertEqual(stats["generated_tokens"], len(ids))
        self.assertEqual("".join(p for _, p in pieces), text)
        self.assertEqual([t for t, _ in pieces if t >= 0], ids)
        self.assertEqual(text, lm.detokenize(ids))
        # Sampled and seeded: the same seed, the same tokens.
        a = lm.generate("Hello world", max_tokens=16, temperature=0.9, top_k=40, top_p=0.95, min_p=0.05,
                        repeat_penalty=1.1, seed=7)
        b = lm.generate("Hello world", max_tokens=16, temperature=0.9, top_k=40, top_p=0.95, min_p=0.05,
                        repeat_penalty=1.1, seed=7)
        self.assertEqual(a[:2], b[:2])
        self.assertEqual(a[0], lm.detokenize(a[1]))

    def test_stop_strings_callback_and_limits(self):
        lm = self.spm
        text, ids, stats = lm.generate("The small river", max_tokens=32)
        self.assertGreater(len(text), 6)
        stop = text[3:6]
        cut, _, st = lm.generate("The small river", max_tokens=32, stop=["\x01never", stop])
        self.assertEqual(cut, text[:text.index(stop)])
        self.assertEqual(st["stopped_by"], "stop_string")
        self.assertEqual(lm.generate("The small river", max_tokens=32, stop=stop)[0], cut)
        calls = []
        _, ids3, st = lm.generate("The small river", max_tokens=32, on_token=lambda t, p: calls.append(t) or
                                  len(calls) >= 3)
        self.assertEqual((len(calls), st["stopped_by"]), (3, "callback"))
        self.assertEqual(ids3, ids[:3])
        text0, ids0, st = lm.generate("The small river", max_tokens=0)
        self.assertEqual((text0, ids0, st["generated_tokens"], st["stopped_by"]), ("", [], 0, "max_tokens"))
        # A full context ends generation.
        with rlx.load_gguf(fixture(SPM), n_ctx=8) as small:
            _, ids, st = small.generate([1, 288, 303], max_tokens=100)
            self.assertEqual(st["stopped_by"], "context_full")
            self.assertEqual(len(ids), 6)  # positions 3 .. 7 evaluated, the 6th token sampled after them

    def test_errors(self):
        lm = self.spm
        self.assertRlx(rlx.RlxError, lambda: rlx.load_gguf(os.path.join(LM, "no-such-file.gguf")),
                       "no-such-file.gguf")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(fixture(SPM), n_ctx=-1), "rlx.load_gguf",
                       "n_ctx")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(fixture(SPM), n_ctx="8"), "n_ctx")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(fixture(SPM), n_ctx=1 << 20), "n_ctx")
        self.assertRlx(rlx.RlxError, lambda: rlx.load_gguf(fixture(SPM), budget=1000), "budget")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(12), "rlx.load_gguf", "path")
        self.assertRlx(rlx.RlxError, lambda: rlx.load_gguf(os.path.join(ROOT, "Makefile")))
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.tokenize(12), "LanguageModel.tokenize", "text")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.tokenize("a", add_bos=2), "LanguageModel.tokenize",
                       "add_bos")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.detokenize([1, 560]), "LanguageModel.detokenize",
                       "ids[1] = 560")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.detokenize("ab"), "detokenize", "ids")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.eval([]), "LanguageModel.eval", "ids")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.eval([5, -1]), "LanguageModel.eval", "ids[1] = -1")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: lm.eval([1.5]), "ids")
        g = lm.generate
        for kw, frag in (({"max_tokens": -1}, "max_tokens"), ({"temperature": -1}, "temperature"),
                         ({"temperature": float("nan")}, "temperature"), ({"top_k": -2}, "top_k"),
                         ({"top_p": 1.5}, "top_p"), ({"min_p": -0.1}, "min_p"),
                         ({"repeat_penalty": 0}, "repeat_penalty"),
                         ({"repeat_last_n": -2}, "repeat_last_n"), ({"seed": -1}, "seed"), ({"stop": [""]}, "stop[0]"),
                         ({"stop": ["a", "b\0"]}, "stop[1]"), ({"stop": 5}, "stop"), ({"on_token": 5}, "on_token")):
            self.assertRlx(rlx.RlxInvalidArgument, lambda: g([1, 2], **kw), "LanguageModel.generate", frag)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g([]), "LanguageModel.generate", "prompt_or_ids")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g([1] * 129), "prompt_or_ids", "context of 128")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: g([1, 9999]), "prompt_or_ids[1] = 9999")
        # An exception in on_token propagates; the model stays usable.
        def boom(tok, piece):
            raise KeyError("from on_token")
        with self.assertRaises(KeyError):
            g([1, 2], max_tokens=4, on_token=boom)
        self.assertEqual(len(g([1, 2], max_tokens=4)[1]), 4)

    def test_close(self):
        lm = rlx.load_gguf(fixture(BPE), n_ctx=16)
        lm.eval([1, 2])
        lm.close()
        lm.close()
        self.assertTrue(lm.closed)
        self.assertIn("closed", repr(lm))
        for fn in (lambda: lm.eval([1]), lambda: lm.position, lambda: lm.tokenize("a"), lm.reset,
                   lambda: lm.generate([1])):
            self.assertRlx(rlx.RlxStateError, fn, "closed")
        with rlx.load_gguf(fixture(BPE), n_ctx=16) as lm2:
            self.assertEqual(lm2.position, 0)
        self.assertTrue(lm2.closed)
        lm3 = rlx.load_gguf(fixture(BPE), n_ctx=16)
        fin = lm3._finalizer
        del lm3
        gc.collect()
        self.assertFalse(fin.alive)


if __name__ == "__main__":
    unittest.main()
