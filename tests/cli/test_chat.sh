#!/usr/bin/env bash
# test_chat.sh - rlx chat on the build/lm fixtures: bad arguments exit 2
# with a message; --print-prompt prints the template's rendering exactly;
# --messages answers once, as the first turn read from stdin answers the
# same conversation (greedy); turns from stdin reuse the KV cache (each
# turn's figures on stderr: the next prompt holds all of the previous one
# from the cache) and /regen answers again from the cache; --overflow drop
# keeps a long conversation within a small context where refuse does not;
# --lora changes the answer (and at scale 0 does not), --xq8 runs;
# --grammar FILE (of chat and generate) gives only text of the grammar: a
# choice of words at any seed, a fixed string exactly, and a malformed
# grammar, a missing file or two of them refused (exit 2, the parser's
# message) before the model is read; --json-schema FILE likewise (an enum
# of words at any seed, an object with a const member from chat, bad
# schemas refused with the converter's message); and an interactive session under tmux
# (a terminal: the "> " prompt).
# A few seconds.
#   tests/cli/test_chat.sh [path/to/rlx]
set -u
cd "$(dirname "$0")/../.."
RLX=${1:-build/rlx}
MODEL=build/lm/qwen2-q8_0.gguf
for f in "$RLX" "$MODEL"; do
  [ -e "$f" ] || { echo "test_chat: $f is missing: run make build/rlx lm-fixtures first" >&2; exit 1; }
done

. tests/cli/checks.sh

# expect_message DESCRIPTION PATTERN ARGS...: exit 2 and stderr matching PATTERN.
expect_message() {
  local desc=$1 pattern=$2
  shift 2
  "$RLX" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  [ $rc -eq 2 ] || fail "$desc: 'rlx $*' exited $rc, want 2 ($(head -c 300 "$tmp/err"))"
  grep -qE -- "$pattern" "$tmp/err" || fail "$desc: stderr lacks /$pattern/: $(head -c 300 "$tmp/err")"
}

# ---- bad usage -------------------------------------------------------------------
expect_message "no model" "^rlx chat: --model FILE.gguf is required" chat
expect_message "unknown template" "--template vicuna is not built in \(chatml, llama3" chat --model "$MODEL" --template vicuna
expect_message "bad overflow" "--overflow must be refuse or drop" chat --model "$MODEL" --overflow wrap
expect_message "bad temperature" "--temperature must be a number" chat --model "$MODEL" --temperature hot
expect_message "missing file" "--messages /no/such.json: cannot read" chat --model "$MODEL" --messages /no/such.json
printf '[{"role": "user", "content": "hi"}' >"$tmp/broken.json"
expect_message "broken JSON" "--messages .*broken.json: messages JSON: .*expected at byte" chat --model "$MODEL" --messages "$tmp/broken.json"
printf '[{"role": "tool", "content": "hi"}]' >"$tmp/role.json"
expect_message "unknown role" "message 0 has role 'tool'" chat --model "$MODEL" --messages "$tmp/role.json"
printf '[{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]' >"$tmp/sys.json"
expect_message "two system prompts" "give one" chat --model "$MODEL" --system x --messages "$tmp/sys.json"
printf '[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]' >"$tmp/ends.json"
expect_message "no user turn to answer" "last message must be a user message" chat --model "$MODEL" --messages "$tmp/ends.json"
expect_message "not a model" "loading the model" chat --model Makefile --messages "$tmp/sys.json"

# ---- --print-prompt --------------------------------------------------------------------
printf '[{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Bye"}]' >"$tmp/conv.json"
"$RLX" chat --model "$MODEL" --system "Be brief." --messages "$tmp/conv.json" --print-prompt >"$tmp/prompt" 2>"$tmp/err" ||
  fail "--print-prompt exited $?: $(cat "$tmp/err")"
printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n' >"$tmp/want"
cmp -s "$tmp/prompt" "$tmp/want" || fail "--print-prompt printed: $(od -c "$tmp/prompt" | head -5)"
"$RLX" chat --model "$MODEL" --template llama3 --messages "$tmp/conv.json" --print-prompt >"$tmp/prompt" 2>"$tmp/err"
grep -q "<|start_header_id|>user<|end_header_id|>$" "$tmp/prompt" || fail "--template llama3: $(head -c 300 "$tmp/prompt")"

# ---- --messages answers once, as the first stdin turn does ------------------------------
printf '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]' >"$tmp/one.json"
"$RLX" chat --model "$MODEL" --messages "$tmp/one.json" --max-tokens 8 >"$tmp/once" 2>"$tmp/once.err" ||
  fail "--messages exited $?: $(cat "$tmp/once.err")"
grep -q '^\[template: chatml: the file has no tokenizer.chat_template' "$tmp/once.err" || fail "no template line: $(cat "$tmp/once.err")"
grep -qE '^\[prompt: [0-9]+ tokens, 0 from the cache; first token after [0-9.]+ ms; generated: 8 tokens' "$tmp/once.err" ||
  fail "--messages figures: $(cat "$tmp/once.err")"
[ "$(wc -l <"$tmp/once")" -ge 1 ] || fail "--messages printed no reply"

# ---- --lora and --xq8 reach the model ------------------------------------------------------
"$RLX" make-lora --model "$MODEL" --out "$tmp/adapter.gguf" --seed 3 >/dev/null 2>"$tmp/err" || fail "make-lora: $(cat "$tmp/err")"
"$RLX" chat --model "$MODEL" --messages "$tmp/one.json" --max-tokens 8 --lora "$tmp/adapter.gguf:4" >"$tmp/lora" 2>"$tmp/err" ||
  fail "--lora exited $?: $(cat "$tmp/err")"
cmp -s "$tmp/lora" "$tmp/once" && fail "--lora (scale 4) answered as the plain model"
"$RLX" chat --model "$MODEL" --messages "$tmp/one.json" --max-tokens 8 --lora "$tmp/adapter.gguf:0" >"$tmp/lora0" 2>"$tmp/err" ||
  fail "--lora :0 exited $?: $(cat "$tmp/err")"
cmp -s "$tmp/lora0" "$tmp/once" || fail "--lora at scale 0 answered otherwise than the plain model"
expect_message "missing adapter" "loading the model" chat --model "$MODEL" --messages "$tmp/one.json" --lora /no/such.gguf
"$RLX" chat --model "$MODEL" --messages "$tmp/one.json" --max-tokens 4 --xq8 >"$tmp/xq8" 2>"$tmp/err" ||
  fail "--xq8 exited $?: $(cat "$tmp/err")"

# ---- turns from stdin keep the cache ----------------------------------------------------
printf 'Hello there\nTell me more\n/regen\nAnd then?\n' |
  "$RLX" chat --model "$MODEL" --system "Be brief." --max-tokens 8 >"$tmp/turns" 2>"$tmp/turns.err" ||
  fail "stdin turns exited $?: $(cat "$tmp/turns.err")"
head -c "$(wc -c <"$tmp/once")" "$tmp/turns" | cmp -s - "$tmp/once" || fail "the first turn differs from --messages"
grep '^\[prompt:' "$tmp/turns.err" | sed -E 's/^\[prompt: ([0-9]+) tokens, ([0-9]+) from.*/\1 \2/' >"$tmp/figs"
[ "$(wc -l <"$tmp/figs")" -eq 4 ] || fail "want 4 turns' figures: $(cat "$tmp/turns.err")"
read -r p1 c1 < <(sed -n 1p "$tmp/figs")
read -r p2 c2 < <(sed -n 2p "$tmp/figs")
read -r p3 c3 < <(sed -n 3p "$tmp/figs")
read -r p4 c4 < <(sed -n 4p "$tmp/figs")
[ "$c1" -eq 0 ] || fail "turn 1 found $c1 tokens in an empty cache"
[ "$c2" -gt "$p1" ] || fail "turn 2 reused $c2 tokens, not all of turn 1's $p1-token prompt and its reply"
[ "$p3" -eq "$p2" ] && [ "$c3" -eq $((p2 - 1)) ] || fail "/regen: prompt $p3 with $c3 cached, want $p2 with $((p2 - 1))"
[ "$c4" -gt "$p3" ] || fail "turn 4 reused $c4 tokens of a $p3-token prompt"
sed -n 2p "$tmp/turns" >"$tmp/r2"
sed -n 3p "$tmp/turns" >"$tmp/r3"
cmp -s "$tmp/r2" "$tmp/r3" || fail "/regen gave another greedy reply: $(cat "$tmp/r2") / $(cat "$tmp/r3")"

