#!/usr/bin/env bash
# Benchmarks of the public-ID internal API on Redis (appendonly yes, appendfsync always), with
# baselines measured in the same run at the same concurrency: a bare net/http handler, and
# redis-benchmark GET and SET against the same Redis. Server and Redis on core 0, load on core 1.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
dur=${BENCH_DURATION:-5s}
conns=${BENCH_CONNS:-16}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.3; rm -rf "$out"' EXIT
go build -o "$out/public-id" ./services/public-id/cmd/public-id
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/loadgen" ./cmd/loadgen)
rport=7290
taskset -c 0 redis-server --port $rport --bind 127.0.0.1 --dir "$out" --appendonly yes --appendfsync always \
  --save '' --daemonize no --logfile "$out/redis.log" & 
taskset -c 0 "$out/bare" -listen 127.0.0.1:7291 &
barepid=$!
cat > "$out/routes.json" <<JSON
{"routes": [{"name": "order", "public": "/orders/{public_id}", "upstream": "http://127.0.0.1:7291/internal/orders/{internal_id}",
             "resource": "ord", "response": {"type": "object", "fields": {"id": "id:ord", "id_num": "id:ord"}}}]}
JSON
taskset -c 0 "$out/public-id" --insecure-dev --listen 127.0.0.1:7292 --gateway-listen 127.0.0.1:7293 \
  --store "redis:127.0.0.1:$rport" --routes "$out/routes.json" --rate-per-client 0 --log-level error &
gwpid=$!
for _ in $(seq 100); do curl -fs http://127.0.0.1:7292/healthz >/dev/null 2>&1 && curl -fs http://127.0.0.1:7291/ >/dev/null 2>&1 && break; sleep 0.1; done
pub=$(curl -s -X POST http://127.0.0.1:7292/v1/public-ids -H 'Content-Type: application/json' -d '{"internal_id":"120460138153815040"}' | sed 's/.*"public_id":"\([^"]*\)".*/\1/')

lg() { taskset -c 1 "$out/loadgen" -c "$conns" -d "$dur" "$@"; }
# CPU time (user + system, in clock ticks) a process has used so far.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Warm both servers up (discarded), so that the first measured run is not the coldest.
taskset -c 1 "$out/loadgen" -c "$conns" -d 1s -url http://127.0.0.1:7291 -mode get -path / >/dev/null
taskset -c 1 "$out/loadgen" -c "$conns" -d 1s -url http://127.0.0.1:7292 -mode get -path "/v1/public-ids/$pub" >/dev/null
bare=$(lg -url http://127.0.0.1:7291 -mode get -path /)
resolve=$(lg -url http://127.0.0.1:7292 -mode get -path "/v1/public-ids/$pub")
publish=$(lg -url http://127.0.0.1:7292 -mode publish)
# The gateway in front of an upstream (the bare handler, whose body carries an "id"), against
# calling that upstream directly: the latency the gateway adds (resolve, call, rewrite).
# CPU per request: the gateway's process during the gateway run, the bare upstream's during the
# direct run (its own CPU per request, the baseline); the upstream's share of the gateway run is
# counted separately.
b0=$(ticks $barepid)
direct=$(lg -url http://127.0.0.1:7291 -mode get -path /internal/orders/120460138153815040 -c 1)
b1=$(ticks $barepid); g0=$(ticks $gwpid)
viagw=$(lg -url http://127.0.0.1:7293 -mode get -path "/orders/$pub" -c 1)
g1=$(ticks $gwpid)
hz=$(getconf CLK_TCK)
secs=${dur%s}
rget=$(taskset -c 1 redis-benchmark -p $rport -c "$conns" -n $((60000 * secs)) -t get -q --csv | tail -1)
rset=$(taskset -c 1 redis-benchmark -p $rport -c "$conns" -n $((10000 * secs)) -t set -q --csv | tail -1)
python3 - "$bare" "$resolve" "$publish" "$rget" "$rset" "$direct" "$viagw" "$((b1 - b0))" "$((g1 - g0))" "$hz" <<'PY'
import json, sys
bare, resolve, publish = (json.loads(x) for x in sys.argv[1:4])
def rb(line): return float(line.split(",")[1].strip('"'))
rget, rset = rb(sys.argv[4]), rb(sys.argv[5])
direct, viagw = json.loads(sys.argv[6]), json.loads(sys.argv[7])
print("%-34s %10s %8s %8s" % ("case", "req/s", "p50 ms", "p99 ms"))
for name, r in (("bare net/http GET", bare), ("resolve GET /v1/public-ids/{id}", resolve), ("publish POST /v1/public-ids", publish)):
    print("%-34s %10.0f %8.2f %8.2f" % (name, r["req_per_s"], r["p50_ms"], r["p99_ms"]))
print("%-34s %10.0f" % ("redis-benchmark GET", rget))
print("%-34s %10.0f" % ("redis-benchmark SET (AOF always)", rset))
limit = 1 / (1 / bare["req_per_s"] + 1 / rget)
print("resolve: %.2fx of the shared-core limit 1/(1/bare + 1/redis GET) = %.0f req/s" % (resolve["req_per_s"] / limit, limit))
print("publish: %.2fx of redis-benchmark's AOF-always SET rate (a publish is one script call, one fsync)" % (publish["req_per_s"] / rset))
plimit = 1 / (1 / bare["req_per_s"] + 1 / rset)
print("publish: %.2fx of the shared-core limit 1/(1/bare + 1/redis SET) = %.0f req/s" % (publish["req_per_s"] / plimit, plimit))
print("gateway, one client: upstream direct p50 %.2f ms p99 %.2f ms; through the gateway p50 %.2f ms p99 %.2f ms (adds %.2f ms at p50)" % (
    direct["p50_ms"], direct["p99_ms"], viagw["p50_ms"], viagw["p99_ms"], viagw["p50_ms"] - direct["p50_ms"]))
bare_ticks, gw_ticks, hz = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
bare_us = bare_ticks / hz / max(direct["requests"], 1) * 1e6
gw_us = gw_ticks / hz / max(viagw["requests"], 1) * 1e6
print("gateway CPU per request: %.0f us (the public-id process, resolve + upstream call + rewrite); the bare upstream's own: %.0f us; ratio %.1fx" % (
    gw_us, bare_us, gw_us / bare_us if bare_us else float("nan")))
PY
