#!/usr/bin/env bash
# test_export_lora.sh - rlx export-lora on the tiny models of build/lm
# (make lm-fixtures), with adapters from rlx make-lora:
#   * an f32 base merged with two adapters (--type auto keeps f32) generates
#     the greedy ids of the base with those adapters (generate --lora), and
#     so does a q8_0 base merged as f32; merged by llama-export-lora's rule
#     its adapted weights are f16 and it still generates;
#   * scale 0 writes the base back byte for byte;
#   * every bad input exits 2 naming its flag (another architecture's
#     adapter, a missing file, a bad --type or scale), and neither the
#     --out file nor its temporary appears.
# A second or two.
#   tests/cli/test_export_lora.sh [path/to/rlx]
set -u
cd "$(dirname "$0")/../.."
RLX=${1:-build/rlx}
F32=build/lm/llama-f32.gguf
Q8=build/lm/llama-q8_0.gguf
OTHER=build/lm/qwen3-f32.gguf
for f in "$RLX" "$F32" "$Q8" "$OTHER"; do
  [ -e "$f" ] || { echo "test_export_lora: $f is missing: run make build/rlx lm-fixtures" >&2; exit 1; }
done

. tests/cli/checks.sh

# greedy MODEL [ARGS...]: the ids generate picks after a prompt.
greedy() {
  local model=$1
  shift
  "$RLX" generate --model "$model" --prompt "The miller counted" --max-tokens 16 --ids "$@" 2>"$tmp/gen.err" | tail -1
}

"$RLX" make-lora --model "$F32" --out "$tmp/a.gguf" --targets attn_q,attn_v,ffn_down --rank 4 --alpha 8 --seed 3 \
  >/dev/null || fail "make-lora a"
"$RLX" make-lora --model "$F32" --out "$tmp/b.gguf" --targets attn_k,ffn_up --rank 2 --seed 4 --type f16 \
  >/dev/null || fail "make-lora b"

# ---- merged = applied -------------------------------------------------------------------
for base in "$F32" "$Q8"; do
  name=$(basename "$base" .gguf)
  type=auto
  [ "$base" = "$Q8" ] && type=f32
  if "$RLX" export-lora --model "$base" --lora "$tmp/a.gguf:0.5" --lora "$tmp/b.gguf:-0.75" --out "$tmp/m.gguf" \
      --type "$type" >"$tmp/out" 2>"$tmp/err"; then
    grep -q "with 2 LoRA adapters merged (--type $type)" "$tmp/out" || fail "export-lora $name: $(cat "$tmp/out")"
    want=$(greedy "$base" --lora "$tmp/a.gguf:0.5" --lora "$tmp/b.gguf:-0.75")
    plain=$(greedy "$base")
    got=$(greedy "$tmp/m.gguf")
    [ -n "$want" ] && [ "$got" = "$want" ] || fail "$name merged generates $got, with the adapters applied $want"
    [ "$want" != "$plain" ] || fail "$name: the adapters change nothing ($plain)"
  else
    fail "export-lora $name exited $?: $(cat "$tmp/err")"
  fi
done
# llama-export-lora's rule: a q8_0 base's adapted weights become f16
if "$RLX" export-lora -m "$Q8" --lora "$tmp/a.gguf" -o "$tmp/m16.gguf" >/dev/null 2>"$tmp/err"; then
  "$RLX" gguf-info "$tmp/m16.gguf" | grep -q "f16 x 6, q8_0 x 10" ||
    fail "export-lora of q8_0: not 6 f16 weights: $("$RLX" gguf-info "$tmp/m16.gguf" | grep weights)"
  [ -n "$(greedy "$tmp/m16.gguf")" ] || fail "the f16-merged model does not generate: $(cat "$tmp/gen.err")"
else
  fail "export-lora of q8_0 exited $?: $(cat "$tmp/err")"
fi
# scale 0: the base itself
"$RLX" export-lora --model "$F32" --lora "$tmp/a.gguf:0" --out "$tmp/z.gguf" >/dev/null 2>&1 &&
  cmp -s "$F32" "$tmp/z.gguf" || fail "export-lora at scale 0 is not the base byte for byte"

# ---- refusals: exit 2 naming the flag, no file -------------------------------------------------
refused() {
  local desc=$1 pattern=$2
  shift 2
  rm -f "$tmp/r.gguf" "$tmp/r.gguf.tmp"
  "$RLX" export-lora "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$desc: exit $rc, want 2: $(head -c 300 "$tmp/err")"
  grep -qE -- "$pattern" "$tmp/err" || fail "$desc: stderr lacks /$pattern/: $(head -c 300 "$tmp/err")"
  [ -e "$tmp/r.gguf" ] || [ -e "$tmp/r.gguf.tmp" ] && fail "$desc: a file was written"
}
refused "no --lora" "^rlx export-lora: --lora FILE\[:SCALE\] is required" --model "$F32" --out "$tmp/r.gguf"
refused "another architecture" \
  "^rlx export-lora: --lora: .*LoRA adapter 0 .*'general.architecture' is 'llama'; a LoRA adapter for this model has 'qwen3'" \
  --model "$OTHER" --lora "$tmp/a.gguf" --out "$tmp/r.gguf"
refused "a second adapter missing" "--lora: .*LoRA adapter 1 \(.*none.gguf\)" \
  --model "$F32" --lora "$tmp/a.gguf" --lora "$tmp/none.gguf" --out "$tmp/r.gguf"
refused "no base" "--model: .*no-model.gguf" --model "$tmp/no-model.gguf" --lora "$tmp/a.gguf" --out "$tmp/r.gguf"
refused "a bad type" "--type must be auto, f32, f16 or same .got 'q4_0'" \
  --model "$F32" --lora "$tmp/a.gguf" --out "$tmp/r.gguf" --type q4_0
refused "a bad scale" "--lora must be FILE or FILE:SCALE" --model "$F32" --lora "$tmp/a.gguf:x" --out "$tmp/r.gguf"

finish test_export_lora
