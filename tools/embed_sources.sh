#!/bin/sh
# embed_sources.sh - writes a C file embedding text files (shader sources)
# with a lookup by name:
#   const char *FUNC(const char *name)   (NULL when unknown)
# where name is the file name without its directory and last extension
# ("glsl/binary.frag" -> "binary").  POSIX sh and utilities (awk, od, sed;
# gzip with --gzip).
#
# A line `//!include NAME.EXT` is replaced by the contents of NAME.EXT from
# the including file's directory (includes nest; a cycle or a missing file
# is an error).  Files whose name starts with `_` are include-only: they are
# not embedded on their own.
#
#   tools/embed_sources.sh [--gzip HEADER] [--consts SUBOPS OPS STYLE] [TWINS] OUT.c FUNC FILE...
#
# --consts SUBOPS OPS STYLE: the sub-op codes (as src/core/subops.h makes
# them).  OPS is the op table (include/rlx_ops.def, rows
# `RLX_OP(ID, name, min_inputs, max_inputs, shape_rule, attrs)`): an op of
# shape rule binary, unary or grad_pointwise has NAME = ID and the code of
# its index among the rows with that rule, in file order.  SUBOPS is the
# table of the other sub-ops (include/rlx_subops.def, rows
# `RLX_SUBOP(FAMILY, NAME, name, code)`).  Every text naming OP_<NAME> gets
# that code as a constant in front, op rows first, then SUBOPS rows, each in
# file order: STYLE wgsl `const OP_<NAME>: u32 = <code>u;`, STYLE glsl
# `#define OP_<NAME> <code>` (after a first `#version` line).  An OP_<NAME>
# in neither table, or a NAME in both, is an error.
#
# --gzip HEADER: the texts are stored as one gzip member (gzip -9 -n), packed
# at build time and unpacked on the first lookup into a static buffer by
# rlx_gunzip (HEADER, src/core/inflate.h, a path relative to OUT.c).  The
# first lookup is not thread-safe (the library runs single-threaded).
#
# TWINS is --twins HEADER ARGTYPE PREFIX LOOKUP EXT: every FILE ending in EXT
# also has a C function
#   void PREFIX<name>(const ARGTYPE *a);
# defined elsewhere in the library, and the output gains
#   void (*LOOKUP(const char *name))(const ARGTYPE *)   (NULL when unknown)
# after #include "HEADER" (a path relative to OUT.c).  The WebGL2 executor
# uses it for the C twins of its fragment shaders (src/webgl/gl.h): a shader
# without a twin then fails to link instead of failing at run time.
# Or TWINS is --twins-absent HEADER ARGTYPE LOOKUP EXT: a build without the
# twins (the browser module, which draws the shaders instead); LOOKUP then
# gives one placeholder that does nothing for every EXT name, so the names
# LOOKUP knows stay the same.
set -eu
gzip_header= twins= twins_absent= consts_def= consts_ops= consts_style=
while :; do
  case "${1:-}" in
    --gzip) gzip_header=$2; shift 2 ;;
    --consts) consts_def=$2 consts_ops=$3 consts_style=$4; shift 4 ;;
    --twins) twins=1; header=$2 argtype=$3 prefix=$4 lookup=$5 ext=$6; shift 6 ;;
    --twins-absent) twins_absent=1; header=$2 argtype=$3 lookup=$4 ext=$5; shift 5 ;;
    *) break ;;
  esac
done
out=$1
func=$2
shift 2
tmp="$out.tmp"
trap 'rm -f "$tmp" "$tmp.src" "$tmp.src2" "$tmp.all"' EXIT

# The embedded text drops comments, indentation and blank lines (shaders are
# parsed, not read, at run time; the .wgsl/.frag files keep them).
minify() {
  awk '
    { line = $0; out = "" }
    {
      while (length(line) > 0) {
        if (in_block) {
          end = index(line, "*/")
          if (end == 0) { line = ""; break }
          line = substr(line, end + 2); in_block = 0
        }
        lc = index(line, "//"); bc = index(line, "/*")
        if (lc > 0 && (bc == 0 || lc < bc)) { out = out substr(line, 1, lc - 1); line = ""; break }
        if (bc > 0) { out = out substr(line, 1, bc - 1); line = substr(line, bc + 2); in_block = 1; continue }
        out = out line; line = ""
      }
      gsub(/^[ \t]+|[ \t]+$/, "", out)
      if (length(out) > 0) print out
    }' "$1"
}

