"""build_backend.py - the PEP 517 build backend of the rlx package, in the
standard library only, so `pip install ./python` needs no download (its
isolated build environment installs nothing: pyproject.toml requires []).

Where the native library comes from:
  * inside the repository (../Makefile and ../include/rlx.h next to this
    directory): `make -C <repository> build/librlx.so`, and the wheel ships
    that library as rlx/librlx.so (a platform wheel, py3-none-<platform>);
  * elsewhere (a copy of python/, or the sdist): an installed library, found
    as the package finds it at import (rlx/_native.py): $RLX_LIBRARY, else
    `pkg-config --variable=libdir rlx` (rlx.pc, written by `make install`).
    The wheel is then pure Python (py3-none-any) and loads that library.
The package's version is the library's own (rlx_version()).

Hooks: build_wheel, build_sdist, build_editable (PEP 660: a .pth naming
this directory; the library stays in the repository's build/), and
prepare_metadata_for_build_{wheel,editable}.
"""

import base64
import ctypes
import hashlib
import importlib.util
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PACKAGE = "rlx"
LIBRARY = "librlx.so"  # its name inside the package; rlx/_native.py looks for it there


def _in_repository():
    return all(os.path.isfile(os.path.join(REPO, f)) for f in ("Makefile", "include/rlx.h"))


def _project():
    """The [project] table of pyproject.toml (tomllib, else the simple
    `key = "string"` lines this file uses)."""
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    except ImportError:
        pass
    project, section = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*\[(.*)\]\s*$", line)
            if m:
                section = m.group(1).strip()
                continue
            m = re.match(r'\s*([\w-]+)\s*=\s*"(.*)"\s*$', line)
            if section == "project" and m:
                project[m.group(1)] = m.group(2)
    return project


# ---- the native library ---------------------------------------------------------
def _make_library():
    """Builds the repository's build/librlx.so; returns its path."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    cmd = ["make", "-C", REPO, "--no-print-directory", "build/librlx.so"]
    try:
        out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise RuntimeError("rlx: building the native library needs make (%s): %s" % (" ".join(cmd), e)) from None
    if out.returncode != 0:
        raise RuntimeError("rlx: `%s` failed (exit %d):\n%s" % (" ".join(cmd), out.returncode, out.stdout[-4000:]))
    return os.path.join(REPO, "build", "librlx.so")


def _installed_library():
    """The installed library the wheel will load, found as the package finds
    it (rlx/_locate.py, loaded on its own).  Raises, saying where it looked,
    when there is none."""
    spec = importlib.util.spec_from_file_location("_rlx_locate", os.path.join(HERE, PACKAGE, "_locate.py"))
    locate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(locate)
    found, tried = locate.find(package=False)
    if found and (os.sep not in found or os.path.exists(found)):
        return found
    raise RuntimeError("rlx: this copy of python/ is outside the RLX repository, so it cannot build the native "
                       "library, and no installed one was found; looked at:\n  " + "\n  ".join(tried) +
                       ("" if found is None else " (which does not exist)") +
                       "\nInstall the library (`make install` in the repository writes rlx.pc for pkg-config), "
                       "set RLX_LIBRARY to the path of librlx.so, or run pip on the repository's python/.")


def _library():
    """(path of the library, 1 if the wheel ships it)."""
    if _in_repository():
        return _make_library(), 1
    return _installed_library(), 0


def _version(library):
    try:
        handle = ctypes.CDLL(library)
    except OSError as e:
        raise RuntimeError("rlx: the native library %s does not load: %s" % (library, e)) from None
    handle.rlx_version.restype = ctypes.c_char_p
    version = handle.rlx_version().decode()
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", version):
        raise RuntimeError("rlx: %s reports version '%s', not a release number" % (library, version))
    return version


# ---- metadata and wheels ------------------------------------------------------------
def _metadata(version):
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % version]
    if p.get("description"):
        lines.append("Summary: %s" % p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    return "\n".join(lines) + "\n"


def _tag(ships_library):
    if not ships_library:
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[^A-Za-z0-9_]", "_", sysconfig.get_platform())


def _wheel_file(tag):
    return ("Wheel-Version: 1.0\nGenerator: rlx build_backend\nRoot-Is-Purelib: %s\nTag: %s\n"
            % ("true" if tag.endswith("-any") else "false", tag))


def _dist_info(version):
    return "%s-%s.dist-info" % (PACKAGE, version)


def _package_files():
    """(path in the wheel, path on disk) of every source file of the package."""
    root = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            yield "%s/%s" % (PACKAGE, name), os.path.join(root, name)


def _write_wheel(directory, version, tag, files):
    """files: (path in the wheel, bytes).  Writes the wheel with its
    dist-info (METADATA, WHEEL, RECORD); returns its file name."""
    info = _dist_info(version)
    files = list(files) + [("%s/METADATA" % info, _metadata(version).encode()),
                           ("%s/WHEEL" % info, _wheel_file(tag).encode())]
    record = io.StringIO()
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write("%s,sha256=%s,%d\n" % (path, digest, len(data)))
    record.write("%s/RECORD,,\n" % info)
    files.append(("%s/RECORD" % info, record.getvalue().encode()))
    name = "%s-%s-%s.whl" % (PACKAGE, version, tag)
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _prepare_metadata(directory, ships_library, version):
    info = os.path.join(directory, _dist_info(version))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(version))
    with open(os.path.join(info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file(_tag(ships_library)))
    return _dist_info(version)


# ---- PEP 517 hooks ---------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    library, ships = _library()
    return _prepare_metadata(metadata_directory, ships, _version(library))


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    library = _make_library() if _in_repository() else _installed_library()
    return _prepare_metadata(metadata_directory, 0, _version(library))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    library, ships = _library()
    files = [(arc, _read(path)) for arc, path in _package_files()]
    if ships:
        files.append(("%s/%s" % (PACKAGE, LIBRARY), _read(library)))
    return _write_wheel(wheel_directory, _version(library), _tag(ships), files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding rlx.pth, which puts this directory on sys.path: the
    package is imported from here and finds the library as in-tree use does
    (the repository's build/, rebuilt here)."""
    library = _make_library() if _in_repository() else _installed_library()
    return _write_wheel(wheel_directory, _version(library), _tag(0), [("%s.pth" % PACKAGE, (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    """python/ as rlx-VERSION.tar.gz: pyproject.toml, this backend, the
    package and PKG-INFO.  A wheel built from it takes an installed library."""
    library, _ = _library()
    version = _version(library)
    base = "%s-%s" % (PACKAGE, version)
    name = base + ".tar.gz"
    members = [("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
               ("build_backend.py", os.path.join(HERE, "build_backend.py"))] + list(_package_files())
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(arc, data):
            entry = tarfile.TarInfo("%s/%s" % (base, arc))
            entry.size, entry.mode, entry.mtime = len(data), 0o644, 0
            tar.addfile(entry, io.BytesIO(data))
        for arc, path in members:
            add(arc, _read(path))
        add("PKG-INFO", _metadata(version).encode())
    return name


if __name__ == "__main__":
    # python3 build_backend.py DIR: builds a wheel into DIR (what pip does through the hooks).
    print(build_wheel(sys.argv[1] if len(sys.argv) > 1 else "."))
