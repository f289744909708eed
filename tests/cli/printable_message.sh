#!/usr/bin/env bash
# printable_message.sh MESHSIM FILE: `topo show FILE` must fail with exit 2
# and a message that is valid UTF-8 and shows FILE's byte 0xFF as \xFF
# (FILE holds a JSON syntax error at that byte).
set -u
out=$("$1" topo show "$2" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" = 2 ] || { echo "exit code $rc, expected 2"; exit 1; }
grep -qF '\xFF' <<<"$out" || { echo 'the message does not show the byte as \xFF'; exit 1; }
iconv -f UTF-8 -t UTF-8 <<<"$out" >/dev/null || { echo "the message is not valid UTF-8"; exit 1; }
