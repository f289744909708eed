#!/usr/bin/env bash
# expect.sh RC [REGEX ...] -- COMMAND [ARGS ...]
# Runs COMMAND; passes when it exits with RC and its stdout+stderr match
# every REGEX (grep -E). Prints the output on failure.
set -u
want_rc=$1; shift
patterns=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do patterns+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "expect.sh: missing -- before the command" >&2; exit 1; }
shift
out=$("$@" 2>&1); rc=$?
fail=0
if [ "$rc" != "$want_rc" ]; then echo "exit code $rc, expected $want_rc"; fail=1; fi
for p in "${patterns[@]}"; do
  if ! grep -qE -- "$p" <<<"$out"; then echo "output does not match: $p"; fail=1; fi
done
if [ $fail != 0 ]; then printf -- '--- command: %s\n--- output:\n%s\n' "$*" "$out"; exit 1; fi
exit 0
