#!/usr/bin/env bash
# test_finetune.sh - rlx finetune and rlx perplexity on the tiny llama of
# build/lm (make lm-fixtures):
#   * a repeated sentence: the training loss of the progress lines falls at
#     least 5x (a line per step with tokens/s and ETA, the validation loss
#     every --eval-every steps), the adapter is written (and nothing else),
#     generate --lora continues the sentence from its first words word for
#     word, perplexity --lora is far below the base model's and equals the
#     run's last validation loss (the same windows, the same evaluation);
#   * --adapter-in resumes where the adapter left off, and refuses an
#     adapter of another rank, targets, model or no GGUF at all;
#   * Ctrl-C (SIGINT) stops after the current step and writes a whole
#     adapter;
#   * every bad input exits 2 naming its flag, and no --out file appears.
# A few seconds.
#   tests/cli/test_finetune.sh [path/to/rlx]
set -u
cd "$(dirname "$0")/../.."
RLX=${1:-build/rlx}
LM=build/lm/llama-f32.gguf
OTHER=build/lm/qwen3-f32.gguf
for f in "$RLX" "$LM" "$OTHER"; do
  [ -e "$f" ] || { echo "test_finetune: $f is missing: run make build/rlx lm-fixtures" >&2; exit 1; }
done

. tests/cli/checks.sh

SENTENCE='The small river ran past the old mill. '
for i in $(seq 12); do printf '%s' "$SENTENCE"; done >"$tmp/train.txt"
for i in $(seq 3); do printf '%s' "$SENTENCE"; done >"$tmp/valid.txt"
TRAIN=(--model "$LM" --data "$tmp/train.txt" --valid "$tmp/valid.txt" --seq 24 --batch 4 --lr 3e-3)

# ---- a sentence learned -------------------------------------------------------------
if "$RLX" finetune "${TRAIN[@]}" --steps 40 --eval-every 10 --out "$tmp/a.gguf" >"$tmp/out" 2>"$tmp/err"; then
  [ "$(grep -cE '^step [0-9]+/40  loss [0-9.]+  (valid [0-9.]+  )?[0-9]+ tokens/s  ETA [0-9:]+$' "$tmp/err")" -eq 40 ] ||
    fail "finetune: not 40 progress lines 'step k/40  loss L  [valid V  ]T tokens/s  ETA M:SS': $(head -c 600 "$tmp/err")"
  [ "$(grep -oE '^step [0-9]+/40  loss [0-9.]+  valid' "$tmp/err" | cut -d' ' -f2 | tr '\n' ' ')" = "10/40 20/40 30/40 40/40 " ] ||
    fail "finetune --eval-every 10: the validation loss is not on steps 10, 20, 30 and 40: $(grep valid "$tmp/err")"
  grep -q $'\r' "$tmp/err" && fail "finetune: carriage returns on stderr that is not a terminal"
  first=$(grep -oE '^step 1/40  loss [0-9.]+' "$tmp/err" | awk '{print $NF}')
  last=$(grep -oE '^step 40/40  loss [0-9.]+' "$tmp/err" | awk '{print $NF}')
  valid=$(grep -oE '^step 40/40  loss [0-9.]+  valid [0-9.]+' "$tmp/err" | awk '{print $NF}')
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 0 && b * 5 <= a) }' ||
    fail "finetune: the training loss went from '$first' to '$last' (want 5x lower)"
  for pattern in "^model $LM: llama, 2 layers; 4 pairs of rank 8 on attn_q,attn_v, alpha 16$" \
    "^data .*: 6 training windows of 24 tokens \(144 scored\), 1 validation window from " \
    "^training loss $first -> $last over 40 steps$" "^validation loss $valid " "^wrote $tmp/a.gguf: 4 pairs"; do
    grep -qE "$pattern" "$tmp/out" || fail "finetune: stdout lacks /$pattern/: $(cat "$tmp/out")"
  done
  [ "$(ls "$tmp")" = "$(printf 'a.gguf\nerr\nout\ntrain.txt\nvalid.txt')" ] || fail "finetune left other files: $(ls "$tmp")"
  "$RLX" gguf-info "$tmp/a.gguf" | grep -q "an adapter for llama models (adapter.type 'lora', alpha 16)" ||
    fail "gguf-info does not see a llama LoRA adapter: $("$RLX" gguf-info "$tmp/a.gguf" 2>&1)"
  # greedy generation continues the sentence from its first three words, word for word
  want=" ran past the old mill. The small river ran"
  got=$("$RLX" generate --model "$LM" --lora "$tmp/a.gguf" --prompt "The small river" --max-tokens 16 2>/dev/null)
  [ "${got:0:${#want}}" = "$want" ] || fail "generate --lora: '$got', want it to begin '$want'"
  base=$("$RLX" generate --model "$LM" --prompt "The small river" --max-tokens 16 2>/dev/null)
  [ "${base:0:${#want}}" = "$want" ] && fail "the base model continues the sentence without the adapter: '$base'"
  # perplexity: far lower with the adapter; its NLL is the run's last validation loss
  "$RLX" perplexity --model "$LM" --text "$tmp/valid.txt" --seq 24 --lora "$tmp/a.gguf" >"$tmp/ppl" 2>&1 ||
    fail "perplexity --lora: $(cat "$tmp/ppl")"
  "$RLX" perplexity --model "$LM" --text "$tmp/valid.txt" --seq 24 >"$tmp/ppl0" 2>&1 || fail "perplexity: $(cat "$tmp/ppl0")"
  grep -qE "valid.txt: 1 window of 24 tokens, 24 tokens scored, 1 LoRA adapter$" "$tmp/ppl" ||
    fail "perplexity: no summary line: $(cat "$tmp/ppl")"
  nll=$(grep -oE 'mean NLL [0-9.]+' "$tmp/ppl" | awk '{print $NF}')
  ppl=$(grep -oE 'perplexity [0-9.]+' "$tmp/ppl" | awk '{print $NF}')
  ppl0=$(grep -oE 'perplexity [0-9.]+' "$tmp/ppl0" | awk '{print $NF}')
  awk -v a="$ppl" -v b="$ppl0" 'BEGIN { exit !(a > 0 && a * 1000 < b) }' ||
    fail "perplexity with the adapter $ppl is not far below the base model's $ppl0"
  awk -v a="$nll" -v b="$valid" 'BEGIN { d = a - b; exit !(d < 2e-4 && d > -2e-4) }' ||
    fail "perplexity's mean NLL $nll is not the run's validation loss $valid"

  # ---- --adapter-in: resumes; refuses what does not match --------------------------------
  if "$RLX" finetune "${TRAIN[@]}" --steps 2 --adapter-in "$tmp/a.gguf" --out "$tmp/b.gguf" >"$tmp/out" 2>"$tmp/err"; then
    resumed=$(grep -oE '^step 1/2  loss [0-9.]+' "$tmp/err" | awk '{print $NF}')
    awk -v a="$resumed" -v b="$first" 'BEGIN { exit !(a * 5 <= b) }' ||
      fail "finetune --adapter-in starts at loss '$resumed', not where the adapter left off (fresh: $first)"
  else
    fail "finetune --adapter-in: $(cat "$tmp/err")"
  fi
  "$RLX" finetune --model "$OTHER" --data "$tmp/train.txt" --seq 8 --steps 1 --out "$tmp/other.gguf" >/dev/null 2>&1 ||
    fail "finetune of $OTHER failed"
