#!/usr/bin/env python3
"""gen_constants.py - writes the library's enum constants for JS and Python
from the C sources, so that neither keeps a copy by hand:

  * the enums of include/rlx.h: rlx_status (STATUS, keys without RLX_ /
    RLX_ERR_: OK, INVALID_ARG, ...), rlx_dtype (DTYPE: f32, i32),
    rlx_mask_kind (MASK: none, causal, ...), rlx_device (DEVICE: cpu,
    webgpu, webgl) and rlx_optimizer_kind (OPTIMIZER: sgd, momentum, ...),
    members in header order;
  * the status names of rlx_status_name (src/core/core.c): STATUS_NAME,
    code -> name ("invalid argument", ...);
  * from include/rlx_llm_train.h: rlx_llm_data_format (DATA_FORMAT: auto,
    text, jsonl), rlx_llm_finetune_plan (FINETUNE_PLAN: loss, step, grads), the split numbers RLX_LLM_DATA_TRAIN / _VALID
    (DATA_SPLIT: train, valid) and rlx finetune's run defaults
    RLX_LLM_FINETUNE_RUN_* (FINETUNE_RUN: batch, lr, seed).

Outputs: an ES module of frozen objects (web/runtime/constants.js) and a
Python module of read-only mappings, plus the status codes as module
constants (python/rlx/_constants.py).  Both are build outputs (`make`
writes them; gitignored); tests/node/constants.test.mjs checks them against
the header and that no other file copies them.  Standard library only.

  python3 tools/gen_constants.py [--root DIR] [--js FILE] [--py FILE]
"""
import argparse
import json
import os
import re
import sys

HEADER = "include/rlx.h"
TRAIN_HEADER = "include/rlx_llm_train.h"
STATUS_SOURCE = "src/core/core.c"
# export name: (C enum, prefix taken off its members, keys in lower case)
EXPORTS = {
    "STATUS": ("rlx_status", r"RLX_(?:ERR_)?", False),
    "DTYPE": ("rlx_dtype", r"RLX_", True),
    "MASK": ("rlx_mask_kind", r"RLX_MASK_", True),
    "DEVICE": ("rlx_device", r"RLX_DEVICE_", True),
    "OPTIMIZER": ("rlx_optimizer_kind", r"RLX_OPT_", True),
    "DATA_FORMAT": ("rlx_llm_data_format", r"RLX_LLM_DATA_", True),
    "FINETUNE_PLAN": ("rlx_llm_finetune_plan", r"RLX_LLM_PLAN_", True),
}
# export name: (header, the #define names with the key as group 1); keys in
# lower case, values integer or floating literals
DEFINES = {
    "DATA_SPLIT": (TRAIN_HEADER, r"RLX_LLM_DATA_(TRAIN|VALID)"),
    "FINETUNE_RUN": (TRAIN_HEADER, r"RLX_LLM_FINETUNE_RUN_(\w+)"),
}
DOCS = {
    "STATUS": "rlx_status: 0 is OK, errors are negative",
    "STATUS_NAME": "rlx_status_name of each status code",
    "DTYPE": "rlx_dtype",
    "MASK": "rlx_mask_kind of rlx_attention",
    "DEVICE": "rlx_device of rlx_compile_options",
    "OPTIMIZER": "rlx_optimizer_kind of rlx_optimizer",
    "DATA_FORMAT": "rlx_llm_data_format of rlx_llm_data_source",
    "FINETUNE_PLAN": "rlx_llm_finetune_plan: what rlx_llm_finetune_compile's plan computes",
    "DATA_SPLIT": "the splits of rlx_llm_data_count / rlx_llm_data_windows",
    "FINETUNE_RUN": "rlx finetune's run defaults beside the options' (RLX_LLM_FINETUNE_RUN_*)",
}


class GenError(Exception):
    pass


def strip_comments(text):
    return re.sub(r"//[^\n]*", " ", re.sub(r"/\*.*?\*/", " ", text, flags=re.S))


def enums(path, text):
    """{C enum name: [(member, value)]} of every `typedef enum { ... } name;`
    whose members are plain (values implicit or integer literals)."""
    found = {}
    for m in re.finditer(r"typedef\s+enum\s*\{([^}]*)\}\s*(\w+)\s*;", strip_comments(text)):
        body, name = m.group(1), m.group(2)
        if "#" in body:  # members generated from a table (rlx_op)
            continue
        members, following = [], 0
        for item in (s.strip() for s in body.split(",")):
            if not item:
                continue
            mm = re.fullmatch(r"(\w+)\s*(?:=\s*(-?\d+))?", item)
            if not mm:
                raise GenError("%s: %s: cannot read the member '%s' (want NAME or NAME = integer)" % (path, name, item))
            value = following if mm.group(2) is None else int(mm.group(2))
            members.append((mm.group(1), value))
            following = value + 1
        found[name] = members
    return found


