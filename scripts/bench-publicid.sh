#!/usr/bin/env bash
# Benchmarks of the public-ID internal API on Redis (appendonly yes, appendfsync always), with
# baselines measured in the same rounds at the same concurrency: a bare net/http handler, and
# redis-benchmark GET and SET against the same Redis. Each round (BENCH_ROUNDS, default 5, of
# BENCH_DURATION each, default 2s) runs every case right after its baselines, and the summary
# gives each ratio's median and min–max over the rounds. Server and Redis on core 0, load on
# core 1. Then, where valgrind is installed (BENCH_INSTR=0 skips it), instructions per request
# of the public-id process under callgrind against the bare handler's, which do not depend on
# the machine's load. Besides the latencies, each run records what does not depend on the load
# either: the garbage collections of loadgen (none: its collector is off during a run) and of the
# server (both servers run with GODEBUG=gctrace=1, their stderr kept apart), and loadgen's
# allocations per request; and how long the server's and loadgen's threads waited for a CPU (what
# other load on the machine did to the run). The gateway is measured against calling its upstream
# directly and against a plain reverse proxy in front of the same upstream (bench/cmd/revproxy),
# in the rounds and under callgrind. Under callgrind too, a publish on the store of record,
# DynamoDB, here dynalite (libs/localstack/dynalite/dynalite.js, which adds TransactWriteItems;
# its table made with the AWS CLI as dynamomap.CreateTable makes it): the public-id process's
# instructions only, not dynalite's. bench/README.md says how to read the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build_services services/public-id/cmd/public-id services/public-id/cmd/public-id-gateway
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/revproxy" ./cmd/revproxy && go build -o "$out/loadgen" ./cmd/loadgen)
# Every server on a free loopback port (free_ports in bench/lib.sh).
read -r rport p_bare p_api p_gw p_gwm p_rp p_cgbare p_cgapi p_cggw p_cggwm p_cgrp dport p_cgdyn < <(free_ports 13)
taskset -c 0 redis-server --port $rport --bind 127.0.0.1 --dir "$out" --appendonly yes --appendfsync always \
  --save '' --daemonize no --logfile "$out/redis.log" &
redispid=$!
FSYNC_COUNT=0
if have_fsync_count; then FSYNC_COUNT=1; else echo "perf cannot count fsyncs here (Debian's linux-perf): no writes per fsync" >&2; fi
GODEBUG=gctrace=1 taskset -c 0 "$out/bare" -listen 127.0.0.1:$p_bare 2>"$out/bare.stderr" &
barepid=$!
cat >"$out/routes.json" <<JSON
{"routes": [{"name": "order", "public": "/orders/{public_id}", "upstream": "http://127.0.0.1:$p_bare/internal/orders/{internal_id}",
             "resource": "ord", "response": {"type": "object", "fields": {"id": "id:ord", "id_num": "id:ord"}}}]}
