#!/bin/sh
# test_subops.sh - sub-op codes come from the tables (the binary, unary and
# grad_pointwise rows of include/rlx_ops.def, and include/rlx_subops.def):
# no shader (src/webgpu/wgsl/*.wgsl, src/webgl/glsl/*.frag) compares OP
# with a number or switches on OP with numeric cases, no C twin
# (src/webgl/ref_*.c) has a numeric `case N:` or compares the OP define
# with a number (the two switches listed in ALLOWED are not on a sub-op),
# tools/embed_sources.sh --consts puts exactly the named constants in
# front (WGSL at the top, GLSL after #version) and rejects an OP_ name the
# tables lack or a name in both, and its codes are the C enums'
# (src/core/subops.h), also after a unary row is added to a copy of the op
# table.  POSIX sh, grep, awk, a C compiler ($CC, else cc); about 1 s.
#   tests/cli/test_subops.sh   (make test-subops, part of make test-native)
set -u
cd "$(dirname "$0")/../.."
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# file:text of the numeric cases that are not sub-op codes.
ALLOWED='src/webgl/ref_attention.c:    case 0: rc = cs, rs = sn; break;
src/webgl/ref_attention.c:    case 1: rc = -sn, rs = cs; break;
src/webgl/ref_attention.c:    case 2: rc = -cs, rs = -sn; break;
src/webgl/ref_norm.c:    case 0: p.w = a->in[1], p.dy = a->in[2]; break;
src/webgl/ref_norm.c:    case 1: p.w = a->in[1], p.b = p.layer ? a->in[2] : NULL, p.stats = a->in[p.layer ? 3 : 2]; break;
src/webgl/ref_norm.c:    case 2: p.w = a->in[1], p.dy = a->in[2], p.stats = a->in[3]; break;'

