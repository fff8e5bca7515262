#!/usr/bin/env bash
# test_cli.sh - the rlx command-line tool (build/rlx, made by `make`): every
# bad argument exits 2 with a message on stderr (never a crash), a missing
# required option is the first one of the usage line, every command answers
# --help and -h with its usage (the same lines rlx help and the errors show),
# `info` describes the models, a short training run prints a falling loss and a
# test accuracy, synthetic training and `bench` run; train and bench print
# their progress on stderr (plain lines when stderr is not a terminal,
# lines rewritten in place on one) and keep their results on stdout.
# About 15 s.
#   tests/cli/test_cli.sh [path/to/rlx]
set -u
cd "$(dirname "$0")/../.."
RLX=${1:-build/rlx}
if [ ! -x "$RLX" ]; then
  echo "test_cli: $RLX is missing: run make first" >&2
  exit 1
fi

. tests/cli/checks.sh

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
expect_message "train without a model" "--model M is required" train
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
expect_message "info with two models" "unexpected argument 'mnist-mlp'" info mnist-cnn mnist-mlp
expect_message "info with an option" "unknown option" info --all
expect_message "bench of an unknown model" "unknown model" bench --model nope
expect_message "bench with zero steps" "--steps must be" bench --steps 0
expect_message "bench with negative batch" "--batch must be" bench --batch -1
expect_message "bench steps without value" "--steps needs a value" bench --steps

# ---- missing options: the first one missing in the order of the usage line ----------
expect_message "generate without anything" "^rlx generate: --model FILE.gguf is required" generate
expect_message "generate without a model" "^rlx generate: --model FILE.gguf is required" generate --prompt hi
expect_message "generate without a prompt" "^rlx generate: give one of --prompt TEXT or --prompt-ids I,J,..$" \
  generate --model m.gguf
expect_message "generate with two prompts" "^rlx generate: give only one of --prompt TEXT or --prompt-ids" \
  generate --model m.gguf --prompt hi --prompt-ids 1,2
expect_message "tokenize without anything" "^rlx tokenize: --model FILE.gguf is required" tokenize
expect_message "tokenize without a text" "^rlx tokenize: --text TEXT is required" tokenize --model m.gguf
expect_message "next-tokens without anything" "^rlx next-tokens: --model FILE.gguf is required" next-tokens
expect_message "next-tokens without ids" "^rlx next-tokens: --ids I,J,.. is required" next-tokens --model m.gguf
expect_message "export-gguf without --out" "^rlx export-gguf: --out FILE.gguf is required" export-gguf --type f16
expect_message "make-lora without --out" "^rlx make-lora: --out FILE.gguf is required" make-lora --model m.gguf
expect_message "make-lora of a weight it cannot adapt" "--targets: 'token_embd' is not a target" \
  make-lora --model m.gguf --out a.gguf --targets attn_q,token_embd
expect_message "make-lora of a quantized type" "--type must be f32 or f16 .got 'q8_0'" \
  make-lora --model m.gguf --out a.gguf --type q8_0
expect_message "make-lora of no model" "m.gguf" make-lora --model m.gguf --out "$tmp/a.gguf"
expect_message "a bad --lora scale" "--lora must be FILE or FILE:SCALE" generate --model m.gguf --prompt x --lora a.gguf:big
expect_message "gguf-info without a file" "^rlx gguf-info: FILE.gguf is required" gguf-info
expect_message "gguf-info with two files" "unexpected argument 'b.gguf'" gguf-info a.gguf b.gguf
expect_message "unknown option of generate" "unknown option '--temp'" generate --model m.gguf --temp 1
# the usage lines under the message are those of --help
"$RLX" generate --model m.gguf 2>"$tmp/err"
"$RLX" generate --help >"$tmp/help"
usage_lines=$(sed -n '/^usage: rlx generate/,/^(run /p' "$tmp/err" | sed '$d')
[ -n "$usage_lines" ] && [ "$usage_lines" = "$(sed -n '1,/^$/p' "$tmp/help" | sed '$d')" ] ||
  fail "the usage under a missing-option message is not the one of --help: $(cat "$tmp/err")"

