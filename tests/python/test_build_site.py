"""test_build_site.py - tools/build_site.py on small synthetic trees and on web/.

Every reference pattern is found (one tree each); comments, external URLs and
node: builtins are not followed; a missing file, a glob that matches nothing,
a path out of the root and a bare specifier fail with the file, line and
reference; the re-walk of the output catches a file the copy left out; a
non-ASCII byte before <head> is refused with its line and character, one
after <head> is fine; the card has exactly the allowed keys; .nojekyll is
written.  With the build outputs present, the real site holds its pages,
the cluster worker and the wasm.  Hostile trees: a symbolic link out of the
root (a file, a folder, a page) is refused with the link named, one inside
it is followed; a file that ends inside a string, template or comment is a
build error with its place, and no prefix of a file makes the walk raise;
inputs that made the old scans quadratic (32,000 `export ` lines, unclosed
regex literals, tags and comments, 32,000 references) give the right
references, with no time asserted: the test runner's timeout is the bound.
Standard library only.

Run: python3 -m unittest tests/python/test_build_site.py -v
"""

import io
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
_keep, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no tools/__pycache__
import build_site  # noqa: E402

sys.dont_write_bytecode = _keep


def page(body="", head=""):
    return '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">%s\n</head>\n<body>\n%s\n</body>\n</html>\n' % (
        head, body)


MAIN = page('<script type="module" src="./main.js"></script>')
SUB_MAIN = page('<script type="module" src="./sub/main.js"></script>')

# name: (files of the tree, files the walk must find); DECOYS: files nothing refers to
DECOYS = {"sub/b.html", "data/other.bin"}
CASES = {
    "script src": ({"index.html": page('<script src="./a.js"></script>'), "a.js": ""}, ["a.js"]),
    "link stylesheet": ({"index.html": page(head='<link rel="stylesheet" href="./s.css">'), "s.css": ""}, ["s.css"]),
    "link icon (data: skipped)": ({"index.html": page(head='<link rel="icon" href="./i.png"><link rel="icon" href="data:,">'),
                                   "i.png": "x"}, ["i.png"]),
    "img src": ({"index.html": page("<img src='img/p.png' alt=''>"), "img/p.png": "x"}, ["img/p.png"]),
    "a href to a page, and its scripts": ({"index.html": page('<a href="./b.html#top">b</a>'), "sub/b.html": "",
                                           "b.html": page('<script src="b.js"></script>'), "b.js": ""},
                                          ["b.html", "b.js"]),
    "css url() and @import": ({"index.html": page(head='<link rel="stylesheet" href="css/s.css">'),
                               "css/s.css": "@import 'more.css';\nbody { background: url(../bg.png); }",
                               "css/more.css": "", "bg.png": "x"}, ["css/s.css", "css/more.css", "bg.png"]),
    "static import": ({"index.html": MAIN, "main.js": "import { x } from './m.js';", "m.js": ""}, ["main.js", "m.js"]),
    "multi-line import": ({"index.html": MAIN, "main.js": 'import init, {\n  a,\n  b as c,\n} from "./m.js";', "m.js": ""},
                          ["m.js"]),
    "export from": ({"index.html": MAIN, "main.js": "export { x } from './m.js';\nexport * from './n.js';",
                     "m.js": "", "n.js": ""}, ["m.js", "n.js"]),
    "bare import": ({"index.html": MAIN, "main.js": "import './m.js';", "m.js": ""}, ["m.js"]),
    "dynamic import": ({"index.html": MAIN, "main.js": "const m = await import('./m.js');", "m.js": ""}, ["m.js"]),
    "new Worker('...') resolves against the page": ({"index.html": SUB_MAIN, "sub/main.js": "new Worker('./w.js');",
                                                     "w.js": "importScripts('./lib.js');", "lib.js": ""},
                                                    ["sub/main.js", "w.js", "lib.js"]),
    "new Worker(new URL(...))": ({"index.html": SUB_MAIN, "sub/main.js":
                                  "const w = new Worker(new URL('./w.js', import.meta.url), { type: 'module' });",
                                  "sub/w.js": "fetch('./d.json');", "sub/d.json": "{}"},
                                 ["sub/w.js", "sub/d.json"]),
    "new URL() of the wasm": ({"index.html": MAIN, "main.js": "const WASM = new URL('./pkg/m.wasm', import.meta.url);",
                               "pkg/m.wasm": "\0asm"}, ["pkg/m.wasm"]),
    "new URL() imported dynamically": ({"index.html": SUB_MAIN, "sub/main.js":
                                        "const url = new URL('../vendor/t.js', import.meta.url);\nawait import(url);",
                                        "vendor/t.js": "export * from './dep.js';", "vendor/dep.js": ""},
                                       ["vendor/t.js", "vendor/dep.js"]),
    "fetch('...')": ({"index.html": MAIN, "main.js": "const r = await fetch('./data/x.json', { cache: 'no-store' });",
                      "data/x.json": "{}"}, ["data/x.json"]),
    "template literal: a glob": ({"index.html": MAIN, "main.js": "new URL(`./data/set-${split}.bin`, import.meta.url);",
                                  "data/set-train.bin": "x", "data/set-test.bin": "x", "data/other.bin": "x"},
                                 ["data/set-test.bin", "data/set-train.bin"]),
    "inline module script": ({"index.html": page("<script type=\"module\">\nimport { a } from './m.js';\n</script>"),
                              "m.js": ""}, ["m.js"]),
    "absolute path": ({"index.html": page('<script src="/a.js"></script>'), "a.js": ""}, ["a.js"]),
}


