"""_locate.py - where the rlx package looks for the native library
(librlx.so), in this order:

  1. $RLX_LIBRARY, a path (when set, nothing else is tried);
  2. librlx.so inside the package (a wheel built in the repository ships it);
  3. the repository's build/librlx.so, when the package is imported from the
     repository's python/ directory (`make native` builds it);
  4. LIBDIR/librlx.so, LIBDIR from `pkg-config --variable=libdir rlx` (the
     rlx.pc that `make install` writes);
  5. the dynamic loader's search path: ctypes.util.find_library("rlx")
     (LD_LIBRARY_PATH, the ld.so cache).

The in-tree build comes before an installed library because in the
repository the two may differ and the package's sources match the build.
Standard library only and no relative imports: python/build_backend.py
loads this file on its own.
"""

import ctypes.util
import glob
import os
import subprocess

NAME = "librlx.so"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


def package_library():
    return os.path.join(HERE, NAME)


def repository_library():
    """build/librlx.so of the repository holding this package, or None when
    the package is not in one."""
    if all(os.path.isfile(os.path.join(REPO, f)) for f in ("Makefile", "include/rlx.h")):
        return os.path.join(REPO, "build", NAME)
    return None


def pkg_config_library():
    """(path or None, why not)."""
    cmd = ["pkg-config", "--variable=libdir", "rlx"]
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "%s: pkg-config did not run (%s)" % (" ".join(cmd), e)
    libdir = out.stdout.strip()
    if out.returncode != 0 or not libdir:
        where = os.environ.get("PKG_CONFIG_PATH")
        return None, "%s: no rlx.pc%s" % (" ".join(cmd), " (PKG_CONFIG_PATH=%s)" % where if where else "")
    for path in [os.path.join(libdir, NAME)] + sorted(glob.glob(os.path.join(libdir, NAME + ".[0-9]*"))):
        if os.path.exists(path):
            return path, None
    return None, "%s: %s has no %s" % (" ".join(cmd), libdir, NAME)


def find(package=True):
    """(what to load, the places tried: a line each).  What to load is a
    path, a bare name the loader resolves (from find_library), or None.
    package=False skips the copy inside the package."""
    tried = []
    env = os.environ.get("RLX_LIBRARY")
    if env:
        return env, ["$RLX_LIBRARY=%s" % env]
    tried.append("$RLX_LIBRARY: not set")
    if package:
        path = package_library()
        if os.path.exists(path):
            return path, tried
        tried.append("%s (inside the package): not there" % path)
    path = repository_library()
    if path and os.path.exists(path):
        return path, tried
    tried.append("%s (the repository's build): not built, run `make native`" % path if path
                 else "the repository's build/: the package is not in the RLX repository")
    path, why = pkg_config_library()
    if path:
        return path, tried
    tried.append(why)
    name = ctypes.util.find_library("rlx")
    if name:
        return name, tried
    tried.append('ctypes.util.find_library("rlx") (LD_LIBRARY_PATH, the ld.so cache): not found')
    return None, tried