else
  fail "finetune failed: $(cat "$tmp/out" "$tmp/err")"
fi

# ---- Ctrl-C: stops after the step it is in, writes the adapter --------------------------
"$RLX" finetune "${TRAIN[@]}" --steps 100000000 --out "$tmp/int.gguf" >"$tmp/int.out" 2>"$tmp/int.err" &
pid=$!
for i in $(seq 200); do grep -q '^step 3/' "$tmp/int.err" 2>/dev/null && break; sleep 0.05; done
kill -INT $pid
for i in $(seq 200); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
if kill -0 $pid 2>/dev/null; then
  kill -KILL $pid
  fail "finetune did not stop on SIGINT"
fi
wait $pid
rc=$?
[ $rc -eq 0 ] || fail "finetune after SIGINT exited $rc: $(tail -3 "$tmp/int.err")"
grep -qE '^interrupted: stopped after step [0-9]+ of 100000000$' "$tmp/int.err" ||
  fail "finetune after SIGINT does not say where it stopped: $(tail -3 "$tmp/int.err")"
grep -qE '^training loss .* \(interrupted\)$' "$tmp/int.out" || fail "finetune after SIGINT: $(cat "$tmp/int.out")"
"$RLX" generate --model "$LM" --lora "$tmp/int.gguf" --prompt x --max-tokens 1 >/dev/null 2>&1 ||
  fail "the adapter written after SIGINT does not load"
[ -e "$tmp/int.gguf.tmp" ] && fail "finetune left int.gguf.tmp after SIGINT"

