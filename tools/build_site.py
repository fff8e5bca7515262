#!/usr/bin/env python3
"""build_site.py - builds the static site (a Hugging Face static Space, or any
static host) from web/; standard library only.

It walks the pages' real references, from every web/*.html: in HTML <script
src>, <link href>, <img src>, local <a href> and inline scripts and styles; in
CSS url() and @import; in JavaScript import/export ... from, import '...',
import('...'), new URL('...', import.meta.url) (the wasm, the data, Workers),
new Worker('...'), fetch('...') and importScripts('...'), comments skipped.  A
template literal `a-${x}.bin` is the glob a-*.bin.  http(s) URLs are left
alone; a local reference that does not resolve is an error, and so is a
non-ASCII byte before <head> (Hugging Face inserts a script at an offset it
counts in characters and applies in bytes).  It copies the files to --out,
writes .nojekyll and README.md (the Space card), and walks its own output
again, failing on any reference there that does not resolve.

  python3 tools/build_site.py [--root web] [--out build/site] [--verbose]
"""
import argparse
import fnmatch
import glob
import os
import posixpath
import re
import shutil
import sys
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# References (globs relative to the site root) allowed not to resolve.  None:
# web/data/*.bin and web/pkg/rlx_web.wasm are built by `make`, which
# `make site` runs first, so every reference must resolve.
OPTIONAL = ()

CARD = {  # the Hugging Face Space card (README.md front matter)
    "title": "RLX for the web",
    "emoji": "\U0001F9EE",
    "colorFrom": "indigo",
    "colorTo": "purple",
    "sdk": "static",
    "app_file": "index.html",
    "header": "mini",
    "pinned": "false",
    "short_description": "A C/wasm ML runtime that trains models in your browser",
}
HF_COLORS = ("red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray")

