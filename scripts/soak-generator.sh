#!/usr/bin/env bash
# Soak: a generator under full REST load (and a batch client) for SOAK_DURATION (default 10m),
# sampling its resident memory every 30 s. Prints the samples and the growth after the first
# minute. Long: not part of make test.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
dur=${SOAK_DURATION:-10m}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
go build -o "$out/generator" ./services/generator/cmd/generator
(cd bench && go build -o "$out/loadgen" ./cmd/loadgen)
taskset -c 0 "$out/generator" --insecure-dev --clock-check warn --listen 127.0.0.1:7391 \
  --lease-store "sqlite:$out/leases.db" --log-level error & gen=$!
for _ in $(seq 100); do curl -fs http://127.0.0.1:7391/healthz >/dev/null 2>&1 && break; sleep 0.1; done
taskset -c 1 "$out/loadgen" -url http://127.0.0.1:7391 -mode rest -c 16 -d "$dur" > "$out/rest.json" &
taskset -c 1 "$out/loadgen" -url http://127.0.0.1:7391 -mode rest-batch -c 2 -d "$dur" > "$out/batch.json" &
secs=$(python3 -c "import re,sys; s='$dur'; m={'s':1,'m':60,'h':3600}; print(int(float(s[:-1])*m[s[-1]]))")
echo "t_s rss_kib"
samples=()
for ((t=0; t<=secs; t+=30)); do
  rss=$(awk '/VmRSS/{print $2}' "/proc/$gen/status")
  echo "$t $rss"; samples+=("$t:$rss")
  [ "$t" -lt "$secs" ] && sleep 30
done
wait %2 %3 2>/dev/null || true
echo "rest load: $(cat "$out/rest.json")"
echo "batch load: $(cat "$out/batch.json")"
python3 - "${samples[@]}" <<'PY'
import sys
s = [tuple(map(int, x.split(":"))) for x in sys.argv[1:]]
after = [r for t, r in s if t >= 60]
if after:
    print("rss max %.1f MiB; after the first minute: from %.1f to %.1f MiB (growth %.1f MiB)" % (
        max(r for _, r in s) / 1024, after[0] / 1024, after[-1] / 1024, (after[-1] - after[0]) / 1024))
PY