class Tree:
    def __init__(self, test, files):
        self.tmp = tempfile.TemporaryDirectory()
        test.addCleanup(self.tmp.cleanup)
        self.root = os.path.join(self.tmp.name, "web")
        self.out = os.path.join(self.tmp.name, "site")
        for rel, text in files.items():
            path = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

    def walk(self):
        return build_site.Walk(self.root)

    def build(self):
        lines = []
        return build_site.build(self.root, self.out, verbose=True, log=lines.append), lines


class Patterns(unittest.TestCase):
    def test_every_pattern_is_found(self):
        for name, (files, want) in CASES.items():
            with self.subTest(name):
                w = Tree(self, files).walk()
                self.assertEqual(w.errors, [])
                self.assertEqual(set(w.files) - set(files), set(), "found files not in the tree")
                self.assertLessEqual(set(want), set(w.files))
                self.assertEqual(set(w.files) & DECOYS, set(), "found a file nothing refers to")

    def test_comments_strings_regexes_are_not_references(self):
        main = "\n".join([
            "// import x from './gone-1.js';",
            "/* fetch('./gone-2.json');",
            "   new Worker('./gone-3.js') */",
            "const u = 'http://example.com/a'; import('./m1.js');",
            "const r = /'/g, t = `a//b${r}c`; import('./m2.js');",
            "const q = a / 2 / b; import('./m3.js'); // done",
        ])
        files = {"index.html": page("<!-- <script src=\"./gone-4.js\"></script> -->" + MAIN[MAIN.index("<script"):]),
                 "main.js": main, "m1.js": "", "m2.js": "", "m3.js": ""}
        w = Tree(self, files).walk()
        self.assertEqual(w.errors, [])
        self.assertEqual(sorted(w.files), ["index.html", "m1.js", "m2.js", "m3.js", "main.js"])

    def test_external_node_and_computed_references_are_not_followed(self):
        files = {"index.html": page('<script src="https://cdn.example.com/x.js"></script>' + MAIN[MAIN.index("<script"):]),
                 "main.js": "import('https://cdn.example.com/y.js'); import('node:fs/promises');\n"
                            "fetch(url); fetch(`${base}/z.json`); new URL('//cdn.example.com/w.js', import.meta.url);"}
        tree = Tree(self, files)
        (count, _), lines = tree.build()
        self.assertEqual(count, 4)  # index.html, main.js, README.md, .nojekyll
        text = "\n".join(lines)
        for url in ("https://cdn.example.com/x.js", "https://cdn.example.com/y.js", "//cdn.example.com/w.js"):
            self.assertIn(url, text)
        self.assertIn("${...}/z.json", text)


