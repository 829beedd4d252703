#!/usr/bin/env bash
# Instructions per gateway request under callgrind (bench/lib.sh's cg_start and cg_count) of
# today's public-id-gateway with its per-client rate checked three ways, in front of the same
# upstream (the bare handler) on the same route and the same mapping store:
#   no-limit       --rate-per-client 0 (no check at all);
#   in-process     --rate-per-client 1e9 (every request checked, none refused) in the process;
#   redis          the same rate in a Redis of its own on loopback (--rate-redis, without
#                  persistence, as a limiter's Redis should run), redis_rate's script a request;
#                  the redis-server's own instructions per request are counted too, under
#                  callgrind over the same requests (redis-server-per-req).
# Each case takes BENCH_INSTR_REQUESTS requests (default 2000) from one worker after a warm-up of
# a tenth, the whole set BENCH_PASSES times (default 2) to show that the counts repeat.
# Usage: bench/gateway-rate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
if ! have_valgrind; then
  echo "valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
go build -o "$out/public-id" ./services/public-id/cmd/public-id
go build -o "$out/public-id-gateway" ./services/public-id/cmd/public-id-gateway
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/loadgen" ./cmd/loadgen)

# Every server on a free loopback port (free_ports in bench/lib.sh).
read -r sport rport p7332 p7333 p7334 p7335 < <(free_ports 6)
store="redis:127.0.0.1:$sport"
taskset -c 0 redis-server --port $sport --bind 127.0.0.1 --dir "$out" --appendonly yes --appendfsync always \
  --save '' --daemonize no --logfile "$out/redis.log" &
taskset -c 0 "$out/bare" -listen 127.0.0.1:$p7332 &
cat >"$out/routes.json" <<JSON
{"routes": [{"name": "order", "public": "/orders/{public_id}", "upstream": "http://127.0.0.1:$p7332/internal/orders/{internal_id}",
             "resource": "ord", "response": {"type": "object", "fields": {"id": "id:ord", "id_num": "id:ord"}}}]}
JSON
taskset -c 0 "$out/public-id" --insecure-dev --store "$store" --log-level error --listen 127.0.0.1:$p7333 &
wait_healthy http://127.0.0.1:$p7332/
wait_healthy http://127.0.0.1:$p7333/healthz
pub=$(curl -s -X POST http://127.0.0.1:$p7333/v1/public-ids -H 'Content-Type: application/json' -d '{"internal_id":"120460138153815040"}' |
  sed 's/.*"public_id":"\([^"]*\)".*/\1/')

# The rate Redis, under callgrind as well: its instructions over the redis case's requests.
GOMAXPROCS=1 taskset -c 0 valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$out/rcg.redis" \
  redis-server --port $rport --bind 127.0.0.1 --dir "$out" --appendonly no --save '' --daemonize no \
  --logfile "$out/rate-redis.log" >"$out/rcg.log" 2>&1 &
rpid=$!
for _ in $(seq 600); do redis-cli -p $rport PING >/dev/null 2>&1 && break; sleep 0.1; done

gw_args=(--store "$store" --routes "$out/routes.json" --deregistration-delay 0 --log-level warn
  --listen 127.0.0.1:$p7334 --metrics-listen 127.0.0.1:$p7335)
load=(-url http://127.0.0.1:$p7334 -mode get -path "/orders/$pub")
for p in $(seq "$passes"); do
  echo "pass $p of $passes ($instr_n requests each)" >&2
  for c in no-limit in-process redis; do
    case $c in
    no-limit) extra=(--rate-per-client 0) ;;
    in-process) extra=(--rate-per-client 1e9) ;;
    redis) extra=(--rate-per-client 1e9 --rate-redis "redis:127.0.0.1:$rport" --rate-redis-timeout 1s) ;;
    esac
    cg_start "$c-p$p" http://127.0.0.1:$p7335/healthz "$out/public-id-gateway" "${gw_args[@]}" "${extra[@]}"
    if [[ $c == redis ]]; then
      taskset -c 1 "$out/loadgen" -c 1 -n $((instr_n / 10)) "${load[@]}" >/dev/null
      callgrind_control -z "$rpid" >/dev/null 2>&1
    fi
    cg_count "$c" "$CG_PID" "$instr_n" "${load[@]}"
    if [[ $c == redis ]]; then
      callgrind_control -d "$rpid" >/dev/null 2>&1
      dump=$(ls -t "$out"/rcg.redis.* | head -1)
      python3 -c '
import json, sys
total = 0
for line in open(sys.argv[1]):
    if line.startswith("totals:") or line.startswith("summary:"):
        total = int(line.split()[1])
print(json.dumps({"name": "redis-server-per-req", "instr_per_req": total / int(sys.argv[2]), "errors": 0}))' \
        "$dump" "$instr_n" >>"$out/instr.jsonl"
      # The gateway's own warm-up ran before the zeroing of the Redis's counters: only the
      # counted requests are in its dump. Every check must have been the Redis's own.
      errs=$(curl -s http://127.0.0.1:$p7335/metrics | awk '/^idgen_gateway_rate_store_errors_total/ {print $2}')
      [[ $errs == 0 ]] || echo "redis: $errs rate checks failed and were made in-process" >&2
    fi
    cg_stop "$CG_PID"
  done
done

python3 - "$out/instr.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
got = {}
for r in rows:
    got.setdefault(r["name"], []).append(r["instr_per_req"])
med = {k: statistics.median(v) for k, v in got.items()}
print("\ninstructions per gateway request (callgrind, one worker; each pass in turn; medians):")
print("%-22s %-28s %14s %14s" % ("case", "passes", "/ in-process", "- in-process"))
for n in ["no-limit", "in-process", "redis"]:
    print("%-22s %-28s %13.3fx %14.0f" % (n, ", ".join("%.0f" % v for v in got[n]), med[n] / med["in-process"], med[n] - med["in-process"]))
print("%-22s %-28s" % ("redis-server-per-req", ", ".join("%.0f" % v for v in got["redis-server-per-req"])))
print("a rate check: in-process %+.0f instructions, in Redis %+.0f in the gateway and %.0f in redis-server" % (
    med["in-process"] - med["no-limit"], med["redis"] - med["no-limit"], med["redis-server-per-req"]))
errs = sorted({r["name"] for r in rows if r.get("errors")})
if errs:
    print("errors during the counted requests in: " + ", ".join(errs))
PY
