#!/usr/bin/env python3
"""build_site.py - builds the static site (a Hugging Face static Space, or any
static host) from web/; standard library only.

It walks the pages' real references, from every web/*.html: in HTML <script
src>, <link href>, <img src>, local <a href> and inline scripts and styles; in
CSS url() and @import; in JavaScript import/export ... from, import '...',
import('...'), new URL('...', import.meta.url) (the wasm, the data, Workers),
new Worker('...'), fetch('...') and importScripts('...'), comments skipped.  A
template literal `a-${x}.bin` is the glob a-*.bin.  http(s) URLs are left
alone; a local reference that does not resolve is an error, and so are a
non-ASCII byte before <head> (Hugging Face inserts a script at an offset it
counts in characters and applies in bytes), a symbolic link that leads out
of the root (named, for a file or a folder) and a script that ends inside a
string, template or comment.  Every scan is one pass over its file.  It
copies the files to --out, writes .nojekyll and README.md (the Space card),
and walks its own output again, failing on any reference there that does
not resolve.

  python3 tools/build_site.py [--root web] [--out build/site] [--verbose]
"""
import argparse
import bisect
import collections
import fnmatch
import glob
import os
import posixpath
import re
import shutil
import sys
import urllib.parse

from isolation_headers import HEADERS as ISOLATION_HEADERS

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
# What stands between import / export and from: [default,] then * [as ns], { ... } or a name.  Each part
# ends at a fixed character (no lazy run up to the next "from"), so the scan stays linear.
CLAUSE = r"(?:type\s+)?(?:[\w$]+\s*,\s*)?(?:\*\s*(?:as\s+[\w$]+\s*)?|\{[^{}]*\}\s*|[\w$]+\s+)"
JS_PATTERNS = [  # (what, regex, resolved against: 'file' (the module) or 'doc' (the page / worker))
    ("import", r"\b(?:import|export)\s+" + CLAUSE + r"from\s*" + STR, "file"),
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
MARKUP = re.compile(r"<!--|<([a-zA-Z][^\s/>]*)")  # a comment or a start tag (its name)
ATTR = re.compile(r"""[\s/]*([^\s/>][^\s/>=]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
URL_ATTRS = {"script": "src", "img": "src", "source": "src", "audio": "src", "video": "src", "iframe": "src",
             "embed": "src", "link": "href", "a": "href"}
RAW_END = {tag: re.compile(r"</%s\s*>" % tag, re.I) for tag in ("script", "style")}  # raw text up to these
REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")
REGEX_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
               "instanceof", "yield", "await"}
DYN = "\0"  # stands for a ${...} of a template literal while resolving


class SiteError(Exception):
    """The site cannot be built: one line per problem."""


class BadSource(Exception):
    """A file that no browser can parse: (offset, what is wrong there)."""


def blank(text):
    """text with everything but newlines turned into spaces (offsets and lines stay put)."""
    return re.sub(r"[^\n]", " ", text)


def blank_spans(text, start, end, fill=blank):
    """text (str or bytes) with each span from start to end (an unclosed one: to the end of text) replaced
    by fill(span), in one pass."""
    out, pos = [], 0
    while (i := text.find(start, pos)) >= 0:
        j = text.find(end, i + len(start))
        j = len(text) if j < 0 else j + len(end)
        out += [text[pos:i], fill(text[i:j])]
        pos = j
    return text[:0].join(out + [text[pos:]])


def mask_js_comments(s):
    """s with its // and /* */ comments blanked; strings, templates and regex literals are kept.  One pass:
    a '/' that opens no regex literal on its line is a division, and `dead` keeps the (offset, in-class)
    states such a scan went through, so no later scan goes through them again.  Raises BadSource where a
    string, template or comment runs off the end of s."""
    out, i, n, prev, stack, dead = [], 0, len(s), "", [], set()  # stack: brace depth inside each open ${
    while i < n:
        c, j = s[i], i + 1
        if c in "'\"":
            while j < n and s[j] not in (c, "\n"):
                j += 2 if s[j] == "\\" else 1
            if j >= n:
                raise BadSource(i, "a string literal is not closed before the end")
            j += 1
        elif c == "`" or (c == "}" and stack and stack[-1] == 0):
            if c == "}":
                stack.pop()
            while j < n and s[j] != "`" and s[j:j + 2] != "${":
                j += 2 if s[j] == "\\" else 1
            if j >= n:
                raise BadSource(i, "a template literal is not closed before the end")
            if s[j:j + 2] == "${":
                stack.append(0)
                j += 2
            else:
                j += 1
        elif s.startswith("//", i) or s.startswith("/*", i):
            line = s[j] == "/"
            j = s.find("\n" if line else "*/", i + 2)
            if j < 0 and not line:
                raise BadSource(i, "a /* comment is not closed before the end")
            j = n if j < 0 else j if line else j + 2
            out.append(blank(s[i:j]))
            i = j
            continue
        elif c == "/" and (prev == "" or prev in REGEX_BEFORE or prev in REGEX_WORDS):
            cls, states = False, []
            while j < n and s[j] != "\n" and (cls or s[j] != "/") and (j, cls) not in dead:
                states.append((j, cls))
                cls = (cls or s[j] == "[") and s[j] != "]"
                j += 2 if s[j] == "\\" else 1
            if j < n and s[j] == "/" and not cls:
                j += 1
            else:  # unclosed: a division after all
                dead.update(states)
                j = i + 1
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
    try:
        code, found = mask_js_comments(text), {}
    except BadSource as e:
        raise BadSource(at + e.args[0], e.args[1]) from None
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
    text = blank_spans(text, "/*", "*/")
    return [(at + m.start("s" if m.group("s") else "s2"), "css url()", m.group("s") or m.group("s2"), "file")
            for m in CSS_URL.finditer(text)]


def tag_attrs(text, pos):
    """({name: (value, offset)}, offset just past the tag) of the start tag whose name ends at pos."""
    attrs = {}
    while a := ATTR.match(text, pos):
        attrs[a.group(1).lower()] = (next((v for v in a.groups()[1:] if v is not None), ""), a.start(1))
        pos = a.end()
    end = text.find(">", pos)
    return attrs, len(text) if end < 0 else end + 1


def html_refs(text):
    """The references of a page, in one pass like a browser's: comments skipped, the URL attribute of
    each tag, the text of inline scripts and styles scanned as JavaScript and CSS."""
    refs, pos = [], 0
    while m := MARKUP.search(text, pos):
        if not m.group(1):  # <!--
            end = text.find("-->", m.end())
            pos = len(text) if end < 0 else end + 3
            continue
        tag = m.group(1).lower()
        attrs, pos = tag_attrs(text, m.end())
        name = URL_ATTRS.get(tag)
        if name in attrs:
            refs.append((attrs[name][1], "<%s %s>" % (tag, name), attrs[name][0].strip(), "file"))
        if tag in RAW_END:
            close = RAW_END[tag].search(text, pos)
            end = close.start() if close else len(text)
            if "src" not in attrs:
                refs += (css_refs if tag == "style" else js_refs)(text[pos:end], pos)
            pos = close.end() if close else len(text)
    return refs


def line_starts(text):
    return [0] + [m.end() for m in re.finditer("\n", text)]


def position(starts, offset):
    """(line, column) of offset, given line_starts() of its text."""
    line = bisect.bisect_right(starts, offset)
    return line, offset - starts[line - 1] + 1


def ascii_prologue_error(data, shown):
    """An error line when the bytes before <head> (the whole file without one) are not all ASCII."""
    stripped = blank_spans(data, b"<!--", b"-->", lambda span: b" " * len(span))
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
        self.real_root, self.link_out = os.path.realpath(root), {}
        self.files, self.errors, self.external, self.dynamic = [], [], [], []
        pages = sorted(f for f in os.listdir(self.root) if f.endswith(".html") and os.path.isfile(self.path(f)))
        if "index.html" not in pages:
            self.errors.append("%s: no index.html (the Space's app_file)" % self.shown("index.html"))
        queue = collections.deque((p, "") for p in pages if not self.leaves_root(p, self.shown(p)))
        seen, listed = set(), set()
        while queue:
            rel, doc = queue.popleft()
            if (rel, doc) in seen:
                continue
            seen.add((rel, doc))
            if rel not in listed:
                listed.add(rel)
                self.files.append(rel)
            queue += self.visit(rel, doc)

    def path(self, rel):
        return os.path.join(self.root, *rel.split("/"))

    def shown(self, rel):
        p = os.path.relpath(self.path(rel))
        return self.path(rel) if p.startswith("..") else p

    def inside(self, rel):
        real = os.path.realpath(self.path(rel))
        return real == self.real_root or real.startswith(self.real_root + os.sep)

    def leaves_root(self, rel, what):
        """True, with an error naming the link, when a symbolic link takes rel out of the root."""
        if rel not in self.link_out:  # rel -> the first of its folders (or itself) that leads out, or None
            parts = rel.split("/")
            self.link_out[rel] = None if self.inside(rel) else next(
                p for p in ("/".join(parts[:k]) for k in range(1, len(parts) + 1)) if not self.inside(p))
        link = self.link_out[rel]
        if link:
            self.errors.append("%s: %s is a link to %s, outside the site root" % (
                what, self.shown(link), os.path.realpath(self.path(link))))
        return link is not None

    def visit(self, rel, doc):
        """The (file, document dir) pairs that rel refers to; problems go to self.errors."""
        ext = posixpath.splitext(rel)[1].lower()
        if ext not in (".html", ".htm", ".js", ".mjs", ".css"):
            return []
        try:
            with open(self.path(rel), "rb") as f:
                data = f.read()
        except OSError as e:
            self.errors.append("%s: cannot be read: %s" % (self.shown(rel), e.strerror or e))
            return []
        text, here = data.decode("utf-8", "replace"), posixpath.dirname(rel)
        starts = line_starts(text)
        try:
            if ext in (".html", ".htm"):
                problem = ascii_prologue_error(data, self.shown(rel))
                if problem:
                    self.errors.append(problem)
                refs, doc = html_refs(text), here
            else:
                refs = css_refs(text) if ext == ".css" else js_refs(text)
        except BadSource as e:
            self.errors.append("%s:%d:%d: %s" % ((self.shown(rel),) + position(starts, e.args[0]) + (e.args[1],)))
            return []
        out = []
        for offset, what, literal, base in sorted(refs):
            where = "%s:%d:%d" % ((self.shown(rel),) + position(starts, offset))
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
        return [f for f in found if not self.leaves_root(f, "%s: %s '%s'" % (where, what, spec))]


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
    # cross-origin isolation on the Space as tools/serve.py sends it (HF's custom_headers)
    front += "custom_headers:\n" + "".join("  %s: %s\n" % (k.lower(), v) for k, v in ISOLATION_HEADERS)
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