class Failures(unittest.TestCase):
    def assertFails(self, files, *fragments):
        tree = Tree(self, files)
        with self.assertRaises(build_site.SiteError) as cm:
            tree.build()
        text = "\n".join(cm.exception.args[0])
        for f in fragments:
            self.assertIn(f, text)
        self.assertFalse(os.path.exists(tree.out), "nothing is written when the source is broken")
        return text

    def test_missing_file_is_named(self):
        self.assertFails({"index.html": MAIN, "main.js": "\nimport { a } from './gone.js';"},
                         "main.js:2:20", "'./gone.js'", "gone.js does not exist")

    def test_missing_file_fails_the_command(self):
        tree = Tree(self, {"index.html": page('<img src="./gone.png">')})
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "build_site.py"), "--root", tree.root,
                            "--out", tree.out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("index.html:7:6: <img src> './gone.png'", r.stderr)

    def test_glob_matching_nothing(self):
        self.assertFails({"index.html": MAIN, "main.js": "fetch(`./data/${x}.bin`);"}, "data/*.bin does not exist")

    def test_leaving_the_root(self):
        self.assertFails({"index.html": MAIN, "main.js": "import '../outside.js';"}, "leaves the site root")

    def test_bare_specifier(self):
        self.assertFails({"index.html": MAIN, "main.js": "import x from 'lodash';"}, "bare module specifier")

    def test_no_index_html(self):
        self.assertFails({"other.html": page()}, "no index.html")

    def test_self_check_catches_a_file_the_copy_left_out(self):
        tree = Tree(self, CASES["dynamic import"][0])
        real_copy = build_site.copy_files

        def lossy_copy(root, out, files):
            real_copy(root, out, [f for f in files if f != "m.js"])

        with mock.patch.object(build_site, "copy_files", lossy_copy):
            with self.assertRaises(build_site.SiteError) as cm:
                tree.build()
        text = "\n".join(cm.exception.args[0])
        self.assertIn(os.path.join("site", "main.js") + ":1:25: import() './m.js'", text)
        self.assertIn("does not hold together", text)

    def test_refuses_to_replace_a_folder_it_did_not_build(self):
        tree = Tree(self, {"index.html": page()})
        os.makedirs(tree.out)
        open(os.path.join(tree.out, "keep.txt"), "w").close()
        with self.assertRaises(build_site.SiteError) as cm:
            tree.build()
        self.assertIn("not a site this tool built", cm.exception.args[0][0])
        self.assertTrue(os.path.exists(os.path.join(tree.out, "keep.txt")))


class Prologue(unittest.TestCase):
    def test_non_ascii_before_head_is_refused(self):
        html = "<!doctype html>\n<!-- caf\u00e9 \u00e9 -->\n<html><head></head><body></body></html>\n"
        tree = Tree(self, {"index.html": html})
        with self.assertRaises(build_site.SiteError) as cm:
            tree.build()
        line = cm.exception.args[0][0]
        self.assertIn("index.html:2:9: non-ASCII byte 0xc3 ('\u00e9') at byte 24, before <head>", line)

    def test_no_head_means_the_whole_page(self):
        tree = Tree(self, {"index.html": "<!doctype html>\n<title>x</title><p>\u2192</p>\n"})
        with self.assertRaises(build_site.SiteError) as cm:
            tree.build()
        self.assertIn("index.html:2:20", cm.exception.args[0][0])
        self.assertIn("there is no <head>", cm.exception.args[0][0])

    def test_non_ascii_after_head_is_fine(self):
        tree = Tree(self, {"index.html": page("<p>caf\u00e9 \u2192 \U0001F600</p>", head="<title>\u00e9</title>")})
        (count, size), _ = tree.build()
        self.assertEqual(count, 3)


class Card(unittest.TestCase):
    ALLOWED = {"title", "emoji", "colorFrom", "colorTo", "sdk", "app_file", "header", "pinned", "short_description",
               "custom_headers"}
    PALETTE = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}

    def test_card_and_nojekyll(self):
        tree = Tree(self, CASES["static import"][0])
        (count, size), lines = tree.build()
        self.assertTrue(os.path.isfile(os.path.join(tree.out, ".nojekyll")))
        with open(os.path.join(tree.out, "README.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.startswith("---\n"))
        front, body = text[4:].split("\n---\n", 1)
        top = [line for line in front.splitlines() if not line.startswith("  ")]
        card = dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), None) for line in top)
        self.assertEqual(set(card), self.ALLOWED)
        # custom_headers: the cross-origin isolation headers, indented under it (HF's format)
        nested = front.split("custom_headers:\n", 1)[1].splitlines()
        headers = dict(line.strip().split(": ", 1) for line in nested if line.startswith("  "))
        self.assertEqual(headers, {"cross-origin-opener-policy": "same-origin",
                                   "cross-origin-embedder-policy": "require-corp"})
        self.assertEqual(card["sdk"], "static")
        self.assertEqual(card["app_file"], "index.html")
        self.assertEqual(card["header"], "mini")
        self.assertEqual(card["pinned"], "false")
        self.assertLessEqual(len(card["short_description"]), 60)
        self.assertIn(card["colorFrom"], self.PALETTE)
        self.assertIn(card["colorTo"], self.PALETTE)
        self.assertTrue(os.path.isfile(os.path.join(tree.out, card["app_file"])))
        self.assertIn("RLX", body)
        sizes = sum(os.path.getsize(os.path.join(tree.out, f)) for f in os.listdir(tree.out))
        self.assertEqual((count, size), (5, sizes))
        self.assertEqual(lines[-1], "site: 5 files, %s bytes in %s" % ("{:,}".format(sizes), tree.out))

    def test_rebuild_replaces_the_old_site(self):
        tree = Tree(self, CASES["static import"][0])
        tree.build()
        os.remove(os.path.join(tree.root, "m.js"))
        with open(os.path.join(tree.root, "main.js"), "w") as f:
            f.write("")
        tree.build()
        self.assertFalse(os.path.exists(os.path.join(tree.out, "m.js")))