JSON
pid_args=(--insecure-dev --store "redis:127.0.0.1:$rport" --log-level error)
gw_args=(--store "redis:127.0.0.1:$rport" --routes "$out/routes.json" --rate-per-client 0 --log-level error --deregistration-delay 0)
GODEBUG=gctrace=1 taskset -c 0 "$out/public-id" "${pid_args[@]}" --listen 127.0.0.1:$p_api 2>"$out/public-id.stderr" &
apipid=$!
GODEBUG=gctrace=1 taskset -c 0 "$out/public-id-gateway" "${gw_args[@]}" --listen 127.0.0.1:$p_gw --metrics-listen 127.0.0.1:$p_gwm 2>"$out/gateway.stderr" &
gwpid=$!
GODEBUG=gctrace=1 taskset -c 0 "$out/revproxy" -listen 127.0.0.1:$p_rp -upstream http://127.0.0.1:$p_bare 2>"$out/revproxy.stderr" &
rppid=$!
wait_healthy http://127.0.0.1:$p_bare/
wait_healthy http://127.0.0.1:$p_api/healthz
wait_healthy http://127.0.0.1:$p_gw/healthz
wait_healthy http://127.0.0.1:$p_rp/orders/0
pub=$(curl -s -X POST http://127.0.0.1:$p_api/v1/public-ids -H 'Content-Type: application/json' -d '{"internal_id":"120460138153815040"}' | sed 's/.*"public_id":"\([^"]*\)".*/\1/')

# redis-benchmark's rate as loadgen's JSON (it runs a number of requests, sized to about $dur), with
# Redis's CPU time per request and its fsyncs, as measure gives them with STORE_PID.
rb() { # TEST N
  local t0 t1 csv
  t0=$(cpu_ticks "$redispid")
  csv=$(with_fsyncs "$redispid" "$out/fsyncs" taskset -c 1 redis-benchmark -p $rport -c "$conns" -n "$2" -t "$1" -q --csv | tail -1)
  t1=$(cpu_ticks "$redispid")
  python3 -c '
import json, os, sys
n = int(sys.argv[2]); r = {"req_per_s": float(sys.argv[1].split(",")[1].strip("\"")), "requests": n}
r["store_cpu_us_per_req"] = int(sys.argv[3]) / os.sysconf("SC_CLK_TCK") / n * 1e6
fsyncs = open(sys.argv[4]).read().strip()
if fsyncs:
    r["store_fsyncs"] = int(fsyncs)
print(json.dumps(r))' "$csv" "$2" "$((t1 - t0))" "$out/fsyncs"
}
secs=${dur%s}
# Warm the servers up (discarded), so that the first round is not the coldest.
taskset -c 1 "$out/loadgen" -c "$conns" -d 1s -url http://127.0.0.1:$p_bare -mode get -path / >/dev/null
taskset -c 1 "$out/loadgen" -c "$conns" -d 1s -url http://127.0.0.1:$p_api -mode get -path "/v1/public-ids/$pub" >/dev/null
taskset -c 1 "$out/loadgen" -c 1 -d 1s -url http://127.0.0.1:$p_rp -mode get -path "/orders/$pub" >/dev/null
taskset -c 1 "$out/loadgen" -c 1 -d 1s -url http://127.0.0.1:$p_gw -mode get -path "/orders/$pub" >/dev/null
for r in $(seq "$rounds"); do
  echo "round $r of $rounds" >&2
  GCLOG=$out/bare.stderr measure bare "$r" "$barepid" -url http://127.0.0.1:$p_bare -mode get -path /
  record redis-get "$r" "$(rb get $((60000 * secs)))"
  GCLOG=$out/public-id.stderr measure resolve "$r" "$apipid" -url http://127.0.0.1:$p_api -mode get -path "/v1/public-ids/$pub"
  record redis-set "$r" "$(rb set $((10000 * secs)))"
  STORE_PID=$redispid GCLOG=$out/public-id.stderr measure publish "$r" "$apipid" -url http://127.0.0.1:$p_api -mode publish
  # The gateway in front of an upstream (the bare handler, whose body carries an "id"), against
  # calling that upstream directly and against the plain reverse proxy in front of it, one
  # client: the latency the gateway adds (resolve, call, rewrite) over each. CPU per request: the
  # bare upstream's during the direct run, the proxy process's during the revproxy run, the
  # gateway process's during the gateway run.
  conns=1 GCLOG=$out/bare.stderr measure direct "$r" "$barepid" -url http://127.0.0.1:$p_bare -mode get -path /internal/orders/120460138153815040
  conns=1 GCLOG=$out/revproxy.stderr measure revproxy "$r" "$rppid" -url http://127.0.0.1:$p_rp -mode get -path "/orders/$pub"
  conns=1 GCLOG=$out/gateway.stderr measure gateway "$r" "$gwpid" -url http://127.0.0.1:$p_gw -mode get -path "/orders/$pub"
done
# The resolves above ask for one public ID again and again: the cache of resolved mappings
# answers all but the first (its hit ratio, as exported, is printed with the summary).
curl -s http://127.0.0.1:$p_api/metrics | grep '^idgen_publicid_cache_hit_ratio' >"$out/hit_ratio" || true
kill "$barepid" "$apipid" "$gwpid" "$rppid"; wait "$barepid" "$apipid" "$gwpid" "$rppid" 2>/dev/null || true
grep -hv '^gc ' "$out/bare.stderr" "$out/public-id.stderr" "$out/gateway.stderr" "$out/revproxy.stderr" >&2 || true # what the servers said besides their collections

if [[ ${BENCH_INSTR:-1} != 0 ]] && have_valgrind; then
  echo "instruction counts under callgrind ($instr_n requests each; resolve and its bare request $((instr_n * 20)))" >&2
  taskset -c 0 "$out/bare" -listen 127.0.0.1:$p_bare & barepid=$!
  cg_start bare http://127.0.0.1:$p_cgbare/ "$out/bare" -listen 127.0.0.1:$p_cgbare
  cg_count bare-get "$CG_PID" "$instr_n" -url http://127.0.0.1:$p_cgbare -mode get -path /
  # The bare handler asked what resolve and publish are asked (the same request line and body):
  # net/http's parsing of the request and ServeMux's cleaning of its path grow with the path,
  # whatever the handler, so each case's goal is judged against the same request. A resolve
  # allocates so little that the public-id process collects about once in 4,000 of them (a
  # collection costs it about 18 million instructions), so a count of 2,000 holds none or one,
  # 51,000 or 60,000 a resolve: resolve and its bare request are counted over 20 times as many
  # requests, which hold several.
  cg_count bare-resolve-request "$CG_PID" "$((instr_n * 20))" -url http://127.0.0.1:$p_cgbare -mode get -path "/v1/public-ids/$pub"
  cg_count bare-publish-request "$CG_PID" "$instr_n" -url http://127.0.0.1:$p_cgbare -mode publish
  cg_stop "$CG_PID"
  wait_healthy http://127.0.0.1:$p_bare/
  cg_start public-id http://127.0.0.1:$p_cgapi/healthz "$out/public-id" "${pid_args[@]}" --listen 127.0.0.1:$p_cgapi
  cg_count resolve "$CG_PID" "$((instr_n * 20))" -url http://127.0.0.1:$p_cgapi -mode get -path "/v1/public-ids/$pub"
  cg_count publish "$CG_PID" "$instr_n" -url http://127.0.0.1:$p_cgapi -mode publish
  cg_stop "$CG_PID"
  cg_start gateway http://127.0.0.1:$p_cggw/healthz "$out/public-id-gateway" "${gw_args[@]}" --listen 127.0.0.1:$p_cggw --metrics-listen 127.0.0.1:$p_cggwm
  cg_count gateway "$CG_PID" "$instr_n" -url http://127.0.0.1:$p_cggw -mode get -path "/orders/$pub"
  cg_stop "$CG_PID"
  cg_start revproxy http://127.0.0.1:$p_cgrp/orders/0 "$out/revproxy" -listen 127.0.0.1:$p_cgrp -upstream http://127.0.0.1:$p_bare
  cg_count revproxy "$CG_PID" "$instr_n" -url http://127.0.0.1:$p_cgrp -mode get -path "/orders/$pub"
  cg_stop "$CG_PID"
  if [[ -f node_modules/dynalite/cli.js ]] && command -v aws >/dev/null; then
    # dynalite on core 1 (with loadgen: its CPU is not counted), data on disk, placeholder
    # credentials; the table as dynamomap.CreateTable makes it (partition key k, on demand).
    export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
    mkdir -p "$out/dynalite"
    taskset -c 1 node libs/localstack/dynalite/dynalite.js "$PWD/node_modules/dynalite" --port "$dport" --host 127.0.0.1 \
      --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 --path "$out/dynalite" >"$out/dynalite.log" 2>&1 &
    dynpid=$!
    wait_healthy tcp://127.0.0.1:$dport
    aws dynamodb create-table --endpoint-url http://127.0.0.1:$dport --table-name idgen-public-ids --billing-mode PAY_PER_REQUEST \
      --attribute-definitions AttributeName=k,AttributeType=S --key-schema AttributeName=k,KeyType=HASH >/dev/null
    aws dynamodb wait table-exists --endpoint-url http://127.0.0.1:$dport --table-name idgen-public-ids
    cg_start public-id-dynamo http://127.0.0.1:$p_cgdyn/healthz "$out/public-id" --insecure-dev --store "dynamodb:http://127.0.0.1:$dport" --store-timeout 10s \
      --log-level error --listen 127.0.0.1:$p_cgdyn
    cg_count publish-dynamo "$CG_PID" "$instr_n" -url http://127.0.0.1:$p_cgdyn -mode publish
    cg_stop "$CG_PID"
    kill "$dynpid"; wait "$dynpid" 2>/dev/null || true
  else
    echo "dynalite or the AWS CLI missing (make setup installs both): no count of the DynamoDB publish" >&2
  fi
elif [[ ${BENCH_INSTR:-1} != 0 ]]; then
  echo "valgrind is not installed (scripts/setup.sh installs it): no instruction counts" >&2
fi
python3 bench/rounds.py publicid "$out/results.jsonl" "$out/instr.jsonl"
echo "cache of resolved mappings after the rounds: $(cat "$out/hit_ratio")"
