#!/usr/bin/env bash
# Instructions per gateway request under callgrind (bench/lib.sh's cg_start and cg_count, as
# scripts/bench-publicid.sh takes them) of three programs in one session, in front of the same
# upstream (the bare handler) on the same route and the same Redis store:
#   before           commit BEFORE's gateway (default 8959ec9), --log-level error: the second
#                    listener of its public-id binary (--gateway-listen), or, in a tree that has
#                    it, its public-id-gateway (with BEFORE's public-id, outside callgrind,
#                    publishing the public ID it resolves);
#   gateway          today's public-id-gateway with its default log level (info: the access
#                    log's line a request is written);
#   gateway-warn     the same with --log-level warn (no access log line);
# against the plain reverse proxy (bench/cmd/revproxy) on the same request and the bare
# handler's GET /, each BENCH_INSTR_REQUESTS requests (default 2000) after a warm-up of a tenth,
# the whole set BENCH_PASSES times (default 2) to show that the counts repeat. BEFORE's tree is
# taken with git archive into a scratch directory and built there with the pinned Go. With
# BENCH_CG_KEEP set to a directory, the callgrind dumps (cg.NAME-pP.N, one a counted window) and
# the programs' logs are copied there, for callgrind_annotate --inclusive=yes.
# Usage: bench/gateway-split.sh [BEFORE]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
before=${1:-8959ec9}
if ! have_valgrind; then
  echo "valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
mkdir "$out/before"
git archive "$before" | tar -x -C "$out/before"
(cd "$out/before" && GOFLAGS=-buildvcs=false go build -o "$out/public-id-before" ./services/public-id/cmd/public-id)
split=0
if [[ -d $out/before/services/public-id/cmd/public-id-gateway ]]; then
  split=1
  (cd "$out/before" && GOFLAGS=-buildvcs=false go build -o "$out/gateway-before" ./services/public-id/cmd/public-id-gateway)
fi
go build -o "$out/public-id" ./services/public-id/cmd/public-id
go build -o "$out/public-id-gateway" ./services/public-id/cmd/public-id-gateway
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/revproxy" ./cmd/revproxy && go build -o "$out/loadgen" ./cmd/loadgen)

# Every server on a free loopback port (free_ports in bench/lib.sh).
read -r rport p7311 p7312 p7313 p7314 p7315 p7316 p7317 p7318 p7319 < <(free_ports 10)
store="redis:127.0.0.1:$rport"
taskset -c 0 redis-server --port $rport --bind 127.0.0.1 --dir "$out" --appendonly yes --appendfsync always \
  --save '' --daemonize no --logfile "$out/redis.log" &
taskset -c 0 "$out/bare" -listen 127.0.0.1:$p7311 &
cat >"$out/routes.json" <<JSON
{"routes": [{"name": "order", "public": "/orders/{public_id}", "upstream": "http://127.0.0.1:$p7311/internal/orders/{internal_id}",
             "resource": "ord", "response": {"type": "object", "fields": {"id": "id:ord", "id_num": "id:ord"}}}]}