class Links(unittest.TestCase):
    def tree(self, files):
        tree = Tree(self, files)
        self.outside = os.path.join(tree.tmp.name, "outside")
        os.makedirs(self.outside)
        with open(os.path.join(self.outside, "secret.png"), "w") as f:
            f.write("secret")
        return tree

    def assertRefused(self, tree, *fragments):
        with self.assertRaises(build_site.SiteError) as cm:
            tree.build()
        text = "\n".join(cm.exception.args[0])
        for f in fragments + ("outside the site root",):
            self.assertIn(f, text)
        self.assertFalse(os.path.exists(tree.out), "nothing is written")

    def test_a_file_link_out_of_the_root_is_refused(self):
        tree = self.tree({"index.html": page('<img src="./pic.png">')})
        os.symlink(os.path.join(self.outside, "secret.png"), os.path.join(tree.root, "pic.png"))
        self.assertRefused(tree, "index.html:7:6: <img src> './pic.png': ", "pic.png is a link to " + self.outside)

    def test_a_folder_link_out_of_the_root_is_refused(self):
        tree = self.tree({"index.html": page('<img src="./assets/secret.png">')})
        os.symlink(self.outside, os.path.join(tree.root, "assets"))
        self.assertRefused(tree, "'./assets/secret.png': ", "assets is a link to " + self.outside)

    def test_a_page_link_out_of_the_root_is_refused(self):
        tree = self.tree({"index.html": page()})
        with open(os.path.join(self.outside, "page.html"), "w") as f:
            f.write(page())
        os.symlink(os.path.join(self.outside, "page.html"), os.path.join(tree.root, "other.html"))
        self.assertRefused(tree, "other.html is a link to " + self.outside)

    def test_a_link_inside_the_root_is_followed(self):
        tree = self.tree({"index.html": page('<img src="./alias.png"><img src="./more/real.png">'), "real.png": "x"})
        os.symlink("real.png", os.path.join(tree.root, "alias.png"))
        os.symlink(".", os.path.join(tree.root, "more"))
        (count, _), _ = tree.build()
        with open(os.path.join(tree.out, "alias.png")) as f:
            self.assertEqual(f.read(), "x")
        self.assertEqual(count, 5)  # index.html, alias.png, more/real.png, README.md, .nojekyll


TRICKY_JS = ("import a from './a.js'; const s = 'q\\'t', d = \"x\", t = `p${ {k: `n${1}`} }q`;\n"
             "/* block */ const r = /[/]\\//g; // line\nfetch('./b.json'); const half = a / 2 / 1;\n")


