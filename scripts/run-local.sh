#!/usr/bin/env bash
# Runs the local platform on embedded defaults (docs/local-stack.md): state under .idgen/ in the
# checkout, schedule v2, clock check warn (development machines have no disciplined clock).
# Ctrl-C, SIGTERM or SIGHUP to this script, or the end of the make that started it, stops
# everything; each generator stops issuing and releases its lease on the way out. One stack per
# checkout: a second run says the first is running and changes nothing. Each run keeps its own
# logs (.idgen/logs/<start time>/, .idgen/logs/latest points to the newest).
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
state="${IDGEN_RUN_STATE:-$PWD/.idgen}" # IDGEN_RUN_STATE: another state directory (tests)
mkdir -p "$state/bin" "$state/logs"

# One stack per checkout: the lock is held for as long as this script runs.
exec 9>>"$state/run.lock"
if ! flock -n 9; then
  echo "run-local: a local stack is already running from this checkout (pid $(cat "$state/run.pid" 2>/dev/null || echo '?'))." >&2
  echo "run-local: stop it first (Ctrl-C in its terminal, or kill -TERM that pid); nothing was changed." >&2
  exit 1
fi
echo $$ >"$state/run.pid"
busy=()
for port in 7000 7001 7002 7003 7004 7005; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then busy+=("$port"); fi
done
if [ ${#busy[@]} -gt 0 ]; then
  echo "run-local: ports ${busy[*]} on 127.0.0.1 are in use by another process (another checkout's stack?); stop it first." >&2
  exit 1
fi

run_id=$(date -u +%Y%m%dT%H%M%SZ)
logs="$state/logs/$run_id"
mkdir -p "$logs"
ln -sfn "$run_id" "$state/logs/latest"

services=(generator:./services/generator/cmd/generator registry:./services/registry/cmd/registry
  idgenctl:./tools/idgenctl public-id:./services/public-id/cmd/public-id demo-orders:./services/public-id/cmd/demo-orders)
n=0
for s in "${services[@]}"; do
  n=$((n + 1))
  name=${s%%:*} pkg=${s#*:}
  t0=$(date +%s)
  printf 'run-local: building %-12s (%d/%d) ' "$name" "$n" "${#services[@]}"
  go build -o "$state/bin/$name" "$pkg"
  echo "$(($(date +%s) - t0)) s"
done

pids=() names=()
cleanup() {
  trap - INT TERM HUP EXIT
  echo
  echo "run-local: stopping (the generators release their leases)"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "run-local: stopped"
}
# Ctrl-C reaches every process of the terminal's group, the services included: a stop, not a
# failure (exit 0, leases released).
trap 'cleanup; exit 0' INT TERM HUP
trap cleanup EXIT

# ready NAME URL PID: wait up to 30 s for /healthz; a service that exits or never becomes ready
# stops the run with the end of its log, rather than a banner saying idgen is running.
ready() {
  for _ in $(seq 1 300); do
    curl -fsS "$2" >/dev/null 2>&1 && return 0
    if ! kill -0 "$3" 2>/dev/null; then
      echo "run-local: $1 exited before it became ready; the end of $logs/$1.log:" >&2
      tail -n 20 "$logs/$1.log" >&2 || true
      exit 1
    fi
    sleep 0.1
  done
  echo "run-local: $1 did not become ready within 30 s ($2); the end of $logs/$1.log:" >&2
  tail -n 20 "$logs/$1.log" >&2 || true
  exit 1
}

"$state/bin/registry" --insecure-dev --listen 127.0.0.1:7000 --store "sqlite:$state/registry.db" \
  >"$logs/registry.log" 2>&1 &
pids+=($!) names+=(registry)
ready registry http://127.0.0.1:7000/healthz "${pids[0]}"

start_generator() { # region port
  "$state/bin/generator" --insecure-dev --clock-check warn --schedule v2 --registry http://127.0.0.1:7000 \
    --region "$1" --listen "127.0.0.1:$2" --lease-store "sqlite:$state/leases-$1.db" \
    >"$logs/generator-$1.log" 2>&1 &
  pids+=($!) names+=("generator-$1")
}
start_generator us-east-1 7001
start_generator eu-west-1 7002

# The public-ID service: internal API on :7003 (publishes "ord" orders and "cus" customers),
# customer gateway on :7004. The gateway's routes (deploy/local/routes.json) front the demo
# orders upstream on :7005: a customer asks for /orders/<public id> or
# /customers/<public id>/orders, and every ID in the answer comes back as a public ID.
"$state/bin/public-id" --insecure-dev --listen 127.0.0.1:7003 --gateway-listen 127.0.0.1:7004 \
  --store "sqlite:$state/public-ids.db" --routes deploy/local/routes.json --resources ord,cus \
  >"$logs/public-id.log" 2>&1 &
pids+=($!) names+=(public-id)

# The demo orders upstream: orders keyed by internal IDs from the us-east-1 generator; a checkout
# hands back only public IDs.
"$state/bin/demo-orders" --listen 127.0.0.1:7005 --db "$state/demo-orders.db" \
  --generator http://127.0.0.1:7001 --public-ids http://127.0.0.1:7003 \
  >"$logs/demo-orders.log" 2>&1 &
pids+=($!) names+=(demo-orders)

ready generator-us-east-1 http://127.0.0.1:7001/healthz "${pids[1]}"
ready generator-eu-west-1 http://127.0.0.1:7002/healthz "${pids[2]}"
ready public-id http://127.0.0.1:7003/healthz "${pids[3]}"
ready demo-orders http://127.0.0.1:7005/healthz "${pids[4]}"

cat <<INFO

idgen is running locally (state in .idgen/, logs in .idgen/logs/$run_id/; clock check: warn, development only)

  registry              http://127.0.0.1:7000   regions and layouts (plaintext dev mode: you are admin)
  generator us-east-1   http://127.0.0.1:7001   REST, Connect, gRPC, /healthz, /metrics
  generator eu-west-1   http://127.0.0.1:7002
  public-id (internal)  http://127.0.0.1:7003   POST /v1/public-ids, GET /v1/public-ids/{public_id}
  gateway (customers)   http://127.0.0.1:7004   /orders/{public_id}, /customers/{public_id}/orders -> demo orders, public IDs only
  demo orders           http://127.0.0.1:7005   internal upstream: POST /internal/checkout, GET /internal/orders/{id}, ...

Try:
  curl -s -X POST http://127.0.0.1:7001/v1/ids -H 'Content-Type: application/json' -d '{}'
  curl -s -X POST http://127.0.0.1:7002/v1/ids:batch -H 'Content-Type: application/json' -d '{"count": 5}'
  curl -s http://127.0.0.1:7001/v1/ids/\$(curl -s -X POST http://127.0.0.1:7002/v1/ids -H 'Content-Type: application/json' -d '{}' | sed 's/.*"id":"\([0-9]*\)".*/\1/')/decode
  curl -s http://127.0.0.1:7001/healthz
  curl -s -X POST http://127.0.0.1:7001/idgen.v1.IdService/Generate -H 'Content-Type: application/json' -d '{}'
  curl -s http://127.0.0.1:7000/v1/regions
  co=\$(curl -s -X POST http://127.0.0.1:7005/internal/checkout -d '{"customer":"Ada","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}'); echo "\$co"
  ord=\$(echo "\$co" | sed 's/.*"order":"\([^"]*\)".*/\1/'); cus=\$(echo "\$co" | sed 's/.*"customer":"\([^"]*\)".*/\1/')
  curl -s http://127.0.0.1:7004/orders/\$ord
  curl -s "http://127.0.0.1:7004/customers/\$cus/orders?status=placed"
  .idgen/bin/idgenctl health --region eu-west-1
  .idgen/bin/idgenctl leases list --region us-east-1
  .tools/bin/grpcurl -plaintext 127.0.0.1:7001 list      # grpcurl is built into .tools/bin by make setup

Ctrl-C stops everything and releases the leases.
INFO
# Run until a service exits or the make that started this script is gone (a SIGTERM to make alone
# does not reach its children). A service that stopped cleanly (exit 0) or by SIGINT or SIGTERM was
# stopped, by Ctrl-C or an operator: the run stops too, and says so; any other exit fails the run.
parent=$PPID
while :; do
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      rc=0
      wait "${pids[$i]}" 2>/dev/null || rc=$?
      if [ "$rc" = 0 ] || [ "$rc" = 130 ] || [ "$rc" = 143 ]; then
        echo "run-local: ${names[$i]} was stopped"
        cleanup
        exit 0
      fi
      echo "run-local: ${names[$i]} exited with status $rc; the end of $logs/${names[$i]}.log:" >&2
      tail -n 20 "$logs/${names[$i]}.log" >&2 || true
      exit 1
    fi
  done
  if ! kill -0 "$parent" 2>/dev/null || [ "$(ps -o ppid= -p $$ | tr -d ' ')" != "$parent" ]; then
    echo "run-local: the process that started the stack is gone"
    exit 0
  fi
  sleep 1 &
  wait $! || true
done