def number(text):
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def defines(sources):
    """{export name: [(key, value)]} of DEFINES."""
    out = {}
    for name, (path, pattern) in DEFINES.items():
        text = strip_comments(sources[path])
        pairs = [(m.group(1).lower(), number(m.group(2))) for m in
                 re.finditer(r"^\s*#define\s+%s\s+(-?[\d.]+(?:[eE][-+]?\d+)?)\s*$" % pattern, text, re.M)]
        if len(pairs) < 2:
            raise GenError("%s: fewer than two #define %s" % (path, pattern))
        out[name] = pairs
    return out


def exports(sources):
    """{export name: [(key, value)]}, STATUS_NAME as [(code, name)]."""
    found = {}
    for path in (HEADER, TRAIN_HEADER):
        found.update(enums(path, sources[path]))
    header_path = "%s or %s" % (HEADER, TRAIN_HEADER)
    core_path, core = STATUS_SOURCE, sources[STATUS_SOURCE]
    out = {}
    for name, (c_enum, prefix, lower) in EXPORTS.items():
        if c_enum not in found:
            raise GenError("%s: no `typedef enum { ... } %s;`" % (header_path, c_enum))
        pairs = []
        for member, value in found[c_enum]:
            mm = re.match(prefix, member)
            if not mm:
                raise GenError("%s: %s member %s does not start with %s" % (header_path, c_enum, member, prefix))
            key = member[mm.end():]
            pairs.append((key.lower() if lower else key, value))
        if len({k for k, _ in pairs}) != len(pairs) or len({v for _, v in pairs}) != len(pairs):
            raise GenError("%s: %s has a repeated member or value: %s" % (header_path, c_enum, pairs))
        out[name] = pairs
    fn = re.search(r"const char \*rlx_status_name\(rlx_status \w+\)\s*\{(.*?)\n\}", core, re.S)
    if not fn:
        raise GenError("%s: no definition of rlx_status_name" % core_path)
    codes = dict(found["rlx_status"])
    names = {}
    for member, text in re.findall(r'case\s+(\w+)\s*:\s*return\s+"([^"\\]*)"', fn.group(1)):
        if member not in codes:
            raise GenError("%s: rlx_status_name names %s, which rlx_status lacks" % (core_path, member))
        names[codes[member]] = text
    unnamed = [m for m, v in found["rlx_status"] if v not in names]
    if unnamed:
        raise GenError("%s: rlx_status_name has no case for %s" % (core_path, ", ".join(unnamed)))
    out["STATUS_NAME"] = [(v, names[v]) for _, v in found["rlx_status"]]
    out.update(defines(sources))
    return out


BANNER = ("generated by tools/gen_constants.py (make) from %s, %s and rlx_status_name (%s); do not edit"
          % (HEADER, TRAIN_HEADER, STATUS_SOURCE))


def js_module(tables):
    lines = ["// constants.js - the library's enum values, " + BANNER + ".", ""]
    for name, pairs in tables.items():
        body = ", ".join("%s: %s" % (json.dumps(str(k)) if name == "STATUS_NAME" else k, json.dumps(v))
                         for k, v in pairs)
        lines += ["/** %s. */" % DOCS[name], "export const %s = Object.freeze({ %s });" % (name, body)]
    return "\n".join(lines) + "\n"


def py_module(tables):
    lines = ['"""_constants.py - the library\'s enum values, %s."""' % BANNER, "",
             "from types import MappingProxyType as _frozen", ""]
    for name, pairs in tables.items():
        body = ", ".join("%r: %r" % (k, v) for k, v in pairs)
        lines += ["# %s." % DOCS[name], "%s = _frozen({%s})" % (name, body)]
    lines += ["", "# The status codes by name (rlx.errors re-exports them)."]
    lines += ["%s = %d" % (k, v) for k, v in tables["STATUS"]]
    return "\n".join(lines) + "\n"


def write(path, text):
    """Writes text to path unless it already holds it (through a temporary
    file, so no reader sees half of it)."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the repository (default: the one holding this script)")
    ap.add_argument("--js", help="the ES module to write (e.g. web/runtime/constants.js)")
    ap.add_argument("--py", help="the Python module to write (e.g. python/rlx/_constants.py)")
    args = ap.parse_args(argv)
    if not args.js and not args.py:
        ap.error("give --js FILE and/or --py FILE")
    sources = {}
    for rel in (HEADER, TRAIN_HEADER, STATUS_SOURCE):
        path = os.path.join(args.root, rel)
        try:
            with open(path, encoding="utf-8") as f:
                sources[rel] = f.read()
        except OSError as e:
            raise GenError("cannot read %s: %s" % (path, e.strerror)) from None
    tables = exports(sources)
    if args.js:
        write(args.js, js_module(tables))
    if args.py:
        write(args.py, py_module(tables))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except GenError as e:
        sys.exit("gen_constants.py: %s" % e)
