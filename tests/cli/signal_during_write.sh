#!/usr/bin/env bash
# signal_during_write.sh MESHSIM SIGNAL DIR: sends SIGNAL to meshsim while it
# writes a large trace into DIR and checks that it ended by the signal and
# left no file behind, partial or whole. Exit 0 when so.
set -u
meshsim=$1 sig=$2 dir=$3
"$meshsim" pipeline --model gpt3-175b --topology dgx-h100 --hosts 128 --fabric rail --dp 8 --tp 8 --pp 16 \
  --microbatches 64 --schedule 1f1b --trace "$dir/iter.json" > /dev/null 2>&1 &
pid=$!
# The partial file appears when the simulation is done and writing starts.
for _ in $(seq 2400); do
  compgen -G "$dir/iter.json.part-*" > /dev/null && break
  sleep 0.025
done
compgen -G "$dir/iter.json.part-*" > /dev/null || { echo "no partial file seen"; exit 1; }
kill "-$sig" "$pid"
wait "$pid"
status=$?
echo "exit status $status"
left=$(ls -A "$dir")
[ -z "$left" ] || { echo "left behind: $left"; exit 1; }
[ "$status" -gt 128 ] || { echo "meshsim did not end by the signal"; exit 1; }
echo "nothing left behind"
