#!/usr/bin/env bash
# setup.sh - installs what the build and the tests need, when missing:
# Debian packages (compilers, wasm sysroot, test framework, BLAS, browser,
# data; clang-19 compiles the relaxed-SIMD kernels: tools/relaxed_simd.mk;
# gcc-multilib, lib32stdc++-12-dev and qemu-user build and run the 32-bit
# fuzzers of tests/fuzz/fuzz.mk; python3-venv and pkgconf: the venv and
# pkg-config installs of tests/cli/test_install.sh; python3-jsonschema: the
# validator of tests/python/test_json_schema.py)
# and the npm packages of package-lock.json.  Idempotent; takes well
# under a second when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(clang clang-19 lld binaryen wasi-libc libclang-rt-14-dev libclang-rt-14-dev-wasm32 libcmocka-dev libopenblas-dev zlib1g-dev dataset-fashion-mnist make gcc nodejs python3 python3-venv pkgconf openssl chromium python3-numpy coturn gcc-multilib lib32stdc++-12-dev qemu-user tmux python3-jsonschema)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages: reinstall only when package-lock.json changed since the last install.
stamp=node_modules/.rlx-setup-stamp
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