class BadInput(unittest.TestCase):
    def assertBuildError(self, files, *fragments):
        with self.assertRaises(build_site.SiteError) as cm:
            Tree(self, files).build()
        text = "\n".join(cm.exception.args[0])
        for f in fragments:
            self.assertIn(f, text)

    def test_js_that_ends_inside_a_literal_or_comment_is_a_build_error(self):
        self.assertBuildError({"index.html": MAIN, "main.js": "x = '\\"},
                              "main.js:1:5: a string literal is not closed before the end")
        self.assertBuildError({"index.html": MAIN, "main.js": "\nx = `a${b}"}, "main.js:2:10: a template literal")
        self.assertBuildError({"index.html": MAIN, "main.js": "x; /* never closed"}, "main.js:1:4: a /* comment")
        self.assertBuildError({"index.html": page("<script>\nx = 'a\\</script>")}, "index.html:8:5: a string literal")

    def test_no_prefix_of_a_file_makes_the_walk_raise(self):
        for n in range(len(TRICKY_JS) + 1):
            with self.subTest(prefix=TRICKY_JS[:n]):
                Tree(self, {"index.html": MAIN, "main.js": TRICKY_JS[:n], "a.js": "", "b.json": ""}).walk()
        w = Tree(self, {"index.html": MAIN, "main.js": TRICKY_JS, "a.js": "", "b.json": ""}).walk()
        self.assertEqual((w.errors, sorted(w.files)), ([], ["a.js", "b.json", "index.html", "main.js"]))

    def test_an_unreadable_file_is_named(self):
        tree = Tree(self, CASES["static import"][0])

        def no_m_js(path, *args):
            if path.endswith("m.js"):
                raise PermissionError(13, "Permission denied")
            return open(path, *args)

        with mock.patch.object(build_site, "open", no_m_js, create=True):
            with self.assertRaises(build_site.SiteError) as cm:
                tree.build()
        self.assertRegex(cm.exception.args[0][0], r"m\.js: cannot be read: Permission denied$")


class BigInputs(unittest.TestCase):
    """Shapes that made the old scans quadratic (one took 105 s for 224 KB); each must give the right
    references.  No time is asserted: the test runner's timeout is the bound."""

    def assertFinds(self, files, want):
        w = Tree(self, files).walk()
        self.assertEqual(w.errors, [])
        self.assertEqual(sorted(w.files), sorted(want))

    def test_32000_export_lines(self):
        js = "export { a } from './m.js';\nexport * as n from './n.js';\n" + "export " * 32000  # 224 KB
        self.assertFinds({"index.html": MAIN, "main.js": js, "m.js": "", "n.js": ""},
                         ["index.html", "main.js", "m.js", "n.js"])

    def test_unclosed_regex_literals(self):
        js = "x = (/[" * 30000 + "\nimport('./m.js');\n"
        self.assertFinds({"index.html": MAIN, "main.js": js, "m.js": ""}, ["index.html", "main.js", "m.js"])

    def test_32000_references(self):
        js = "import './m.js';\n" * 32000 + "\nimport './gone.js';"
        w = Tree(self, {"index.html": MAIN, "main.js": js, "m.js": ""}).walk()
        self.assertEqual(len(w.errors), 1)
        self.assertRegex(w.errors[0], r"main\.js:32002:9: import './gone\.js': .*gone\.js does not exist$")

    def test_unclosed_tags_and_comments(self):
        html = page("<a " * 50000 + '><img src="./p.png">')
        self.assertFinds({"index.html": html, "p.png": ""}, ["index.html", "p.png"])
        css = "body { background: url(./bg.png); }\n" + "/* " * 50000
        self.assertFinds({"index.html": page(head='<link rel="stylesheet" href="./s.css">'), "s.css": css,
                          "bg.png": ""}, ["index.html", "s.css", "bg.png"])
        html = page('<img src="./p.png">' + "<!-- <script " * 30000)
        self.assertFinds({"index.html": html, "p.png": ""}, ["index.html", "p.png"])


NEEDED = ["web/pkg/rlx_web.wasm", "web/rlx.js", "web/data/fashion-mnist-train.bin"]
MISSING = [p for p in NEEDED if not os.path.exists(os.path.join(ROOT, p))]


@unittest.skipIf(MISSING, "build outputs missing (run make): %s" % ", ".join(MISSING))
class RealSite(unittest.TestCase):
    def test_web(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "site")
            lines = []
            with redirect_stderr(io.StringIO()):
                count, size = build_site.build(os.path.join(ROOT, "web"), out, log=lines.append)
            for rel in ["index.html", "cluster.html", "vision-bench.html", "cluster/worker.js", "pkg/rlx_web.wasm",
                        "pkg/rlx_web.js", "runtime/webgpu.js", "runtime/webgl.js", "vision-worker.js",
                        "data/fashion-mnist-train.bin", "README.md", ".nojekyll"]:
                self.assertTrue(os.path.isfile(os.path.join(out, rel)), rel)
            for rel in ["rlx.ts", "package.json", "pkg/rlx_web.d.ts"]:
                self.assertFalse(os.path.exists(os.path.join(out, rel)), rel)
            self.assertGreater(size, 300000)
            self.assertRegex(lines[-1], r"^site: \d+ files, [\d,]+ bytes in ")


if __name__ == "__main__":
    unittest.main()