# ---- a full context: refuse or drop -----------------------------------------------------
long="Tell me about rivers, lakes, forests, deserts and every sea there is"
printf '%s\n' "$long" "$long" "$long" "$long" |
  "$RLX" chat --model "$MODEL" --system "Be brief." --max-tokens 8 --ctx 96 >/dev/null 2>"$tmp/refuse.err"
grep -q "the context holds 96: start a new conversation" "$tmp/refuse.err" || fail "refuse: $(cat "$tmp/refuse.err")"
printf '%s\n' "$long" "$long" "$long" "$long" |
  "$RLX" chat --model "$MODEL" --system "Be brief." --max-tokens 8 --ctx 96 --overflow drop >/dev/null 2>"$tmp/drop.err" ||
  fail "drop exited $?"
[ "$(grep -c '^\[prompt:' "$tmp/drop.err")" -eq 4 ] || fail "drop: want 4 answered turns: $(cat "$tmp/drop.err")"
grep -q "oldest turns dropped" "$tmp/drop.err" || fail "drop: no turn was dropped: $(cat "$tmp/drop.err")"

# ---- --grammar FILE ----
printf 'root ::= ("red" | "green" | "blue") "."  # a colour\n' >"$tmp/colour.gbnf"
for seed in 1 2 3 4 5; do
  "$RLX" generate --model "$MODEL" --prompt "My favourite colour is" --temperature 1.2 --seed $seed \
    --grammar "$tmp/colour.gbnf" >"$tmp/out" 2>"$tmp/err" || fail "generate --grammar: $(cat "$tmp/err")"
  grep -qxE '(red|green|blue)\.' "$tmp/out" || fail "generate --grammar seed $seed: '$(cat "$tmp/out")'"
  grep -q 'stopped by: end-of-generation token' "$tmp/err" || fail "generate --grammar seed $seed: $(cat "$tmp/err")"
done

printf 'root ::= "{\\"ok\\": true}"\n' >"$tmp/fixed.gbnf"
echo '[{"role": "user", "content": "Say it."}]' >"$tmp/messages.json"
"$RLX" chat --model "$MODEL" --messages "$tmp/messages.json" --temperature 0.8 --grammar "$tmp/fixed.gbnf" \
  >"$tmp/out" 2>"$tmp/err" || fail "chat --grammar: $(cat "$tmp/err")"
[ "$(cat "$tmp/out")" = '{"ok": true}' ] || fail "chat --grammar: '$(cat "$tmp/out")'"

printf 'root ::= "a" thing\n' >"$tmp/bad.gbnf"
expect_message "an undefined rule" "^rlx generate: --grammar $tmp/bad.gbnf: grammar: line 1, column 14: undefined rule 'thing'$" \
  generate --model missing.gguf --prompt x --grammar "$tmp/bad.gbnf"
expect_message "chat: left recursion" "^rlx chat: --grammar .*: grammar: rule 'root' can reach itself" \
  chat --model missing.gguf --grammar <(printf 'root ::= root "a" | "b"\n')