# ---- bad input: exit 2, the flag named, no --out file ---------------------------------------
out=$tmp/bad.gguf
printf '' >"$tmp/empty.txt"
printf 'The small river.' >"$tmp/short.txt"
printf '{"prompt": "a", "completion": "b"}\n{"prompt": "a" "completion": "b"}\n' >"$tmp/bad.jsonl"
# refuse PATTERN ARGS...: rlx finetune ARGS --out $out exits 2, stderr matches PATTERN
refuse() {
  local pattern=$1
  shift
  "$RLX" "$@" >"$tmp/r.out" 2>"$tmp/r.err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'rlx $*' exited $rc, want 2: $(head -c 300 "$tmp/r.err")"
  grep -qE -- "$pattern" "$tmp/r.err" || fail "'rlx $*': stderr lacks /$pattern/: $(head -c 400 "$tmp/r.err")"
  [ -e "$out" ] || [ -e "$out.tmp" ] && fail "'rlx $*' left $(ls "$out"*)"
  rm -f "$out" "$out.tmp"
}
BASE=(finetune --model "$LM" --data "$tmp/train.txt" --seq 8 --steps 1 --out "$out")
refuse "--data FILE is required" finetune --model "$LM" --out "$out"
refuse "--rank must be a whole number from 1" "${BASE[@]}" --rank 0
refuse "^rlx finetune: --rank: .*rank 200 is above min\(n_in, n_out\) = 128 of blk.0.attn_v.weight" "${BASE[@]}" --rank 200
refuse "--targets: 'attn_z' is not a target" "${BASE[@]}" --targets attn_q,attn_z
refuse "--seq 1000 is above the model's context \(512\)" "${BASE[@]}" --seq 1000
refuse "--seq must be a whole number from 2" "${BASE[@]}" --seq 1
refuse "--lr must be a number above 0" "${BASE[@]}" --lr nan
refuse "--lr must be a number above 0" "${BASE[@]}" --lr -1e-3
refuse "--alpha must be a number above 0" "${BASE[@]}" --alpha inf
refuse "--optimizer: unknown optimizer 'rmsprop' \(known: adamw, sgd\)" "${BASE[@]}" --optimizer rmsprop
refuse "--shuffle must be a whole number from 0 to 1" "${BASE[@]}" --shuffle 2
refuse "--valid-fraction must be a number from 0 to below 1" "${BASE[@]}" --valid-fraction 1
refuse "^rlx finetune: --data: .*empty.txt': the text has 1 tokens \(BOS included\); a window needs seq \+ 1 = 9" \
  finetune --model "$LM" --data "$tmp/empty.txt" --seq 8 --out "$out"
refuse "^rlx finetune: --data: .*short.txt': the text has [0-9]+ tokens .*a window needs seq \+ 1 = 25" \
  finetune --model "$LM" --data "$tmp/short.txt" --seq 24 --out "$out"
refuse "^rlx finetune: --data: .*bad.jsonl': line 2: expected ',' or '}'" finetune --model "$LM" --data "$tmp/bad.jsonl" --out "$out"
refuse "^rlx finetune: --data: .*nowhere.txt': cannot open it" finetune --model "$LM" --data "$tmp/nowhere.txt" --out "$out"
refuse "^rlx finetune: --valid: .*validation data .*short.txt': the text has" "${BASE[@]}" --valid "$tmp/short.txt" --seq 16
refuse "^rlx finetune: --model: " finetune --model "$tmp/train.txt" --data "$tmp/train.txt" --out "$out"
refuse "--out $tmp/no/dir/a.gguf: cannot write" finetune --model "$LM" --data "$tmp/train.txt" --seq 8 --out "$tmp/no/dir/a.gguf"
if [ -f "$tmp/a.gguf" ]; then
  refuse "^rlx finetune: --adapter-in .*: .*adapter 0 has rank 8 on 'blk.0.attn_q.weight'; this fine-tuning has rank 4" \
    "${BASE[@]}" --adapter-in "$tmp/a.gguf" --rank 4
  refuse "^rlx finetune: --adapter-in .*has no pair on 'blk.0.attn_k.weight'" "${BASE[@]}" --adapter-in "$tmp/a.gguf" \
    --targets attn_q,attn_k,attn_v
  refuse "^rlx finetune: --adapter-in .*adapter 0 has alpha 16; this fine-tuning has alpha 8" \
    "${BASE[@]}" --adapter-in "$tmp/a.gguf" --alpha 8
fi
refuse "^rlx finetune: --adapter-in: .*LoRA adapter 0 \(.*train.txt\): .*not a GGUF file" "${BASE[@]}" --adapter-in "$tmp/train.txt"
[ -f "$tmp/other.gguf" ] && refuse "^rlx finetune: --adapter-in: .*'general.architecture' is 'qwen3'; a LoRA adapter for this model has 'llama'" \
  "${BASE[@]}" --adapter-in "$tmp/other.gguf"
refuse "--text FILE is required" perplexity --model "$LM"
refuse "--seq 1000 is above the model's context \(512\)" perplexity --model "$LM" --text "$tmp/train.txt" --seq 1000
refuse "^rlx perplexity: --text: .*short.txt': the text has" perplexity --model "$LM" --text "$tmp/short.txt"
refuse "^rlx perplexity: --lora: .*LoRA adapter 0 \(.*train.txt\)" perplexity --model "$LM" --text "$tmp/train.txt" \
  --lora "$tmp/train.txt"

finish test_finetune
