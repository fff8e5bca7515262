#!/usr/bin/env bash
# test_cli.sh - the rlx command-line tool (build/rlx, made by `make`): every
# bad argument exits 2 with a message on stderr (never a crash), `info`
# describes the models, a short training run prints a falling loss and a
# test accuracy, synthetic training and `bench` run.  About 10 s.
#   tests/cli/test_cli.sh [path/to/rlx]
set -u
cd "$(dirname "$0")/../.."
RLX=${1:-build/rlx}
if [ ! -x "$RLX" ]; then
  echo "test_cli: $RLX is missing: run make first" >&2
  exit 1
fi

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_usage DESCRIPTION ARGS...: exit code 2 and a message naming rlx.
expect_usage() {
  local desc=$1
  shift
  "$RLX" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ]; then
    fail "$desc: 'rlx $*' exited $rc, want 2 ($(head -c 300 "$tmp/err"))"
  elif ! grep -q "rlx" "$tmp/err"; then
    fail "$desc: 'rlx $*' printed no message on stderr"
  fi
}

# expect_message DESCRIPTION PATTERN ARGS...: exit 2 and stderr matching PATTERN.
expect_message() {
  local desc=$1 pattern=$2
  shift 2
  expect_usage "$desc" "$@"
  grep -qE -- "$pattern" "$tmp/err" || fail "$desc: stderr lacks /$pattern/: $(head -c 300 "$tmp/err")"
}

# ---- bad usage -----------------------------------------------------------------
expect_usage "no command"
expect_message "unknown command" "unknown command 'fly'" fly
expect_message "train without a model" "--model is required" train
expect_message "unknown model" "unknown model 'nope'.*mnist-cnn" train --model nope
expect_message "model without value" "--model needs a value" train --model
expect_message "model followed by option" "--model needs a value" train --model --epochs 1
expect_message "epochs without value" "--epochs needs a value" train --model mnist-cnn --epochs
expect_message "negative epochs" "--epochs must be" train --model mnist-cnn --epochs -1
expect_message "zero epochs" "--epochs must be" train --model mnist-cnn --epochs 0
expect_message "epochs not a number" "--epochs must be.*'abc'" train --model mnist-cnn --epochs abc
expect_message "epochs with junk" "--epochs must be" train --model mnist-cnn --epochs 2x
expect_message "huge epochs" "--epochs must be" train --model mnist-cnn --epochs 99999999999999999999
expect_message "negative batch" "--batch must be" train --model mnist-cnn --batch -5
expect_message "zero batch" "--batch must be" train --model mnist-cnn --batch=0
expect_message "negative lr" "--lr must be" train --model mnist-cnn --lr -0.1
expect_message "zero lr" "--lr must be" train --model mnist-cnn --lr 0
expect_message "nan lr" "--lr must be" train --model mnist-cnn --lr nan
expect_message "negative limit" "--limit must be" train --model mnist-cnn --limit -3
expect_message "negative seed" "--seed must be" train --model mnist-cnn --seed -1
expect_message "unknown optimizer" "unknown optimizer 'rmsprop'" train --model mnist-cnn --optimizer rmsprop
expect_message "unknown schedule" "unknown schedule" train --model mnist-cnn --schedule steps
expect_message "unknown option" "unknown option '--fast'" train --model mnist-cnn --fast
expect_message "stray argument" "unexpected argument 'extra'" train --model mnist-cnn extra
expect_message "missing data" "$tmp/nowhere" train --model mnist-mlp --data "$tmp/nowhere"
mkdir -p "$tmp/corrupt"
printf 'not an idx file at all' >"$tmp/corrupt/train-images-idx3-ubyte"
printf 'nor this' >"$tmp/corrupt/train-labels-idx1-ubyte"
expect_message "corrupt data" "bad magic" train --model mnist-cnn --data "$tmp/corrupt"
head -c 5000 /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz >"$tmp/corrupt/train-images-idx3-ubyte.gz" 2>/dev/null &&
  cp /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz "$tmp/corrupt/" 2>/dev/null &&
  expect_message "truncated data" "truncated|gzip" train --model mnist-cnn --data "$tmp/corrupt"