expect_message "a missing file" "^rlx generate: --grammar $tmp/none.gbnf: cannot read the file$" \
  generate --model missing.gguf --prompt x --grammar "$tmp/none.gbnf"
expect_message "two grammars" "^rlx generate: give one of --grammar, --json-schema$" \
  generate --model missing.gguf --prompt x --grammar "$tmp/colour.gbnf" --grammar "$tmp/colour.gbnf"

# ---- --json-schema FILE ----
echo '{"enum": ["red", "green", "blue"]}' >"$tmp/colour.json"
for seed in 1 2 3; do
  "$RLX" generate --model "$MODEL" --prompt "My favourite colour is" --temperature 1.2 --seed $seed \
    --json-schema "$tmp/colour.json" >"$tmp/out" 2>"$tmp/err" || fail "generate --json-schema: $(cat "$tmp/err")"
  /usr/bin/python3 -c 'import json, sys; assert json.load(open(sys.argv[1])) in ("red", "green", "blue")' "$tmp/out" ||
    fail "generate --json-schema seed $seed: '$(cat "$tmp/out")'"
done
echo '{"type": "object", "properties": {"ok": {"const": true}}, "required": ["ok"]}' >"$tmp/ok.json"
"$RLX" chat --model "$MODEL" --messages "$tmp/messages.json" --temperature 0.8 --json-schema "$tmp/ok.json" \
  >"$tmp/out" 2>"$tmp/err" || fail "chat --json-schema: $(cat "$tmp/err")"
/usr/bin/python3 -c 'import json, sys; assert json.load(open(sys.argv[1])) == {"ok": True}' "$tmp/out" ||
  fail "chat --json-schema: '$(cat "$tmp/out")'"
echo '{"type": "string", "pattern": "^a"}' >"$tmp/bad.json"
expect_message "an unsupported keyword" "^rlx generate: --json-schema $tmp/bad.json: json schema: /pattern: 'pattern' is not supported$" \
  generate --model missing.gguf --prompt x --json-schema "$tmp/bad.json"
expect_message "chat: malformed JSON" "^rlx chat: --json-schema .*: json schema: a value expected at byte 9$" \
  chat --model missing.gguf --json-schema <(printf '{"type": ')
expect_message "a grammar and a schema" "^rlx generate: give one of --grammar, --json-schema$" \
  generate --model missing.gguf --prompt x --grammar "$tmp/colour.gbnf" --json-schema "$tmp/colour.json"


# ---- interactive, on a terminal (tmux) -----------------------------------------------------
if command -v tmux >/dev/null; then
  sock="$tmp/tmux.sock"
  tmux -S "$sock" new-session -d -x 200 -y 50 "$RLX chat --model $MODEL --max-tokens 4 2>&1; echo EXITED \$?; sleep 5"
  for i in $(seq 50); do tmux -S "$sock" capture-pane -p | grep -q '^>' && break; sleep 0.1; done
  tmux -S "$sock" send-keys "Hello" Enter
  for i in $(seq 50); do [ "$(tmux -S "$sock" capture-pane -p | grep -c '^\[prompt:')" -ge 1 ] && break; sleep 0.1; done
  tmux -S "$sock" send-keys "/quit" Enter
  for i in $(seq 50); do tmux -S "$sock" capture-pane -p | grep -q 'EXITED' && break; sleep 0.1; done
  tmux -S "$sock" capture-pane -p >"$tmp/pane"
  tmux -S "$sock" kill-server 2>/dev/null
  grep -q '^> Hello' "$tmp/pane" || fail "tmux: no '> ' prompt with the turn: $(cat "$tmp/pane")"
  grep -q '^\[prompt: [0-9]* tokens, 0 from the cache' "$tmp/pane" || fail "tmux: no figures: $(cat "$tmp/pane")"
  grep -q 'EXITED 0' "$tmp/pane" || fail "tmux: /quit did not end with 0: $(cat "$tmp/pane")"
else
  fail "tmux is missing (make setup installs it)"
fi

finish test_chat