hits=$(grep -nE '\bOP[ \t]*(==|!=|<=|>=|<|>)[ \t]*[0-9]' src/webgpu/wgsl/*.wgsl src/webgl/glsl/*.frag src/webgl/glsl/*.glsl)
[ -z "$hits" ] || fail "shaders compare OP with a number (use OP_<NAME>, src/core/subops.h):
$hits"
for f in src/webgpu/wgsl/*.wgsl; do
  grep -q 'override OP\b' "$f" || continue
  hits=$(grep -nE 'case[ \t]+[0-9]+u?[ \t]*[:,]' "$f")
  [ -z "$hits" ] || fail "$f switches on OP with numeric cases:
$hits"
done
hits=$(grep -nE '"OP"[^;]*\)[ \t]*(==|!=)[ \t]*[0-9]' src/webgl/ref_*.c src/webgpu/*.c src/webgl/*.c)
[ -z "$hits" ] || fail "C compares the OP define with a number:
$hits"
hits=$(grep -nE 'override\(d, "OP", [^)]*[0-9]u' src/webgpu/*.c)
[ -z "$hits" ] || fail "a WebGPU lowering sets OP to a number:
$hits"
hits=$(grep -HE '^[ \t]*case[ \t]+[0-9]+:' src/webgl/ref_*.c | while IFS= read -r line; do
  printf '%s\n' "$ALLOWED" | grep -qxF "$line" || printf '%s\n' "$line"
done)
[ -z "$hits" ] || fail "C twins use numeric cases (RLX_SUBOP_<NAME> from src/core/subops.h, or add a non-sub-op switch to ALLOWED):
$hits"

# The generator: constants for the names used, in table order, nothing else.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' 'fn f() -> u32 { if (OP == OP_RELU) { return OP_ADD; } return 0u; }' > "$tmp/k.wgsl"
printf '%s\n' '#version 300 es' '#if OP == OP_RELU' '#endif' > "$tmp/k.frag"
printf '%s\n' '#if OP == OP_NOT_IN_TABLE' '#endif' > "$tmp/bad.frag"
dump() { # the embedded text of OUT.c's one entry, without the gzip packing
  awk '/^static const char source_0\[\] = \{/ { on = 1; next } on && /^0\};/ { exit } on { printf "%s", $0 }' "$1" |
    tr ',' '\n' | awk 'NF { printf "%c", $1 + 0 }'
}
if sh tools/embed_sources.sh --consts include/rlx_subops.def include/rlx_ops.def wgsl "$tmp/w.c" f "$tmp/k.wgsl"; then
  got=$(dump "$tmp/w.c")
  want='const OP_ADD: u32 = 0u;
const OP_RELU: u32 = 8u;
fn f() -> u32 { if (OP == OP_RELU) { return OP_ADD; } return 0u; }'
  [ "$got" = "$want" ] || fail "WGSL constants: got
$got"
else fail "embed_sources.sh --consts wgsl failed"; fi
if sh tools/embed_sources.sh --consts include/rlx_subops.def include/rlx_ops.def glsl "$tmp/g.c" f "$tmp/k.frag"; then
  got=$(dump "$tmp/g.c")
  want='#version 300 es
#define OP_RELU 8
#if OP == OP_RELU
#endif'
  [ "$got" = "$want" ] || fail "GLSL defines: got
$got"
else fail "embed_sources.sh --consts glsl failed"; fi
if sh tools/embed_sources.sh --consts include/rlx_subops.def include/rlx_ops.def glsl "$tmp/b.c" f "$tmp/bad.frag" 2> "$tmp/err"; then
  fail "embed_sources.sh accepted OP_NOT_IN_TABLE"
else
  grep -q 'OP_NOT_IN_TABLE is not in' "$tmp/err" || fail "unexpected error: $(cat "$tmp/err")"
fi
printf '%s\n' 'RLX_SUBOP(REDUCE, ADD, add, 0)' > "$tmp/dup.def"
if sh tools/embed_sources.sh --consts "$tmp/dup.def" include/rlx_ops.def wgsl "$tmp/d.c" f "$tmp/k.wgsl" 2> "$tmp/err"; then
  fail "embed_sources.sh accepted OP_ADD in both tables"
else
  grep -q 'OP_ADD is defined twice' "$tmp/err" || fail "unexpected error: $(cat "$tmp/err")"
fi

# The shader constants equal the C enums, with the op table of directory
# $1: every RLX_SUBOP_<NAME> of src/core/subops.h as "NAME code" in table
# order ($tmp/c.txt), against the constants embed_sources.sh gives a shader
# naming every OP_<NAME>.
cat > "$tmp/names.c" <<'EOF'
#include <stdio.h>
#include "subops.h"
#define P(ID) printf("%s %d\n", #ID, (int)RLX_SUBOP_##ID);
#define LIST_BINARY(ID, name) P(ID)
#define LIST_UNARY(ID, name) P(ID)
#define LIST_POINTWISE_GRAD(ID, name) P(ID)
#define LIST_NONE(ID, name)
int main(void) {
#define RLX_OP(ID, name, lo, hi, rule, set) RLX_SUBOP_ROW(rule, LIST, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
#define RLX_SUBOP(family, NAME, name, code) P(NAME)
#include "rlx_subops.def"
  return 0;
}
EOF
agree() {
  ${CC:-cc} -std=c11 -Wall -Werror -Isrc/core -I"$1" -Iinclude -o "$tmp/names" "$tmp/names.c" 2> "$tmp/err" ||
    { fail "C enums ($1): $(cat "$tmp/err")"; return; }
  "$tmp/names" > "$tmp/c.txt"
  awk '{ print "OP_" $1 }' "$tmp/c.txt" > "$tmp/all.wgsl"
  sh tools/embed_sources.sh --consts include/rlx_subops.def "$1/rlx_ops.def" wgsl "$tmp/a.c" f "$tmp/all.wgsl" 2> "$tmp/err" ||
    { fail "embed_sources.sh ($1): $(cat "$tmp/err")"; return; }
  dump "$tmp/a.c" | sed -n 's/^const OP_\([A-Za-z0-9_]*\): u32 = \([0-9]*\)u;$/\1 \2/p' > "$tmp/s.txt"
  [ -s "$tmp/c.txt" ] && cmp -s "$tmp/c.txt" "$tmp/s.txt" || fail "C enums and shader constants differ ($1):
$(diff "$tmp/c.txt" "$tmp/s.txt")"
}
agree include
# A unary op added to a copy of the op table (after neg) gets the next code,
# and the unary ops after it shift, in C and in the shaders alike.
mkdir "$tmp/inc"
awk '{ print } /^RLX_OP\(NEG,/ { print "RLX_OP(TEST_UNARY, test_unary, 1, 1, unary, NONE)" }' \
  include/rlx_ops.def > "$tmp/inc/rlx_ops.def"
agree "$tmp/inc"
got=$(grep -E '^(ADD|NEG|TEST_UNARY|ABS|SILU|GELU_GRAD) ' "$tmp/c.txt" | tr '\n' ' ')
[ "$got" = "ADD 0 NEG 0 TEST_UNARY 1 ABS 2 SILU 11 GELU_GRAD 0 " ] || fail "the added unary row: $got"

# The table: NAME unique, codes dense from 0 within a family.
bad=$(awk -F'[(), \t]+' '/^RLX_SUBOP\(/ {
    if ($3 in seen) print "duplicate " $3; seen[$3] = 1
    if ($5 != next_code[$2] + 0) print $3 " has code " $5 ", expected " next_code[$2] + 0
    next_code[$2] = $5 + 1 }' include/rlx_subops.def)
[ -z "$bad" ] || fail "include/rlx_subops.def: $bad"

if [ "$failures" -ne 0 ]; then echo "test_subops: $failures failure(s)"; exit 1; fi
echo "test_subops: ok"
