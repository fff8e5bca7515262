#!/usr/bin/env bash
# test_install.sh - `make install` into a temporary prefix, then the library
# used from there the way a user would: the layout (headers, librlx.a,
# librlx.so.X.Y.Z with the librlx.so.0 and librlx.so links, rlx.pc),
# examples/c/classifier.c built with `pkg-config --cflags --libs rlx`
# (dynamically, and statically with --static) and run, the Python binding
# (python/rlx copied out of the repository) on the installed library through
# RLX_LIBRARY, pkg-config and ctypes.util.find_library, the Python package
# installed by pip into a venv (build/test-install-venv) with no index: from
# the repository (the wheel ships librlx.so), then from a copy of python/
# (it takes the installed library through pkg-config, and refuses to build
# without one), DESTDIR staging and `make uninstall`.  Needs
# build/librlx.{a,so} (make native) and python3-venv.  About a minute.
#   tests/cli/test_install.sh
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
MAKE=${MAKE:-make}
CC=${CC:-cc}
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

for tool in pkg-config readelf "$PYTHON"; do
  command -v $tool >/dev/null || { echo "test_install: $tool is not installed" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# ---- layout ------------------------------------------------------------------
if ! $MAKE --no-print-directory -s install PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAIL: make install PREFIX=$prefix"
  exit 1
fi
version=$(sed -n 's/^Version: *//p' "$prefix/lib/pkgconfig/rlx.pc")
major=${version%%.*}
[ -n "$version" ] || fail "rlx.pc has no Version"
for f in include/rlx.h include/rlx_models.h include/rlx_op_info.h include/rlx_ops.def lib/librlx.a "lib/librlx.so.$version" \
         lib/pkgconfig/rlx.pc; do
  [ -f "$prefix/$f" ] && [ ! -L "$prefix/$f" ] || fail "$f is not installed as a file"
done
[ "$(readlink "$prefix/lib/librlx.so.$major")" = "librlx.so.$version" ] || fail "librlx.so.$major -> librlx.so.$version"
[ "$(readlink "$prefix/lib/librlx.so")" = "librlx.so.$major" ] || fail "librlx.so -> librlx.so.$major"
# Every file a public header includes with "..." is installed next to it.
for h in "$prefix"/include/*.h; do
  for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\(.*\)".*/\1/p' "$h"); do
    [ -f "$prefix/include/$inc" ] || fail "$(basename "$h") includes $inc, which is not installed"
  done
done
soname=$(readelf -d "$prefix/lib/librlx.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "librlx.so.$major" ] || fail "soname is '$soname', not librlx.so.$major"
[ "$(find "$prefix/lib" -type f -o -type l | wc -l)" -eq 5 ] || fail "unexpected files: $(cd "$prefix" && find lib -type f -o -type l)"
[ -z "$(find "$prefix" -mindepth 1 -maxdepth 1 ! -name include ! -name lib)" ] || fail "files outside include/ and lib/"
ok "layout under PREFIX (version $version)"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
unset PKG_CONFIG_LIBDIR
pc_cflags=$(pkg-config --cflags rlx) && pc_libs=$(pkg-config --libs rlx) || fail "pkg-config rlx"
pc_libs=$(echo $pc_libs)  # pkg-config leaves a trailing space
[ "$pc_libs" = "-L$prefix/lib -lrlx" ] || fail "pkg-config --libs rlx: '$pc_libs'"
pkg-config --static --libs rlx | grep -q -- '-lz' || fail "pkg-config --static --libs rlx lacks -lz"

# ---- C: the headers alone, then the classifier ---------------------------------
printf '#include <rlx_models.h>\nint main(void) { return rlx_vision_count() > 0 ? 0 : 1; }\n' > "$tmp/hdr.c"
$CC -std=c11 -Wall -Wextra -Werror $pc_cflags -o "$tmp/hdr" "$tmp/hdr.c" $pc_libs \
  && LD_LIBRARY_PATH=$prefix/lib "$tmp/hdr" || fail "a program including <rlx_models.h> builds and runs"

# Dynamic: only the installed headers and library (no -Iinclude, no build/).
if $CC -std=c11 -O2 $pc_cflags -o "$tmp/classifier" examples/c/classifier.c $pc_libs -lm 2>"$tmp/cc.err"; then
  readelf -d "$tmp/classifier" | grep -q "Shared library: \[librlx.so.$major\]" \
    || fail "the classifier does not need librlx.so.$major"
  LD_LIBRARY_PATH=$prefix/lib ldd "$tmp/classifier" | grep -q "librlx.so.$major => $prefix/lib/" \
    || fail "the classifier does not load librlx from $prefix/lib"
  if LD_LIBRARY_PATH=$prefix/lib "$tmp/classifier" --synthetic >"$tmp/c.out" 2>&1; then
    ok "examples/c/classifier.c with pkg-config --cflags --libs rlx: $(grep -m1 -i 'first loss' "$tmp/c.out" || tail -1 "$tmp/c.out")"
  else
    cat "$tmp/c.out"; fail "the classifier linked to the installed librlx.so failed"
  fi
else
  cat "$tmp/cc.err"; fail "examples/c/classifier.c does not build against the installed library"
fi
# Static: librlx.a and the private libs of rlx.pc.
static_libs=$(pkg-config --static --libs rlx | sed 's/-lrlx\b/-l:librlx.a/')
if $CC -std=c11 -O2 $pc_cflags -o "$tmp/classifier_static" examples/c/classifier.c $static_libs 2>"$tmp/cc.err"; then
  readelf -d "$tmp/classifier_static" | grep -q 'librlx' && fail "the static classifier still needs librlx.so"
  "$tmp/classifier_static" --synthetic --steps 30 >"$tmp/cs.out" 2>&1 || { cat "$tmp/cs.out"; fail "the static classifier failed"; }
  ok "examples/c/classifier.c with librlx.a (pkg-config --static)"
else
  cat "$tmp/cc.err"; fail "examples/c/classifier.c does not build against the installed librlx.a"
fi

# ---- Python: the package outside the repository, the installed library ----------
mkdir -p "$tmp/py"
cp -r python/rlx "$tmp/py/rlx"
rm -rf "$tmp/py/rlx/__pycache__"
where='import re, rlx
from rlx import _native
g = rlx.Graph(); x = g.input("x", (2, 3)); s = g.compile((x * 2.0).relu())
s.set_input("x", [-1, 0, 1, 2, 3, 4]); s.run()
maps = open("/proc/self/maps").read()
print("path", _native.library_path())
print("loaded", sorted(set(re.findall(r"(/\S*librlx\S*)", maps))))
print("version", rlx.version())
assert list(s.output(0)) == [0, 0, 2, 4, 6, 8], list(s.output(0))'
# check_python DESCRIPTION PYTHON LIBRARY ENV...: the snippet above, run in
# $tmp with ENV (and no RLX_LIBRARY, PKG_CONFIG_PATH unless ENV sets them),
# loads LIBRARY and nothing else.
check_python() {
  local desc=$1 python=$2 want=$3
  shift 3
  if (cd "$tmp" && env -u RLX_LIBRARY -u PKG_CONFIG_PATH "$@" "$python" -c "$where") >"$tmp/py.out" 2>&1 \
     && grep -q "^loaded \['$want'\]" "$tmp/py.out"; then
    ok "$desc ($(grep '^path' "$tmp/py.out"))"
  else
    cat "$tmp/py.out"; fail "$desc: want $want loaded"
  fi
}
installed=$prefix/lib/librlx.so.$version
check_python "python/rlx through RLX_LIBRARY" "$PYTHON" "$installed" PYTHONPATH="$tmp/py" RLX_LIBRARY="$prefix/lib/librlx.so"
check_python "python/rlx through pkg-config" "$PYTHON" "$installed" PYTHONPATH="$tmp/py" PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
check_python "python/rlx through ctypes.util.find_library (LD_LIBRARY_PATH)" "$PYTHON" "$installed" PYTHONPATH="$tmp/py" \
  LD_LIBRARY_PATH="$prefix/lib"
# No library anywhere: the error lists where it looked.
(cd "$tmp" && env -u RLX_LIBRARY -u PKG_CONFIG_PATH PYTHONPATH="$tmp/py" "$PYTHON" -c "$where") >"$tmp/py.out" 2>&1
for pattern in 'RlxLibraryError: the RLX library \(librlx.so\) was not found; looked at:' '^  \$RLX_LIBRARY: not set' \
  "^  $tmp/py/rlx/librlx.so \(inside the package\): not there" "^  the repository's build/: the package is not in" \
  '^  pkg-config --variable=libdir rlx: no rlx.pc' '^  ctypes.util.find_library\("rlx"\).*: not found' 'set RLX_LIBRARY'; do
  grep -qE -- "$pattern" "$tmp/py.out" || fail "python/rlx without a library: no /$pattern/ in: $(cat "$tmp/py.out")"
done

# ---- Python: pip install into a venv, with no index ------------------------------
venv=$ROOT/build/test-install-venv
# pip_install SOURCE ENV...: pip install --no-index SOURCE into the venv, run in
# $tmp with ENV (and no RLX_LIBRARY, PKG_CONFIG_PATH unless ENV sets them).
pip_install() {
  local src=$1
  shift
  (cd "$tmp" && env -u RLX_LIBRARY -u PKG_CONFIG_PATH "$@" timeout 300 "$venv/bin/python" -m pip \
     --disable-pip-version-check --no-cache-dir install --no-index --force-reinstall "$src") >"$tmp/pip.log" 2>&1
}
# From the repository: the wheel ships build/librlx.so; the package, outside
# the repository, loads that copy and runs the worked example, and
# RLX_LIBRARY still overrides the copy.
if ! timeout 300 "$PYTHON" -m venv --clear "$venv" >"$tmp/venv.log" 2>&1; then
  cat "$tmp/venv.log"; fail "$PYTHON -m venv (on Debian it needs python3-venv: make setup)"
elif ! pip_install "$ROOT/python"; then
  cat "$tmp/pip.log"; fail "pip install --no-index ./python"
else
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
  grep -qE "rlx-$version-py3-none-[a-z]+_[a-z0-9_]+\.whl" "$tmp/pip.log" \
    || fail "pip install ./python: no platform wheel rlx-$version-py3-none-<platform>.whl: $(grep -i whl "$tmp/pip.log")"
  check_python "pip install ./python: the wheel's librlx.so" "$venv/bin/python" "$site/rlx/librlx.so"
  check_python "pip install ./python, RLX_LIBRARY over the wheel's copy" "$venv/bin/python" "$installed" \
    RLX_LIBRARY="$prefix/lib/librlx.so"
  if (cd "$tmp" && env -u RLX_LIBRARY -u PYTHONPATH "$venv/bin/python" "$ROOT/examples/python/classifier.py" --synthetic \
        --steps 20) >"$tmp/pyc.out" 2>&1; then
    ok "examples/python/classifier.py on the installed package"
  else
    cat "$tmp/pyc.out"; fail "examples/python/classifier.py on the installed package"
  fi

  # From a copy of python/ outside the repository: with no library installed
  # the build stops and says where it looked; with one (pkg-config), a pure
  # wheel that loads it.
  cp -r python "$tmp/pysrc"
  find "$tmp/pysrc" -name __pycache__ -prune -exec rm -rf {} +
  if pip_install "$tmp/pysrc"; then
    fail "pip install of python/ outside the repository succeeded with no library installed"
  elif ! grep -q "outside the RLX repository" "$tmp/pip.log" || ! grep -q "set RLX_LIBRARY" "$tmp/pip.log"; then
    fail "pip install of python/ outside the repository, no library: no clear message: $(tail -20 "$tmp/pip.log")"
  fi
  if pip_install "$tmp/pysrc" PKG_CONFIG_PATH="$prefix/lib/pkgconfig"; then
    grep -q "rlx-$version-py3-none-any.whl" "$tmp/pip.log" || fail "python/ outside the repository: not a pure wheel"
    [ -e "$site/rlx/librlx.so" ] && fail "python/ outside the repository: the wheel ships a library"
    check_python "pip install of python/ outside the repository: the installed library through pkg-config" \
      "$venv/bin/python" "$installed" PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  else
    cat "$tmp/pip.log"; fail "pip install of python/ outside the repository with PKG_CONFIG_PATH"
  fi
fi

# ---- DESTDIR staging and uninstall ------------------------------------------------
stage=$tmp/stage
if $MAKE --no-print-directory -s install DESTDIR="$stage" PREFIX=/opt/rlx >"$tmp/install.log" 2>&1; then
  [ -f "$stage/opt/rlx/lib/librlx.so.$version" ] && [ -f "$stage/opt/rlx/include/rlx.h" ] \
    || fail "DESTDIR: files not under $stage/opt/rlx"
  grep -qx 'prefix=/opt/rlx' "$stage/opt/rlx/lib/pkgconfig/rlx.pc" || fail "DESTDIR: rlx.pc does not say prefix=/opt/rlx"
  $MAKE --no-print-directory -s uninstall DESTDIR="$stage" PREFIX=/opt/rlx >/dev/null 2>&1 || fail "make uninstall"
  left=$(find "$stage" -type f -o -type l)
  [ -z "$left" ] || fail "make uninstall left: $left"
  ok "DESTDIR=$stage PREFIX=/opt/rlx, then uninstall"
else
  cat "$tmp/install.log"; fail "make install DESTDIR=$stage PREFIX=/opt/rlx"
fi

if [ $failures -ne 0 ]; then
  echo "test_install: $failures failure(s)"
  exit 1
fi
echo "test_install: all passed"