JSON
# Today's internal API, outside callgrind, publishes the public ID today's gateway resolves.
taskset -c 0 "$out/public-id" --insecure-dev --store "$store" --log-level error --listen 127.0.0.1:$p7312 &
wait_healthy http://127.0.0.1:$p7311/
wait_healthy http://127.0.0.1:$p7312/healthz
publish() { # API-URL: the public ID of internal ID 120460138153815040
  curl -s -X POST "$1/v1/public-ids" -H 'Content-Type: application/json' -d '{"internal_id":"120460138153815040"}' |
    sed 's/.*"public_id":"\([^"]*\)".*/\1/'
}
pub=$(publish http://127.0.0.1:$p7312)
if [[ $split == 1 ]]; then
  taskset -c 0 "$out/public-id-before" --insecure-dev --store "$store" --log-level error --listen 127.0.0.1:$p7319 &
  wait_healthy http://127.0.0.1:$p7319/healthz
  oldpub=$(publish http://127.0.0.1:$p7319)
fi

gw_args=(--store "$store" --routes "$out/routes.json" --rate-per-client 0 --deregistration-delay 0
  --listen 127.0.0.1:$p7315 --metrics-listen 127.0.0.1:$p7316)
# access_lines NAME: the access log's lines in the server's output so far.
access_lines() { grep -c '"msg":"gateway request"' "$out/cg.$1.log" || true; }
for p in $(seq "$passes"); do
  echo "pass $p of $passes ($instr_n requests each)" >&2
  if [[ $split == 1 ]]; then
    cg_start "before-p$p" http://127.0.0.1:$p7313/healthz "$out/gateway-before" --store "$store" --routes "$out/routes.json" \
      --rate-per-client 0 --log-level error --deregistration-delay 0 --listen 127.0.0.1:$p7314 --metrics-listen 127.0.0.1:$p7313
  else
    cg_start "before-p$p" http://127.0.0.1:$p7313/healthz "$out/public-id-before" --insecure-dev --store "$store" \
      --routes "$out/routes.json" --rate-per-client 0 --log-level error --listen 127.0.0.1:$p7313 --gateway-listen 127.0.0.1:$p7314
    oldpub=$(publish http://127.0.0.1:$p7313)
  fi
  cg_count before "$CG_PID" "$instr_n" -url http://127.0.0.1:$p7314 -mode get -path "/orders/$oldpub"
  cg_stop "$CG_PID"
  for lv in info warn; do
    name=gateway; [[ $lv == info ]] || name=gateway-$lv
    cg_start "$name-p$p" http://127.0.0.1:$p7316/healthz "$out/public-id-gateway" "${gw_args[@]}" --log-level "$lv"
    cg_count "$name" "$CG_PID" "$instr_n" -url http://127.0.0.1:$p7315 -mode get -path "/orders/$pub"
    cg_stop "$CG_PID"
    echo "$name: $(access_lines "$name-p$p") access log lines for $((instr_n + instr_n / 10)) requests" >&2
  done
  cg_start "revproxy-p$p" http://127.0.0.1:$p7317/orders/0 "$out/revproxy" -listen 127.0.0.1:$p7317 -upstream http://127.0.0.1:$p7311
  cg_count revproxy "$CG_PID" "$instr_n" -url http://127.0.0.1:$p7317 -mode get -path "/orders/$pub"
  cg_stop "$CG_PID"
  cg_start "bare-p$p" http://127.0.0.1:$p7318/ "$out/bare" -listen 127.0.0.1:$p7318
  cg_count bare-get "$CG_PID" "$instr_n" -url http://127.0.0.1:$p7318 -mode get -path /
  cg_stop "$CG_PID"
done

python3 - "$out/instr.jsonl" "$before" "$split" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
got = {}
for r in rows:
    got.setdefault(r["name"], []).append(r["instr_per_req"])
med = {k: statistics.median(v) for k, v in got.items()}
names = ["before", "gateway", "gateway-warn", "revproxy", "bare-get"]
print("\ninstructions per request (callgrind, one worker; each pass in turn; ratios of the medians):")
print("%-14s %-28s %12s %12s %12s" % ("case", "passes", "/ revproxy", "/ bare-get", "/ before"))
for n in names:
    if n not in med:
        continue
    print("%-14s %-28s %11.2fx %11.2fx %11.2fx" % (n, ", ".join("%.0f" % v for v in got[n]), med[n] / med["revproxy"],
          med[n] / med["bare-get"], med[n] / med["before"]))
print("before: %s's gateway (%s), --log-level error; gateway: today's public-id-gateway, default log level (info)" % (
      sys.argv[2], "public-id-gateway" if sys.argv[3] == "1" else "public-id --gateway-listen"))
errs = sorted({r["name"] for r in rows if r.get("errors")})
if errs:
    print("errors during the counted requests in: " + ", ".join(errs))
PY
