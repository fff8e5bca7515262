"""test_finetune.py - LoRA fine-tuning from Python (python/rlx/finetune.py) and
adapters at load (rlx.load_gguf(lora=)) on the build/lm fixtures (make
lm-fixtures), against build/rlx finetune.

  * LanguageModel.finetune with rlx finetune's options gives its per-step
    training and validation losses (as printed) and the same adapter file,
    byte for byte; their defaults agree (`rlx finetune --help`);
  * the adapter, loaded with load_gguf(lora=) as a path or as bytes,
    continues the training sentence where the base model does not; at scale
    0 it is the base model, and an adapter with B = 0 is the base model at
    any scale (the same logits);
  * on_progress returning False and Ctrl-C (SIGINT) stop after the current
    step and keep the steps so far; FineTune's step / grad / get_pair /
    set_pair agree with each other (an SGD step moves A by -lr dA);
    FineTuneData's windows are the tokens shifted by one;
  * bad arguments raise RlxInvalidArgument naming the argument, as the CLI
    names its flag; closing (or a with block, or garbage collection) frees
    the native objects, and closing a model closes its FineTune objects.

Run: make test-python   (PYTHONPATH=python python3 -m unittest tests/python/test_finetune.py)
"""

import array
import gc
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import rlx  # noqa: E402
from rlx import finetune as ftmod  # noqa: E402

CLI = os.path.join(ROOT, "build", "rlx")
LM = os.path.join(ROOT, "build", "lm", "llama-f32.gguf")
SENTENCE = "The small river ran past the old mill. "
# tests/cli/test_finetune.sh's run: 40 steps learn the sentence
TRAIN = dict(seq=24, batch=4, lr=3e-3, steps=40, eval_every=10)
TRAIN_FLAGS = ["--seq", "24", "--batch", "4", "--lr", "3e-3", "--steps", "40", "--eval-every", "10"]


