"""test_finetune_reference.py - one SGD step of `rlx finetune` against an
independent float64 reference (numpy; tests/python/finetune_reference.py).

For llama, qwen2 and qwen3 at f32 and the tied llama at q8_0 (make
lm-fixtures): a seeded adapter with A and B both non-zero (rlx make-lora),
then `rlx finetune --optimizer sgd --steps 1 --shuffle 0 --adapter-in it`
over the first window(s) of tests/llm/corpus.txt (one window, or two in a
batch), or of two JSONL examples (their prompts and padding unscored).  SGD moves each A and B by -lr times its gradient, so (A0 - A1) / lr
and (B0 - B1) / lr, read from the two adapter files, are rlx's gradients;
they must equal the reference's, computed by hand-written backward in
float64 over the same window tokens (taken from rlx's data windows, so that
the tokenizer is not what is tested), within 1e-4 relative: norm-wise per
tensor, and elementwise (within 1e-4 of the tensor's largest entry, and of
the entry itself where it is at least a quarter of the largest).  The loss
printed for the step must be the reference's loss within 1e-4 relative.

The reference checks itself (its gradient against its own central
differences along a random direction), and the comparison is shown to
matter: the reference with NeoX and adjacent-pair RoPE swapped, with the
LoRA scale alpha in place of alpha / rank, or with query head h on key head
h % n_head_kv instead of h // (n_head / n_head_kv), misses rlx's gradients
by far more than the tolerance.

Run: make test-python   (/usr/bin/python3 -m unittest tests/python/test_finetune_reference.py;
numpy needed: python3-numpy)
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

import rlx  # noqa: E402

try:
    import numpy as np
    import finetune_reference as ref
except ImportError:  # pragma: no cover - depends on the environment
    np = None

CLI = os.path.join(ROOT, "build", "rlx")
LM = os.path.join(ROOT, "build", "lm")
CORPUS = os.path.join(ROOT, "tests", "llm", "corpus.txt")
RANK, ALPHA, SEQ, LR, TOL = 4, 3, 16, 0.5, 1e-4
ALL = "attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down"
# fixture, windows in the step, targets, data ("text" or "jsonl")
CASES = [("llama-f32", 1, ALL, "text"), ("qwen2-f32", 1, ALL, "text"), ("qwen3-f32", 2, ALL, "text"),
         ("llama-tied-q8_0", 1, "attn_q,attn_v,ffn_down", "text"), ("qwen2-f32", 2, "attn_q,attn_v", "jsonl")]
# two completion-only examples: the prompts' tokens and the padding weigh 0
JSONL = ('{"prompt": "Q: What did the miller count?\\nA:", "completion": " The sacks: 12, 24, 36."}\n'
         '{"prompt": "Q: Where did she write?\\nA:", "completion": " In a blue notebook."}\n')


def rel_errors(got, want):
    """(norm-wise, max-wise, worst over the large entries) relative errors."""
    d = np.abs(got - want)
    big = np.abs(want) >= 0.25 * np.abs(want).max()
    return (np.linalg.norm(d) / np.linalg.norm(want), d.max() / np.abs(want).max(),
            (d[big] / np.abs(want[big])).max())


@unittest.skipUnless(np is not None, "numpy is not installed (python3-numpy)")
@unittest.skipUnless(os.path.exists(CLI) and os.path.exists(os.path.join(LM, "llama-f32.gguf")),
                     "build/rlx or build/lm is missing (make lm-fixtures)")
class SgdStepAgainstFloat64(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rlx-ref-")
        cls.data = os.path.join(cls.tmp.name, "data.txt")
        with open(CORPUS, encoding="utf-8") as f, open(cls.data, "w", encoding="utf-8") as out:
            out.write(f.read()[:1200])
        cls.jsonl = os.path.join(cls.tmp.name, "data.jsonl")
        with open(cls.jsonl, "w", encoding="utf-8") as out:
            out.write(JSONL)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def cli(self, *args):
        p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, "rlx %s: %s" % (" ".join(map(str, args)), p.stderr[-600:]))
        return p

    def sgd_step(self, name, batch, targets, data):
        """(model, windows, A0/B0 pairs, rlx's gradients, the printed loss) of one step."""
        model = os.path.join(LM, name + ".gguf")
        data = self.jsonl if data == "jsonl" else self.data
        a0 = os.path.join(self.tmp.name, name + "-a0.gguf")
        a1 = os.path.join(self.tmp.name, name + "-a1.gguf")
        self.cli("make-lora", "--model", model, "--targets", targets, "--rank", RANK, "--alpha", ALPHA, "--seed", 7,
                 "--out", a0)
        p = self.cli("finetune", "--model", model, "--data", data, "--seq", SEQ, "--batch", batch, "--steps", 1,
                     "--shuffle", 0, "--valid-fraction", 0, "--optimizer", "sgd", "--lr", LR, "--rank", RANK,
                     "--alpha", ALPHA, "--targets", targets, "--adapter-in", a0, "--out", a1)
        loss = float(re.search(r"^step 1/1  loss ([0-9.]+)", p.stderr, re.M).group(1))
        with rlx.load_gguf(model, n_ctx=SEQ) as lm, \
                rlx.FineTuneData(lm, data, seq=SEQ, shuffle=False, valid_fraction=0) as d:
            self.assertGreaterEqual(d.info["n_windows"]["train"], batch)
            ids, tg, mask = (list(x) for x in d.windows("train", 0, batch))
        windows = [(ids[i * SEQ:(i + 1) * SEQ], tg[i * SEQ:(i + 1) * SEQ], mask[i * SEQ:(i + 1) * SEQ])
                   for i in range(batch)]
        alpha0, before = ref.read_adapter(a0)
        alpha1, after = ref.read_adapter(a1)
        self.assertEqual((alpha0, alpha1, sorted(before)), (ALPHA, ALPHA, sorted(after)))
        grads = {k: ((before[k][0] - after[k][0]) / LR, (before[k][1] - after[k][1]) / LR) for k in before}
        return model, windows, before, grads, loss

    def check_case(self, name, batch, targets, data):
        model, windows, pairs, got, loss = self.sgd_step(name, batch, targets, data)
        if data == "jsonl":  # a prompt and padding under weight 0 in each window
            self.assertTrue(all(0.0 in w[2] and 1.0 in w[2] for w in windows))
        m = ref.Model(model)
        m.set_lora(ALPHA, pairs)
        want_loss, want = m.loss_and_grads(windows)
        self.assertEqual(sorted(want), sorted(got))
        self.assertEqual(len(got), 2 * len(targets.split(",")), "pairs of %s" % name)
        self.assertLess(abs(loss - want_loss), TOL * want_loss, "%s: rlx's loss %r, the reference's %r"
                        % (name, loss, want_loss))
        worst = [0.0, 0.0, 0.0]
        for k in want:
            for g, w, which in zip(got[k], want[k], "AB"):
                e = rel_errors(g, w)
                worst = [max(a, b) for a, b in zip(worst, e)]
                self.assertTrue(all(x < TOL for x in e), "%s %s d%s: relative errors %.2e (norm), %.2e (largest), "
                                "%.2e (large entries)" % (name, k, which, *e))
        if os.environ.get("RLX_REFERENCE_REPORT"):
            print("\n%s, %d %s window(s): loss %.4f vs %.7f; gradients: norm %.2e, largest %.2e, large entries %.2e"
                  % (name, batch, data, loss, want_loss, *worst), file=sys.stderr)

        # the reference is right about itself: its gradient along a unit direction = central differences
        rng = np.random.default_rng(1)
        v = {k: (rng.standard_normal(a.shape), rng.standard_normal(b.shape)) for k, (a, b) in pairs.items()}
        norm = np.sqrt(sum((a * a).sum() + (b * b).sum() for a, b in v.values()))
        along = sum((want[k][0] * a).sum() + (want[k][1] * b).sum() for k, (a, b) in v.items()) / norm
        h = 1e-4
        shifted = []
        for sign in (1, -1):
            m.set_lora(ALPHA, {k: (a + sign * h * v[k][0] / norm, b + sign * h * v[k][1] / norm)
                               for k, (a, b) in pairs.items()})
            shifted.append(m.loss(windows))
        self.assertLess(abs((shifted[0] - shifted[1]) / (2 * h) - along), 1e-6 * abs(along))

        # and a wrong reference would have been caught
        for variant in ({"neox": not m.neox}, {"scale": float(ALPHA)}, {"gqa": "modulo"}):
            wrong = ref.Model(model, variant)
            wrong.set_lora(ALPHA, pairs)
            _, bad = wrong.loss_and_grads(windows)
            miss = max(rel_errors(got[k][i], bad[k][i])[0] for k in bad for i in (0, 1))
            self.assertGreater(miss, 100 * TOL, "%s: the reference with %s is as close to rlx" % (name, variant))
            if os.environ.get("RLX_REFERENCE_REPORT"):
                print("  with %s: norm-wise relative error %.2e" % (variant, miss), file=sys.stderr)

    def test_llama_f32(self):
        self.check_case(*CASES[0])

    def test_qwen2_f32(self):
        self.check_case(*CASES[1])

    def test_qwen3_f32_two_windows(self):
        self.check_case(*CASES[2])

    def test_llama_tied_q8_0(self):
        self.check_case(*CASES[3])

    def test_qwen2_f32_jsonl_masked(self):
        self.check_case(*CASES[4])


if __name__ == "__main__":
    unittest.main()