STR = r"""(?P<q>['"`])(?P<s>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)"""  # one JS string or template literal
JS_PATTERNS = [  # (what, regex, resolved against: 'file' (the module) or 'doc' (the page / worker))
    ("import", r"\b(?:import|export)\s+(?:type\s+)?[\w$*{}\s,]*?\bfrom\s*" + STR, "file"),
    ("import", r"\bimport\s*" + STR, "file"),
    ("import()", r"\bimport\s*\(\s*" + STR + r"\s*[,)]", "file"),
    ("new Worker(new URL())", r"\bnew\s+(?:Shared)?Worker\s*\(\s*new\s+URL\s*\(\s*" + STR
     + r"\s*,\s*import\.meta\.url\s*\)", "file"),
    ("new URL()", r"\bnew\s+URL\s*\(\s*" + STR + r"\s*,\s*import\.meta\.url\s*\)", "file"),
    ("new Worker()", r"\bnew\s+(?:Shared)?Worker\s*\(\s*" + STR + r"\s*[,)]", "doc"),
    ("fetch()", r"(?<![\w$])fetch\s*\(\s*" + STR + r"\s*[,)]", "doc"),
    ("importScripts()", r"\bimportScripts\s*\(\s*" + STR + r"\s*[,)]", "doc"),
]
JS_PATTERNS = [(what, re.compile(rx), base) for what, rx, base in JS_PATTERNS]
CSS_URL = re.compile(r"""url\(\s*(?P<q>['"]?)(?P<s>[^'")\s]+)(?P=q)\s*\)|@import\s+(?P<q2>['"])(?P<s2>[^'"]+)(?P=q2)""")
TAG = re.compile(r"<(?P<tag>[a-zA-Z][\w-]*)(?P<attrs>(?:\s+[^\s=>]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*)\s*/?>")
ATTR = re.compile(r"""([^\s=>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
URL_ATTRS = {"script": "src", "img": "src", "source": "src", "audio": "src", "video": "src", "iframe": "src",
             "embed": "src", "link": "href", "a": "href"}
RAW_BLOCK = re.compile(r"<(script|style)\b([^>]*)>(.*?)</\1\s*>", re.S | re.I)
REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")
REGEX_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
               "instanceof", "yield", "await"}
DYN = "\0"  # stands for a ${...} of a template literal while resolving


class SiteError(Exception):
    """The site cannot be built: one line per problem."""


def blank(text):
    """text with everything but newlines turned into spaces (offsets and lines stay put)."""
    return re.sub(r"[^\n]", " ", text)


def mask_js_comments(s):
    """s with its // and /* */ comments blanked; strings, templates and regex literals are kept."""
    out, i, n, prev, stack = [], 0, len(s), "", []  # stack: brace depth inside each open ${
    while i < n:
        c, j = s[i], i + 1
        if c in "'\"":
            while j < n and s[j] not in (c, "\n"):
                j += 2 if s[j] == "\\" else 1
            j += 1
        elif c == "`" or (c == "}" and stack and stack[-1] == 0):
            if c == "}":
                stack.pop()
            while j < n and s[j] != "`" and s[j:j + 2] != "${":
                j += 2 if s[j] == "\\" else 1
            if s[j:j + 2] == "${":
                stack.append(0)
                j += 2
            else:
                j += 1
        elif s.startswith("//", i) or s.startswith("/*", i):
            line = s[j] == "/"
            j = s.find("\n" if line else "*/", i + 2)
            j = n if j < 0 else j if line else j + 2
            out.append(blank(s[i:j]))
            i = j
            continue
        elif c == "/" and (prev == "" or prev in REGEX_BEFORE or prev in REGEX_WORDS):
            cls = False
            while j < n and s[j] != "\n" and (cls or s[j] != "/"):
                cls = (cls or s[j] == "[") and s[j] != "]"
                j += 2 if s[j] == "\\" else 1
            j = j + 1 if j < n and s[j] == "/" else i + 1  # unclosed: a division after all
        elif c in "{}" and stack:
            stack[-1] += 1 if c == "{" else -1
        elif c.isalnum() or c in "_$":
            while j < n and (s[j].isalnum() or s[j] in "_$"):
                j += 1
        if not s[i:j].isspace():
            prev = s[i:j] if (c.isalnum() or c in "_$") else s[j - 1]
        out.append(s[i:j])
        i = j
    return "".join(out)


def js_refs(text, at=0):
    """(offset, what, literal, base) of every reference in JavaScript source."""
    code, found = mask_js_comments(text), {}
    for what, rx, base in JS_PATTERNS:
        for m in rx.finditer(code):
            key = m.start("s")
            if key not in found or what == "new Worker(new URL())":
                literal = m.group("s")
                if m.group("q") == "`":
                    literal = re.sub(r"\$\{[^}]*\}", DYN, literal)
                found[key] = (at + key, what, literal, base)
    return list(found.values())


def css_refs(text, at=0):
    text = re.sub(r"/\*.*?\*/", lambda m: blank(m.group()), text, flags=re.S)
    return [(at + m.start("s" if m.group("s") else "s2"), "css url()", m.group("s") or m.group("s2"), "file")
            for m in CSS_URL.finditer(text)]


def html_refs(text):
    text = re.sub(r"<!--.*?-->", lambda m: blank(m.group()), text, flags=re.S)
    refs = []
    for m in RAW_BLOCK.finditer(text):  # inline scripts and styles, then blank them for the tag scan
        scan = css_refs if m.group(1).lower() == "style" else js_refs
        if not re.search(r"\ssrc\s*=", m.group(2)):
            refs += scan(m.group(3), m.start(3))
    text = RAW_BLOCK.sub(lambda m: m.group()[:m.start(3) - m.start()] + blank(m.group(3)), text)
    for m in TAG.finditer(text):
        tag, attrs = m.group("tag").lower(), {}
        for a in ATTR.finditer(m.group("attrs")):
            value = next((v for v in a.groups()[1:] if v is not None), "")
            attrs[a.group(1).lower()] = (value, m.start("attrs") + a.start())
        name = URL_ATTRS.get(tag)
        if name in attrs:
            refs.append((attrs[name][1], "<%s %s>" % (tag, name), attrs[name][0].strip(), "file"))
    return refs


def position(text, offset):
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def ascii_prologue_error(data, shown):
    """An error line when the bytes before <head> (the whole file without one) are not all ASCII."""
    stripped = re.sub(rb"<!--.*?-->", lambda m: b" " * len(m.group()), data, flags=re.S)
    head = re.search(rb"<head[\s>/]", stripped, re.I)
    end = head.start() if head else len(data)
    found = re.search(rb"[\x80-\xff]", data[:end])
    if not found:
        return None
    bad = found.start()
    line = data.count(b"\n", 0, bad) + 1
    start = data.rfind(b"\n", 0, bad) + 1
    col = len(data[start:bad].decode("utf-8", "replace")) + 1
    char = data[bad:bad + 4].decode("utf-8", "replace")[:1]
    return ("%s:%d:%d: non-ASCII byte 0x%02x (%r) at byte %d, before <head>%s: Hugging Face inserts a script at "
            "an offset counted in characters and applied in bytes, so this corrupts the page; use an HTML "
            "entity or ASCII" % (shown, line, col, data[bad], char, bad, "" if head else " (there is no <head>)"))


class Walk:
    """The files a site's pages need, from its HTML pages down: files, errors, external and dynamic refs."""

    def __init__(self, root, optional=OPTIONAL):
        self.root, self.optional = os.path.abspath(root), optional
        self.files, self.errors, self.external, self.dynamic = [], [], [], []
        pages = sorted(f for f in os.listdir(self.root) if f.endswith(".html") and os.path.isfile(self.path(f)))
        if "index.html" not in pages:
            self.errors.append("%s: no index.html (the Space's app_file)" % self.shown("index.html"))
        queue, seen = [(p, "") for p in pages], set()
        while queue:
            rel, doc = queue.pop(0)
            if (rel, doc) in seen:
                continue
            seen.add((rel, doc))
            if rel not in self.files:
                self.files.append(rel)
            queue += self.visit(rel, doc)

    def path(self, rel):
        return os.path.join(self.root, *rel.split("/"))

    def shown(self, rel):
        p = os.path.relpath(self.path(rel))
        return self.path(rel) if p.startswith("..") else p

    def visit(self, rel, doc):
        """The (file, document dir) pairs that rel refers to; problems go to self.errors."""
        ext = posixpath.splitext(rel)[1].lower()
        if ext not in (".html", ".htm", ".js", ".mjs", ".css"):
            return []
        with open(self.path(rel), "rb") as f:
            data = f.read()
        text, here = data.decode("utf-8", "replace"), posixpath.dirname(rel)
        if ext in (".html", ".htm"):
            problem = ascii_prologue_error(data, self.shown(rel))
            if problem:
                self.errors.append(problem)
            refs, doc = html_refs(text), here
        else:
            refs = css_refs(text) if ext == ".css" else js_refs(text)
        out = []
        for offset, what, literal, base in sorted(refs):
            where = "%s:%d:%d" % ((self.shown(rel),) + position(text, offset))
            for target in self.resolve(literal, here if base == "file" else doc, where, what):
                out.append((target, posixpath.dirname(target) if "Worker" in what else doc))
        return out

    def resolve(self, literal, base, where, what):
        """The site files a reference names ([] for external, data:, node: ... and same-page refs)."""
        spec = literal.replace(DYN, "${...}")
        if not literal:
            return []
        if re.match(r"(?i)^(https?:)?//", literal):
            self.external.append("%s: %s %s" % (where, what, literal))
            return []
        if re.match(r"^[a-zA-Z][\w+.-]*:", literal) or literal.startswith(("#", "?")):
            return []  # data:, blob:, node:, mailto:, javascript:, a fragment or query of this page
        if literal.startswith(DYN):
            self.dynamic.append("%s: %s '%s' (computed, not followed)" % (where, what, spec))
            return []
        if what == "import" or what == "import()":
            if not literal.startswith(("./", "../", "/")):
                self.errors.append("%s: %s '%s': a bare module specifier (browsers without an import map "
                                   "need ./, ../ or /)" % (where, what, spec))
                return []
        path = urllib.parse.unquote(re.split(r"[?#]", literal, maxsplit=1)[0])
        rel = posixpath.normpath(path.lstrip("/") if path.startswith("/") else posixpath.join(base, path))
        if rel == ".." or rel.startswith("../"):
            self.errors.append("%s: %s '%s' leaves the site root %s" % (where, what, spec, self.shown(".")))
            return []
        if DYN in rel:
            pattern = glob.escape(self.path(rel)).replace(DYN, "*")
            found = sorted(os.path.relpath(p, self.root).replace(os.sep, "/") for p in glob.glob(pattern)
                           if os.path.isfile(p))
            shown_rel = rel.replace(DYN, "*")
        else:
            if os.path.isdir(self.path(rel)):
                rel = posixpath.normpath(posixpath.join(rel, "index.html"))
            found, shown_rel = ([rel] if os.path.isfile(self.path(rel)) else []), rel
        if not found and not any(fnmatch.fnmatch(shown_rel, p) for p in self.optional):
            self.errors.append("%s: %s '%s': %s does not exist" % (where, what, spec, self.shown(shown_rel)))
        return found


def copy_files(root, out, files):
    """Copies each site file (relative path) from root to out."""
    for rel in files:
        dst = os.path.join(out, *rel.split("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(root, *rel.split("/")), dst)


def card_text(pages):
    assert CARD["colorFrom"] in HF_COLORS and CARD["colorTo"] in HF_COLORS
    assert len(CARD["short_description"]) <= 60, "Hugging Face allows 60 characters"
    assert not any(re.search(r":\s|\s#|^[-?:,\[\]{}#&*!|>'\"%@`]", v) for v in CARD.values()), "plain YAML only"
    front = "".join("%s: %s\n" % (k, v) for k, v in CARD.items())
    links = "".join("- [%s](./%s)\n" % (p, p) for p in pages)
    return ("---\n%s---\n\n# RLX for the web\n\n"
            "RLX is a small machine-learning runtime written in C and compiled to WebAssembly.  It builds\n"
            "models as graphs of tensor ops, differentiates them and trains them right in the page: on the\n"
            "CPU through wasm, on WebGPU or on WebGL2.  No server does any of the work; these files are all\n"
            "there is.  Open several tabs of the tab cluster to train one model across them.\n\n"
            "Pages:\n\n%s\nBuilt by `make site` (tools/build_site.py) from the web/ folder of the RLX repository.\n"
            % (front, links))


def prepare_out(root, out):
    root_abs, out_abs = os.path.realpath(root), os.path.realpath(out)
    if os.path.commonpath([root_abs, out_abs]) in (root_abs, out_abs):
        raise SiteError(["--out %s overlaps the source %s" % (out, root)])
    if os.path.exists(out):
        if os.listdir(out) and not os.path.exists(os.path.join(out, ".nojekyll")):
            raise SiteError(["%s exists and is not a site this tool built (no .nojekyll): remove it or pick "
                             "another --out" % out])
        for entry in os.listdir(out):  # the old site; a .git of a Space's clone stays
            path = os.path.join(out, entry)
            if entry != ".git":
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".nojekyll"), "w"):
        pass  # marks the folder as ours, and GitHub Pages serves it as is


def build(root, out, verbose=False, log=print):
    """Builds the site from root into out; returns (files, bytes) written or raises SiteError."""
    source = Walk(root)
    if source.errors:
        raise SiteError(source.errors + ["%d problem(s) in %s; nothing written" % (len(source.errors), root)])
    prepare_out(root, out)
    copy_files(source.root, out, source.files)
    pages = [f for f in source.files if f.endswith(".html")]
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as f:
        f.write(card_text(pages))
    check = Walk(out)
    if check.errors:
        raise SiteError(check.errors + ["the site in %s does not hold together: %d reference(s) above do not "
                                        "resolve in the copy" % (out, len(check.errors))])
    written = sorted(os.path.relpath(os.path.join(d, f), out).replace(os.sep, "/")
                     for d, _, fs in os.walk(out) for f in fs)
    sizes = {rel: os.path.getsize(os.path.join(out, rel)) for rel in written}
    if verbose:
        for rel in written:
            log("  %10s  %s" % ("{:,}".format(sizes[rel]), rel))
        for line in source.external:
            log("  external, not copied: " + line)
        for line in source.dynamic:
            log("  dynamic: " + line)
    log("site: %d files, %s bytes in %s" % (len(written), "{:,}".format(sum(sizes.values())), out))
    return len(written), sum(sizes.values())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(REPO, "web"), help="the source folder (default: web/)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "site"), help="the output (default: build/site)")
    ap.add_argument("--verbose", "-v", action="store_true", help="list every file and external reference")
    args = ap.parse_args(argv)
    try:
        build(args.root, args.out, args.verbose)
    except SiteError as e:
        for line in e.args[0]:
            print("build_site: " + line, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
