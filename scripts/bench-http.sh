#!/usr/bin/env bash
# HTTP benchmarks of the generator against a bare net/http handler returning a fixed JSON body,
# measured in interleaved rounds: each round runs every case right after its baseline (A, B, A,
# B …), BENCH_ROUNDS rounds (default 5) of BENCH_DURATION each (default 2s), and prints each
# case's ratio to its baseline as the median and the min–max over the rounds. Server pinned to
# core 0, load generator to core 1; server CPU per request from /proc. Then, where valgrind is
# installed (BENCH_INSTR=0 skips it), instructions per request of each server under callgrind,
# which do not depend on the machine's load. bench/README.md says how to read the figures.
# The baseline runs on the services' own http.Server settings and GC target (libs/svc/serve); the
# instruction counts add a second one, the same handler on net/http's default server (bare
# -skeleton default, h2c enabled), so that the skeleton's own cost shows (bench/skeleton.sh splits
# it by setting).
# connect-json-http1 is connect-go's stock client, which sends a request's headers and body in
# two writes over HTTP/1.1; connect-json-onewrite goes through idclient.OneWrite (one write).
# Each Connect and gRPC case has a second floor measured in the same round: connect-go's stock
# handler answering the same RPC with a constant ID (bench/cmd/connectfloor), on the same server
# settings; the gRPC case a third, grpc-go serving the same RPC (bench/cmd/grpcfloor). Every
# server listens on a free loopback port (free_ports in bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
build_services services/generator/cmd/generator
(cd bench && go build -o "$out/bare" ./cmd/bare && go build -o "$out/loadgen" ./cmd/loadgen &&
  go build -o "$out/connectfloor" ./cmd/connectfloor && go build -o "$out/grpcfloor" ./cmd/grpcfloor)

gen_args=(--insecure-dev --clock-check warn --log-level error)
read -r p1 p2 p3 p4 < <(free_ports 4)
bare_url=http://127.0.0.1:$p1 gen_url=http://127.0.0.1:$p2 floor_url=http://127.0.0.1:$p3 grpcgo_url=http://127.0.0.1:$p4
taskset -c 0 "$out/bare" -listen "${bare_url#http://}" & bare=$!
taskset -c 0 "$out/generator" "${gen_args[@]}" --listen "${gen_url#http://}" --lease-store "sqlite:$out/leases.db" & gen=$!
taskset -c 0 "$out/connectfloor" -listen "${floor_url#http://}" & floor=$!
taskset -c 0 "$out/grpcfloor" -listen "${grpcgo_url#http://}" & grpcgo=$!
wait_healthy "$bare_url/healthz"
wait_healthy "$gen_url/healthz"
wait_healthy "$floor_url/healthz"
wait_healthy "tcp://${grpcgo_url#http://}"

