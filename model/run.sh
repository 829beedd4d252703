#!/usr/bin/env bash
# run.sh [-DMACRO...] : compile model/lease.pml with spin and gcc in a temporary directory and run
# an exhaustive safety search (pan -E: end states are not checked, only the assertion). Prints
# pan's summary; a counterexample leaves lease.pml.trail in the printed directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
d="$(mktemp -d)"
cp "$here/lease.pml" "$d"
cd "$d"
spin -a "$@" lease.pml >/dev/null
gcc -O1 -w -DSAFETY -DHC4 -o pan pan.c
start=$(date +%s.%N)
./pan -E -m1000000 > pan.out 2>&1 || true
end=$(date +%s.%N)
grep -E "errors:|states, stored|assertion violated" pan.out || tail -3 pan.out
printf 'defines: %s  seconds: %.1f  dir: %s\n' "$*" "$(echo "$end - $start" | bc)" "$d"
