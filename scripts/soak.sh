#!/usr/bin/env bash
# Soak: each service under full load for SOAK_DURATION (default 10m each), pinned to core 0 with
# the load on core 1, sampling its resident memory every 30 s; prints the samples and the growth
# after the first minute. SOAK=generator or SOAK=public-id runs one. Long: not part of make test.
#   generator: REST load (16 connections) and a batch client (2).
#   public-id: resolves (16 connections) and new publishes (4) on Redis with appendfsync always.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
dur=${SOAK_DURATION:-10m}
which=${SOAK:-generator public-id}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -f "$out/redis.pid" ] && kill "$(cat "$out/redis.pid")" 2>/dev/null; sleep 0.3; rm -rf "$out"' EXIT
(cd bench && go build -o "$out/loadgen" ./cmd/loadgen)
secs=$(python3 -c "s='$dur'; m={'s':1,'m':60,'h':3600}; print(int(float(s[:-1])*m[s[-1]]))")
lg() { taskset -c 1 "$out/loadgen" -d "$dur" "$@"; }

# sample PID NAME: resident memory every 30 s for the run, then the summary.
sample() {
  local pid=$1 name=$2 samples=() rss
  echo "$name: t_s rss_kib"
  for ((t=0; t<=secs; t+=30)); do
    rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status")
    echo "$t $rss"; samples+=("$t:$rss")
    [ "$t" -lt "$secs" ] && sleep 30
  done
  wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null || true
  for f in "$out"/load-*.json; do echo "load ${f##*/load-}: $(cat "$f")"; done
  rm -f "$out"/load-*.json
  python3 - "$name" "${samples[@]}" <<'PY'
import sys
name, s = sys.argv[1], [tuple(map(int, x.split(":"))) for x in sys.argv[2:]]
after = [r for t, r in s if t >= 60]
if after:
    print("%s: rss max %.1f MiB; after the first minute: from %.1f to %.1f MiB (growth %.1f MiB)" % (
        name, max(r for _, r in s) / 1024, after[0] / 1024, after[-1] / 1024, (after[-1] - after[0]) / 1024))
PY
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

for svc in $which; do
  case $svc in
  generator)
    go build -o "$out/generator" ./services/generator/cmd/generator
    taskset -c 0 "$out/generator" --insecure-dev --clock-check warn --listen 127.0.0.1:7391 \
      --lease-store "sqlite:$out/leases.db" --log-level error & pid=$!
    for _ in $(seq 100); do curl -fs http://127.0.0.1:7391/healthz >/dev/null 2>&1 && break; sleep 0.1; done
    lg -url http://127.0.0.1:7391 -mode rest -c 16 > "$out/load-rest.json" &
    lg -url http://127.0.0.1:7391 -mode rest-batch -c 2 > "$out/load-batch.json" &
    sample "$pid" generator
    ;;
  public-id)
    go build -o "$out/public-id" ./services/public-id/cmd/public-id
    taskset -c 0 redis-server --port 7394 --bind 127.0.0.1 --dir "$out" --appendonly yes --appendfsync always \
      --save '' --daemonize yes --pidfile "$out/redis.pid" --logfile "$out/redis.log"
    taskset -c 0 "$out/public-id" --insecure-dev --listen 127.0.0.1:7395 \
      --store redis:127.0.0.1:7394 --log-level error & pid=$!
    for _ in $(seq 100); do curl -fs http://127.0.0.1:7395/healthz >/dev/null 2>&1 && break; sleep 0.1; done
    pub=$(curl -s -X POST http://127.0.0.1:7395/v1/public-ids -H 'Content-Type: application/json' -d '{"internal_id":"120460138153815040"}' | sed 's/.*"public_id":"\([^"]*\)".*/\1/')
    lg -url http://127.0.0.1:7395 -mode get -path "/v1/public-ids/$pub" -c 16 > "$out/load-resolve.json" &
    lg -url http://127.0.0.1:7395 -mode publish -c 4 > "$out/load-publish.json" &
    sample "$pid" public-id
    ;;
  *) echo "soak: unknown service $svc (generator or public-id)" >&2; exit 2 ;;
  esac
done
