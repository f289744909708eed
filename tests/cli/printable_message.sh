#!/usr/bin/env bash
# printable_message.sh MESHSIM ARG...: `MESHSIM ARG...` must fail with exit
# 2 and a message that is valid UTF-8 and shows the byte 0xFF as \xFF. An
# ARG of @FF@ stands for that byte itself (so that a test file need not hold
# the raw byte); otherwise the byte comes from a file the arguments name.
set -u
bin=$1
shift
args=()
for a in "$@"; do
  if [ "$a" = @FF@ ]; then args+=($'\xff'); else args+=("$a"); fi
done
out=$("$bin" "${args[@]}" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" = 2 ] || { echo "exit code $rc, expected 2"; exit 1; }
grep -qF '\xFF' <<<"$out" || { echo 'the message does not show the byte as \xFF'; exit 1; }
iconv -f UTF-8 -t UTF-8 <<<"$out" >/dev/null || { echo "the message is not valid UTF-8"; exit 1; }
