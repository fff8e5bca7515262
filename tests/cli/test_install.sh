#!/usr/bin/env bash
# test_install.sh - `make install` into a temporary prefix, then the library
# used from there the way a user would: the layout (headers, librlx.a,
# librlx.so.X.Y.Z with the librlx.so.0 and librlx.so links, rlx.pc),
# examples/c/classifier.c built with `pkg-config --cflags --libs rlx`
# (dynamically, and statically with --static) and run, the Python binding
# (python/rlx copied out of the repository) on the installed library through
# RLX_LIBRARY and through ctypes.util.find_library, DESTDIR staging and
# `make uninstall`.  Needs build/librlx.{a,so} (make native).  About 20 s.
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

for tool in pkg-config readelf; do
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
check_python() { # DESCRIPTION ENV...: the snippet above loads librlx from $prefix/lib
  local desc=$1
  shift
  if env -u RLX_LIBRARY "$@" PYTHONPATH="$tmp/py" "$PYTHON" -c "$where" >"$tmp/py.out" 2>&1 \
     && grep -q "^loaded \['$prefix/lib/librlx.so.$version'\]" "$tmp/py.out"; then
    ok "python/rlx $desc ($(grep '^path' "$tmp/py.out"))"
  else
    cat "$tmp/py.out"; fail "python/rlx $desc"
  fi
}
check_python "through RLX_LIBRARY" RLX_LIBRARY="$prefix/lib/librlx.so"
check_python "through ctypes.util.find_library (LD_LIBRARY_PATH)" LD_LIBRARY_PATH="$prefix/lib"
# The worked example on the installed library.
if (cd "$tmp" && RLX_LIBRARY="$prefix/lib/librlx.so" PYTHONPATH="$tmp/py" "$PYTHON" "$ROOT/examples/python/classifier.py" \
      --synthetic) >"$tmp/pyc.out" 2>&1; then
  ok "examples/python/classifier.py on the installed library"
else
  cat "$tmp/pyc.out"; fail "examples/python/classifier.py on the installed library"
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