expect_message "synthetic limit too large" "--limit 100000000 is above" train --model resnet --limit 100000000
expect_message "batch above the samples" "--batch 64 is larger than the 50" train --model mnist-mlp --limit 50 --batch 64
expect_message "info of an unknown model" "unknown model" info nope
expect_message "info with two models" "at most one model" info mnist-cnn mnist-mlp
expect_message "info with an option" "unknown option" info --all
expect_message "bench of an unknown model" "unknown model" bench --model nope
expect_message "bench with zero steps" "--steps must be" bench --steps 0
expect_message "bench with negative batch" "--batch must be" bench --batch -1
expect_message "bench steps without value" "--steps needs a value" bench --steps

# ---- help and info ---------------------------------------------------------------
"$RLX" help >"$tmp/out" 2>&1 || fail "rlx help exited $?"
grep -q "usage: rlx" "$tmp/out" || fail "rlx help prints no usage"
"$RLX" info mnist-cnn >"$tmp/out" 2>&1 || fail "rlx info mnist-cnn exited $?"
grep -q "5258" "$tmp/out" || fail "rlx info mnist-cnn does not show 5258 params: $(cat "$tmp/out")"
grep -q "conv1_w.*\[8, 1, 3, 3\].*72" "$tmp/out" || fail "rlx info mnist-cnn lacks conv1_w [8, 1, 3, 3] 72"
grep -q "\[1, 28, 28\]" "$tmp/out" || fail "rlx info mnist-cnn lacks its input dims"
"$RLX" info mnist_mlp >"$tmp/out" 2>&1 || fail "rlx info mnist_mlp (alias) exited $?"
grep -q "101770" "$tmp/out" || fail "rlx info mnist-mlp does not show 101770 params"
[ "$("$RLX" info | grep -c "total:")" -eq 4 ] || fail "rlx info does not list the four models"

# ---- a short training run ----------------------------------------------------------
if "$RLX" train --model mnist-cnn --limit 2000 --epochs 1 >"$tmp/train" 2>&1; then
  losses=$(grep -oE "step [0-9]+/[0-9]+ .* loss [0-9.]+" "$tmp/train" | awk '{print $NF}')
  n=$(echo "$losses" | grep -c .)
  first=$(echo "$losses" | head -1)
  last=$(echo "$losses" | tail -1)
  if [ "$n" -lt 5 ]; then
    fail "short training printed $n progress lines: $(cat "$tmp/train")"
  elif ! awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.8 * a) }'; then
    fail "the loss does not fall ($first -> $last)"
  fi
  acc=$(grep -oE "test accuracy: [0-9.]+%" "$tmp/train" | grep -oE "[0-9.]+")
  if [ -z "$acc" ]; then
    fail "short training printed no test accuracy: $(cat "$tmp/train")"
  elif ! awk -v a="$acc" 'BEGIN { exit !(a > 50) }'; then
    fail "short training reached only $acc% (chance is 10%)"
  fi
  grep -q "(10000)\|/10000)" "$tmp/train" || fail "the accuracy is not over the 10000 test images"
else
  fail "short training failed: $(cat "$tmp/train")"
fi

# synthetic data for the [3,32,32] models
if "$RLX" train --model cifar-cnn --limit 32 --batch 16 --epochs 1 >"$tmp/synth" 2>&1; then
  grep -q "synthetic" "$tmp/synth" || fail "cifar-cnn training does not say it uses synthetic data"
  grep -q "test accuracy" "$tmp/synth" || fail "cifar-cnn training printed no accuracy"
else
  fail "cifar-cnn synthetic training failed: $(cat "$tmp/synth")"
fi

if "$RLX" bench --model mnist-mlp --steps 3 >"$tmp/bench" 2>&1; then
  grep -qE "^mnist-mlp +[0-9.]+ +[0-9]+" "$tmp/bench" || fail "bench prints no samples/s row: $(cat "$tmp/bench")"
else
  fail "rlx bench failed: $(cat "$tmp/bench")"
fi

if [ $failures -ne 0 ]; then
  echo "test_cli: $failures failure(s)"
  exit 1
fi
echo "test_cli: all passed"
