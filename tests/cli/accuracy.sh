#!/usr/bin/env bash
# accuracy.sh - the accuracy targets: 2 epochs on the full Fashion-MNIST
# training set (60000 images) must reach >= 85% test accuracy (10000 images)
# for mnist-cnn and mnist-mlp, with the tool's default settings spelled out
# (Adam, cosine schedule, seed 1).  Prints each model's accuracy and time;
# about 10-15 s in all on one core.
#   tests/cli/accuracy.sh [path/to/rlx]
set -u
cd "$(dirname "$0")/../.."
RLX=${1:-build/rlx}
TARGET=85
if [ ! -x "$RLX" ]; then
  echo "accuracy: $RLX is missing: run make first" >&2
  exit 1
fi

failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# check MODEL ARGS...: trains with ARGS and compares the accuracy with TARGET.
check() {
  local model=$1
  shift
  local start end acc
  start=$(date +%s.%N)
  if ! "$RLX" train --model "$model" --epochs 2 "$@" >"$out" 2>&1; then
    echo "FAIL: $model: training failed:"
    cat "$out"
    failures=$((failures + 1))
    return
  fi
  end=$(date +%s.%N)
  acc=$(grep -oE "test accuracy: [0-9.]+%" "$out" | grep -oE "[0-9.]+")
  if [ -z "$acc" ]; then
    echo "FAIL: $model: no accuracy in the output:"
    cat "$out"
    failures=$((failures + 1))
  elif awk -v a="$acc" -v t="$TARGET" 'BEGIN { exit !(a >= t) }'; then
    printf "ok   %-10s %s%% (target %s%%) in %.1f s  [%s]\n" "$model" "$acc" "$TARGET" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$*"
  else
    printf "FAIL %-10s %s%% is below the %s%% target  [%s]\n" "$model" "$acc" "$TARGET" "$*"
    failures=$((failures + 1))
  fi
}

check mnist-cnn --optimizer adam --lr 0.003 --batch 16 --schedule cosine --seed 1
check mnist-mlp --optimizer adam --lr 0.003 --batch 16 --schedule cosine --seed 1

[ $failures -eq 0 ] || exit 1