# Warm the servers up (discarded), so that the first round is not the coldest.
taskset -c 1 "$out/loadgen" -url "$bare_url" -mode rest -c "$conns" -d 1s >/dev/null
taskset -c 1 "$out/loadgen" -url "$gen_url" -mode rest -c "$conns" -d 1s >/dev/null
taskset -c 1 "$out/loadgen" -url "$floor_url" -mode connect-proto -c "$conns" -d 1s >/dev/null
taskset -c 1 "$out/loadgen" -url "$grpcgo_url" -mode grpc -c "$conns" -d 1s >/dev/null
for r in $(seq "$rounds"); do
  echo "round $r of $rounds" >&2
  for c in rest-post-ids:rest connect-json-http1:connect-json connect-json-onewrite:connect-json-onewrite \
    connect-proto-http1:connect-proto-http1 connect-proto-h2c:connect-proto grpc-h2c:grpc; do
    name=${c%%:*} mode=${c#*:} base=rest
    [[ $mode == connect-proto || $mode == grpc ]] && base=get-h2c
    measure "$name/base" "$r" "$bare" -url "$bare_url" -mode "$base"
    # The connect-go floor: the same call to connect-go's stock handler with a constant answer.
    [[ $mode != rest ]] && measure "$name/floor" "$r" "$floor" -url "$floor_url" -mode "$mode"
    [[ $mode == grpc ]] && measure "$name/grpcgo" "$r" "$grpcgo" -url "$grpcgo_url" -mode grpc
    measure "$name" "$r" "$gen" -url "$gen_url" -mode "$mode"
  done
  measure rest-batch-1000 "$r" "$gen" -url "$gen_url" -mode rest-batch
  # The client library's baseline: batches asked for back to back on 4 connections, the IDs
  # dropped (the generator's own rate for the client's calls, nothing buffered or handed out).
  measure client-library/base "$r" "$gen" -url "$gen_url" -mode client-base -c 4
  measure client-library "$r" "$gen" -url "$gen_url" -mode client
done
echo "resident memory of the generator: $(awk '/VmRSS/{print $2" "$3}' /proc/$gen/status)"
kill "$bare" "$gen" "$floor" "$grpcgo"; wait "$bare" "$gen" "$floor" "$grpcgo" 2>/dev/null || true

if [[ ${BENCH_INSTR:-1} != 0 ]] && have_valgrind; then
  echo "instruction counts under callgrind ($instr_n requests each)" >&2
  u=http://127.0.0.1:$(free_ports)
  cg_start bare "$u/healthz" "$out/bare" -listen "${u#http://}"
  cg_count bare-http "$CG_PID" "$instr_n" -url "$u" -mode rest
  cg_count bare-h2c "$CG_PID" "$instr_n" -url "$u" -mode get-h2c
  cg_stop "$CG_PID"
  # The second baseline: the same handler on net/http's default server (h2c enabled).
  u=http://127.0.0.1:$(free_ports)
  cg_start bare-default "$u/healthz" "$out/bare" -skeleton default -listen "${u#http://}"
  cg_count bare-default-http "$CG_PID" "$instr_n" -url "$u" -mode rest
  cg_count bare-default-h2c "$CG_PID" "$instr_n" -url "$u" -mode get-h2c
  cg_stop "$CG_PID"
  u=http://127.0.0.1:$(free_ports)
  cg_start connectfloor "$u/healthz" "$out/connectfloor" -listen "${u#http://}"
  cg_count connect-json-http1/floor "$CG_PID" "$instr_n" -url "$u" -mode connect-json
  cg_count connect-proto-http1/floor "$CG_PID" "$instr_n" -url "$u" -mode connect-proto-http1
  cg_count connect-proto-h2c/floor "$CG_PID" "$instr_n" -url "$u" -mode connect-proto
  cg_count grpc-h2c/floor "$CG_PID" "$instr_n" -url "$u" -mode grpc
  cg_stop "$CG_PID"
  u=http://127.0.0.1:$(free_ports)
  cg_start grpcfloor "tcp://${u#http://}" "$out/grpcfloor" -listen "${u#http://}"
  cg_count grpc-h2c/grpcgo "$CG_PID" "$instr_n" -url "$u" -mode grpc
  cg_stop "$CG_PID"
  u=http://127.0.0.1:$(free_ports)
  cg_start generator "$u/healthz" "$out/generator" "${gen_args[@]}" --listen "${u#http://}" --lease-store "sqlite:$out/leases-cg.db"
  cg_count rest-post-ids "$CG_PID" "$instr_n" -url "$u" -mode rest
  cg_count connect-json-http1 "$CG_PID" "$instr_n" -url "$u" -mode connect-json
  cg_count connect-proto-http1 "$CG_PID" "$instr_n" -url "$u" -mode connect-proto-http1
  cg_count connect-proto-h2c "$CG_PID" "$instr_n" -url "$u" -mode connect-proto
  cg_count grpc-h2c "$CG_PID" "$instr_n" -url "$u" -mode grpc
  cg_stop "$CG_PID"
elif [[ ${BENCH_INSTR:-1} != 0 ]]; then
  echo "valgrind is not installed (scripts/setup.sh installs it): no instruction counts" >&2
fi
python3 bench/rounds.py http "$out/results.jsonl" "$out/instr.jsonl"