# ---- help: rlx help, and --help / -h on every command it lists -------------------------
"$RLX" help >"$tmp/out" 2>"$tmp/err" || fail "rlx help exited $?"
grep -q "usage: rlx" "$tmp/out" || fail "rlx help prints no usage"
[ -s "$tmp/err" ] && fail "rlx help wrote to stderr: $(cat "$tmp/err")"
"$RLX" --help >"$tmp/out2" 2>&1 && cmp -s "$tmp/out" "$tmp/out2" || fail "rlx --help is not rlx help"
commands=$(sed -n 's/^  \([a-z][a-z-]*\)\( .*\)\{0,1\}$/\1/p' "$tmp/out")
for c in train info bench generate chat tokenize next-tokens gguf-info export-gguf make-lora export-lora finetune perplexity; do
  echo "$commands" | grep -qx "$c" || fail "rlx help does not list $c: $(cat "$tmp/out")"
done
for c in $commands; do
  for flag in --help -h; do
    if "$RLX" "$c" $flag >"$tmp/h.out" 2>"$tmp/h.err"; then
      head -1 "$tmp/h.out" | grep -q "^usage: rlx $c\b" || fail "rlx $c $flag: no usage line first: $(head -3 "$tmp/h.out")"
      [ -s "$tmp/h.err" ] && fail "rlx $c $flag wrote to stderr: $(cat "$tmp/h.err")"
    else
      fail "rlx $c $flag exited $?: $(cat "$tmp/h.err")"
    fi
  done
  cmp -s "$tmp/h.out" <("$RLX" help "$c" 2>&1) || fail "rlx help $c differs from rlx $c -h"
  # rlx help shows the same usage pieces (its lines wrap at other places)
  mine=$(sed -n '1,/^$/p' "$tmp/h.out" | sed "s/^usage: rlx $c//" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
  listed=$(sed -n "/^  $c\( \|\$\)/,/^        [a-z]/p" "$tmp/out" | sed '$d' | sed "s/^  $c//" | tr -s ' \n' ' ' |
           sed 's/^ //; s/ $//')
  [ "$mine" = "$listed" ] || fail "rlx $c: the usage of --help ('$mine') is not the one rlx help lists ('$listed')"
  # every option of the usage line is explained under options:
  for o in $(echo "$mine" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    grep -qE -- "^  (-[a-z], )?$o( |$)" "$tmp/h.out" || fail "rlx $c --help: $o is not explained"
  done
done
grep -q "^  -m, --model M " <("$RLX" train --help) || fail "rlx train --help does not show -m"
# --help is an option only where an option may stand: as a value it is a value
lm=build/lm/llama-f32.gguf
if [ -f "$lm" ]; then
  "$RLX" tokenize --model "$lm" --text --help --text -h >"$tmp/out" 2>"$tmp/err" || fail "tokenize --text --help: $(cat "$tmp/err")"
  [ "$(grep -c '^\[' "$tmp/out")" -eq 2 ] || fail "tokenize --text --help --text -h: not two lines of ids: $(cat "$tmp/out")"
fi
# --threads: a count from 1 to 256 on the commands that compute; the ids
# and logits do not depend on it
for c in train generate next-tokens chat finetune perplexity bench; do
  expect_message "$c --threads 0" "--threads must be a whole number from 1 to 256" $c --threads 0
  expect_message "$c --threads -2" "--threads must be" $c --threads -2
  expect_message "$c --threads 1000" "--threads must be" $c --threads 1000
done
if [ -f "$lm" ]; then
  for t in 1 2 3; do
    "$RLX" generate --model "$lm" --prompt "The small river" --max-tokens 6 --ids --threads $t >"$tmp/gen$t" 2>"$tmp/err" ||
      fail "generate --threads $t: $(cat "$tmp/err")"
    "$RLX" next-tokens --model "$lm" --ids 1,5,9 --follow 7,8 --threads $t >"$tmp/next$t" 2>"$tmp/err" ||
      fail "next-tokens --threads $t: $(cat "$tmp/err")"
  done
  cmp -s "$tmp/gen1" "$tmp/gen2" && cmp -s "$tmp/gen1" "$tmp/gen3" || fail "generate differs between 1, 2 and 3 threads"
  cmp -s "$tmp/next1" "$tmp/next2" && cmp -s "$tmp/next1" "$tmp/next3" || fail "next-tokens differs between 1, 2 and 3 threads"
fi
# A model split as llama.cpp's gguf-split splits it (build/gguf_split): --model
# names its first part, the others are read beside it; a missing part is named
if [ -f "$lm" ] && [ -x build/gguf_split ]; then
  build/gguf_split "$lm" 3 "$tmp/split" || fail "build/gguf_split $lm 3 exited $?"
  "$RLX" generate --model "$tmp/split-00001-of-00003.gguf" --prompt "The small river" --max-tokens 6 --ids --threads 1 \
    >"$tmp/gensplit" 2>"$tmp/err" || fail "generate of a split model: $(cat "$tmp/err")"
  cmp -s "$tmp/gen1" "$tmp/gensplit" || fail "generate of the split model differs from the whole file's"
  rm "$tmp/split-00003-of-00003.gguf"
  expect_message "a split model without its last part" "cannot open '.*split-00003-of-00003\.gguf'.*part 3 of the 3 that" \
    generate --model "$tmp/split-00001-of-00003.gguf" --prompt x
fi
expect_message "help of an unknown command" "unknown command 'fly'" help fly
"$RLX" info mnist-cnn >"$tmp/out" 2>&1 || fail "rlx info mnist-cnn exited $?"
grep -q "5258" "$tmp/out" || fail "rlx info mnist-cnn does not show 5258 params: $(cat "$tmp/out")"
grep -q "conv1_w.*\[8, 1, 3, 3\].*72" "$tmp/out" || fail "rlx info mnist-cnn lacks conv1_w [8, 1, 3, 3] 72"
grep -q "\[1, 28, 28\]" "$tmp/out" || fail "rlx info mnist-cnn lacks its input dims"
"$RLX" info mnist_mlp >"$tmp/out" 2>&1 || fail "rlx info mnist_mlp (alias) exited $?"
grep -q "101770" "$tmp/out" || fail "rlx info mnist-mlp does not show 101770 params"
[ "$("$RLX" info | grep -c "total:")" -eq 4 ] || fail "rlx info does not list the four models"

# ---- a short training run ----------------------------------------------------------
if "$RLX" train --model mnist-cnn --limit 2000 --epochs 1 >"$tmp/train.out" 2>"$tmp/train.err"; then
  cat "$tmp/train.out" "$tmp/train.err" >"$tmp/train"
  # progress on stderr: the phases, and every tenth of the epoch: step, elapsed, samples/s, loss
  for pattern in "^loading Fashion-MNIST from " "^compiling the training step" "^evaluating on 10000 test samples" \
    "^epoch 1/1  step 12/125  elapsed [0-9.]+ s  [0-9]+ samples/s  loss [0-9.]+$" "^epoch 1/1  step 125/125 "; do
    grep -qE "$pattern" "$tmp/train.err" || fail "train: stderr lacks /$pattern/: $(head -c 600 "$tmp/train.err")"
  done
  [ "$(grep -c "  step " "$tmp/train.err")" -eq 11 ] || fail "train: not 11 progress lines (every 12 of 125 steps, and the last)"
  grep -q $'\r' "$tmp/train.err" && fail "train: carriage returns on stderr that is not a terminal"
  # results on stdout, no progress there
  for pattern in "^model mnist-cnn " "^optimizer adam" "^epoch 1/1 done: mean loss" "^test accuracy: " "^time: training"; do
    grep -qE "$pattern" "$tmp/train.out" || fail "train: stdout lacks /$pattern/: $(head -c 600 "$tmp/train.out")"
  done
  grep -qE "  step |^compiling|^evaluating" "$tmp/train.out" && fail "train: progress lines on stdout: $(head -c 600 "$tmp/train.out")"
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
  fail "short training failed: $(cat "$tmp/train.out" "$tmp/train.err")"
fi

# --log-every N; two epochs; stdout and stderr into one file keep their order
if "$RLX" train --model mnist-mlp --limit 400 --epochs 2 --log-every 10 >"$tmp/every" 2>&1; then
  [ "$(grep -c "^epoch 2/2  step " "$tmp/every")" -eq 3 ] || fail "--log-every 10 over 25 steps: not 3 lines in epoch 2: $(cat "$tmp/every")"
  order=$(grep -E "^(optimizer|compiling|epoch 1/2  step 10/|epoch 1/2 done|epoch 2/2  step 10/|evaluating|test accuracy)" "$tmp/every" | cut -c1-10 | tr '\n' '|')
  [ "$order" = "optimizer |compiling |epoch 1/2 |epoch 1/2 |epoch 2/2 |evaluating|test accur|" ] || fail "train 2>&1: lines out of order: $order"
else
  fail "train --log-every failed: $(cat "$tmp/every")"
fi
expect_message "log-every zero" "--log-every must be" train --model mnist-mlp --log-every 0

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

# every model: the table alone on stdout; on stderr each model (k/4) and phase, in order
if "$RLX" bench --steps 2 --batch 4 >"$tmp/bench.out" 2>"$tmp/bench.err"; then
  [ "$(grep -cE "^(mnist-cnn|mnist-mlp|cifar-cnn|resnet) +[0-9.]+ +[0-9]+$" "$tmp/bench.out")" -eq 4 ] ||
    fail "bench: not 4 rows on stdout: $(cat "$tmp/bench.out")"
  [ "$(wc -l <"$tmp/bench.out")" -eq 6 ] || fail "bench: stdout is not the title, the header and 4 rows: $(cat "$tmp/bench.out")"
  want="bench 1/4 mnist-cnn: compiling|bench 1/4 mnist-cnn: warm-up, 2 steps|bench 1/4 mnist-cnn: timing 2 steps|"
  want+="bench 1/4 mnist-cnn: done, 2 steps in |bench 2/4 mnist-mlp: compiling|"
  got=$(grep -E "^bench [12]/4" "$tmp/bench.err" | sed -E 's/ in [0-9.]+ s$/ in /' | head -5 | tr '\n' '|')
  [ "$got" = "$want" ] || fail "bench: progress lines on stderr: $got"
  grep -qE "^bench 4/4 resnet: done, 2 steps in [0-9.]+ s$" "$tmp/bench.err" || fail "bench: no line for the last model: $(cat "$tmp/bench.err")"
  grep -q $'\r' "$tmp/bench.err" && fail "bench: carriage returns on stderr that is not a terminal"
else
  fail "rlx bench (every model) failed: $(cat "$tmp/bench.out" "$tmp/bench.err")"
fi
# stderr a terminal (util-linux script): one line rewritten in place, cleared before the row
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "$RLX bench --model mnist-mlp --steps 2" /dev/null >"$tmp/tty" 2>&1 || fail "bench on a terminal failed: $(cat "$tmp/tty")"
  grep -q $'\r\033\\[Kbench 1/1 mnist-mlp: timing 2 steps' "$tmp/tty" || fail "bench on a terminal: no in-place progress: $(od -c "$tmp/tty" | head)"
  grep -qE $'\r\033\\[Kmnist-mlp +[0-9.]+ +[0-9]+' "$tmp/tty" || fail "bench on a terminal: the row does not replace the progress line"
fi

finish test_cli
