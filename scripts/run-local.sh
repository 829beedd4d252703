#!/usr/bin/env bash
# make run: the local platform on embedded defaults (docs/local-stack.md), state under .idgen/ in
# the checkout (IDGEN_RUN_STATE: another state folder, for tests). The stack is described once, in
# libs/localstack; this builds make run's command (tools/runlocal) and runs it in this
# process, so that it is make's child: Ctrl-C, SIGTERM or SIGHUP to it, or the end of the make
# that started it, stops everything, and a second run while one is up says so and changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
state="${IDGEN_RUN_STATE:-$PWD/.idgen}"
mkdir -p "$state/bin"
# The pinned Terraform, which plans the topology module for the callers' client configuration:
# built once from the Go module proxy when missing (make setup installs it too).
scripts/setup.sh run
# go build replaces the file (a run already up keeps running) and only when it is out of date.
[ -x "$state/bin/run-local" ] || echo "run-local: building make run's runner (tools/runlocal), then each program; the first run takes a minute or two"
go build -o "$state/bin/run-local" ./tools/runlocal
exec "$state/bin/run-local"
