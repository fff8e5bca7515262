# checks.sh - what the CLI test scripts share, sourced after they cd to the
# repository root: fail MESSAGE counts a failure and prints it, $tmp is a
# directory removed at exit, and finish NAME ends the script (status 1
# after any failure).
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

finish() {
  if [ $failures -ne 0 ]; then
    echo "$1: $failures failure(s)"
    exit 1
  fi
  echo "$1: all passed"
}
