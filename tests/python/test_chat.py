"""test_chat.py - LanguageModel.chat and chat_prompt (python/rlx/chat.py) on the
build/lm fixtures: the prompt in the chat template; a three-turn chat finds
everything evaluated before in the KV cache each turn (the counts of the
library's evaluated-token counter) and answers as a recomputation from an
empty cache does; regenerating evaluates one prompt token; the CLI's
--messages answer equals chat's; a full context is refused or trimmed as
overflow says; bad arguments raise RlxInvalidArgument naming them;
grammar= (GBNF text) holds generate's and chat's output to the grammar, and
a malformed one raises the parser's message.

Run: make test-python   (PYTHONPATH=python python3 -m unittest tests/python/test_chat.py)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import rlx  # noqa: E402

MODEL = os.path.join(ROOT, "build", "lm", "qwen2-q8_0.gguf")
CLI = os.path.join(ROOT, "build", "rlx")


class ChatTest(unittest.TestCase):
    def setUp(self):
        self.lm = rlx.load_gguf(MODEL, n_ctx=512)

    def tearDown(self):
        self.lm.close()

    def test_templates_and_prompt(self):
        self.assertEqual(rlx.chat_templates(), ["chatml", "llama3", "llama2", "mistral", "gemma", "phi3", "zephyr"])
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello <|im_end|>"}]
        self.assertEqual(self.lm.chat_prompt(msgs), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
                         "Hello <|im_end|><|im_end|>\n<|im_start|>assistant\n")
        self.assertEqual(self.lm.chat_prompt(msgs[1:], template="phi3", add_generation_prompt=False),
                         "<|user|>\nHello <|im_end|><|end|>\n")

    def test_three_turns_keep_the_cache(self):
        msgs = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "Hello there"}]
        held, replies = 0, []
        for question in ("Tell me about the sea", "And the mountains?", None):
            pieces = []
            text, st = self.lm.chat(msgs, max_tokens=6, on_token=lambda i, p: pieces.append(p))
            self.assertEqual("".join(pieces), text)
            self.assertEqual(st["cached_tokens"], held)
            self.assertEqual(st["template"], "chatml")
            self.assertGreaterEqual(st["evaluated_tokens"], st["prompt_tokens"] - held)
            held += st["evaluated_tokens"]          # the cache holds all that was evaluated
            self.assertEqual(held, self.lm.position)
            replies.append(text)
            if question:
                msgs += [{"role": "assistant", "content": text}, {"role": "user", "content": question}]
        self.assertLess(st["prompt_tokens"] - st["cached_tokens"], st["prompt_tokens"] // 2)
        # Regenerate: the same conversation again evaluates one prompt token.
        text, st = self.lm.chat(msgs, max_tokens=6)
        self.assertEqual(text, replies[-1])
        self.assertEqual(st["cached_tokens"], st["prompt_tokens"] - 1)
        # From an empty cache (reset: the session recomputes all) the same reply.
        self.lm.reset()
        text, st = self.lm.chat(msgs, max_tokens=6)
        self.assertEqual(st["cached_tokens"], 0)
        self.assertEqual(text, replies[-1])

    def test_cli_messages_answer_the_same(self):
        msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
        text, _ = self.lm.chat(msgs, max_tokens=8)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(msgs, f)
        try:
            out = subprocess.run([CLI, "chat", "--model", MODEL, "--messages", f.name, "--max-tokens", "8"],
                                 capture_output=True, timeout=60)
        finally:
            os.unlink(f.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.decode("utf-8"), text + "\n")

    def test_full_context(self):
        lm = rlx.load_gguf(MODEL, n_ctx=96)
        try:
            msgs = [{"role": "system", "content": "Be brief."}]
            for i in range(4):
                msgs += [{"role": "user", "content": "Question %d is about rivers, lakes and forests." % i},
                         {"role": "assistant", "content": "An answer of several words to fill the context."}]
            msgs.append({"role": "user", "content": "The last question."})
            with self.assertRaises(rlx.RlxInvalidArgument) as e:
                lm.chat(msgs, max_tokens=8)
            self.assertIn("the context holds 96", str(e.exception))
            text, st = lm.chat(msgs, max_tokens=8, overflow="drop")
            self.assertGreaterEqual(st["dropped_messages"], 2)
            self.assertLessEqual(st["prompt_tokens"] + 8, 96)
            self.assertTrue(lm.chat_prompt(msgs).startswith("<|im_start|>system\nBe brief.<|im_end|>"))
        finally:
            lm.close()

    def test_grammar(self):
        words = 'root ::= ("north" | "south" | "east" | "west") "!"'
        for seed in range(4):
            text, ids, st = self.lm.generate("Which way?", temperature=1.0, seed=seed, grammar=words)
            self.assertIn(text, ["north!", "south!", "east!", "west!"])
            self.assertEqual(st["stopped_by"], "end_of_generation")
        text, st = self.lm.chat([{"role": "user", "content": "Count."}], temperature=0.7, seed=1,
                                grammar='root ::= [1-9] ("," [0-9]){2}')
        self.assertRegex(text, r"^[1-9],[0-9],[0-9]$")
        with self.assertRaises(rlx.RlxInvalidArgument) as e:
            self.lm.generate("x", grammar="root ::= (")
        self.assertIn("grammar: line 1, column 10: a '(' without its ')'", str(e.exception))
        with self.assertRaises(rlx.RlxInvalidArgument) as e:
            self.lm.chat([{"role": "user", "content": "hi"}], grammar="start ::= \"a\"")
        self.assertIn("grammar: no 'root' rule", str(e.exception))

    def test_bad_arguments(self):
        ok = [{"role": "user", "content": "hi"}]
        cases = [
            (dict(messages="hi"), "messages must be a list"),
            (dict(messages=[{"role": "user"}]), "messages[0] must be a dict with 'role' and 'content'"),
            (dict(messages=[{"role": "tool", "content": "x"}]), "messages[0]['role'] must be one of"),
            (dict(messages=[{"role": "user", "content": 3}]), "messages[0]['content'] must be a str"),
            (dict(messages=ok + [{"role": "assistant", "content": "x"}]), "must end with a user message"),
            (dict(messages=[]), "must end with a user message"),
            (dict(messages=ok, overflow="wrap"), "overflow must be 'refuse' or 'drop'"),
            (dict(messages=ok, max_tokens=-1), "max_tokens"),
            (dict(messages=ok, on_token=3), "on_token must be callable"),
            (dict(messages=[{"role": "user", "content": "a"}, {"role": "system", "content": "b"},
                            {"role": "user", "content": "c"}]), "only the first may be"),
        ]
        for kwargs, says in cases:
            with self.assertRaises(rlx.RlxInvalidArgument, msg=str(kwargs)) as e:
                self.lm.chat(**kwargs)
            self.assertIn(says, str(e.exception))
        with self.assertRaises(rlx.RlxUnsupported) as e:
            self.lm.chat(ok, template="vicuna")
        self.assertIn("'vicuna' is not built in", str(e.exception))

        def boom(i, p):
            raise KeyError("from on_token")
        with self.assertRaises(KeyError):
            self.lm.chat(ok, max_tokens=4, on_token=boom)
        text, st = self.lm.chat(ok, max_tokens=4, on_token=lambda i, p: True)
        self.assertEqual(st["stopped_by"], "callback")
        self.lm.close()
        with self.assertRaises(rlx.RlxStateError):
            self.lm.chat(ok)


if __name__ == "__main__":
    unittest.main()