# Writes $1 with its `//!include NAME` lines replaced (recursively).
expand_includes() {
  awk -v top="$1" '
    function fail(msg) { print "embed_sources.sh: " msg > "/dev/stderr"; failed = 1; exit 1 }
    function expand(file, depth,    line, inc, dir, path, probe) {
      stack[file] = 1
      dir = file; if (!sub(/\/[^\/]*$/, "", dir)) dir = "."
      while ((getline line < file) > 0) {
        if (line ~ /^[ \t]*\/\/!include[ \t]/) {
          inc = line
          sub(/^[ \t]*\/\/!include[ \t]+/, "", inc); sub(/[ \t\r]+$/, "", inc)
          if (inc !~ /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/) fail(file ": bad include \"" inc "\"")
          path = dir "/" inc
          if (path in stack) fail(file ": include cycle through " inc)
          if ((getline probe < path) < 0) fail(file ": included file " path " not found")
          close(path)
          expand(path, depth + 1)
        } else print line
      }
      close(file)
      delete stack[file]
    }
    BEGIN { expand(top, 0); exit 0 }
    END { if (failed) exit 1 }'
}

# With --consts: $tmp.src gains the sub-op constants it names (see above).
add_consts() {
  [ -n "$consts_def" ] || return 0
  awk -v def="$consts_def" -v ops="$consts_ops" -v style="$consts_style" -v file="$1" '
    function fail(msg) { print "embed_sources.sh: " msg > "/dev/stderr"; failed = 1; exit 1 }
    function add(name, c, where) {
      if (name in code) fail(where ": OP_" name " is defined twice")
      names[++n] = name; code[name] = c
    }
    BEGIN {
      # The shape rules whose ops are sub-ops (src/core/subops.h RLX_SUBOP_RULE_*).
      next_code["binary"] = next_code["unary"] = next_code["grad_pointwise"] = 0
      while ((getline l < ops) > 0) {
        if (l !~ /^RLX_OP\(/) continue
        sub(/^RLX_OP\([ \t]*/, "", l); sub(/[ \t]*\).*$/, "", l)
        if (split(l, f, /[ \t]*,[ \t]*/) != 6) fail(ops ": bad row " l)
        rows++
        if (f[5] in next_code) add(f[1], next_code[f[5]]++, ops)
      }
      if (rows == 0) fail(ops ": no RLX_OP rows")
      rows = 0
      while ((getline l < def) > 0) {
        if (l !~ /^RLX_SUBOP\(/) continue
        sub(/^RLX_SUBOP\([ \t]*/, "", l); sub(/[ \t]*\).*$/, "", l)
        if (split(l, f, /[ \t]*,[ \t]*/) != 4) fail(def ": bad row " l)
        rows++
        add(f[2], f[4], def)
      }
      if (rows == 0) fail(def ": no RLX_SUBOP rows")
    }
    {
      lines[NR] = $0; s = $0
      while (match(s, /OP_[A-Za-z0-9_]+/)) {
        nm = substr(s, RSTART + 3, RLENGTH - 3)
        if (RSTART == 1 || substr(s, RSTART - 1, 1) !~ /[A-Za-z0-9_]/) {
          if (!(nm in code)) fail(file ": OP_" nm " is not in " ops " or " def)
          used[nm] = 1
        }
        s = substr(s, RSTART + RLENGTH)
      }
    }
    END {
      if (failed) exit 1
      first = 1
      if (style == "glsl" && lines[1] ~ /^#version/) { print lines[1]; first = 2 }
      for (i = 1; i <= n; i++) {
        if (!(names[i] in used)) continue
        if (style == "wgsl") print "const OP_" names[i] ": u32 = " code[names[i]] "u;"
        else print "#define OP_" names[i] " " code[names[i]]
      }
      for (i = first; i <= NR; i++) print lines[i]
    }' "$tmp.src" > "$tmp.src2"
  mv "$tmp.src2" "$tmp.src"
}

# Include-only files (`_NAME.EXT`) are not embedded on their own.
embedded() {
  [ -f "$1" ] || return 1
  case "$(basename "$1")" in _*) return 1 ;; esac
  return 0
}

name_of() {
  b=$(basename "$1")
  echo "${b%.*}"
}

# C initializer lines of the bytes on stdin.
bytes() {
  od -An -v -tu1 | sed -e 's/^ *//' -e 's/ *$//' -e '/^$/d' -e 's/  */,/g' -e 's/$/,/'
}

# With --gzip: every text (NUL-terminated) one after another in $tmp.all,
# "name:offset" of each in $entries.
entries=
if [ -n "$gzip_header" ]; then
  : > "$tmp.all"
  for f in "$@"; do
    embedded "$f" || continue
    expand_includes "$f" > "$tmp.src"
    add_consts "$f"
    entries="$entries $(name_of "$f"):$(wc -c < "$tmp.all" | tr -d ' ')"
    minify "$tmp.src" >> "$tmp.all"
    printf '\000' >> "$tmp.all"
  done
fi

{
  echo "/* Generated by tools/embed_sources.sh - do not edit. */"
  echo '#include <stddef.h>'
  echo '#include <string.h>'
  if [ -n "$twins$twins_absent" ]; then echo "#include \"$header\""; fi
  if [ -n "$gzip_header" ]; then echo "#include \"$gzip_header\""; fi
  echo
  if [ -n "$gzip_header" ]; then
    for f in "$@"; do embedded "$f" && echo "/* $f */"; done
    echo "static const unsigned char packed[] = {"
    gzip -9 -n -c "$tmp.all" | bytes
    echo '};'
    echo "static unsigned char text[$(wc -c < "$tmp.all")];"
    echo 'static int unpacked; /* 0: not yet, 1: done, -1: packed is corrupt */'
    echo
    echo 'static const struct { const char *name; size_t offset; } source_table[] = {'
    for e in $entries; do echo "  {\"${e%:*}\", ${e##*:}},"; done
    echo '  {NULL, 0}};'
    echo
    echo "const char *$func(const char *name);"
    echo "const char *$func(const char *name) {"
    echo '  for (size_t i = 0; name && source_table[i].name; i++)'
    echo '    if (strcmp(source_table[i].name, name) == 0) {'
    echo '      if (!unpacked) unpacked = rlx_gunzip(packed, sizeof packed, text, sizeof text) == 0 ? 1 : -1;'
    echo '      return unpacked > 0 ? (const char *)text + source_table[i].offset : NULL;'
    echo '    }'
    echo '  return NULL;'
    echo '}'
  else
    n=0
    for f in "$@"; do
      embedded "$f" || continue
      expand_includes "$f" > "$tmp.src"
      add_consts "$f"
      echo "/* $f */"
      echo "static const char source_$n[] = {"
      minify "$tmp.src" | bytes
      echo '0};'
      n=$((n + 1))
    done
    echo
    echo 'static const struct { const char *name; const char *source; } source_table[] = {'
    n=0
    for f in "$@"; do
      embedded "$f" || continue
      echo "  {\"$(name_of "$f")\", source_$n},"
      n=$((n + 1))
    done
    echo '  {NULL, NULL}};'
    echo
    echo "const char *$func(const char *name);"
    echo "const char *$func(const char *name) {"
    echo '  for (size_t i = 0; name && source_table[i].name; i++)'
    echo '    if (strcmp(source_table[i].name, name) == 0) return source_table[i].source;'
    echo '  return NULL;'
    echo '}'
  fi
  if [ -n "$twins" ]; then
    echo
    for f in "$@"; do
      embedded "$f" || continue
      case "$f" in *"$ext") echo "void $prefix$(name_of "$f")(const $argtype *a);" ;; esac
    done
    echo
    echo "static const struct { const char *name; void (*fn)(const $argtype *); } twin_table[] = {"
    for f in "$@"; do
      embedded "$f" || continue
      case "$f" in *"$ext") echo "  {\"$(name_of "$f")\", $prefix$(name_of "$f")}," ;; esac
    done
    echo '  {NULL, NULL}};'
  elif [ -n "$twins_absent" ]; then
    echo
    echo "static void absent_twin(const $argtype *a) { (void)a; }"
    echo
    echo "static const struct { const char *name; void (*fn)(const $argtype *); } twin_table[] = {"
    for f in "$@"; do
      embedded "$f" || continue
      case "$f" in *"$ext") echo "  {\"$(name_of "$f")\", absent_twin}," ;; esac
    done
    echo '  {NULL, NULL}};'
  fi
  if [ -n "$twins$twins_absent" ]; then
    echo
    echo "void (*$lookup(const char *name))(const $argtype *);"
    echo "void (*$lookup(const char *name))(const $argtype *) {"
    echo '  for (size_t i = 0; name && twin_table[i].name; i++)'
    echo '    if (strcmp(twin_table[i].name, name) == 0) return twin_table[i].fn;'
    echo '  return NULL;'
    echo '}'
  fi
} > "$tmp"
mv "$tmp" "$out"
