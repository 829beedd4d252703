#!/usr/bin/env bash
# Runs the local platform on embedded defaults (SPEC §11): state under .idgen/ in the checkout,
# schedule v2, clock check warn (development machines have no disciplined clock). Ctrl-C stops
# everything; each generator stops issuing and releases its lease on the way out.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
state="$PWD/.idgen"
mkdir -p "$state/bin" "$state/logs"

echo "run-local: building the services"
go build -o "$state/bin/generator" ./services/generator/cmd/generator
go build -o "$state/bin/registry" ./services/registry/cmd/registry
go build -o "$state/bin/idgenctl" ./tools/idgenctl
go build -o "$state/bin/public-id" ./services/public-id/cmd/public-id
go build -o "$state/bin/demo-orders" ./services/public-id/cmd/demo-orders

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "run-local: stopping (the generators release their leases)"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

"$state/bin/registry" --insecure-dev --listen 127.0.0.1:7000 --store "sqlite:$state/registry.db" \
  >"$state/logs/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -fsS http://127.0.0.1:7000/healthz >/dev/null 2>&1 && break; sleep 0.1; done

start_generator() { # region port
  "$state/bin/generator" --insecure-dev --clock-check warn --schedule v2 --registry http://127.0.0.1:7000 \
    --region "$1" --listen "127.0.0.1:$2" --lease-store "sqlite:$state/leases-$1.db" \
    >"$state/logs/generator-$1.log" 2>&1 &
  pids+=($!)
}
start_generator us-east-1 7001
start_generator eu-west-1 7002

# The public-ID service: internal API on :7003 (publishes "ord" orders and "cus" customers),
# customer gateway on :7004. The gateway's routes (deploy/local/routes.json) front the demo
# orders upstream on :7005: a customer asks for /orders/<public id> or
# /customers/<public id>/orders, and every ID in the answer comes back as a public ID.
"$state/bin/public-id" --insecure-dev --listen 127.0.0.1:7003 --gateway-listen 127.0.0.1:7004 \
  --store "sqlite:$state/public-ids.db" --routes deploy/local/routes.json --resources ord,cus \
  >"$state/logs/public-id.log" 2>&1 &
pids+=($!)

# The demo orders upstream: orders keyed by internal IDs from the us-east-1 generator; a checkout
# hands back only public IDs.
"$state/bin/demo-orders" --listen 127.0.0.1:7005 --db "$state/demo-orders.db" \
  --generator http://127.0.0.1:7001 --public-ids http://127.0.0.1:7003 \
  >"$state/logs/demo-orders.log" 2>&1 &
pids+=($!)

for port in 7001 7002 7003 7005; do
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
done

cat <<INFO

idgen is running locally (state in .idgen/, logs in .idgen/logs/; clock check: warn, development only)

  registry              http://127.0.0.1:7000   regions and layouts (plaintext dev mode: you are admin)
  generator us-east-1   http://127.0.0.1:7001   REST, Connect, gRPC, /healthz, /metrics
  generator eu-west-1   http://127.0.0.1:7002
  public-id (internal)  http://127.0.0.1:7003   POST /v1/public-ids, GET /v1/public-ids/{public_id}
  gateway (customers)   http://127.0.0.1:7004   /orders/{public_id}, /customers/{public_id}/orders -> demo orders, public IDs only
  demo orders           http://127.0.0.1:7005   internal upstream: POST /internal/checkout, GET /internal/orders/{id}, ...

Try:
  curl -s -X POST http://127.0.0.1:7001/v1/ids -d '{}'
  curl -s -X POST http://127.0.0.1:7002/v1/ids:batch -d '{"count": 5}'
  curl -s http://127.0.0.1:7001/v1/ids/\$(curl -s -X POST http://127.0.0.1:7002/v1/ids -d '{}' | sed 's/.*"id":"\([0-9]*\)".*/\1/')/decode
  curl -s http://127.0.0.1:7001/healthz
  curl -s -X POST http://127.0.0.1:7001/idgen.v1.IdService/Generate -H 'Content-Type: application/json' -d '{}'
  curl -s http://127.0.0.1:7000/v1/regions
  co=\$(curl -s -X POST http://127.0.0.1:7005/internal/checkout -d '{"customer":"Ada","items":[{"sku":"book-1","quantity":2,"unit_cents":2100}]}'); echo "\$co"
  ord=\$(echo "\$co" | sed 's/.*"order":"\([^"]*\)".*/\1/'); cus=\$(echo "\$co" | sed 's/.*"customer":"\([^"]*\)".*/\1/')
  curl -s http://127.0.0.1:7004/orders/\$ord
  curl -s "http://127.0.0.1:7004/customers/\$cus/orders?status=placed"
  .idgen/bin/idgenctl health --region eu-west-1
  .idgen/bin/idgenctl leases list --region us-east-1

Ctrl-C stops everything and releases the leases.
INFO
wait -n "${pids[@]}" || true
echo "run-local: a service exited; see .idgen/logs/"
