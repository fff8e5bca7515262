#!/usr/bin/env bash
# llamacpp_vulkan_carry.sh - packs llama.cpp's prebuilt Vulkan build
# (node-llama-cpp with @node-llama-cpp/linux-x64-vulkan, the version
# tests/llama_ref pins) into .gpu/llref.tar.xz (about 14 MB), small enough
# to travel to a GPU machine with the rest of .gpu/, for
# `node bench/llm_webgpu.mjs --llamacpp` there:
#
#   bench/llamacpp_vulkan_carry.sh                 # here, once (needs npm)
#   # on the GPU machine, after `source .gpu/enter.sh`:
#   mkdir -p /tmp/llref && xz -dc .gpu/llref.tar.xz | tar -xf - -C /tmp/llref
#   RLX_LLAMA_REF=/tmp/llref node bench/llm_webgpu.mjs --type=q8_0 --llamacpp
#
# Left out: the other platforms' and the CUDA builds (hundreds of MB), the
# CPU build and node-llama-cpp's llama.cpp sources (its git bundle).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
version=$(node -p "require('$root/tests/llama_ref/package.json').dependencies['node-llama-cpp']")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root/tests/llama_ref/package.json" "$tmp/"
(cd "$tmp" && npm install --no-audit --no-fund --ignore-scripts "node-llama-cpp@$version" \
  "@node-llama-cpp/linux-x64-vulkan@$version" >/dev/null)
rm -rf "$tmp"/node_modules/@node-llama-cpp/linux-x64-cuda* "$tmp"/node_modules/@node-llama-cpp/linux-arm* \
  "$tmp"/node_modules/@node-llama-cpp/linux-x64 "$tmp"/node_modules/node-llama-cpp/llama/gitRelease.bundle \
  "$tmp"/node_modules/node-llama-cpp/llama/llama.cpp
mkdir -p "$root/.gpu"
tar -cf - -C "$tmp" node_modules package.json | xz -T2 -6 > "$root/.gpu/llref.tar.xz"
ls -l "$root/.gpu/llref.tar.xz"
