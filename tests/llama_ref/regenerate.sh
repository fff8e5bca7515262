#!/bin/sh
# regenerate.sh - rewrites tests/llama_ref/expected/*.json, llama.cpp's
# tokens and greedy generations for the small GGUF models of build/lm/
# (make lm-fixtures, tools/make_test_lm.c), and into expected_lora/ its
# greedy generations with the LoRA adapters of lora_cases.mjs (every case
# when no FIXTURE is named).  Run from anywhere; `make llama-ref` runs it.
#
# The reference package (node-llama-cpp 3.21.1, pinned by package-lock.json)
# is installed into tests/llama_ref/node_modules the first time, from the npm
# registry: only the linux-x64 CPU build of llama.cpp (optional packages
# omitted, so no CUDA or Vulkan builds; install scripts skipped, so nothing
# is downloaded or compiled after the install).
#
#   tests/llama_ref/regenerate.sh [FIXTURE ...]   (default: every build/lm/*.gguf)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

start=$(date +%s)
make --no-print-directory -j2 lm-fixtures

if [ ! -f "$here/node_modules/node-llama-cpp/package.json" ] ||
   [ ! -f "$here/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  echo "regenerate.sh: installing the reference package (node-llama-cpp 3.21.1, CPU build) into $here/node_modules"
  (cd "$here" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --omit=optional --ignore-scripts --no-audit --no-fund)
fi

mkdir -p "$here/expected"
if [ $# -gt 0 ]; then files="$*"; else files=$(ls build/lm/*.gguf); fi
failed=""
n=0
for f in $files; do
  name=$(basename "$f" .gguf)
  if node "$here/reference.mjs" "$f" "$here/expected/$name.json.tmp"; then
    mv "$here/expected/$name.json.tmp" "$here/expected/$name.json"
    n=$((n + 1))
  else
    rm -f "$here/expected/$name.json.tmp"
    failed="$failed $name"
  fi
done
if [ $# -eq 0 ]; then
  mkdir -p "$here/expected_lora"
  for name in $(node "$here/lora_cases.mjs"); do
    if node "$here/reference.mjs" --lora-case "$name" "$here/expected_lora/$name.json.tmp"; then
      mv "$here/expected_lora/$name.json.tmp" "$here/expected_lora/$name.json"
      n=$((n + 1))
    else
      rm -f "$here/expected_lora/$name.json.tmp"
      failed="$failed lora/$name"
    fi
  done
fi
echo "regenerate.sh: wrote $n reference files to tests/llama_ref/expected/ in $(( $(date +%s) - start )) s"
if [ -n "$failed" ]; then
  echo "regenerate.sh: llama.cpp could not run:$failed" >&2
  exit 1
fi
