#!/bin/sh
# test_subops.sh - sub-op codes come from one table (include/rlx_subops.def):
# no shader (src/webgpu/wgsl/*.wgsl, src/webgl/glsl/*.frag) compares OP
# with a number or switches on OP with numeric cases, no C twin
# (src/webgl/ref_*.c) has a numeric `case N:` or compares the OP define
# with a number (the two switches listed in ALLOWED are not on a sub-op),
# and tools/embed_sources.sh --consts puts exactly the named constants in
# front (WGSL at the top, GLSL after #version) and rejects an OP_ name the
# table lacks.  POSIX sh, grep, awk; about 1 s.
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
[ -z "$hits" ] || fail "shaders compare OP with a number (use OP_<NAME> from include/rlx_subops.def):
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
if sh tools/embed_sources.sh --consts include/rlx_subops.def wgsl "$tmp/w.c" f "$tmp/k.wgsl"; then
  got=$(dump "$tmp/w.c")
  want='const OP_ADD: u32 = 0u;
const OP_RELU: u32 = 8u;
fn f() -> u32 { if (OP == OP_RELU) { return OP_ADD; } return 0u; }'
  [ "$got" = "$want" ] || fail "WGSL constants: got
$got"
else fail "embed_sources.sh --consts wgsl failed"; fi
if sh tools/embed_sources.sh --consts include/rlx_subops.def glsl "$tmp/g.c" f "$tmp/k.frag"; then
  got=$(dump "$tmp/g.c")
  want='#version 300 es
#define OP_RELU 8
#if OP == OP_RELU
#endif'
  [ "$got" = "$want" ] || fail "GLSL defines: got
$got"
else fail "embed_sources.sh --consts glsl failed"; fi
if sh tools/embed_sources.sh --consts include/rlx_subops.def glsl "$tmp/b.c" f "$tmp/bad.frag" 2> "$tmp/err"; then
  fail "embed_sources.sh accepted OP_NOT_IN_TABLE"
else
  grep -q 'OP_NOT_IN_TABLE is not in' "$tmp/err" || fail "unexpected error: $(cat "$tmp/err")"
fi
# The table: NAME unique, codes dense from 0 within a family.
bad=$(awk -F'[(), \t]+' '/^RLX_SUBOP\(/ {
    if ($3 in seen) print "duplicate " $3; seen[$3] = 1
    if ($5 != next_code[$2] + 0) print $3 " has code " $5 ", expected " next_code[$2] + 0
    next_code[$2] = $5 + 1 }' include/rlx_subops.def)
[ -z "$bad" ] || fail "include/rlx_subops.def: $bad"

if [ "$failures" -ne 0 ]; then echo "test_subops: $failures failure(s)"; exit 1; fi
echo "test_subops: ok"
