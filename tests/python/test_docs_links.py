"""test_docs_links.py - every relative link in README.md and docs/*.md
leads somewhere: the file or folder exists, and a #anchor names a heading of
the target Markdown file (GitHub's rule for heading ids).  Links in fenced
code blocks and inline code are not links; http(s) and mailto are not
checked.  Standard library only.

    python3 -m unittest tests/python/test_docs_links.py
"""
import os
import re
import tempfile
import unittest
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
MD_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HREF = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def doc_files(root):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return [f for f in files if os.path.isfile(f)]


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(heading):
    """GitHub's id for a heading: inline markup dropped, lower case, every
    character but letters, digits, spaces, hyphens and underscores removed,
    spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    """The heading ids of a Markdown file (repeats get -1, -2, ... as on GitHub)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, ids = {}, set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else "%s-%d" % (base, n))
    ids.update(re.findall(r"""<a\s+(?:name|id)\s*=\s*["']([^"']+)["']""", text))
    return ids


def problems(root):
    """A sentence for every link of README.md and docs/*.md under root that
    does not resolve."""
    found, cache = [], {}
    for path in doc_files(root):
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            line = CODE_SPAN.sub("", line)  # inline code holds no links
            for target in MD_LINK.findall(line) + HREF.findall(line):
                if EXTERNAL.match(target) or target.startswith("//"):
                    continue
                where, _, anchor = target.partition("#")
                where = urllib.parse.unquote(where)
                dest = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
                if not os.path.exists(dest):
                    found.append("%s:%d: %s: no such file %s" % (rel, n, target, os.path.relpath(dest, root)))
                    continue
                if not anchor:
                    continue
                if not dest.endswith(".md"):
                    found.append("%s:%d: %s: an anchor into a file that is not Markdown" % (rel, n, target))
                    continue
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if urllib.parse.unquote(anchor).lower() not in cache[dest]:
                    found.append("%s:%d: %s: no heading #%s in %s" % (rel, n, target, anchor,
                                                                      os.path.relpath(dest, root)))
    return found


class DocsLinks(unittest.TestCase):
    def test_every_relative_link_and_anchor_resolves(self):
        self.assertTrue(os.path.isfile(os.path.join(ROOT, "README.md")))
        self.assertEqual(problems(ROOT), [])

    def test_the_checker_finds_broken_links(self):
        with tempfile.TemporaryDirectory() as root:
            os.mkdir(os.path.join(root, "docs"))
            with open(os.path.join(root, "docs", "a.md"), "w", encoding="utf-8") as f:
                f.write("# A\n\n## The `C` API, at a glance\n\n## Twice\n\n## Twice\n")
            with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
                f.write("# R\n\n[ok](docs/a.md#the-c-api-at-a-glance) [ok](docs/a.md#twice-1) [ok](#r)\n"
                        "[web](https://example.org/x#y) `[code](nowhere.md)`\n"
                        "```\n[fenced](nowhere.md)\n```\n"
                        "[gone](docs/b.md) [bad](docs/a.md#nope) [self](#missing)\n"
                        '<a href="docs/c.md">c</a>\n')
            self.assertEqual(problems(root), [
                "README.md:8: docs/b.md: no such file docs/b.md",
                "README.md:8: docs/a.md#nope: no heading #nope in docs/a.md",
                "README.md:8: #missing: no heading #missing in README.md",
                "README.md:9: docs/c.md: no such file docs/c.md",
            ])

    def test_slugs_follow_github(self):
        self.assertEqual(slug("Describe a model in code: C, JavaScript, Python"),
                         "describe-a-model-in-code-c-javascript-python")
        self.assertEqual(slug("1,000 ranks, simulated"), "1000-ranks-simulated")
        self.assertEqual(slug("generate.html"), "generatehtml")
        self.assertEqual(slug("Next to wllama and llama.cpp"), "next-to-wllama-and-llamacpp")
        self.assertEqual(slug("The `rlx_llm.h` API"), "the-rlx_llmh-api")


if __name__ == "__main__":
    unittest.main()