@unittest.skipUnless(os.path.exists(LM) and os.path.exists(CLI), "build/rlx or build/lm is missing (make lm-fixtures)")
class FineTuning(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="rlx-ft-")
        cls.train = os.path.join(cls.tmp.name, "train.txt")
        cls.valid = os.path.join(cls.tmp.name, "valid.txt")
        with open(cls.train, "w") as f:
            f.write(SENTENCE * 12)
        with open(cls.valid, "w") as f:
            f.write(SENTENCE * 3)
        cls.lm = rlx.load_gguf(LM, n_ctx=64)
        # the CLI's run and the same run from Python
        cls.cli_out = os.path.join(cls.tmp.name, "cli.gguf")
        p = subprocess.run([CLI, "finetune", "--model", LM, "--data", cls.train, "--valid", cls.valid] + TRAIN_FLAGS +
                           ["--out", cls.cli_out], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise AssertionError("rlx finetune failed: " + p.stderr[-800:])
        cls.cli_lines = re.findall(r"^step (\d+)/40  loss ([0-9.]+)(?:  valid ([0-9.]+))?", p.stderr, re.M)
        cls.result = cls.lm.finetune(cls.train, valid=cls.valid, **TRAIN)

    @classmethod
    def tearDownClass(cls):
        cls.lm.close()
        cls.tmp.cleanup()

    def assertRlx(self, cls, fn, *fragments):
        with self.assertRaises(cls) as cm:
            fn()
        for f in fragments:
            self.assertIn(f, str(cm.exception))
        return cm.exception

    # ---- the same run as the CLI's ---------------------------------------------------
    def test_same_losses_and_adapter_as_cli(self):
        r = self.result
        self.assertEqual((r.steps, r.stopped_by, r.interrupted), (40, "steps", False))
        self.assertEqual(len(self.cli_lines), 40)
        for (step, loss, valid), mine in zip(self.cli_lines, r.losses):
            self.assertEqual(loss, "%.4f" % mine, "step %s" % step)
            if valid:
                self.assertEqual(valid, "%.4f" % r.valid_losses[int(step)], "validation at step %s" % step)
        self.assertEqual(sorted(r.valid_losses), [10, 20, 30, 40])
        self.assertLess(r.losses[-1] * 5, r.losses[0])
        with open(self.cli_out, "rb") as f:
            self.assertEqual(r.adapter_bytes(), f.read(), "the adapter differs from rlx finetune's")
        self.assertEqual(r.data_info["n_windows"], {"train": 6, "valid": 1})
        self.assertEqual([p.name for p in r.pairs], ["blk.%d.attn_%s.weight" % (l, t) for l in (0, 1) for t in "qv"])

    def test_defaults_are_the_clis(self):
        out = subprocess.run([CLI, "finetune", "--help"], capture_output=True, text=True, timeout=60)
        text = " ".join((out.stdout + out.stderr).split())
        self.assertIn("windows per step (default %d)" % ftmod.BATCH, text)
        self.assertEqual(float(re.search(r"learning rate \(default ([^)]+)\)", text).group(1)), ftmod.LR)
        self.assertIn("(default %d)" % ftmod.SEED, text[text.index("--seed"):])
        d = rlx.FineTune(self.lm, seq=8)
        with d:
            self.assertEqual((d.rank, d.alpha, d.targets), (8, 16.0, "attn_q,attn_v"))

    # ---- the adapter at load ------------------------------------------------------------
    def test_adapter_changes_generation(self):
        path = os.path.join(self.tmp.name, "py.gguf")
        self.result.save(path)
        want = " ran past the old mill. The small river ran"
        base = self.lm.generate("The small river", max_tokens=16)[0]
        self.assertFalse(base.startswith(want), base)
        for lora in ([path], [(path, 1.0)], [{"path": path, "scale": 1}], [{"data": self.result.adapter_bytes()}]):
            with rlx.load_gguf(LM, n_ctx=64, lora=lora) as m:
                self.assertEqual((m.info.n_lora, m.info.n_lora_pairs), (1, 4))
                text = m.generate("The small river", max_tokens=16)[0]
                self.assertTrue(text.startswith(want), "%r: %r" % (lora, text))
        with rlx.load_gguf(LM, n_ctx=64, lora=[(path, 0.0)]) as m:
            self.assertEqual(m.generate("The small river", max_tokens=16)[0], base)

    def test_b_zero_is_the_base_model_at_any_scale(self):
        ids = self.lm.tokenize("The small river ran")
        self.lm.reset()
        base = list(self.lm.eval(ids))
        with rlx.FineTune(self.lm, seq=8, targets="all", seed=3) as ft:  # B = 0, A random
            zero_b = ft.adapter_bytes()
            self.assertTrue(any(ft.get_pair(ft.pairs[0].name)[0]))
        trained = self.result.adapter_bytes()
        for lora in ([(zero_b, 1.0)], [(zero_b, 7.5)], [(zero_b, -2.0)], [(trained, 0.0)]):
            with rlx.load_gguf(LM, n_ctx=64, lora=lora) as m:
                self.assertEqual(list(m.eval(ids)), base, "scale %g" % lora[0][1])
        with rlx.load_gguf(LM, n_ctx=64, lora=[(trained, 1.0)]) as m:
            self.assertNotEqual(list(m.eval(ids)), base)

    # ---- stopping ---------------------------------------------------------------------------
    def test_on_progress_false_stops_after_the_step(self):
        seen = []
        r = self.lm.finetune(self.train, valid=self.valid, seq=24, steps=10, eval_every=2,
                             on_progress=lambda p: seen.append(p) or p.step < 3)
        self.assertEqual((r.steps, r.stopped_by, [p.step for p in seen]), (3, "callback", [1, 2, 3]))
        self.assertEqual([p.loss for p in seen], r.losses)
        self.assertEqual(r.losses, self.lm.finetune(self.train, valid=self.valid, seq=24, steps=3).losses)
        self.assertEqual([p.valid is None for p in seen], [True, False, True])
        self.assertEqual((seen[0].steps, r.valid_losses), (10, {2: seen[1].valid}))

    def test_sigint_stops_after_the_step_and_keeps_it(self):
        def on_progress(p):
            if p.step == 2:
                os.kill(os.getpid(), signal.SIGINT)
        before = signal.getsignal(signal.SIGINT)
        r = self.lm.finetune(self.train, valid=self.valid, seq=24, steps=1000, on_progress=on_progress)
        self.assertEqual((r.steps, r.stopped_by, r.interrupted), (2, "interrupt", True))
        self.assertIs(signal.getsignal(signal.SIGINT), before)
        two = self.lm.finetune(self.train, valid=self.valid, seq=24, steps=2)
        self.assertEqual(r.adapter_bytes(), two.adapter_bytes())
        with rlx.load_gguf(LM, n_ctx=16, lora=[(r.adapter_bytes(), 1.0)]) as m:
            self.assertEqual(m.info.n_lora, 1)

    def test_adapter_in_resumes(self):
        path = os.path.join(self.tmp.name, "resume.gguf")
        self.result.save(path)
        r = self.lm.finetune(self.train, valid=self.valid, seq=24, steps=1, adapter_in=path)
        self.assertLess(r.losses[0] * 5, self.result.losses[0])
        with rlx.load_gguf(LM, n_ctx=16, lora=[path]) as m:  # the model's own adapter 0: the same start
            same = m.finetune(self.train, valid=self.valid, seq=24, steps=1, adapter_in=0)
            self.assertEqual((same.losses, same.adapter_bytes()), (r.losses, r.adapter_bytes()))
            self.assertRlx(rlx.RlxInvalidArgument, lambda: m.finetune(self.train, seq=8, adapter_in=1),
                           "adapter_in must be a whole number from 0 to 0")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: self.lm.finetune(self.train, seq=8, steps=1, adapter_in=path,
                                                                        rank=4),
                       "LanguageModel.finetune: adapter_in", "has rank 8", "this fine-tuning has rank 4")
        self.assertRlx(rlx.RlxError, lambda: self.lm.finetune(self.train, seq=8, steps=1, adapter_in=self.train),
                       "LanguageModel.finetune: adapter_in", "not a GGUF file")

    # ---- the pieces -------------------------------------------------------------------------
    def test_data_windows_are_the_tokens_shifted(self):
        toks = self.lm.tokenize(SENTENCE * 12)
        with rlx.FineTuneData(self.lm, self.train, seq=24, shuffle=False, valid_fraction=0) as d:
            self.assertEqual(d.info["n_windows"], {"train": len(toks[1:]) // 24, "valid": 0})
            ids, tg, mask = d.windows("train", 1, 2)
            self.assertEqual(list(ids), toks[24:72])
            self.assertEqual(list(tg), toks[25:73])
            self.assertEqual(set(mask), {1.0})
        chat = [{"prompt": "Q: river?", "completion": " the small river"}] * 3
        with rlx.FineTuneData(self.lm, chat, seq=16) as d:
            self.assertEqual(d.info["n_examples"]["train"], 3)
            self.assertIn(0.0, set(d.windows("train", 0, 1)[2]))

    def test_finetune_object(self):
        with rlx.FineTuneData(self.lm, self.train, seq=24, shuffle=False) as d, \
                rlx.FineTune(self.lm, seq=24, optimizer="sgd", lr=0.5, seed=1) as ft:
            ids, tg, mask = d.windows("train", 0, 2)
            name = ft.pairs[1].name
            a0, b0 = ft.get_pair(name)
            b = array.array("f", [0.01 * (i % 7 - 3) for i in range(len(b0))])  # B != 0: A has a gradient
            ft.set_pair(name, a0, b)
            self.assertEqual(ft.get_pair(name)[1], b)
            loss = ft.grad(ids, tg, mask)
            self.assertEqual(loss, ft.eval(ids, tg, mask))
            da, db = ft.get_grad(name)
            big = max(abs(x) for x in da)
            self.assertGreater(big, 0)
            self.assertEqual(ft.step(ids, tg, mask), loss)
            a1 = ft.get_pair(name)[0]
            err = max(abs((x0 - x1) / 0.5 - g) for x0, x1, g in zip(a0, a1, da))
            self.assertLess(err, 1e-3 * big)
            _, logits = ft.eval(ids[:24], tg[:24], logits=True)
            self.assertEqual(len(logits), 24 * self.lm.info.n_vocab)
            self.assertRlx(rlx.RlxNotFound, lambda: ft.get_pair("blk.0.ffn_up.weight"), "no pair named")
            self.assertRlx(rlx.RlxInvalidArgument, lambda: ft.step(ids[:10], tg[:10]), "not a whole number of windows")
            self.assertRlx(rlx.RlxInvalidArgument, lambda: ft.set_pair(name, a0[:1], b0), "FineTune.set_pair")

    # ---- refusals and lifetime ---------------------------------------------------------------
    def test_bad_arguments_name_the_argument(self):
        short = os.path.join(self.tmp.name, "short.txt")
        with open(short, "w") as f:
            f.write("The small river.")
        bad = os.path.join(self.tmp.name, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"prompt": "a", "completion": "b"}\n{"prompt": "a" "completion": "b"}\n')
        fn = "LanguageModel.finetune: "
        cases = [
            (dict(rank=0), "rank must be a whole number from 1 to 65536"),
            (dict(rank=200), fn + "rank: ", "rank 200 is above min(n_in, n_out) = 128 of blk.0.attn_v.weight"),
            (dict(targets="attn_q,attn_z"), "targets: 'attn_z' is not a target"),
            (dict(seq=1000), "seq 1000 is above the model's context (512)"),
            (dict(seq=1), "seq must be a whole number from 2"),
            (dict(lr=float("nan")), "lr must be a number above 0"),
            (dict(lr=-1e-3), "lr must be a number above 0"),
            (dict(alpha=float("inf")), "alpha must be a number above 0"),
            (dict(optimizer="rmsprop"), "optimizer: unknown optimizer 'rmsprop' (known: adamw, sgd)"),
            (dict(shuffle=2), "shuffle must be a whole number from 0 to 1"),
            (dict(valid_fraction=1), "valid_fraction must be a number from 0 to below 1"),
            (dict(batch=0), "batch must be a whole number from 1"),
            (dict(steps=0), "steps must be a whole number from 1"),
            (dict(eval_every=0), "eval_every must be a whole number from 1"),
            (dict(seed=-1), "seed must be a whole number from 0"),
            (dict(on_progress=3), "on_progress must be callable"),
            (dict(adapter_in=0), "adapter_in 0: the model has no adapters"),
            (dict(valid=short, seq=16), fn + "valid: ", "validation data", "the text has"),
        ]
        for kw, *fragments in cases:
            args = dict(seq=8, steps=1)
            args.update(kw)
            self.assertRlx(rlx.RlxInvalidArgument, lambda: self.lm.finetune(self.train, **args), fn, *fragments)
        self.assertRlx(rlx.RlxInvalidArgument, lambda: self.lm.finetune(short, seq=24), fn + "data: ",
                       "a window needs seq + 1 = 25")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: self.lm.finetune(bad, seq=8), fn + "data: ",
                       "line 2: expected ',' or '}'")
        self.assertRlx(rlx.RlxError, lambda: self.lm.finetune(os.path.join(self.tmp.name, "nowhere.txt")),
                       fn + "data: ", "cannot open it")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: self.lm.finetune(3), fn + "data must be a path")
        self.assertRlx(rlx.RlxError, lambda: rlx.load_gguf(LM, lora=[self.train]), "rlx.load_gguf: lora: ",
                       "LoRA adapter 0", "not a GGUF file")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(LM, lora=[(self.train, "x")]),
                       "rlx.load_gguf: lora[0]: scale")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.load_gguf(LM, lora=[{"file": self.train}]),
                       "rlx.load_gguf: lora[0] must hold 'path' or 'data'")
        self.assertRlx(rlx.RlxInvalidArgument, lambda: rlx.FineTune(self.lm, targets=["attn_q", "nope"]),
                       "rlx.FineTune: targets: 'nope' is not a target")

    def test_freed_on_close_and_collection(self):
        m = rlx.load_gguf(LM, n_ctx=16)
        ft = rlx.FineTune(m, seq=8)
        d = rlx.FineTuneData(m, self.train, seq=8)
        fins = [ft._finalizer, d._finalizer, m._finalizer]
        self.assertTrue(all(f.alive for f in fins))
        m.close()  # closes the FineTune made on it first
        self.assertTrue(ft.closed and not ft._finalizer.alive and m.closed)
        self.assertRlx(rlx.RlxStateError, lambda: ft.get_pair(ft.pairs[0].name), "closed")
        del ft, d, m
        gc.collect()
        self.assertFalse(any(f.alive for f in fins))
        with rlx.load_gguf(LM, n_ctx=16, lora=[(self.cli_out, 1.0)]) as m:
            with rlx.FineTune(m, seq=8) as ft:
                fin = ft._finalizer
            self.assertFalse(fin.alive)
            mfin = m._finalizer
        self.assertFalse(mfin.alive)
        r = self.lm.finetune(self.train, seq=8, steps=1)  # its native objects are freed when it returns
        self.assertEqual(len(self.lm._dependents), 0)
        self.assertEqual(r.steps, 1)


if __name__ == "__main__":
    unittest.main()
