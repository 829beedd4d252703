#!/usr/bin/env bash
# HTTP benchmarks of the generator, with the baseline measured in the same run: a bare net/http
# handler returning a fixed JSON body. Server pinned to core 0, load generator to core 1.
# Prints each result and the ratios against the baseline; server CPU per request from /proc.
# The baseline runs on the services' own http.Server settings and GC target (libs/svc/serve).
# connect-json-http1 is connect-go's stock client, which sends a request's headers and body in
# two writes over HTTP/1.1; connect-json-onewrite goes through idclient.OneWrite (one write).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
dur=${BENCH_DURATION:-5s}
conns=${BENCH_CONNS:-16}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
go build -o "$out/generator" ./services/generator/cmd/generator
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/loadgen" ./cmd/loadgen)

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
run() { # name pid url mode
  local t0 t1 res
  t0=$(cpu_ticks "$2")
  res=$(taskset -c 1 "$out/loadgen" -url "$3" -mode "$4" -c "$conns" -d "$dur")
  t1=$(cpu_ticks "$2")
  echo "$res" | python3 -c "
import json,sys,os
r=json.load(sys.stdin); ticks=$t1-$t0; hz=os.sysconf('SC_CLK_TCK')
r['server_cpu_us_per_req']=round(ticks/hz/max(r['requests'],1)*1e6,2); r['name']='$1'; print(json.dumps(r))" | tee -a "$out/results.jsonl"
}

taskset -c 0 "$out/bare" -listen 127.0.0.1:7190 & bare=$!
taskset -c 0 "$out/generator" --insecure-dev --clock-check warn --listen 127.0.0.1:7191 \
  --lease-store "sqlite:$out/leases.db" --log-level error & gen=$!
for p in 7190 7191; do for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/healthz" >/dev/null 2>&1 && break; sleep 0.1; done; done

# Warm both servers up (discarded), so that the first measured run is not the coldest.
taskset -c 1 "$out/loadgen" -url http://127.0.0.1:7190 -mode rest -c "$conns" -d 1s >/dev/null
taskset -c 1 "$out/loadgen" -url http://127.0.0.1:7191 -mode rest -c "$conns" -d 1s >/dev/null
run baseline-bare-http "$bare" http://127.0.0.1:7190 rest
run baseline-bare-h2c "$bare" http://127.0.0.1:7190 get-h2c
run rest-post-ids "$gen" http://127.0.0.1:7191 rest
run connect-json-http1 "$gen" http://127.0.0.1:7191 connect-json
run connect-json-onewrite "$gen" http://127.0.0.1:7191 connect-json-onewrite
run connect-proto-h2c "$gen" http://127.0.0.1:7191 connect-proto
run connect-proto-http1 "$gen" http://127.0.0.1:7191 connect-proto-http1
run rest-batch-1000 "$gen" http://127.0.0.1:7191 rest-batch
run client-library "$gen" http://127.0.0.1:7191 client
# The baseline again at the end: the ratios use the mean of both runs (this machine drifts).
run baseline-bare-http-again "$bare" http://127.0.0.1:7190 rest
echo "resident memory of the generator: $(awk '/VmRSS/{print $2" "$3}' /proc/$gen/status)"

python3 - "$out/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
again = rows.pop()
base = dict(rows[0])
for k in ("req_per_s", "server_cpu_us_per_req"):
    base[k] = (rows[0][k] + again[k]) / 2
print("baseline: %.0f req/s at the start, %.0f at the end; ratios use the mean %.0f" % (rows[0]["req_per_s"], again["req_per_s"], base["req_per_s"]))
print("\n%-22s %10s %10s %8s %8s %12s %10s" % ("case", "req/s", "ids/s", "p50 ms", "p99 ms", "cpu us/req", "vs bare"))
for r in rows:
    print("%-22s %10.0f %10.0f %8.2f %8.2f %12.2f %9.2fx" % (r["name"], r["req_per_s"], r["ids_per_s"], r["p50_ms"], r["p99_ms"], r["server_cpu_us_per_req"], r["req_per_s"] / base["req_per_s"]))
by = {r["name"]: r for r in rows}
h2 = by["connect-proto-h2c"]["req_per_s"] / by["baseline-bare-h2c"]["req_per_s"]
print("connect-proto-h2c: %.2fx of the bare handler over h2c (the same transport)" % h2)
for r in rows:
    if r["name"] in ("rest-post-ids", "connect-json-http1", "connect-json-onewrite", "connect-proto-http1", "connect-proto-h2c"):
        print("%s: server CPU per request %.2fx the bare HTTP/1.1 handler's" % (r["name"], r["server_cpu_us_per_req"] / base["server_cpu_us_per_req"]))
limit = 1024000
for r in rows:
    if r["name"] in ("rest-batch-1000", "client-library"):
        print("%s: %.1f%% of the v2 layout's limit per machine number (1,024,000 IDs/s)" % (r["name"], 100 * r["ids_per_s"] / limit))
PY
