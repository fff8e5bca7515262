"""test_symbols.py - build/librlx.so exports exactly the public API.

The dynamic symbol table (nm -D --defined-only) must list the functions
declared in the public headers (the Makefile's PUBLIC_HDRS, as extracted by tools/export_list.sh, which also
writes the linker version script) and nothing else: no internal helper
(fuse_replace, rlx_cpu_*, ...) and no missing public name.  Every function the Python binding declares
(python/rlx/_native.py) or the tests and examples call through it must be
public.  The soname is librlx.so.<major>.

Run: make test-python   (or PYTHONPATH=python python3 -m unittest tests/python/test_symbols.py)
"""

import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from rlx import _native  # noqa: E402

def public_headers():
    """The Makefile's PUBLIC_HDRS (the one list of public headers)."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "print-public-hdrs"],
                         capture_output=True, text=True, check=True, timeout=60)
    return [os.path.join(ROOT, h) for h in out.stdout.split()]


LIBRARY = os.path.join(ROOT, "build", "librlx.so")


def public_names():
    out = subprocess.run(["sh", os.path.join(ROOT, "tools", "export_list.sh"), "--names"] + public_headers(),
                         capture_output=True, text=True, check=True, timeout=60)
    return set(out.stdout.split())


def exported_names(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True,
                         timeout=60)
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            names.add(parts[2].split("@")[0])
    return names


@unittest.skipUnless(shutil.which("nm"), "nm (binutils) is not installed")
@unittest.skipUnless(os.path.exists(LIBRARY), "build/librlx.so is not built (make native)")
class ExportedSymbols(unittest.TestCase):
    def test_export_list_finds_the_declarations(self):
        names = public_names()
        # A few declarations of each kind: first and last of rlx.h, rlx_models.h,
        # a multi-line one, and none of the typedefs, enum values or macros.
        for n in ("rlx_last_error", "rlx_session_param_len", "rlx_attention", "rlx_compile_train",
                  "rlx_vision_count", "rlx_models_clear_cache", "rlx_set_allocator"):
            self.assertIn(n, names)
        for n in ("rlx_alloc_fn", "rlx_status", "rlx_graph", "RLX_OK", "RLX_OP", "rlx_mlp"):
            self.assertNotIn(n, names)
        self.assertTrue(all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names), names)

    def test_exports_are_the_public_names(self):
        public, exported = public_names(), exported_names(LIBRARY)
        missing, extra = sorted(public - exported), sorted(exported - public)
        self.assertEqual(missing, [], "declared in the public headers but not exported by build/librlx.so "
                         "(not defined in the library?): %s" % missing)
        self.assertEqual(extra, [], "exported by build/librlx.so but not declared in a public header "
                         "(%d): %s" % (len(extra), extra[:40]))

    def test_soname(self):
        if not shutil.which("readelf"):
            self.skipTest("readelf is not installed")
        out = subprocess.run(["readelf", "-d", LIBRARY], capture_output=True, text=True, check=True, timeout=60)
        m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out.stdout)
        self.assertIsNotNone(m, out.stdout)
        version = _native.lib().rlx_version().decode()
        self.assertEqual(m.group(1), "librlx.so.%s" % version.split(".")[0])

    def test_binding_uses_only_public_names(self):
        public = public_names()
        used = set(_native._SIGNATURES)
        # Calls through the loaded library in the binding, the tests and the
        # examples (lib().rlx_x, L.rlx_x, handle.rlx_x ...).
        pattern = re.compile(r"\.\s*(rlx_[a-z0-9_]+)\s*[.(]")
        for d in ("python/rlx", "tests/python", "examples/python"):
            for name in sorted(os.listdir(os.path.join(ROOT, d))):
                if name.endswith(".py") and name != "test_symbols.py":
                    with open(os.path.join(ROOT, d, name), encoding="utf-8") as f:
                        used.update(pattern.findall(f.read()))
        self.assertEqual(sorted(used - public), [], "used by the Python binding but not public")


if __name__ == "__main__":
    unittest.main()
